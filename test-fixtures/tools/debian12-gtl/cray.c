/* Stand-in for Cray MPICH's libmpi_cray.so.12: a library of that name that needs Debian's MPICH (the real MPI). */
int gpumpi_cray_standin(void) { return 0; }
