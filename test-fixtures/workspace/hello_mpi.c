/* A tiny MPI program so the fixture workspace looks like a user's project. Not built by the tests. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	printf("hello from rank %d\n", rank);
	MPI_Finalize();
	return 0;
}
