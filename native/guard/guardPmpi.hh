// Force-included (-include) into the guard's own copy of libgpumpi's sources (native/lib/*.cc, CMake target
// gpumpi_guard_lib): every MPI call libgpumpi makes goes to PMPI_*, so the staging the guard runs for the program
// (GPUMPI_GUARD_STAGE=1, guardStage.cc) never re-enters the guard's MPI_* wrappers (no recursion, no self-counting).
// mpi.h is included first, so its declarations keep their MPI_* names; only the calls below are renamed.
#pragma once
#include <mpi.h>

#define MPI_Allgather PMPI_Allgather
#define MPI_Allreduce PMPI_Allreduce
#define MPI_Alltoall PMPI_Alltoall
#define MPI_Bcast PMPI_Bcast
#define MPI_Cancel PMPI_Cancel
#define MPI_Comm_dup PMPI_Comm_dup
#define MPI_Comm_free PMPI_Comm_free
#define MPI_Comm_get_attr PMPI_Comm_get_attr
#define MPI_Comm_rank PMPI_Comm_rank
#define MPI_Comm_set_errhandler PMPI_Comm_set_errhandler
#define MPI_Comm_size PMPI_Comm_size
#define MPI_Error_class PMPI_Error_class
#define MPI_Error_string PMPI_Error_string
#define MPI_Finalized PMPI_Finalized
#define MPI_Get_count PMPI_Get_count
#define MPI_Improbe PMPI_Improbe
#define MPI_Imrecv PMPI_Imrecv
#define MPI_Initialized PMPI_Initialized
#define MPI_Irecv PMPI_Irecv
#define MPI_Isend PMPI_Isend
#define MPI_Mrecv PMPI_Mrecv
#define MPI_Recv PMPI_Recv
#define MPI_Request_free PMPI_Request_free
#define MPI_Send PMPI_Send
#define MPI_Test PMPI_Test
#define MPI_Wait PMPI_Wait
#define MPI_Wtime PMPI_Wtime
