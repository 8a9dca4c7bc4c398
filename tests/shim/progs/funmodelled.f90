! Calls MPI_INTERCOMM_CREATE from Fortran, which mpisim does not model yet: the Fortran binding
! must stop the run as the C one does (or, under unmodelled = passthrough, run it untimed).
program funmodelled
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, inter, remote
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, mod(rank + 1, nprocs), 7, inter, ierr)
  call MPI_Comm_remote_size(inter, remote, ierr)
  if (rank == 0) then
    if (remote == 1) then
      print '(A)', 'intercomm=ok'
    else
      print '(A)', 'intercomm=wrong'
    end if
  end if
  call MPI_Comm_free(inter, ierr)
  call MPI_Finalize(ierr)
end program
