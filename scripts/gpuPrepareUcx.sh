#!/usr/bin/env bash
# Run HERE (not on the GPU machine), from the repository root, before `bash scripts/testGpu.sh ucxVersions` on the
# device (issue 33: the seed's UCX 1.20.0 beside the testbed's 1.13.1). Writes into the ignored folder .gpu/:
#   ucx-1.20.0-src.tar.xz    the openucx/ucx v1.20.0 tag (git archive of a mirror; UCX_GIT_DIR, default
#                            /work/.mirror/openucx+ucx/repo) with ./autogen.sh already run, so the device, which has
#                            autoconf/automake/m4 but no libtool, only runs configure and make
#   <testbed>-slim.tar.xz    the testbed tarball (../shared/testbed/) without share/doc, share/man and static
#                            libraries: the same /opt/testbed2 tree at 8 MB instead of 20, so that it, the UCX source,
#                            node.xz and dist/cli.js fit the 64 MiB a device call carries
#   node.xz                  this machine's node, xz-compressed (the CLI runs on the device through it)
# Needs libtool here (apt-get install libtool). Nothing fetched is committed: .gpu/ is ignored.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG="${UCX_TAG:-v1.20.0}"
GIT_DIR_UCX="${UCX_GIT_DIR:-/work/.mirror/openucx+ucx/repo}"
command -v libtoolize >/dev/null || { echo "gpuPrepareUcx: libtoolize missing (apt-get install libtool)" >&2; exit 1; }
mkdir -p .gpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ver="${TAG#v}"
mkdir "$tmp/ucx-$ver"
git --git-dir "$GIT_DIR_UCX" archive "$TAG" | tar x -C "$tmp/ucx-$ver"
(cd "$tmp/ucx-$ver" && ./autogen.sh >&2 && rm -rf autom4te.cache)
tar cJf ".gpu/ucx-$ver-src.tar.xz" -C "$tmp" "ucx-$ver"
echo "gpuPrepareUcx: .gpu/ucx-$ver-src.tar.xz ($(stat -c %s ".gpu/ucx-$ver-src.tar.xz") bytes)" >&2
full=$(ls ../shared/testbed/openmpi-*-cuda*.tar.xz | head -n1)
slim=".gpu/$(basename "$full" .tar.xz)-slim.tar.xz"
if [ ! -f "$slim" ]; then
  mkdir "$tmp/tb"
  tar xJf "$full" -C "$tmp/tb"
  rm -rf "$tmp"/tb/*/share/doc "$tmp"/tb/*/share/man
  find "$tmp/tb" -name '*.a' -delete
  tar cJf "$slim" -C "$tmp/tb" .
  echo "gpuPrepareUcx: $slim ($(stat -c %s "$slim") bytes)" >&2
fi
# the full tarball would also be carried: keep only the slim one in .gpu
for f in .gpu/openmpi-*-cuda*.tar.xz; do [ "$f" = "$slim" ] || rm -f "$f"; done
[ -f .gpu/node.xz ] || xz -T2 -6 -c "$(command -v node)" >.gpu/node.xz
du -cb .gpu/* | tail -n1 >&2
