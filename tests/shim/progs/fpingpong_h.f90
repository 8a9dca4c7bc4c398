! Blocking ping-pong through mpif.h: prints "bytes,half_round_trip_s" per size.
program fpingpong_h
  implicit none
  include 'mpif.h'
  integer :: rank, i, k, n, ierr
  integer, parameter :: nsizes = 5, iters = 3
  integer :: sizes(nsizes) = (/ 0, 8, 4096, 16385, 100000 /)
  character :: buf(100000)
  double precision :: t0, t1
  integer :: st(MPI_STATUS_SIZE)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  do k = 1, nsizes
    n = sizes(k)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    t0 = MPI_WTIME()
    do i = 1, iters
      if (rank == 0) then
        call MPI_SEND(buf, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, ierr)
        call MPI_RECV(buf, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, st, ierr)
      else
        call MPI_RECV(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        call MPI_SEND(buf, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, ierr)
      end if
    end do
    t1 = MPI_WTIME()
    if (rank == 0) print '(I0,",",ES24.16)', n, (t1 - t0) / (2 * iters)
  end do
  call MPI_FINALIZE(ierr)
end program
