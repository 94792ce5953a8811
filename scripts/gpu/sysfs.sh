#!/usr/bin/env bash
# Capture the sysfs facts of extension/core/sysCollect.ts on a machine without Node (the GPU device), in exactly
# the RawOutput stdout formats that collectSystemFacts() writes (see the header of sysCollect.ts):
#   $OUT/sys_modules.txt     relevant /proc/modules lines (or /sys/module names), then /sys/module/<m>/version=<v>
#                            and /sys/kernel/mm/memory_peers/<client>/version=<v>
#   $OUT/sys_infiniband.txt  <dev>\tport=<n>\tstate=<s>\tlink_layer=<l>\trate=<r>\tnuma_node=<n>\tpci=<addr>
#                            (file absent when /sys/class/infiniband does not exist)
#   $OUT/sys_gpu_numa.txt    <pci addr>\tclass=<0x03xxxx>\tnuma_node=<n>\tlocal_cpulist=<cpus> per NVIDIA display device
# Usage: OUT=/some/dir bash scripts/gpu/sysfs.sh    (read-only; needs no root)
set -u
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
RELEVANT='^(nvidia(_[a-z0-9_]+)?|nv_peer_mem|gdrdrv|ib_[a-z0-9_]+|mlx[45]_[a-z0-9_]+|rdma_[a-z0-9_]+|irdma|bnxt_re|efa|hfi1|cxi[a-z0-9_]*)$'
one() { if [ -r "$1" ]; then tr -d '\t\r' <"$1" | tr '\n' ' ' | sed 's/ *$//' | cut -c1-200; else printf '?'; fi; }

{
  if [ -r /proc/modules ]; then
    while IFS= read -r line; do
      name="${line%% *}"
      if printf '%s\n' "$name" | grep -Eq "$RELEVANT"; then printf '%s\n' "$line"; fi
    done </proc/modules
  elif [ -d /sys/module ]; then
    ls -1 /sys/module | LC_ALL=C sort | grep -E "$RELEVANT"
  fi
  for m in nvidia_peermem nv_peer_mem; do
    if [ -r "/sys/module/$m/version" ]; then printf '/sys/module/%s/version=%s\n' "$m" "$(one "/sys/module/$m/version")"; fi
  done
  for c in nv_mem nv_mem_nc nvidia-peermem; do  # GPU peer-memory clients (extension/core/sysCollect.ts PEER_MEMORY_CLIENTS)
    f="/sys/kernel/mm/memory_peers/$c/version"
    if [ -r "$f" ]; then printf '/sys/kernel/mm/memory_peers/%s/version=%s\n' "$c" "$(one "$f")"; fi
  done
} >"$OUT/sys_modules.txt"

if [ -d /sys/class/infiniband ]; then
  : >"$OUT/sys_infiniband.txt"
  for d in $(ls -1 /sys/class/infiniband | LC_ALL=C sort); do
    base="/sys/class/infiniband/$d"
    numa="$(one "$base/device/numa_node")"
    pci="$(sed -n 's/^PCI_SLOT_NAME=//p' "$base/device/uevent" 2>/dev/null | head -1)"; pci="${pci:-?}"
    ports="$(ls -1 "$base/ports" 2>/dev/null | LC_ALL=C sort)"
    if [ -z "$ports" ]; then
      printf '%s\tport=\tstate=?\tlink_layer=?\trate=?\tnuma_node=%s\tpci=%s\n' "$d" "$numa" "$pci" >>"$OUT/sys_infiniband.txt"
    fi
    for p in $ports; do
      printf '%s\tport=%s\tstate=%s\tlink_layer=%s\trate=%s\tnuma_node=%s\tpci=%s\n' "$d" "$p" "$(one "$base/ports/$p/state")" \
        "$(one "$base/ports/$p/link_layer")" "$(one "$base/ports/$p/rate")" "$numa" "$pci" >>"$OUT/sys_infiniband.txt"
    done
  done
fi

: >"$OUT/sys_gpu_numa.txt"
for dev in $(ls -1 /sys/bus/pci/devices 2>/dev/null | LC_ALL=C sort); do
  base="/sys/bus/pci/devices/$dev"
  [ "$(one "$base/vendor")" = "0x10de" ] || continue
  cls="$(one "$base/class")"
  case "$cls" in 0x03*) ;; *) continue ;; esac
  printf '%s\tclass=%s\tnuma_node=%s\tlocal_cpulist=%s\n' "$dev" "$cls" "$(one "$base/numa_node")" "$(one "$base/local_cpulist")" >>"$OUT/sys_gpu_numa.txt"
done
echo "sysfs.sh: wrote $(ls "$OUT"/sys_*.txt | tr '\n' ' ')"
