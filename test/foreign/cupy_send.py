# A CuPy + mpi4py program as users write one: rank 0 sends a CuPy array to rank 1 with MPI_Send / MPI_Recv (mpi4py
# takes CuPy arrays through __cuda_array_interface__). CUPY_SEND_ALLOC=async makes CuPy allocate from its
# stream-ordered MemoryAsyncPool (cudaMallocAsync), as its user guide shows; otherwise CuPy's default MemoryPool
# (cudaMalloc). Prints "BW <GB/s>" at the receiver and "RESULT PASS|FAIL".
import os
import time
from mpi4py import MPI
import cupy

if os.environ.get("CUPY_SEND_ALLOC") == "async":
    cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
n = int(os.environ.get("NBYTES", str(256 << 20))) // 4
iters = int(os.environ.get("ITERS", "3"))
cupy.cuda.Device(rank % cupy.cuda.runtime.getDeviceCount()).use()
buf = cupy.empty(n, dtype=cupy.int32)
ref = cupy.arange(n, dtype=cupy.int32)
ok, total = True, 0.0
for it in range(iters + 1):
    if rank == 0:
        buf[...] = ref + it
    else:
        buf.fill(0)
    cupy.cuda.runtime.deviceSynchronize()
    comm.Barrier()
    t0 = time.perf_counter()
    if rank == 0:
        comm.Send([buf, MPI.INT], dest=1, tag=5)
    elif rank == 1:
        comm.Recv([buf, MPI.INT], source=0, tag=5)
    dt = time.perf_counter() - t0
    if rank == 1:
        if not bool((buf == ref + it).all()):
            ok = False
            print(f"CHECK iter {it}: wrong", flush=True)
        if it > 0:
            total += dt
if rank == 1:
    print(f"BW {iters * n * 4 / total / 1e9:.2f} GB/s alloc={os.environ.get('CUPY_SEND_ALLOC', 'default')} bytes={n * 4}", flush=True)
ok = comm.allreduce(1 if ok else 0, op=MPI.MIN)
if rank == 0:
    print("RESULT " + ("PASS" if ok else "FAIL"), flush=True)
raise SystemExit(0 if ok else 1)
