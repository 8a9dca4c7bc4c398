#!/usr/bin/python3
"""Fortran programs (mpif.h, the mpi module, mpi_f08)."""
# the helpers, the build and the scratch directory (BUILD, SRC, WORK, MPISIM), and the modules they use
from cosim_common import *  # noqa: F401,F403


def test_fortran_pingpong():
    """mpif.h and mpi_f08 ping-pongs: Open MPI's Fortran bindings call PMPI_* directly, so only
    the shim's own Fortran entry points make them visible; timing must equal the C closed form."""
    checked = 0
    for name in ("fpingpong_h", "fpingpong_f08"):
        exe = mpifort(os.path.join(SRC, "tests/shim/progs", name + ".f90"), os.path.join(WORK, name))
        p, rep = mpisim_run(2, [exe], sets=["network.engine=analytic"])
        rows = re.findall(r"^(\d+),\s*([0-9.Ee+-]+)\s*$", p.stdout, re.M)
        if len(rows) != 5:
            sys.exit(f"FAILED: {name}: expected 5 sizes\n{p.stdout}\n{p.stderr}")
        for b, half in rows:
            got, want = round(float(half) * 1e12), closed_form_half_rtt(rep, int(b))
            if got != want:
                sys.exit(f"FAILED: {name} {b} B: half round trip {got} ps, closed form {want} ps")
            checked += 1
        calls = sum(r["calls"] for r in rep["ranks"])
        if calls < 2 * 5 * 7:
            sys.exit(f"FAILED: {name}: the report counts only {calls} MPI calls")
        # MPI_Wtime through the Fortran binding is attributed to the program, as the other calls
        wsites = [c["site"] for c in rep["callsites"] if c["call"] == "MPI_Wtime"]
        if not wsites or not all(w.startswith("MAIN__") for w in wsites):
            sys.exit(f"FAILED: {name}: MPI_Wtime's call sites {wsites} do not name the Fortran main program")
    print(f"Fortran ping-pong (mpif.h and mpi_f08): {checked} size/binding pairs equal the C closed form "
          "to the picosecond")


def test_fortran_coverage():
    exe = mpifort(os.path.join(SRC, "tests/shim/progs/fcoverage.f90"), os.path.join(WORK, "fcoverage"))
    for n, _, rep, _ in same_answers(exe, ((2, "none"), (3, "cpu"), (4, "none"))):
        if rep["summary"]["msgs_sent"] == 0:
            sys.exit(f"FAILED: nothing reached the model: {rep['summary']}")
        sites = {c["call"]: c["site"] for c in rep["callsites"]}
        for call in ("MPI_Waitany", "MPI_Alltoallw", "MPI_Cart_create", "MPI_Startall"):
            if not sites.get(call, "").startswith("MAIN__"):
                sys.exit(f"FAILED: {call} should be attributed to the Fortran main program, got {sites.get(call)}")
    print("Fortran (use mpi): handles, statuses, 1-based indices, MPI_IN_PLACE, STATUS(ES)_IGNORE, request "
          "arrays, persistent requests, alltoallw, split/cart: same answers natively and under mpisim with 2, 3, "
          "4 ranks; call sites name the Fortran program (" + sites["MPI_Waitany"] + ")")


def test_fortran_f08_coverage():
    """mpi_f08: collectives, split, tests and Iprobe (which Open MPI's f08 layer routes through
    pmpi_*_), Cartesian communicators: native answers, and every call reached the model."""
    exe = mpifort(os.path.join(SRC, "tests/shim/progs/fcoverage_f08.f90"), os.path.join(WORK, "fcoverage_f08"))
    for n, _, rep, _ in same_answers(exe, ((2, "cpu"), (3, "cpu")), ordered=False):
        calls = {c["call"] for c in rep["callsites"]}
        missing = {"MPI_Test", "MPI_Testany", "MPI_Iprobe", "MPI_Cart_create", "MPI_Alltoallv", "MPI_Wtime"} - calls
        if missing:
            sys.exit(f"FAILED: these mpi_f08 calls bypassed the shim: {sorted(missing)}")
    print("mpi_f08: same answers natively and under mpisim with 2 and 3 ranks; calls seen:", sorted(calls))


def test_fortran_unmodelled():
    """The Fortran binding of an unmodelled call stops the run, or forwards to Open MPI's own."""
    exe = mpifort(os.path.join(SRC, "tests/shim/progs/funmodelled.f90"), os.path.join(WORK, "funmodelled"))
    check_unmodelled_port(exe, "Fortran")


if __name__ == "__main__":
    run_named(globals())
