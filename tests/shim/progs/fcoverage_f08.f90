! mpi_f08 coverage: Open MPI's f08 layer reaches the shim through ompi_*_f and, for the calls that
! take a LOGICAL (tests, Iprobe, Cart_create), through pmpi_*_. Same lines natively and under mpisim.
program fcoverage_f08
  use mpi_f08
  implicit none
  integer :: rank, nprocs, i, n, idx, v, left, right
  type(MPI_Comm) :: sub, cart
  type(MPI_Request) :: reqs(2)
  type(MPI_Status) :: sts(2), st
  integer, allocatable :: sc(:), sd(:), rc(:), rd(:), sb(:), rb(:)
  double precision :: x(4), t0, t1
  logical :: flag
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  t0 = MPI_Wtime()
  x = rank
  call MPI_Allreduce(MPI_IN_PLACE, x, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  n = rank * 3
  call MPI_Bcast(n, 1, MPI_INTEGER, nprocs - 1, MPI_COMM_WORLD)
  allocate(sc(nprocs), sd(nprocs), rc(nprocs), rd(nprocs), sb(nprocs * nprocs), rb(nprocs * nprocs))
  do i = 1, nprocs
    sc(i) = i
    rc(i) = rank + 1
    sd(i) = (i - 1) * nprocs
    rd(i) = (i - 1) * nprocs
  end do
  sb = rank
  rb = -1
  call MPI_Alltoallv(sb, sc, sd, MPI_INTEGER, rb, rc, rd, MPI_INTEGER, MPI_COMM_WORLD)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub)
  ! a test loop and a testany loop (LOGICAL flags: pmpi_test_, pmpi_testany_)
  call MPI_Irecv(v, 1, MPI_INTEGER, mod(rank + 1, nprocs), 3, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(rank, 1, MPI_INTEGER, mod(rank - 1 + nprocs, nprocs), 3, MPI_COMM_WORLD, reqs(2))
  flag = .false.
  do while (.not. flag)
    call MPI_Test(reqs(1), flag, st)
  end do
  call MPI_Wait(reqs(2), MPI_STATUS_IGNORE)
  call MPI_Irecv(i, 1, MPI_INTEGER, mod(rank + 1, nprocs), 4, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(rank, 1, MPI_INTEGER, mod(rank - 1 + nprocs, nprocs), 4, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, sts)
  call MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, flag, st)
  call MPI_Cart_create(MPI_COMM_WORLD, 1, [nprocs], [.true.], .false., cart)
  call MPI_Cart_shift(cart, 0, 1, left, right)
  call MPI_Irecv(idx, 1, MPI_INTEGER, left, 5, cart, reqs(1))
  call MPI_Send(rank, 1, MPI_INTEGER, right, 5, cart)
  flag = .false.
  do while (.not. flag)
    call MPI_Testany(1, reqs(1:1), n, flag, st)
  end do
  call MPI_Barrier(sub)
  call MPI_Comm_free(sub)
  call MPI_Comm_free(cart)
  t1 = MPI_Wtime()
  print "(I0,1X,F6.1,5(1X,I0),1X,L1)", rank, x(1), sum(rb, mask=rb>=0), v, i, sts(1)%MPI_SOURCE, idx, flag
  if (rank == 0) print "(A,L1)", "time_positive=", t1 > t0
  call MPI_Finalize()
end program
