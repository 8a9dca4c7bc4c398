#!/usr/bin/python3
"""Check the sizes the codebase keeps to (CONTRIBUTING.md, "Files a reader can hold"): no C source or header over
MAX_FILE_LINES lines, no C function over MAX_FUNCTION_LINES lines (from the line of its name to
its closing brace).

Files and functions over the limits today are listed in KNOWN below. The check fails on any
other file or function over a limit, and on a listed one that no longer is (delete it from
KNOWN), so the list can only shrink.

Usage: check_sizes.py [--all] [SOURCE_DIR]
  --all  print every file and function over the limits (KNOWN or not), then check
(exit 0: the sizes hold up to KNOWN; 1: they do not)
"""
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 120
FOLDERS = ("common", "libmpisim", "netmodel", "replay", "cli", "apps", "tests")
SUFFIXES = (".c", ".h", ".cc", ".cpp")

# "path" (file) or "path:function" entries over a limit today; shrink it, never grow it
KNOWN = set()

CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
NOT_A_NAME = {"__attribute__", "if", "while", "for", "switch", "return", "sizeof"}


def function_name(head):
    """The name a file-level declaration `head` (the text before a `{`) defines as a function,
    or None: the last name at parenthesis depth 0 followed by `(`, the head ending in `)`."""
    if not head.rstrip().endswith(")") or re.search(r"=\s*$", head):
        return None
    best = None
    for m in CALL.finditer(head):
        if m.group(1) not in NOT_A_NAME and head.count("(", 0, m.start()) == head.count(")", 0, m.start()):
            best = m
    return best


def strip_code(text):
    """The text with comments, strings and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of each function defined at file level."""
    code = strip_code(text)
    # preprocessor lines blanked so that their braces and parentheses do not count
    code = re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code)
    found = []
    depth = 0
    start = 0  # where the current file-level declaration began
    i = 0
    while i < len(code):
        c = code[i]
        if c == "{":
            if depth == 0:
                head = code[start:i]
                m = function_name(head)
                if m:
                    name = m.group(1)
                    first = code.count("\n", 0, start + m.start()) + 1
                    found.append([name, first, None, i])
                else:
                    found.append([None, 0, None, i])
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if found and found[-1][2] is None:
                    found[-1][2] = code.count("\n", 0, i) + 1
                start = i + 1
        elif c == ";" and depth == 0:
            start = i + 1
        i += 1
    return [(name, first, last) for name, first, last, _ in found if name and last]


def sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for top in FOLDERS:
            for d, _, files in os.walk(os.path.join(root, top)):
                out += [os.path.relpath(os.path.join(d, f), root) for f in files]
    return sorted(p for p in out if p.split("/")[0] in FOLDERS and p.endswith(SUFFIXES)
                  and os.path.isfile(os.path.join(root, p)))


def over_limits(root):
    """{entry: description} of every file and function over a limit."""
    over = {}
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.count("\n")
        if lines > MAX_FILE_LINES:
            over[path] = "%d lines (limit %d)" % (lines, MAX_FILE_LINES)
        if not path.endswith(".h"):
            for name, first, last in functions(text):
                if last - first + 1 > MAX_FUNCTION_LINES:
                    over["%s:%s" % (path, name)] = "%d lines at %d (limit %d)" % (
                        last - first + 1, first, MAX_FUNCTION_LINES)
    return over


def main(argv):
    args = [a for a in argv[1:] if a != "--all"]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    over = over_limits(root)
    if "--all" in argv:
        for entry in sorted(over):
            print("%s: %s%s" % (entry, over[entry], "" if entry in KNOWN else "  (new)"))
    bad = 0
    for entry in sorted(set(over) - KNOWN):
        print("over the limit, not in KNOWN: %s: %s" % (entry, over[entry]))
        bad = 1
    for entry in sorted(KNOWN - set(over)):
        print("in KNOWN but within the limits now (delete it from KNOWN): %s" % entry)
        bad = 1
    if not bad:
        print("sizes: %d files and functions over the limits, all in KNOWN" % len(over))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
