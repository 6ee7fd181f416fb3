#!/usr/bin/python3
"""A stand-in for the kubelet's pod-resources API (v1 PodResourcesLister) on a Unix socket, with
Debian's gRPC and protobuf for Python: the messages are built from a descriptor written after the
documented v1 API, so the real protobuf encoder writes what baton decodes.

    fake_kubelet.py SOCKET PODS.json [MODE]

PODS.json: [{"name": ..., "namespace": ..., "containers": [{"name": ..., "devices":
[{"resource_name": ..., "device_ids": [...]}]}]}]. MODE: ok (default), hang (never answers),
lie (answers bytes that are not a pod list), error (NOT_FOUND status, no message), huge (a
20 MiB answer). Prints "ready" once it listens; stops on SIGTERM.
"""
import json
import signal
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def messages():
    f = descriptor_pb2.FileDescriptorProto(name="podresources_v1.proto", package="v1", syntax="proto3")

    def message(name, fields):
        m = f.message_type.add(name=name)
        for number, (field, kind, label, type_name) in enumerate(fields, start=1):
            d = m.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                d.type_name = type_name

    T = descriptor_pb2.FieldDescriptorProto
    opt, rep = T.LABEL_OPTIONAL, T.LABEL_REPEATED
    message("ListPodResourcesRequest", [])
    message("TopologyInfo", [])
    message("ContainerDevices", [("resource_name", T.TYPE_STRING, opt, None),
                                 ("device_ids", T.TYPE_STRING, rep, None),
                                 ("topology", T.TYPE_MESSAGE, opt, ".v1.TopologyInfo")])
    message("ContainerResources", [("name", T.TYPE_STRING, opt, None),
                                   ("devices", T.TYPE_MESSAGE, rep, ".v1.ContainerDevices"),
                                   ("cpu_ids", T.TYPE_INT64, rep, None)])
    message("PodResources", [("name", T.TYPE_STRING, opt, None),
                             ("namespace", T.TYPE_STRING, opt, None),
                             ("containers", T.TYPE_MESSAGE, rep, ".v1.ContainerResources")])
    message("ListPodResourcesResponse", [("pod_resources", T.TYPE_MESSAGE, rep, ".v1.PodResources")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    factory = message_factory.MessageFactory(pool)
    return {n: factory.GetPrototype(pool.FindMessageTypeByName("v1." + n))
            for n in ("ListPodResourcesRequest", "ListPodResourcesResponse")}


def main():
    socket, pods_file = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "ok"
    m = messages()
    pods = json.load(open(pods_file))
    answer = m["ListPodResourcesResponse"]()
    for p in pods:
        pr = answer.pod_resources.add(name=p["name"], namespace=p["namespace"])
        for c in p.get("containers", []):
            cr = pr.containers.add(name=c["name"], cpu_ids=c.get("cpu_ids", []))
            for d in c.get("devices", []):
                cr.devices.add(resource_name=d["resource_name"], device_ids=d["device_ids"])
    stop = threading.Event()

    def list_pods(request, context):
        if mode == "hang":
            stop.wait(600)
            return b""
        if mode == "lie":
            return b"\x0a\xff\xff\xff\xff\x0f" + b"x" * 8
        if mode == "error":
            context.abort(grpc.StatusCode.NOT_FOUND, "no pod resources")
        if mode == "huge":
            return b"\x12" + b"\x80\x80\x80\x0a" + b"y" * (20 << 20)  # one unknown 20 MiB field
        return answer.SerializeToString()

    handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
        "List": grpc.unary_unary_rpc_method_handler(
            list_pods, request_deserializer=m["ListPodResourcesRequest"].FromString,
            response_serializer=lambda b: b),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.max_send_message_length", 64 << 20)])
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("unix:" + socket)
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("ready", flush=True)
    while not stop.is_set():
        time.sleep(0.1)
    server.stop(0)


if __name__ == "__main__":
    main()
