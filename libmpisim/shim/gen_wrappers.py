#!/usr/bin/python3
"""Generate the PMPI wrappers of libmpisim.so from one specification.

Reads the prototypes of the installed <mpi.h> (preprocessed by the MPI compiler wrapper, so
exactly what a program sees) and mpi_calls.spec, which gives each MPI_* function a class.
Writes:
  wrappers_gen.c  one wrapper per wrapped function (re-entry guard, clock, handler or PMPI)
  wrappers_gen.h  the function-id enum and the handler prototypes the shim must define
  ms_fn_names_gen.h, ms_fn_names_gen.c
                  the names by id (ms_fn_names), without <mpi.h>: compiled into the wire
                  library (libmpisim/wire), for the shim, the model server's reports and traces
  fortran_gen.c   the Fortran bindings of the same functions (gen_fortran.py)
Usage: gen_wrappers.py SPEC PREPROCESSED_MPI_H OUT_C OUT_H OUT_NAMES_H OUT_NAMES_C OUT_FORTRAN_C
"""
import fnmatch
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fortran  # noqa: E402


# Functions and entries the shim handles by hand, after the generated wrappers (ids in this order,
# appended: traces name their functions, and old ids keep their numbers): (id, name, comment).
EXTRA_FNS = [
    ('Init', 'MPI_Init', ''), ('Init_thread', 'MPI_Init_thread', ''), ('Finalize', 'MPI_Finalize', ''),
    ('Abort', 'MPI_Abort', ''), ('Wtime', 'MPI_Wtime', ''), ('Wtick', 'MPI_Wtick', ''), ('Pcontrol', 'MPI_Pcontrol', ''),
    ('Pcontrol_region', 'MPI_Pcontrol region', 'not a function: the call-site entry of MPI_Pcontrol regions'),
    ('clock_gettime', 'clock_gettime', "the program's own clock reads, answered in virtual time (program_clocks.c)"),
    ('gettimeofday', 'gettimeofday', ''),
]


def read_spec(path):
    rules = []
    for lineno, line in enumerate(open(path), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        cls = parts[1] if len(parts) > 1 else None
        if cls not in ('local', 'modelled', 'special', 'unmodelled', 'passthrough'):
            sys.exit(f"{path}:{lineno}: expected a class (local, modelled, special, unmodelled, passthrough), got {cls!r}")
        if cls == 'modelled' and (len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] != '+request')):
            sys.exit(f"{path}:{lineno}: 'modelled' needs a handler name, optionally followed by +request")
        handler = (parts[2], len(parts) == 4) if cls == 'modelled' else None
        rules.append((parts[0], cls, handler, lineno))
    return rules


def classify(rules, name):
    for pat, cls, handler, _ in rules:
        if fnmatch.fnmatchcase(name, pat):
            return cls, handler
    return 'unmodelled', None


def split_params(text):
    out, depth, cur = [], 0, ''
    for ch in text:
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
            continue
        if ch in '([':
            depth += 1
        elif ch in ')]':
            depth -= 1
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_name(p):
    # the name is the last identifier outside brackets: "int ranges[][3]" -> ranges
    q = re.sub(r'\[[^\]]*\]', '', p).strip()
    m = re.search(r'([A-Za-z_][A-Za-z_0-9]*)\s*$', q)
    return m.group(1) if m else None


def read_prototypes(path):
    text = open(path).read()
    text = re.sub(r'\s+', ' ', text)
    protos = {}
    for decl in text.split(';'):
        decl = decl.replace('__attribute__((visibility("default")))', '').strip()
        decl = re.sub(r'__attribute__\s*\(\(.*?\)\)', '', decl).strip()
        m = re.match(r'^(?:extern\s+)?(int|double)\s+(MPI_[A-Za-z0-9_]+)\s*\((.*)\)\s*$', decl)
        if not m:
            continue
        ret, name, params = m.groups()
        plist = [] if params.strip() in ('', 'void') else split_params(params)
        names = [param_name(p) for p in plist]
        if any(n is None for n in names) or any('...' in p for p in plist):
            continue
        protos[name] = (ret, plist, names)
    return protos


def has_request(plist, names):
    """Does the call end with the MPI_Request * its nonblocking form returns?"""
    return bool(plist) and names[-1] == 'request' and re.sub(r'\s+', '', plist[-1]).startswith('MPI_Request*')


def main():
    spec, mpih, out_c, out_h, out_names, out_names_c, out_f = sys.argv[1:8]
    rules = read_spec(spec)
    protos = read_prototypes(mpih)
    wrapped = []
    for name in sorted(protos):
        ret, plist, names = protos[name]
        cls, handler = classify(rules, name)
        if cls in ('local', 'special'):
            continue
        if ret != 'int':
            continue  # non-int functions are conversions and clocks: local or special
        wrapped.append((name, cls, handler, plist, names))
    # every modelled entry in the spec must exist in mpi.h, or the spec is stale
    for pat, cls, handler, lineno in rules:
        if cls == 'modelled' and pat not in protos:
            sys.exit(f"{spec}:{lineno}: {pat} is not declared by this <mpi.h>")

    h = ['/* Generated by gen_wrappers.py from mpi_calls.spec: do not edit. */',
         '#ifndef MS_WRAPPERS_GEN_H', '#define MS_WRAPPERS_GEN_H', '#include <mpi.h>',
         '#include "ms_fn_names_gen.h"   /* ms_fn_names, by these ids */', '',
         'typedef enum {']
    h += [f'    MS_FN_{n},' for n, *_ in wrapped]
    h += [f'    MS_FN_{ident},' + (f'   /* {why} */' if why else '') for ident, _, why in EXTRA_FNS]
    h += ['    MS_FN_COUNT', '} ms_fn_id;', '',
          '_Static_assert(MS_FN_COUNT == MS_FN_NAME_COUNT, "ms_fn_names_gen.h names these ids");',
          '/* every generated wrapper, for the warm path\'s probe (warm_path.c) */',
          f'#define MS_WRAPPER_COUNT {len(wrapped)}',
          'extern void (*const ms_wrapper_entries[MS_WRAPPER_COUNT])(void);', '']
    # `modelled H +request`: the blocking call and its nonblocking form share ms_h_H, which takes
    # the request (NULL for the blocking call) and the function id last
    shared = {}
    for n, cls, handler, plist, names in wrapped:
        if cls != 'modelled':
            continue
        name, plus = handler
        if not plus:
            h.append(f'int ms_h_{name}({", ".join(plist) if plist else "void"});')
            continue
        base = plist[:-1] if has_request(plist, names) else plist
        # the types must agree; the names may not (Open MPI's MPI_Rput says target_cout)
        def types(ps):
            return [re.sub(r'\s+', ' ', re.sub(r'\b' + re.escape(param_name(x)) + r'\b', '', x)).strip() for x in ps]
        sig = types(base)
        if name in shared and types(shared[name]) != sig:
            sys.exit(f"{spec}: +request handler {name}: {n} has other parameters than its partner")
        shared[name] = base
    for name, base in shared.items():
        h.append(f'int ms_h_{name}({", ".join(base + ["MPI_Request *request", "ms_fn_id fn"])});')
    h += ['', '#endif', '']

    c = ['/* Generated by gen_wrappers.py from mpi_calls.spec: do not edit. */',
         '#include "wrappers_gen.h"', '#include "shim.h"', '']
    for n, cls, handler, plist, names in wrapped:
        args = ', '.join(names)
        sig = f'int {n}({", ".join(plist) if plist else "void"})'
        pn = 'P' + n
        c.append(sig)
        c.append('{')
        c.append('    uint64_t entry_tsc = ms_tsc();   /* first: the wrapper window (shim.h) */')
        c.append('    if (MS_UNLIKELY(ms_probing)) return 0;   /* the warm path\'s probe (warm_path.c) */')
        c.append(f'    if (ms_bypass()) return {pn}({args});')
        c.append(f'    ms_enter_at(MS_FN_{n}, __builtin_return_address(0), entry_tsc);')
        if cls == 'modelled' and handler[1]:
            extra = [f'MS_FN_{n}'] if has_request(plist, names) else ['NULL', f'MS_FN_{n}']
            c.append(f'    int rc = ms_h_{handler[0]}({", ".join(names + extra)});')
        elif cls == 'modelled':
            c.append(f'    int rc = ms_h_{handler[0]}({args});')
        elif cls == 'passthrough':
            c.append(f'    ms_passthrough(MS_FN_{n});')
            c.append(f'    int rc = {pn}({args});')
            c.append(f'    ms_unmodelled_done(MS_FN_{n});')
        else:
            c.append(f'    ms_unmodelled(MS_FN_{n});')
            c.append(f'    int rc = {pn}({args});')
            c.append(f'    ms_unmodelled_done(MS_FN_{n});')
        c.append(f'    ms_exit(MS_FN_{n}, rc);')
        c.append('    ms_window_exit();')
        c.append('    return rc;')
        c.append('}')
        c.append('')
    # hidden aliases: their addresses are the wrappers' own, never a program's canonical PLT entry
    # (a non-PIE program that takes &MPI_Send makes that MPI_Send's address for everyone else)
    c += [f'extern __typeof__({n}) ms_entry_{n} __attribute__((alias("{n}"), visibility("hidden")));'
          for n, *_ in wrapped]
    c.append('void (*const ms_wrapper_entries[MS_WRAPPER_COUNT])(void) = {')
    c += [f'    (void (*)(void))(void *)ms_entry_{n},' for n, *_ in wrapped]
    c += ['};', '']
    # the names by id, with no <mpi.h>: the wire library's (the model server and traces have no MPI)
    count = len(wrapped) + len(EXTRA_FNS)
    names = ['/* Generated by gen_wrappers.py from mpi_calls.spec: do not edit. No <mpi.h>. */',
             '#ifndef MS_FN_NAMES_GEN_H', '#define MS_FN_NAMES_GEN_H', '',
             '#ifdef __cplusplus', 'extern "C" {', '#endif', '',
             '/* The MPI function names by id (the shim\'s ms_fn_id, wrappers_gen.h); ids are per build. */',
             f'#define MS_FN_NAME_COUNT {count}',
             'extern const char *const ms_fn_names[MS_FN_NAME_COUNT];', '',
             '#ifdef __cplusplus', '}', '#endif', '#endif', '']
    names_c = ['/* Generated by gen_wrappers.py from mpi_calls.spec: do not edit. No <mpi.h>. */',
               '#include "ms_fn_names_gen.h"', '',
               'const char *const ms_fn_names[MS_FN_NAME_COUNT] = {']
    names_c += [f'    "{n}",' for n, *_ in wrapped]
    names_c += [f'    "{name}",' for _, name, _ in EXTRA_FNS] + ['};', '']
    open(out_names, 'w').write('\n'.join(names))
    open(out_names_c, 'w').write('\n'.join(names_c))
    ftext, _ = gen_fortran.emit(protos, wrapped)
    open(out_f, 'w').write(ftext + '\n')
    open(out_c, 'w').write('\n'.join(c))
    open(out_h, 'w').write('\n'.join(h))


if __name__ == '__main__':
    main()
