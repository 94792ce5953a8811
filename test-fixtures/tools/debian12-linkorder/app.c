#include <mpi.h>
extern int cudaFree(void*);
int main(int argc, char** argv) { MPI_Init(&argc, &argv); cudaFree(0); MPI_Finalize(); return 0; }
