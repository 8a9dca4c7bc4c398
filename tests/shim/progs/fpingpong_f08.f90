! Blocking ping-pong through the mpi_f08 bindings: prints "bytes,half_round_trip_s" per size.
program fpingpong_f08
  use mpi_f08
  implicit none
  integer :: rank, i, k, n
  integer, parameter :: nsizes = 5, iters = 3
  integer :: sizes(nsizes) = [0, 8, 4096, 16385, 100000]
  character, allocatable :: buf(:)
  double precision :: t0, t1
  type(MPI_Status) :: st
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  allocate(buf(100000))
  do k = 1, nsizes
    n = sizes(k)
    call MPI_Barrier(MPI_COMM_WORLD)
    t0 = MPI_Wtime()
    do i = 1, iters
      if (rank == 0) then
        call MPI_Send(buf, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD)
        call MPI_Recv(buf, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, st)
      else
        call MPI_Recv(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, st)
        call MPI_Send(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD)
      end if
    end do
    t1 = MPI_Wtime()
    if (rank == 0) print '(I0,",",ES24.16)', n, (t1 - t0) / (2 * iters)
  end do
  call MPI_Finalize()
end program
