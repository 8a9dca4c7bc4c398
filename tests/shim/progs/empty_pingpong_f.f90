! Blocking 1-byte ping-pongs with nothing between the MPI calls, in Fortran: the
! bindings' handle conversions are the shim's work, not the program's computation.
! Usage: empty_pingpong_f [TRIPS] (default 1000 round trips; read before MPI_Init, where nothing
! is charged: a formatted read is a few us of computation of its own); needs 2 ranks.
program empty_pingpong_f
  use mpi
  implicit none
  integer :: ierr, rank, i, trips
  integer :: st(MPI_STATUS_SIZE)
  character :: b
  character(len=32) :: arg
  trips = 1000
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read(arg, *) trips
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  b = 'x'
  do i = 1, trips
    if (rank == 0) then
      call MPI_Send(b, 1, MPI_CHARACTER, 1, 0, MPI_COMM_WORLD, ierr)
      call MPI_Recv(b, 1, MPI_CHARACTER, 1, 0, MPI_COMM_WORLD, st, ierr)
    else if (rank == 1) then
      call MPI_Recv(b, 1, MPI_CHARACTER, 0, 0, MPI_COMM_WORLD, st, ierr)
      call MPI_Send(b, 1, MPI_CHARACTER, 0, 0, MPI_COMM_WORLD, ierr)
    end if
  end do
  call MPI_Finalize(ierr)
end program empty_pingpong_f
