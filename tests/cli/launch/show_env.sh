#!/bin/sh
# A --no-python rank: prints the variables the launch tests check, one line.
echo "rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE node=$GROUP_RANK nodes=$GROUP_WORLD_SIZE addr=$MASTER_ADDR port=$MASTER_PORT run=$TORCHELASTIC_RUN_ID gpu=${CUDA_VISIBLE_DEVICES-unset} order=${CUDA_DEVICE_ORDER-unset} seed=${BATON_SEED-unset} hashseed=${PYTHONHASHSEED-unset} nccl=${NCCL_DEBUG-unset} ncclfile=${NCCL_DEBUG_FILE-unset}"
