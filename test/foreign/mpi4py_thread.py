# Which thread level mpi4py got from MPI_Init_thread and which pml Open MPI selected (the mca_pml_* component left
# mapped in the process after selection): one line per rank, "rank R thread LEVEL pml NAME". mpi4py asks for
# MPI_THREAD_MULTIPLE unless MPI4PY_RC_THREAD_LEVEL (or mpi4py.rc.thread_level) says otherwise.
import re
import sys
from mpi4py import MPI

names = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled", MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
with open("/proc/self/maps") as maps:
    pmls = sorted({m.group(1) for line in maps for m in [re.search(r"mca_pml_(\w+)\.so", line)] if m})
# One write per line (print writes the text and its newline apart: mpirun's forwarding can interleave the ranks).
sys.stdout.write(f"rank {MPI.COMM_WORLD.Get_rank()} thread {names.get(MPI.Query_thread(), '?')} pml {','.join(pmls) or '-'}\n")
sys.stdout.flush()
