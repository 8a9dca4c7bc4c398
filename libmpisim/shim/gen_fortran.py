"""Fortran bindings of the shim, generated beside the C wrappers (imported by gen_wrappers.py).

Open MPI's Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_* directly, so a C
wrapper never sees a Fortran program. Like mpiP, the shim defines the Fortran entry points
itself, under every name Open MPI uses: mpi_send_ / mpi_send__ / mpi_send / MPI_SEND (mpif.h and
`use mpi`), ompi_send_f (which the mpi_f08 bindings call) and MPI_Send_f / MPI_Send_f08.
* modelled calls convert the Fortran handles, statuses, 1-based indices and the MPI_BOTTOM /
  MPI_IN_PLACE / MPI_STATUS(ES)_IGNORE / MPI_UNWEIGHTED sentinels, and call the C wrapper, so
  both languages share one model path;
* unmodelled and passthrough calls are classified exactly as in C and then, when the run goes
  on, forwarded unchanged to Open MPI's own Fortran binding (every Fortran argument is a
  pointer, plus one hidden length per character argument), so no conversion can be wrong.
Functions a Fortran program cannot call (absent from Open MPI's Fortran library) cost nothing:
the forwarder looks its target up at the first call.
"""
import re

HANDLES = ('MPI_Comm', 'MPI_Datatype', 'MPI_Op', 'MPI_Group', 'MPI_Info', 'MPI_Win', 'MPI_Request',
           'MPI_Message', 'MPI_Errhandler', 'MPI_File')
F2C = {h: 'PMPI_' + ('Type' if h == 'MPI_Datatype' else h[4:]) for h in HANDLES}   # PMPI_Comm_f2c ...
SMALL = 64   # arrays up to this many elements are converted on the stack


def ptype(p, name):
    t = re.sub(r'\b' + re.escape(name) + r'\b', '', p)
    return ' '.join(t.replace('*', ' * ').replace('[', ' [').split()).replace('[ ]', '[]')


def aliases(cname):
    base = cname[4:]                      # Send, Comm_split
    low = 'mpi_' + base.lower()
    # pmpi_x_: Open MPI's mpi_f08 layer calls the mpif.h profiling entry of the calls that take a
    # LOGICAL (MPI_Test*, MPI_Iprobe, MPI_Cart_create, ...), not ompi_x_f
    return [low + '_', low + '__', low, low.upper(), 'ompi_' + base.lower() + '_f',
            'MPI_' + base + '_f', 'MPI_' + base + '_f08', 'p' + low + '_']


def count_expr(fn, names):
    """Length of the request/status arrays of a completion call."""
    for n in ('count', 'incount'):
        if n in names:
            return n
    raise SystemExit(f'gen_fortran: no array length for {fn}')


def modelled(fn, plist, names):
    """Converting wrapper, or None when a parameter kind has no conversion."""
    fparams, pre, args, post = [], [], [], []
    cnt = None
    for p, n in zip(plist, names):
        t = ptype(p, n)
        if t in ('int',):
            fparams.append(f'MPI_Fint *{n}')
            args.append(f'*{n}')
        elif t in ('int *', 'int []', 'const int []'):
            fparams.append(f'MPI_Fint *{n}')
            if 'weights' in n:
                args.append(f'ms_f_weights({n})')
            else:
                args.append(n)
        elif t in ('MPI_Aint', 'MPI_Offset', 'MPI_Count'):
            fparams.append(f'{t} *{n}')
            args.append(f'*{n}')
        elif t in ('const MPI_Aint []', 'MPI_Aint []'):
            fparams.append(f'MPI_Aint *{n}')
            args.append(n)
        elif t in ('void *', 'const void *'):
            fparams.append(f'void *{n}')
            args.append(f'ms_f_buf({n})')
        elif t in HANDLES:
            fparams.append(f'MPI_Fint *{n}')
            args.append(f'{F2C[t]}_f2c(*{n})')
        elif t.endswith(' *') and t[:-2] in HANDLES:
            h = t[:-2]
            fparams.append(f'MPI_Fint *{n}')
            # in/out for completion calls (request, message); harmless for pure outputs
            pre.append(f'{h} c_{n} = {F2C[h]}_f2c(*{n});')
            args.append(f'&c_{n}')
            post.append(f'*{n} = {F2C[h]}_c2f(c_{n});')
        elif t == 'MPI_Status *' and 'statuses' not in n:
            fparams.append(f'MPI_Fint *{n}')
            pre.append(f'MPI_Status c_{n}; memset(&c_{n}, 0, sizeof c_{n});')
            args.append(f'ms_f_status_ignored({n}) ? MPI_STATUS_IGNORE : &c_{n}')
            post.append(f'if (!ms_f_status_ignored({n})) PMPI_Status_c2f(&c_{n}, {n});')
        elif t == 'MPI_Request []':
            cnt = count_expr(fn, names)
            fparams.append(f'MPI_Fint *{n}')
            pre.append(f'MPI_Request s_{n}[{SMALL}], *c_{n} = *{cnt} <= {SMALL} ? s_{n} : malloc(sizeof(MPI_Request) * (size_t)*{cnt});')
            pre.append(f'if (!c_{n}) ms_fatal("out of memory in {fn}");')
            pre.append(f'for (int i = 0; i < *{cnt}; i++) c_{n}[i] = PMPI_Request_f2c({n}[i]);')
            args.append(f'c_{n}')
            post.append(f'for (int i = 0; i < *{cnt}; i++) {n}[i] = PMPI_Request_c2f(c_{n}[i]);')
            post.append(f'if (c_{n} != s_{n}) free(c_{n});')
        elif t == 'MPI_Status []' or t == 'MPI_Status *':   # <mpi.h> declares Waitall's as a pointer
            cnt = count_expr(fn, names)
            done = '*outcount' if 'outcount' in names else f'*{cnt}'
            fparams.append(f'MPI_Fint *{n}')
            pre.append(f'int i_{n} = ms_f_statuses_ignored({n});')
            pre.append(f'MPI_Status s_{n}[{SMALL}], *c_{n} = i_{n} ? MPI_STATUSES_IGNORE : *{cnt} <= {SMALL} ? s_{n} : calloc((size_t)*{cnt}, sizeof(MPI_Status));')
            pre.append(f'if (!i_{n} && !c_{n}) ms_fatal("out of memory in {fn}");')
            args.append(f'c_{n}')
            post.append(f'if (!i_{n}) {{')
            post.append(f'    if (rc == MPI_SUCCESS && {done} != MPI_UNDEFINED)')
            post.append(f'        for (int i = 0; i < {done}; i++) PMPI_Status_c2f(&c_{n}[i], {n} + (size_t)i * ms_f_status_size);')
            post.append(f'    if (c_{n} != s_{n}) free(c_{n});')
            post.append('}')
        elif t == 'const MPI_Datatype []':
            fparams.append(f'MPI_Fint *{n}')
            if 'eighbor' in fn:   # one type per neighbour: destinations for sends, sources for receives
                pre.append(f'int k_{n} = ms_f_neighbor_count(PMPI_Comm_f2c(*comm), {1 if n.startswith("send") else 0});')
            else:
                pre.append(f'int k_{n} = 0; PMPI_Comm_size(PMPI_Comm_f2c(*comm), &k_{n});')
            pre.append(f'MPI_Datatype s_{n}[{SMALL}], *c_{n} = k_{n} <= {SMALL} ? s_{n} : malloc(sizeof(MPI_Datatype) * (size_t)k_{n});')
            pre.append(f'if (!c_{n}) ms_fatal("out of memory in {fn}");')
            pre.append(f'for (int i = 0; i < k_{n}; i++) c_{n}[i] = PMPI_Type_f2c({n}[i]);')
            args.append(f'c_{n}')
            post.append(f'if (c_{n} != s_{n}) free(c_{n});')
        else:
            return None
    # Fortran indices are 1-based
    if 'index' in names:
        post.append('if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) *index += 1;')
    if 'array_of_indices' in names or 'indices' in names:
        ix = 'array_of_indices' if 'array_of_indices' in names else 'indices'
        post.append(f'if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED) for (int i = 0; i < *outcount; i++) {ix}[i] += 1;')
    fparams.append('MPI_Fint *ierr')
    # the wrapper window (shim.h) spans the binding's own conversions: its stamps, not the C
    # wrapper's, bound the program's gap
    body = ['    uint64_t entry_tsc = ms_tsc();', '    if (MS_UNLIKELY(ms_probing)) return;']
    body += [f'    {s}' for s in pre]
    body.append('    ms_f_callsite_at(__builtin_return_address(0), entry_tsc);')
    body.append(f'    int rc = {fn}({", ".join(args)});')
    body += [f'    {s}' for s in post]
    body.append('    if (ierr) *ierr = (MPI_Fint)rc;')
    body.append('    ms_window_exit();')
    return fparams, body


def forwarder(fn, cls, plist, names):
    """Unmodelled and passthrough calls: classify as in C, then Open MPI's own binding."""
    nchar = sum(1 for p in plist if re.search(r'\bchar\b', p))
    params = [f'void *a{i}' for i in range(len(plist))] + ['MPI_Fint *ierr'] + [f'size_t l{i}' for i in range(nchar)]
    cargs = [f'a{i}' for i in range(len(plist))] + ['ierr'] + [f'l{i}' for i in range(nchar)]
    ptypes = ', '.join(['void *'] * len(plist) + ['MPI_Fint *'] + ['size_t'] * nchar)
    real = 'ompi_' + fn[4:].lower() + '_f'
    b = ['    uint64_t entry_tsc = ms_tsc();',
         '    if (MS_UNLIKELY(ms_probing)) return;',
         f'    static void (*real)({ptypes});',
         f'    if (!real) *(void **)&real = ms_f_real("{real}", "{fn}");',
         '    if (ms_bypass()) {',
         f'        real({", ".join(cargs)});',
         '        return;',
         '    }',
         f'    ms_enter_at(MS_FN_{fn}, __builtin_return_address(0), entry_tsc);']
    if cls == 'passthrough':
        b.append(f'    ms_passthrough(MS_FN_{fn});')
    else:
        b.append(f'    ms_unmodelled(MS_FN_{fn});')
    b += [f'    real({", ".join(cargs)});',
          f'    ms_unmodelled_done(MS_FN_{fn});',
          f'    ms_exit(MS_FN_{fn}, ierr ? (int)*ierr : 0);',
          '    ms_window_exit();']
    return params, b


SPECIAL = r'''
/* lifecycle and clock: the Fortran forms of the shim's hand-written C functions */
void ms_f_init(MPI_Fint *ierr)
{
    int rc = MPI_Init(NULL, NULL);
    if (ierr) *ierr = (MPI_Fint)rc;
}
void ms_f_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int p = 0, rc = MPI_Init_thread(NULL, NULL, *required, &p);
    *provided = p;
    if (ierr) *ierr = (MPI_Fint)rc;
}
void ms_f_finalize(MPI_Fint *ierr)
{
    ms_f_callsite(__builtin_return_address(0));
    int rc = MPI_Finalize();
    if (ierr) *ierr = (MPI_Fint)rc;
}
void ms_f_abort(MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr)
{
    int rc = MPI_Abort(PMPI_Comm_f2c(*comm), *errorcode);
    if (ierr) *ierr = (MPI_Fint)rc;
}
double ms_f_wtime(void) { return ms_wtime_from(__builtin_return_address(0), ms_tsc()); }
double ms_f_wtick(void) { return MPI_Wtick(); }
'''


def emit(protos, wrapped):
    """wrapped: (name, cls, handler, plist, names) of the C wrappers. Returns (C text, count)."""
    c = ['/* Generated by gen_wrappers.py (gen_fortran.py) from mpi_calls.spec: do not edit. */',
         '#include <stdlib.h>', '#include <string.h>', '#include "wrappers_gen.h"', '#include "shim.h"',
         '#include "fortran.h"', '']
    c.append(SPECIAL)
    made = []
    for fname, target in (('Init', 'ms_f_init'), ('Init_thread', 'ms_f_init_thread'), ('Finalize', 'ms_f_finalize'),
                          ('Abort', 'ms_f_abort'), ('Wtime', 'ms_f_wtime'), ('Wtick', 'ms_f_wtick')):
        ret = 'double' if fname in ('Wtime', 'Wtick') else 'void'
        proto = {'Init': 'MPI_Fint *', 'Init_thread': 'MPI_Fint *, MPI_Fint *, MPI_Fint *', 'Finalize': 'MPI_Fint *',
                 'Abort': 'MPI_Fint *, MPI_Fint *, MPI_Fint *', 'Wtime': 'void', 'Wtick': 'void'}[fname]
        for a in aliases('MPI_' + fname):
            c.append(f'{ret} {a}({proto}) __attribute__((alias("{target}")));')
        made.append('MPI_' + fname)
    c.append('')
    skipped = []
    entries = []
    for fn, cls, handler, plist, names in wrapped:
        if cls == 'modelled':
            r = modelled(fn, plist, names)
            if r is None:
                skipped.append(fn)
                r = forwarder(fn, 'unmodelled', plist, names)
        else:
            r = forwarder(fn, cls, plist, names)
        params, body = r
        target = 'ms_f_' + fn[4:].lower()
        sig = ', '.join(params)
        c.append(f'void {target}({sig})')
        c.append('{')
        c += body
        c.append('}')
        for a in aliases(fn):
            c.append(f'void {a}({sig}) __attribute__((alias("{target}")));')
        c.append('')
        made.append(fn)
        entries.append(target)
    c.append('/* every generated binding, for the warm path\'s probe (warm_path.c) */')
    c.append(f'void (*const ms_fortran_entries[{len(entries)}])(void) = {{')
    c += [f'    (void (*)(void))(void *){t},' for t in entries]
    c += ['};', f'const int ms_fortran_entry_count = {len(entries)};', '']
    if skipped:
        raise SystemExit('gen_fortran: modelled calls without a Fortran conversion: ' + ', '.join(skipped))
    return '\n'.join(c), len(made)
