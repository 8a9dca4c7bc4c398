! Calls MPI_OPEN_PORT and MPI_CLOSE_PORT from Fortran, which mpisim does not model: the Fortran
! binding must stop the run as the C one does (or, under unmodelled = passthrough, run it untimed).
program funmodelled
  use mpi
  implicit none
  integer :: ierr, rank
  character(len=MPI_MAX_PORT_NAME) :: port
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  port = ' '
  call MPI_Open_port(MPI_INFO_NULL, port, ierr)
  if (ierr == MPI_SUCCESS) call MPI_Close_port(port, ierr)
  if (rank == 0) then
    if (ierr == MPI_SUCCESS .and. len_trim(port) > 0) then
      print '(A)', 'port=ok'
    else
      print '(A)', 'port=wrong'
    end if
  end if
  call MPI_Finalize(ierr)
end program
