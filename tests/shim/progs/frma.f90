! One-sided communication from Fortran (use mpi): a window of integers, puts to the right neighbour
! under fences, gets and an accumulate under locks, a fetch-and-op and a get-accumulate under a
! lock_all with flushes, post/start/complete/wait. Rank 0 prints what it checked (the same lines
! natively and under mpisim).
program frma
  use mpi
  implicit none
  integer, parameter :: n = 64
  integer :: ierr, rank, nprocs, win, right, left, i, bad, group, wgroup, total
  integer :: buf(n), mine(n), one, old
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  buf = 0
  wsize = n * 4
  call MPI_Win_create(buf, wsize, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  bad = 0
  do i = 1, n
    mine(i) = rank * 1000 + i
  end do
  ! put to the right neighbour between fences
  disp = 0
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(mine, n, MPI_INTEGER, right, disp, n, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  do i = 1, n
    if (buf(i) /= left * 1000 + i) bad = bad + 1
  end do
  ! get the left neighbour's window under a shared lock, accumulate into it under an exclusive one
  call MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win, ierr)
  call MPI_Get(mine, n, MPI_INTEGER, left, disp, n, MPI_INTEGER, win, ierr)
  call MPI_Win_unlock(left, win, ierr)
  do i = 1, n
    if (mine(i) /= mod(left + nprocs - 1, nprocs) * 1000 + i) bad = bad + 1
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  one = 1
  call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win, ierr)
  call MPI_Accumulate(one, 1, MPI_INTEGER, 0, disp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_unlock(0, win, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  ! a fetch-and-op on rank 0's second element, with flushes
  call MPI_Win_lock_all(0, win, ierr)
  disp = 1
  call MPI_Fetch_and_op(one, old, MPI_INTEGER, 0, disp, MPI_SUM, win, ierr)
  call MPI_Win_flush(0, win, ierr)
  call MPI_Win_unlock_all(win, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win, ierr)
    total = buf(1) - (nprocs - 1) * 1000 - 1
    if (total /= nprocs) bad = bad + 1
    if (buf(2) - ((nprocs - 1) * 1000 + 2) /= nprocs) bad = bad + 1
    call MPI_Win_unlock(0, win, ierr)
  end if
  ! post/start/complete/wait: every rank exposes its window to its left neighbour, puts to the right
  call MPI_Comm_group(MPI_COMM_WORLD, wgroup, ierr)
  call MPI_Group_incl(wgroup, 1, [left], group, ierr)
  call MPI_Win_post(group, 0, win, ierr)
  call MPI_Group_free(group, ierr)
  call MPI_Group_incl(wgroup, 1, [right], group, ierr)
  call MPI_Win_start(group, 0, win, ierr)
  disp = 0
  mine = rank + 7
  call MPI_Put(mine, n, MPI_INTEGER, right, disp, n, MPI_INTEGER, win, ierr)
  call MPI_Win_complete(win, ierr)
  call MPI_Win_wait(win, ierr)
  do i = 1, n
    if (buf(i) /= left + 7) bad = bad + 1
  end do
  call MPI_Group_free(group, ierr)
  call MPI_Group_free(wgroup, ierr)
  call MPI_Win_free(win, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(A,I0)', 'ranks=', nprocs
    if (bad == 0) then
      print '(A)', 'check=ok'
    else
      print '(A,I0)', 'check=FAIL bad=', bad
    end if
  end if
  call MPI_Finalize(ierr)
end program
