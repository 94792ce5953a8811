#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) { MPI_Init(&argc, &argv); int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); if (r == 0) { printf("ok\n"); } MPI_Finalize(); return 0; }
