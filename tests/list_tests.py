#!/usr/bin/python3
"""Print the test names of a Python test file, one a line: its top-level `def test_NAME`
functions, NAME without the prefix. The file is read, never run, so that CMake can list the
tests at configure time (cmake/python_tests.cmake) without building anything or touching a
temporary directory; the file itself runs a test by that name (its TESTS table)."""
import ast
import sys

if len(sys.argv) != 2:
    sys.exit("usage: list_tests.py FILE.py")
with open(sys.argv[1], encoding="utf-8") as f:
    tree = ast.parse(f.read(), sys.argv[1])
names = [n.name[len("test_"):] for n in tree.body
         if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
if not names:
    sys.exit(f"{sys.argv[1]}: no top-level def test_NAME")
print("\n".join(names))
