#!/usr/bin/python3
"""An ordinary mpi4py program (Debian's python3-mpi4py, python3-numpy): nothing in it knows mpisim.

Point-to-point with pickled objects (send/recv, isend/irecv, sendrecv) and with buffers (numpy:
Send/Recv, Isend/Irecv, Sendrecv), a wildcard receive (ANY_SOURCE, ANY_TAG), collectives on
objects and on buffers, and a communicator split. Every rank checks what it received against
what it expects; rank 0 prints the answers (time-independent, in a fixed order) and the last
line `check=ok` (or `check=FAIL errors=N`, exit status 1). Needs at least 2 processes.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
errors = 0
lines = []  # answers, gathered to rank 0


def expect(what, got, want):
    global errors
    if isinstance(want, np.ndarray):
        ok = isinstance(got, np.ndarray) and got.shape == want.shape and bool(np.array_equal(got, want))
    else:
        ok = got == want
    if not ok:
        errors += 1
        sys.stderr.write(f"prog.py: rank {rank}: {what}: got {got!r}, want {want!r}\n")


def note(s):
    lines.append(f"rank {rank}: {s}")


if size < 2:
    sys.exit("prog.py: needs at least 2 processes")
right, left = (rank + 1) % size, (rank - 1) % size

# --- pickled objects, blocking: a ring of dicts
obj = {"from": rank, "payload": list(range(rank + 3)), "name": f"r{rank}"}
if rank % 2 == 0:
    comm.send(obj, dest=right, tag=11)
    got = comm.recv(source=left, tag=11)
else:
    got = comm.recv(source=left, tag=11)
    comm.send(obj, dest=right, tag=11)
expect("ring dict", got, {"from": left, "payload": list(range(left + 3)), "name": f"r{left}"})
note(f"ring dict from {got['from']} len {len(got['payload'])}")

# --- pickled objects, nonblocking, both directions at once
reqs = [comm.isend(("tuple", rank, [rank] * 4), dest=right, tag=12),
        comm.isend({"x": rank * 1.5}, dest=left, tag=13)]
a = comm.recv(source=left, tag=12)
r = comm.irecv(source=right, tag=13)
b = r.wait()
MPI.Request.Waitall(reqs)
expect("isend tuple", a, ("tuple", left, [left] * 4))
expect("irecv dict", b, {"x": right * 1.5})
note(f"nonblocking objects {a[1]} {b['x']}")

# --- sendrecv of objects, a large one (several pickle frames of data)
big = {"rank": rank, "data": bytes((rank + i) % 256 for i in range(100000))}
got = comm.sendrecv(big, dest=right, sendtag=14, source=left, recvtag=14)
expect("sendrecv big", got["data"], bytes((left + i) % 256 for i in range(100000)))
note(f"sendrecv big from {got['rank']} {len(got['data'])} bytes")

# --- buffers: numpy arrays, blocking and nonblocking, small and large (rendezvous)
for n in (10, 5000, 100000):
    sbuf = np.arange(n, dtype=np.float64) + rank * 1000.0
    rbuf = np.empty(n, dtype=np.float64)
    if rank % 2 == 0:
        comm.Send([sbuf, MPI.DOUBLE], dest=right, tag=20)
        comm.Recv([rbuf, MPI.DOUBLE], source=left, tag=20)
    else:
        comm.Recv([rbuf, MPI.DOUBLE], source=left, tag=20)
        comm.Send([sbuf, MPI.DOUBLE], dest=right, tag=20)
    expect(f"Send/Recv {n}", rbuf, np.arange(n, dtype=np.float64) + left * 1000.0)
    r1 = comm.Irecv(rbuf, source=right, tag=21)
    r2 = comm.Isend(sbuf, dest=left, tag=21)
    MPI.Request.Waitall([r1, r2])
    expect(f"Isend/Irecv {n}", rbuf, np.arange(n, dtype=np.float64) + right * 1000.0)
    note(f"buffers {n}: sum {rbuf.sum():.1f}")
ibuf = np.full(7, rank, dtype=np.int32)
obuf = np.empty(7, dtype=np.int32)
st = MPI.Status()
comm.Sendrecv(ibuf, dest=right, sendtag=22, recvbuf=obuf, source=left, recvtag=22, status=st)
expect("Sendrecv", obuf, np.full(7, left, dtype=np.int32))
expect("Sendrecv status", (st.Get_source(), st.Get_tag(), st.Get_count(MPI.INT)), (left, 22, 7))

# --- wildcard receives: rank 0 takes one message from every other rank in arrival order
# (objects with ANY_TAG on comm, buffers on a duplicate so that ANY_TAG cannot take those)
comm2 = comm.Dup()
if rank == 0:
    seen = []
    for _ in range(size - 1):
        st = MPI.Status()
        msg = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
        expect("wildcard status", (st.Get_source(), st.Get_tag()), (msg[0], 30 + msg[0]))
        seen.append(msg)
    note("wildcard " + " ".join(f"{s}:{v}" for s, v in sorted(seen)))  # arrival order may vary
    expect("wildcard senders", sorted(s for s, _ in seen), list(range(1, size)))
    # and a buffer wildcard
    for _ in range(size - 1):
        st = MPI.Status()
        buf = np.empty(3, dtype=np.int64)
        comm2.Recv(buf, source=MPI.ANY_SOURCE, tag=31, status=st)
        expect("wildcard buffer", buf, np.full(3, st.Get_source() * 7, dtype=np.int64))
else:
    comm.send((rank, rank * rank), dest=0, tag=30 + rank)
    comm2.Send(np.full(3, rank * 7, dtype=np.int64), dest=0, tag=31)
comm2.Free()

# --- collectives on objects
cfg = comm.bcast({"iters": 3, "name": "bcast-obj"} if rank == 0 else None, root=0)
expect("bcast", cfg, {"iters": 3, "name": "bcast-obj"})
part = comm.scatter([[i, i * i] for i in range(size)] if rank == 0 else None, root=0)
expect("scatter", part, [rank, rank * rank])
allg = comm.gather(part, root=0)
if rank == 0:
    expect("gather", allg, [[i, i * i] for i in range(size)])
expect("allgather", comm.allgather(rank * 3), [i * 3 for i in range(size)])
expect("allreduce obj", comm.allreduce(rank + 1, op=MPI.SUM), size * (size + 1) // 2)
expect("reduce obj max", comm.reduce(rank, op=MPI.MAX, root=0), size - 1 if rank == 0 else None)
expect("alltoall obj", comm.alltoall([(rank, j) for j in range(size)]), [(j, rank) for j in range(size)])
comm.barrier()

# --- collectives on buffers
x = np.arange(1000, dtype=np.float64) * (rank + 1)
y = np.empty_like(x)
comm.Allreduce(x, y, op=MPI.SUM)
expect("Allreduce", y, np.arange(1000, dtype=np.float64) * (size * (size + 1) // 2))
z = np.empty_like(x) if rank == 0 else None
comm.Reduce(x, z, op=MPI.SUM, root=0)
if rank == 0:
    expect("Reduce", z, y)
b = np.arange(100, dtype=np.int32) if rank == 0 else np.zeros(100, dtype=np.int32)
comm.Bcast(b, root=0)
expect("Bcast", b, np.arange(100, dtype=np.int32))
sendall = np.array([rank * 100 + j for j in range(size)], dtype=np.int32)
recvall = np.empty(size, dtype=np.int32)
comm.Alltoall(sendall, recvall)
expect("Alltoall", recvall, np.array([j * 100 + rank for j in range(size)], dtype=np.int32))
gat = np.empty(size * 2, dtype=np.int32)
comm.Allgather(np.array([rank, -rank], dtype=np.int32), gat)
expect("Allgather", gat, np.array([v for i in range(size) for v in (i, -i)], dtype=np.int32))
note(f"Allreduce sum {y.sum():.1f}")

# --- communicator split: even and odd ranks, reversed key order
sub = comm.Split(color=rank % 2, key=-rank)
srank, ssize = sub.Get_rank(), sub.Get_size()
members = sub.allgather(rank)
want_members = sorted((r for r in range(size) if r % 2 == rank % 2), reverse=True)
expect("split members", members, want_members)
expect("split allreduce", sub.allreduce(rank, op=MPI.SUM), sum(want_members))
if ssize > 1:
    tok = sub.sendrecv(("sub", rank), dest=(srank + 1) % ssize, source=(srank - 1) % ssize)
    expect("split sendrecv", tok, ("sub", members[(srank - 1) % ssize]))
note(f"split color {rank % 2} subrank {srank}/{ssize} members {members}")
dup = sub.Dup()
expect("dup bcast", dup.bcast(members[0] if srank == 0 else None, root=0), members[0])
dup.Free()
sub.Free()

# --- answers to rank 0, printed in rank order
all_lines = comm.gather(lines, root=0)
nerr = comm.allreduce(errors, op=MPI.SUM)
if rank == 0:
    # the thread level may differ under a tool (one may grant less than asked): a comment
    print(f"# thread_level={MPI.Query_thread()}")
    print(f"procs={size}")
    for ls in all_lines:
        for l in ls:
            print(l)
    print("check=ok" if nerr == 0 else f"check=FAIL errors={nerr}")
sys.exit(0 if nerr == 0 else 1)
