#!/bin/sh
# rank 1 gets its own IPC namespace (and a PID namespace via --fork)
if [ "$OMPI_COMM_WORLD_RANK" = "1" ]; then exec unshare --ipc --pid --fork "$@"; fi
exec "$@"
