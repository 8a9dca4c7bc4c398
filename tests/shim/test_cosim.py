#!/usr/bin/python3
"""Integration tests of the co-simulation: real programs under `mpisim run` with the shim.

Usage: test_cosim.py BUILD_DIR SOURCE_DIR TEST_NAME
Each test prints what it checked and exits 0 on success. The tests are in cosim_*.py by topic
(cosim_runs, cosim_failures, cosim_clocks, cosim_fortran, cosim_threads, cosim_rma), the helpers
they share in cosim_common.py; a new test is a `def test_<name>()` in its topic's file and
`<name>` in `_cosim_tests` of CMakeLists.txt.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cosim_common  # noqa: E402
import cosim_clocks  # noqa: E402
import cosim_failures  # noqa: E402
import cosim_fortran  # noqa: E402
import cosim_rma  # noqa: E402
import cosim_runs  # noqa: E402
import cosim_threads  # noqa: E402

TESTS = {}
for module in (cosim_runs, cosim_failures, cosim_clocks, cosim_fortran, cosim_threads, cosim_rma):
    TESTS.update({k[5:]: v for k, v in vars(module).items() if k.startswith("test_")})
NAME = cosim_common.NAME
if NAME not in TESTS:
    sys.exit(f"unknown test {NAME}; known: {', '.join(TESTS)}")
TESTS[NAME]()
