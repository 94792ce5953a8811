! A Fortran MPI program as users write one (use mpi): rank 0 sends 1024 doubles to rank 1, then an in-place
! MPI_Allreduce; rank 0 prints the sum. Built with the MPI's own wrapper (mpif90), nothing of GPU-MPI Doctor linked.
program f_send
  use mpi
  implicit none
  integer :: ierr, rank, nranks, i
  double precision :: buf(1024)
  integer :: status(MPI_STATUS_SIZE)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (rank == 0) then
    buf = [(dble(i), i = 1, 1024)]
    call MPI_Send(buf, 1024, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD, ierr)
  else if (rank == 1) then
    call MPI_Recv(buf, 1024, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, status, ierr)
  end if
  call MPI_Allreduce(MPI_IN_PLACE, buf, 1024, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(A,F12.1)', 'SUM ', sum(buf)
  call MPI_Finalize(ierr)
end program
