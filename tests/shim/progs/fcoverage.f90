! Fortran (`use mpi`) coverage of what the shim converts: handles, statuses, 1-based indices,
! MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE, request arrays, persistent requests, communicator
! construction. Prints the same lines natively and under mpisim.
program fcoverage
  use mpi
  implicit none
  integer :: rank, nprocs, ierr, i, idx, outcount, flag_count, left, right, newcomm, cart, crank
  integer :: reqs(4), st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4), indices(4), preq(2)
  integer :: sbuf(4), rbuf(4), v, total, dims(1)
  integer, allocatable :: counts(:), displs(:), gathered(:), types(:), sc(:), sd(:), rc(:), rd(:)
  integer, allocatable :: a2a_s(:), a2a_r(:)
  logical :: flag, periods(1)
  double precision :: x(3), y(3)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  left = mod(rank - 1 + nprocs, nprocs)
  right = mod(rank + 1, nprocs)

  ! ring with Isend/Irecv and Waitall (statuses kept)
  sbuf = rank
  call MPI_Irecv(rbuf(1), 1, MPI_INTEGER, left, 1, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Irecv(rbuf(2), 1, MPI_INTEGER, right, 2, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(sbuf(1), 1, MPI_INTEGER, right, 1, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Isend(sbuf(2), 1, MPI_INTEGER, left, 2, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitall(4, reqs, sts, ierr)
  call report('waitall', rbuf(1) * 1000 + rbuf(2), sts(MPI_SOURCE, 1) * 1000 + sts(MPI_TAG, 2))
  if (any(reqs /= MPI_REQUEST_NULL)) call report('waitall-null', 1, 0)

  ! Waitany: 1-based index; only the second request (tag 4) can complete before the barrier
  call MPI_Irecv(rbuf(1), 1, MPI_INTEGER, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Irecv(rbuf(2), 1, MPI_INTEGER, right, 4, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, left, 4, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, reqs, idx, st, ierr)
  call report('waitany', idx, st(MPI_TAG))
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, right, 3, MPI_COMM_WORLD, ierr)
  call MPI_Waitany(2, reqs, idx, MPI_STATUS_IGNORE, ierr)
  call report('waitany2', idx, rbuf(1))
  call MPI_Waitany(2, reqs, idx, st, ierr)
  call report('waitany-undefined', merge(1, 0, idx == MPI_UNDEFINED), 0)

  ! Waitsome / Testany / Test with STATUSES_IGNORE
  call MPI_Irecv(rbuf(3), 1, MPI_INTEGER, left, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(rank, 1, MPI_INTEGER, right, 5, MPI_COMM_WORLD, reqs(2), ierr)
  flag_count = 0
  do while (flag_count < 2)
    call MPI_Waitsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
    do i = 1, outcount
      if (indices(i) < 1 .or. indices(i) > 2) call report('waitsome-bad-index', indices(i), 0)
    end do
    flag_count = flag_count + outcount
  end do
  call report('waitsome', rbuf(3), flag_count)
  call MPI_Irecv(rbuf(4), 1, MPI_INTEGER, right, 6, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Send(rank, 1, MPI_INTEGER, left, 6, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_Testany(1, reqs, idx, flag, st, ierr)
  end do
  call report('testany', idx, st(MPI_SOURCE))

  ! Sendrecv, Probe, Iprobe
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, right, 7, v, 1, MPI_INTEGER, left, 7, MPI_COMM_WORLD, st, ierr)
  call report('sendrecv', v, st(MPI_SOURCE))
  call MPI_Send(rank * 2, 1, MPI_INTEGER, right, 8, MPI_COMM_WORLD, ierr)
  call MPI_Probe(left, 8, MPI_COMM_WORLD, st, ierr)
  call MPI_Recv(v, 1, MPI_INTEGER, st(MPI_SOURCE), st(MPI_TAG), MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call report('probe', v, st(MPI_SOURCE))

  ! persistent requests
  call MPI_Send_init(rank, 1, MPI_INTEGER, right, 9, MPI_COMM_WORLD, preq(1), ierr)
  call MPI_Recv_init(v, 1, MPI_INTEGER, left, 9, MPI_COMM_WORLD, preq(2), ierr)
  total = 0
  do i = 1, 3
    call MPI_Startall(2, preq, ierr)
    call MPI_Waitall(2, preq, MPI_STATUSES_IGNORE, ierr)
    total = total + v
  end do
  call MPI_Request_free(preq(1), ierr)
  call MPI_Request_free(preq(2), ierr)
  call report('persistent', total, 0)

  ! collectives, MPI_IN_PLACE
  x = (/ dble(rank), 1d0, 2d0 /)
  call MPI_Allreduce(MPI_IN_PLACE, x, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call report('allreduce-inplace', int(x(1)), int(x(2) + x(3)))
  y = 0
  call MPI_Reduce(x, y, 3, MPI_DOUBLE_PRECISION, MPI_MAX, nprocs - 1, MPI_COMM_WORLD, ierr)
  call report('reduce', int(y(1)), int(y(3)))
  v = rank + 100
  call MPI_Bcast(v, 1, MPI_INTEGER, 1 - 1, MPI_COMM_WORLD, ierr)
  call report('bcast', v, 0)
  allocate(counts(nprocs), displs(nprocs), gathered(nprocs * (nprocs + 1) / 2))
  do i = 1, nprocs
    counts(i) = i
    displs(i) = (i - 1) * i / 2
  end do
  sbuf = rank
  call MPI_Gatherv(sbuf, rank + 1, MPI_INTEGER, gathered, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (rank /= 0) gathered = 0
  call report('gatherv', sum(gathered), size(gathered))
  call MPI_Allgather(rank, 1, MPI_INTEGER, counts, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call report('allgather', sum(counts), counts(nprocs))
  allocate(types(nprocs), sc(nprocs), sd(nprocs), rc(nprocs), rd(nprocs), a2a_s(nprocs), a2a_r(nprocs))
  do i = 1, nprocs
    types(i) = MPI_INTEGER
    sc(i) = 1
    rc(i) = 1
    sd(i) = (i - 1) * 4
    rd(i) = (i - 1) * 4
    a2a_s(i) = rank * 100 + i
  end do
  call MPI_Alltoallw(a2a_s, sc, sd, types, a2a_r, rc, rd, types, MPI_COMM_WORLD, ierr)
  call report('alltoallw', sum(a2a_r), a2a_r(1))
  call MPI_Scan(rank, v, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call report('scan', v, 0)

  ! communicators
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, newcomm, ierr)
  call MPI_Comm_rank(newcomm, crank, ierr)
  call MPI_Allreduce(rank, v, 1, MPI_INTEGER, MPI_SUM, newcomm, ierr)
  call report('split', crank, v)
  call MPI_Comm_free(newcomm, ierr)
  dims(1) = nprocs
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_Cart_shift(cart, 0, 1, left, right, ierr)
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, right, 10, v, 1, MPI_INTEGER, left, 10, cart, MPI_STATUS_IGNORE, ierr)
  call report('cart', v, left)
  call MPI_Ibarrier(cart, reqs(1), ierr)
  call MPI_Wait(reqs(1), st, ierr)
  call report('ibarrier', merge(1, 0, reqs(1) == MPI_REQUEST_NULL), 0)
  call MPI_Comm_free(cart, ierr)
  call MPI_Finalize(ierr)
contains
  subroutine report(what, a, b)
    character(*), intent(in) :: what
    integer, intent(in) :: a, b
    integer :: r, line(2), ierr2, allline(2, 64), k
    line = (/ a, b /)
    call MPI_Gather(line, 2, MPI_INTEGER, allline, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr2)
    if (rank == 0) then
      write (*, '(A)', advance='no') what // ':'
      do k = 1, nprocs
        write (*, '(1X,I0,"/",I0)', advance='no') allline(1, k), allline(2, k)
      end do
      write (*, *)
    end if
    r = 0
  end subroutine
end program
