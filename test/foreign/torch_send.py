# A PyTorch + mpi4py program as users write one: rank 0 sends a CUDA tensor to rank 1 with MPI_Send / MPI_Recv
# (mpi4py takes CUDA tensors through __cuda_array_interface__). The allocator is whatever PYTORCH_CUDA_ALLOC_CONF says
# (expandable_segments:True gives VMM memory). Prints "BW <GB/s>" at the receiver and "RESULT PASS|FAIL".
import os
import time
from mpi4py import MPI
import torch

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
n = int(os.environ.get("NBYTES", str(256 << 20))) // 4
iters = int(os.environ.get("ITERS", "5"))
torch.cuda.set_device(rank % torch.cuda.device_count())
buf = torch.empty(n, dtype=torch.int32, device="cuda")
ref = torch.arange(n, dtype=torch.int32, device="cuda")
ok, total = True, 0.0
for it in range(iters + 1):
    if rank == 0:
        buf.copy_(ref + it)
    else:
        buf.zero_()
    torch.cuda.synchronize()
    comm.Barrier()
    t0 = time.perf_counter()
    if rank == 0:
        comm.Send([buf, MPI.INT], dest=1, tag=5)
    elif rank == 1:
        comm.Recv([buf, MPI.INT], source=0, tag=5)
    dt = time.perf_counter() - t0
    if rank == 1:
        if not bool(torch.equal(buf, ref + it)):
            ok = False
            print(f"CHECK iter {it}: wrong", flush=True)
        if it > 0:
            total += dt
if rank == 1:
    print(f"BW {iters * n * 4 / total / 1e9:.2f} GB/s alloc={os.environ.get('PYTORCH_CUDA_ALLOC_CONF', 'default')} bytes={n * 4}", flush=True)
ok = comm.allreduce(1 if ok else 0, op=MPI.MIN)
if rank == 0:
    print("RESULT " + ("PASS" if ok else "FAIL"), flush=True)
raise SystemExit(0 if ok else 1)
