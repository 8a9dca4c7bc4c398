! Calls MPI_COMM_CREATE_GROUP from Fortran, which mpisim does not model yet: the Fortran binding
! must stop the run as the C one does (or, under unmodelled = passthrough, run it untimed).
program funmodelled
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, grp, comm, n
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, grp, ierr)
  call MPI_Comm_create_group(MPI_COMM_WORLD, grp, 7, comm, ierr)
  call MPI_Comm_size(comm, n, ierr)
  if (rank == 0) then
    if (n == nprocs) then
      print '(A)', 'create_group=ok'
    else
      print '(A)', 'create_group=wrong'
    end if
  end if
  call MPI_Comm_free(comm, ierr)
  call MPI_Group_free(grp, ierr)
  call MPI_Finalize(ierr)
end program
