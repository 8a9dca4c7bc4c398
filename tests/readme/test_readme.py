#!/usr/bin/python3
"""Every command block of README.md (```sh) runs as written, from a scratch copy of the checkout.

Usage: test_readme.py BUILD_DIR SOURCE_DIR

The scratch copy holds the checkout's tracked files (git ls-files: what a fresh clone has) and a
build/ whose entries are links to BUILD_DIR's, so that `build/bin/mpisim` is this build and what
a command writes under build/ stays in the scratch copy. Each block runs as one bash script (set
-e: every command must succeed), from the copy's top, with HOME a scratch directory (the Install
block installs under $HOME). Afterwards the copy holds no file outside build/ that the checkout
did not: the examples leave nothing in the checkout.

Two commands cannot run in a test as written: scripts/main.sh is the whole main job (250 runs,
minutes) and scripts/test.sh the whole suite, this test with it. They run from the checkout
itself (a scratch copy would need a build of its own), set-up and all: main.sh with a small grid
(its arguments go to the study), test.sh with --help (its arguments go to ctest).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import progress_run  # noqa: E402

BUILD, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
WORK = tempfile.mkdtemp(prefix="mpisim-readme-")
COPY, HOME = os.path.join(WORK, "checkout"), os.path.join(WORK, "home")
# the scripts' stand-in arguments (see above)
SCRIPT_ARGS = {"scripts/main.sh": ["--procs", "1,2", "--sizes", "32", "--runs", "1", "--out",
                                   os.path.join(WORK, "main-speedup")],
               "scripts/test.sh": ["--help"]}


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)
    print("ok:", what)


def blocks(text):
    """The ```sh blocks of the README: (first line number, text)."""
    out, cur, start = [], None, 0
    for i, line in enumerate(text.splitlines(), 1):
        if cur is None and re.match(r"^```(sh|bash|shell)\s*$", line):
            cur, start = [], i + 1
        elif cur is not None and line.startswith("```"):
            out.append((start, "\n".join(cur)))
            cur = None
        elif cur is not None:
            cur.append(line)
    return out


def scratch_copy():
    files = subprocess.run(["git", "-C", SRC, "ls-files", "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src, dst = os.path.join(SRC, rel), os.path.join(COPY, rel)
        if not os.path.lexists(src):
            continue   # deleted in the working tree
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    os.makedirs(os.path.join(COPY, "build"))
    for e in os.listdir(BUILD):
        os.symlink(os.path.join(BUILD, e), os.path.join(COPY, "build", e))
    os.makedirs(HOME)


def tree(top, skip=()):
    out = set()
    for d, dirs, fs in os.walk(top):
        rel = os.path.relpath(d, top)
        if rel.split(os.sep)[0] in skip:
            dirs[:] = []
            continue
        out |= {os.path.normpath(os.path.join(rel, f)) for f in fs}
    return out


def untracked(top):
    p = subprocess.run(["git", "-C", top, "status", "--porcelain", "--untracked-files=all"],
                       capture_output=True, text=True, check=True)
    return {l[3:] for l in p.stdout.splitlines() if l.startswith("??")}


def main():
    text = open(os.path.join(SRC, "README.md")).read()
    found = blocks(text)
    check(len(found) >= 4, f"README.md has its command blocks ({len(found)})")
    scratch_copy()
    before, src_before = tree(COPY, skip=("build",)), untracked(SRC)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPISIM_")}
    env.update(HOME=HOME, MPISIM_BUILD=BUILD, PAGER="cat", MANPAGER="cat")
    outputs = []
    for line_no, block in found:
        cmds = [l for l in block.splitlines() if l.strip() and not l.strip().startswith("#")]
        scripts = [c for c in cmds if c.split()[0] in SCRIPT_ARGS]
        if scripts:   # from the checkout itself, with the stand-in arguments
            check(len(scripts) == len(cmds), f"README.md:{line_no}: a block of the scripts holds only them")
            for c in cmds:
                words = c.split("#")[0].split()
                p = progress_run.run(words + SCRIPT_ARGS[words[0]], cwd=SRC, env=env, idle_limit=120, wall_limit=400)
                check(p.returncode == 0, f"README.md:{line_no}: {c.strip()} (from the checkout, with "
                      f"{' '.join(SCRIPT_ARGS[words[0]])}) exits 0" +
                      ("" if p.returncode == 0 else f": {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"))
                outputs.append((c, p.stdout))
            continue
        p = progress_run.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=COPY, env=env, idle_limit=120,
                             wall_limit=400)
        check(p.returncode == 0, f"README.md:{line_no}: the block of {len(cmds)} commands runs as written" +
              ("" if p.returncode == 0 else f": exit {p.returncode}\n{block}\nstdout:\n{p.stdout[-2000:]}\n"
                                            f"stderr:\n{p.stderr[-3000:]}"))
        outputs.append((block, p.stdout + p.stderr))
    left = tree(COPY, skip=("build",)) - before
    check(not left, f"the examples leave nothing in the checkout outside build/: {sorted(left)[:10]}")
    new_src = untracked(SRC) - src_before
    check(not new_src, f"the scripts leave nothing in the checkout: {sorted(new_src)[:10]}")
    # what the examples say they show
    allout = "\n".join(o for _, o in outputs)
    check(re.search(r"network\.slack_buffer = 91 B\s+\(derived: ", allout) is not None,
          "the seed002-pci example at 2.56 Gb/s runs, its slack buffer derived (config says so)")
    check("check=ok" in allout and "Matrix multiply on the modelled network" in allout,
          "the main job's table and matmul's own check are in the output")
    for f in ("run.json", "run-pci.json", "cosim.h5", "replay.json", "sweep.csv", "timeline.json"):
        check(os.path.isfile(os.path.join(COPY, "build", f)), f"build/{f} was written")


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(WORK, True)
    print("PASSED readme.commands")
