#!/bin/sh
# per-rank GPU isolation as Slurm --gpus-per-task does it: each rank sees only "its" device
CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$@"
