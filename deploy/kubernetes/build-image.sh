#!/usr/bin/env bash
# Builds baton's container image FROM scratch (deploy/kubernetes/Containerfile) with podman, or
# buildah where podman is missing (Debian's packages): the portable binary (cmake target
# baton-portable: libstdc++ and every other library linked in, glibc >= 2.34 and libgcc_s left) and
# exactly the shared objects `ldd` says it loads, at their paths, so the image has no shell, no
# package manager and nothing else to patch. About 14 MB.
#
# usage: deploy/kubernetes/build-image.sh [IMAGE]   (default localhost/baton:VERSION)
#        BUILD_DIR=build (the configured tree; scripts/configure.sh makes it)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || ./scripts/configure.sh "$build" >/dev/null
cmake --build "$build" --target baton-portable >/dev/null
binary="$build/src/cli/baton-portable"
version=$("$binary" --version | awk '{print $2}')
image=${1:-localhost/baton:$version}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/rootfs/usr/bin" "$stage/rootfs/tmp"
chmod 1777 "$stage/rootfs/tmp"
cp "$binary" "$stage/rootfs/usr/bin/baton"
# ldd's lines: "libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x...)" and the loader "/lib64/ld-linux-x86-64.so.2 (0x...)".
ldd "$binary" | awk '/=> \//{print $3} /^\s*\//{print $1}' | while read -r lib; do
  mkdir -p "$stage/rootfs$(dirname "$lib")"
  cp -L "$lib" "$stage/rootfs$lib"
done
cp deploy/kubernetes/Containerfile "$stage/"
labels=(--label "org.opencontainers.image.title=baton" --label "org.opencontainers.image.version=$version"
        --label "org.opencontainers.image.description=baton serve: GPU node agent")
if command -v podman >/dev/null; then
  podman build --quiet "${labels[@]}" -t "$image" -f "$stage/Containerfile" "$stage" >/dev/null
elif command -v buildah >/dev/null; then
  buildah bud --quiet "${labels[@]}" -t "$image" -f "$stage/Containerfile" "$stage" >/dev/null
else
  echo "build-image.sh: neither podman nor buildah is installed (apt install podman)" >&2
  exit 2
fi
echo "$image"
