#!/usr/bin/python3
"""One-sided communication through mpi4py's bindings (Debian's python3-mpi4py, python3-numpy):
nothing in it knows mpisim. mpi4py's own RMA tests are not installed with the Debian package, so
this exercises its Win API as an ordinary program would: windows from Win.Create, Win.Allocate and
Win.Create_dynamic (Attach), Put/Get/Accumulate under fences, Get_accumulate and Fetch_and_op
under locks with flushes, Rput/Rget requests, post/start/complete/wait, lock_all. Every rank checks
what it gets; rank 0 prints the answers in a fixed order and `check=ok`. Needs 2 processes or more.
(MPI_Compare_and_swap is left out: Open MPI 4.1's osc/rdma crashes on it natively.)
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
if size < 2:
    sys.exit("rma.py: needs at least 2 processes")
right, left = (rank + 1) % size, (rank - 1) % size
errors = 0
lines = []


def expect(what, got, want):
    global errors
    if not np.array_equal(got, want):
        errors += 1
        sys.stderr.write(f"rma.py: rank {rank}: {what}: got {got!r}, want {want!r}\n")


n = 1000
# --- Win.Create over a numpy array: puts to the right between fences, gets from the left
mem = np.zeros(n, dtype="i8")
win = MPI.Win.Create(mem, comm=comm)
mine = np.arange(n, dtype="i8") + 1000 * rank
win.Fence()
win.Put(mine, right)
win.Fence()
expect("put under fence", mem, np.arange(n, dtype="i8") + 1000 * left)
got = np.zeros(n, dtype="i8")
win.Fence()
win.Get(got, left)
win.Fence()
expect("get under fence", got, np.arange(n, dtype="i8") + 1000 * ((left - 1) % size))
# accumulate: everyone adds its rank into rank 0's window
win.Fence()
win.Accumulate(np.full(n, rank + 1, dtype="i8"), 0, op=MPI.SUM)
win.Fence()
if rank == 0:
    expect("accumulate under fence", mem, np.arange(n, dtype="i8") + 1000 * left + size * (size + 1) // 2)
lines.append(f"fence: put, get, accumulate of {n} int64 on {size} ranks")
win.Free()

# --- Win.Allocate: locks, flushes, fetch-and-op, get-accumulate, request forms
win = MPI.Win.Allocate(8 * n, disp_unit=8, comm=comm)
buf = np.frombuffer(win.tomemory(), dtype="i8")
win.Lock(rank)
buf[:] = 0
win.Unlock(rank)
comm.Barrier()
one, old = np.array([1], dtype="i8"), np.zeros(1, dtype="i8")
win.Lock(0, MPI.LOCK_SHARED)
for _ in range(5):
    win.Fetch_and_op([one, MPI.INT64_T], [old, MPI.INT64_T], 0, 0, MPI.SUM)
    win.Flush(0)
win.Unlock(0)
comm.Barrier()
if rank == 0:
    win.Lock(0)
    expect("fetch-and-op counter", buf[0], 5 * size)
    win.Unlock(0)
res = np.zeros(4, dtype="i8")
win.Lock(right, MPI.LOCK_EXCLUSIVE)
win.Get_accumulate([np.full(4, 10, dtype="i8"), MPI.INT64_T], [res, MPI.INT64_T], right, target=(8, 4, MPI.INT64_T),
                   op=MPI.SUM)
win.Unlock(right)
expect("get-accumulate result", res, np.zeros(4, dtype="i8"))
comm.Barrier()
win.Lock_all()
r1 = win.Rput([np.full(16, rank, dtype="i8"), MPI.INT64_T], right, target=(100, 16, MPI.INT64_T))
r1.Wait()
win.Flush_all()
got = np.zeros(16, dtype="i8")
r2 = win.Rget([got, MPI.INT64_T], right, target=(100, 16, MPI.INT64_T))
MPI.Request.Waitall([r2])
win.Unlock_all()
expect("rput then rget", got, np.full(16, rank, dtype="i8"))
# a freed request: the operation still completes at the next synchronisation
win.Lock(right, MPI.LOCK_SHARED)
r3 = win.Rput([np.full(8, rank + 50, dtype="i8"), MPI.INT64_T], right, target=(200, 8, MPI.INT64_T))
r3.Free()
win.Flush(right)
win.Unlock(right)
comm.Barrier()
win.Lock(rank)
expect("get-accumulate landed", buf[8:12], np.full(4, 10, dtype="i8"))
expect("freed rput landed", buf[200:208], np.full(8, left + 50, dtype="i8"))
win.Unlock(rank)
lines.append("locks: fetch-and-op x5 per rank, get-accumulate, rput/rget under lock_all")
win.Free()

# --- post/start/complete/wait: each rank exposes to its left, accesses its right
mem = np.zeros(64, dtype="i4")
win = MPI.Win.Create(mem, comm=comm)
g = comm.Get_group()
gl, gr = g.Incl([left]), g.Incl([right])
win.Post(gl)
win.Start(gr)
win.Put(np.full(64, rank + 7, dtype="i4"), right)
win.Complete()
win.Wait()
expect("put under post/start/complete/wait", mem, np.full(64, left + 7, dtype="i4"))
gl.Free()
gr.Free()
g.Free()
win.Free()
lines.append("pscw: put to the right neighbour")

# --- a dynamic window: attach a buffer, publish its address, put into it
win = MPI.Win.Create_dynamic(comm=comm)
mem = np.zeros(32, dtype="i8")
win.Attach(mem)
addr = MPI.Get_address(mem)
addrs = comm.allgather(addr)
win.Fence()
win.Put([np.full(32, rank + 100, dtype="i8"), MPI.INT64_T], right, target=(addrs[right], 32, MPI.INT64_T))
win.Fence()
expect("put into a dynamic window", mem, np.full(32, left + 100, dtype="i8"))
win.Detach(mem)
win.Free()
lines.append("dynamic: put into an attached buffer")

errors = comm.allreduce(errors)
if rank == 0:
    for line in lines:
        print(line)
    print("check=ok" if errors == 0 else f"check=FAIL errors={errors}")
sys.exit(1 if errors else 0)
