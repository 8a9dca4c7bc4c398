#!/usr/bin/python3
"""scripts/check_sizes.py: the checkout's files and functions keep to the size limits (up to its
list of known ones); the check fails on a function or a file grown past a limit (injected into a
copy) and on a known one that no longer is; its function finder is not fooled by braces in
comments, strings or preprocessor lines, nor by attributes before a name.

Usage: test_sizes.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.abspath(sys.argv[1])
CHECK = os.path.join(SRC, "scripts", "check_sizes.py")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import check_sizes  # noqa: E402


def check(cond, what, out=""):
    if not cond:
        sys.exit("FAILED: " + what + ("\n" + out if out else ""))
    print("ok:", what)


p = subprocess.run(["/usr/bin/python3", CHECK, SRC], capture_output=True, text=True)
check(p.returncode == 0, "the checkout's files and functions keep to the limits (up to KNOWN)", p.stdout + p.stderr)

body = "\n".join("    x += %d;" % i for i in range(130))
sample = (
    "/* a comment with { braces } and f(x) { */\n"
    "static const char *s = \"{ not a body (\";\n"
    "#define M(x) { x }\n"
    "struct pt { int x, y; };\n"
    "static int table[] = { 1, 2, 3 };\n"
    "static inline __attribute__((always_inline)) int small(int x)\n{\n    return x; /* } */\n}\n"
    "int big(int x)\n{\n" + body + "\n    return x;\n}\n")
found = {name: last - first + 1 for name, first, last in check_sizes.functions(sample)}
check(found.get("small") == 4 and found.get("big") == 134 and set(found) == {"small", "big"},
      "functions found by name and length, nothing else taken for one", repr(found))

work = tempfile.mkdtemp(prefix="mpisim-sizes-")
try:
    files = subprocess.run(["git", "-C", SRC, "ls-files", "*.c", "*.h", "*.cc", "*.cpp"], capture_output=True,
                           text=True, check=True).stdout.split()
    for f in files:
        if os.path.exists(os.path.join(SRC, f)):
            os.makedirs(os.path.join(work, os.path.dirname(f)), exist_ok=True)
            shutil.copy(os.path.join(SRC, f), os.path.join(work, f))
    with open(os.path.join(work, "netmodel", "src", "network.c"), "a") as fh:
        fh.write("\nint grown_too_long(int x)\n{\n" + body + "\n    return x;\n}\n")
    with open(os.path.join(work, "netmodel", "src", "huge.c"), "w") as fh:
        fh.write("".join("int v%d;\n" % i for i in range(1001)))
    subprocess.run(["git", "init", "-q", work], check=True)
    subprocess.run(["git", "-C", work, "add", "-A"], check=True)
    p = subprocess.run(["/usr/bin/python3", CHECK, work], capture_output=True, text=True)
    check(p.returncode == 1 and "netmodel/src/network.c:grown_too_long: 134 lines" in p.stdout,
          "a function grown past the limit is refused, named", p.stdout + p.stderr)
    check("netmodel/src/huge.c: 1001 lines" in p.stdout, "a file grown past the limit is refused, named", p.stdout)
    if check_sizes.KNOWN:
        gone = sorted(check_sizes.KNOWN)[0]
        path = gone.split(":")[0]
        os.remove(os.path.join(work, path))
        subprocess.run(["git", "-C", work, "add", "-A"], check=True)
        p = subprocess.run(["/usr/bin/python3", CHECK, work], capture_output=True, text=True)
        check(p.returncode == 1 and "in KNOWN but within the limits now (delete it from KNOWN): " + gone in p.stdout,
              "a known entry within the limits now must leave KNOWN", p.stdout + p.stderr)
finally:
    shutil.rmtree(work, True)
print("PASSED sizes")
