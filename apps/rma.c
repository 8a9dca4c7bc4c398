/* rma: one-sided latency and bandwidth between ranks 0 (origin) and 1 (target), as the OSU
 * one-sided benchmarks measure them (osu_put_latency, osu_get_bw, osu_acc_latency, ...).
 *
 *   op:   put (MPI_Put), get (MPI_Get), acc (MPI_Accumulate, MPI_SUM of MPI_INT), fop
 *         (MPI_Fetch_and_op, MPI_SUM of one int64), cas (MPI_Compare_and_swap of one int64)
 *   sync: flush    MPI_Win_lock(shared) once; per operation MPI_Win_flush        (latency = per op)
 *         lock     per operation MPI_Win_lock(shared) .. MPI_Win_unlock          (latency = per op)
 *         fence    ping-pong: origin op, fence, fence; target fence, op, fence   (latency = half)
 *         pscw     ping-pong: start/op/complete then post/wait, and the reverse   (latency = half)
 *   bandwidth: per iteration W operations of one size (W = --window, fewer above 1 MiB so that
 *         W x size <= 64 MiB), then the sync (flush; lock..unlock around them; fence; pscw: one
 *         access epoch of W), bandwidth_MBps = W x bytes / time per iteration / 1e6.
 *   MPI_Win_allocate windows; every operation of a size goes to displacement 0 with one pattern.
 *
 * Usage: rma [--op put,get,acc,fop,cas|all] [--sync flush,lock,fence,pscw|all]
 *            [--mode latency|bandwidth|both] [--sizes a,b,..] [--iters K] [--warmup W]
 *            [--window N]
 *
 *   defaults: --op all --sync all --mode both --sizes 8,64,1k,16k,256k,4M --iters 10
 *   --warmup 2 --window 16 (fop and cas: 8 bytes, latency only; acc: sizes of at least 4)
 *
 * Output (rank 0):
 *   # rma procs=<P> iters=<K> warmup=<W> window=<N>
 *   # p2p_latency_8B=<half round trip of an 8-byte MPI_Send/MPI_Recv ping-pong, s>
 *   op,sync,mode,bytes,time_s,bandwidth_MBps
 *   <one line per measurement: time_s is the latency (latency) or one iteration (bandwidth)>
 *   # check=ok
 *
 * Check: after each measurement the target's window (put, acc, fop, cas) or the origin's buffer
 * (get) is compared with what the operations must have left there.
 */
#include "app_args.h"

static const char *const USAGE =
    "rma [--op put,get,acc,fop,cas|all] [--sync flush,lock,fence,pscw|all] [--mode latency|bandwidth|both] "
    "[--sizes a,b,..] [--iters K] [--warmup W] [--window N]";

enum { OP_PUT, OP_GET, OP_ACC, OP_FOP, OP_CAS, NOPS };
enum { SY_FLUSH, SY_LOCK, SY_FENCE, SY_PSCW, NSYNCS };
static const char *const op_names[NOPS] = {"put", "get", "acc", "fop", "cas"};
static const char *const sync_names[NSYNCS] = {"flush", "lock", "fence", "pscw"};

#define MAX_WINDOW_BYTES (64L << 20)

static int rank, procs;
static MPI_Win win;
static unsigned char *base;      /* the window */
static unsigned char *buf;       /* the origin's buffer */
static long win_bytes;
static MPI_Group peer_group;     /* the other one of ranks 0 and 1 */
static int errors;
static int64_t atom_one = 1, atom_zero = 0, atom_old;

static unsigned char pattern(long i, long bytes) { return (unsigned char)((i * 7 + bytes * 13 + 1) & 0xff); }

/* One operation of `bytes` from rank 0 or 1 to the other (the origin of fence/pscw's second half). */
static void do_op(int op, long bytes, int target)
{
    switch (op) {
    case OP_PUT: MPI_Put(buf, (int)bytes, MPI_BYTE, target, 0, (int)bytes, MPI_BYTE, win); break;
    case OP_GET: MPI_Get(buf, (int)bytes, MPI_BYTE, target, 0, (int)bytes, MPI_BYTE, win); break;
    case OP_ACC: MPI_Accumulate(buf, (int)(bytes / 4), MPI_INT, target, 0, (int)(bytes / 4), MPI_INT, MPI_SUM, win); break;
    /* the origin and result buffers must stay until the synchronisation completes the operation */
    case OP_FOP: MPI_Fetch_and_op(&atom_one, &atom_old, MPI_INT64_T, target, 0, MPI_SUM, win); break;
    case OP_CAS: MPI_Compare_and_swap(&atom_one, &atom_zero, &atom_old, MPI_INT64_T, target, 0, win); break;
    }
}

/* Fill both ranks' window and origin buffer for a measurement of op at `bytes`. */
static void prepare(int op, long bytes)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    memset(base, 0, (size_t)win_bytes);
    if (op == OP_GET)
        for (long i = 0; i < bytes; i++) base[i] = pattern(i, bytes);
    MPI_Win_unlock(rank, win);
    if (op == OP_ACC) {
        for (long i = 0; i < bytes / 4; i++) ((int *)buf)[i] = 1;
    } else {
        for (long i = 0; i < bytes; i++) buf[i] = op == OP_PUT ? pattern(i, bytes) : 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* After a measurement: `n` operations of rank 0 (and `m` of rank 1) went to the other. */
static void check(int op, long bytes, long n, long m, const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank > 1) return;
    long mine = rank == 0 ? m : n;   /* operations that came to this rank's window */
    int bad = 0;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    if (op == OP_PUT && mine > 0) {
        for (long i = 0; i < bytes; i++) bad += base[i] != pattern(i, bytes);
    } else if (op == OP_ACC && mine > 0) {
        for (long i = 0; i < bytes / 4; i++) bad += ((int *)base)[i] != (int)mine;
    } else if (op == OP_FOP && mine > 0) {
        bad += *(int64_t *)base != mine;
    } else if (op == OP_CAS && mine > 0) {
        bad += *(int64_t *)base != 1;
    }
    MPI_Win_unlock(rank, win);
    if (op == OP_GET && ((rank == 0 && n > 0) || (rank == 1 && m > 0)))
        for (long i = 0; i < bytes; i++) bad += buf[i] != pattern(i, bytes);
    if (bad) {
        fprintf(stderr, "rma: rank %d: %s %ld B: %d wrong bytes or words after the measurement\n", rank, what, bytes, bad);
        errors += bad;
    }
}

/* Latency: the time of one operation with its synchronisation (per op, or half a ping-pong). */
static double latency(int op, int sync, long bytes, long iters, long warmup, long *n0, long *n1)
{
    double t0 = 0;
    *n0 = *n1 = 0;
    if (sync == SY_FLUSH || sync == SY_LOCK) {
        if (rank == 0) {
            if (sync == SY_FLUSH) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            for (long i = 0; i < warmup + iters; i++) {
                if (i == warmup) t0 = MPI_Wtime();
                if (sync == SY_LOCK) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
                do_op(op, bytes, 1);
                if (sync == SY_LOCK) MPI_Win_unlock(1, win);
                else MPI_Win_flush(1, win);
            }
            t0 = (MPI_Wtime() - t0) / (double)iters;
            if (sync == SY_FLUSH) MPI_Win_unlock(1, win);
            *n0 = warmup + iters;
        }
        return t0;
    }
    if (sync == SY_FENCE) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        for (long i = 0; i < warmup + iters; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            if (rank == 0) do_op(op, bytes, 1);
            MPI_Win_fence(0, win);
            if (rank == 1) do_op(op, bytes, 0);
            MPI_Win_fence(0, win);
        }
        t0 = (MPI_Wtime() - t0) / (2.0 * (double)iters);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        *n0 = *n1 = warmup + iters;
        return t0;
    }
    /* PSCW ping-pong */
    if (rank <= 1) {
        for (long i = 0; i < warmup + iters; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Win_start(peer_group, 0, win);
                do_op(op, bytes, 1);
                MPI_Win_complete(win);
                MPI_Win_post(peer_group, 0, win);
                MPI_Win_wait(win);
            } else {
                MPI_Win_post(peer_group, 0, win);
                MPI_Win_wait(win);
                MPI_Win_start(peer_group, 0, win);
                do_op(op, bytes, 0);
                MPI_Win_complete(win);
            }
        }
        t0 = (MPI_Wtime() - t0) / (2.0 * (double)iters);
    }
    *n0 = *n1 = warmup + iters;
    return t0;
}

/* Bandwidth: time of one iteration of w operations and their synchronisation. */
static double bandwidth(int op, int sync, long bytes, long w, long iters, long warmup, long *n0)
{
    double t0 = 0;
    *n0 = (warmup + iters) * w;
    if (sync == SY_FLUSH || sync == SY_LOCK) {
        if (rank == 0) {
            if (sync == SY_FLUSH) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            for (long i = 0; i < warmup + iters; i++) {
                if (i == warmup) t0 = MPI_Wtime();
                if (sync == SY_LOCK) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
                for (long k = 0; k < w; k++) do_op(op, bytes, 1);
                if (sync == SY_LOCK) MPI_Win_unlock(1, win);
                else MPI_Win_flush(1, win);
            }
            t0 = (MPI_Wtime() - t0) / (double)iters;
            if (sync == SY_FLUSH) MPI_Win_unlock(1, win);
        }
        return t0;
    }
    if (sync == SY_FENCE) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        for (long i = 0; i < warmup + iters; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            if (rank == 0)
                for (long k = 0; k < w; k++) do_op(op, bytes, 1);
            MPI_Win_fence(0, win);
        }
        t0 = (MPI_Wtime() - t0) / (double)iters;
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        return t0;
    }
    if (rank <= 1) {
        for (long i = 0; i < warmup + iters; i++) {
            if (i == warmup) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Win_start(peer_group, 0, win);
                for (long k = 0; k < w; k++) do_op(op, bytes, 1);
                MPI_Win_complete(win);
            } else {
                MPI_Win_post(peer_group, 0, win);
                MPI_Win_wait(win);
            }
        }
        t0 = (MPI_Wtime() - t0) / (double)iters;
    }
    return t0;
}

static double p2p_latency(void)
{
    char b[8] = {0};
    double t = 0;
    const int k = 20;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < k + 2; i++) {
        if (i == 2) t = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(b, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t) / (2.0 * k);
}

/* A comma-separated list of names (or "all") as a bit set; 0 if a name is unknown. */
static unsigned pick(const char *v, const char *const *names, int n)
{
    if (!v) return 0;
    if (!strcmp(v, "all")) return (1u << n) - 1;
    unsigned set = 0;
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, ",");
        int k = -1;
        for (int i = 0; i < n; i++)
            if (strlen(names[i]) == len && !strncmp(p, names[i], len)) k = i;
        if (k < 0) return 0;
        set |= 1u << k;
        p += len;
        if (*p == ',') p++;
    }
    return set;
}

static int pick_ops(const char *v, void *sel) { return (*(unsigned *)sel = pick(v, op_names, NOPS)) ? 0 : -1; }
static int pick_syncs(const char *v, void *sel) { return (*(unsigned *)sel = pick(v, sync_names, NSYNCS)) ? 0 : -1; }
static const char *const MODES[] = {"latency", "bandwidth", "both", NULL};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    rank = app_world_rank();
    procs = app_world_size();
    long iters = 10, warmup = 2, window = 16;
    app_list size_list = {0};
    int mode = 2;   /* both */
    unsigned op_sel = (1u << NOPS) - 1, sync_sel = (1u << NSYNCS) - 1;
    const app_opt opts[] = {
        {"--op", APP_OPT_CUSTOM, &op_sel, .parse = pick_ops,
         .error = "--op needs a list of put, get, acc, fop, cas, or all"},
        {"--sync", APP_OPT_CUSTOM, &sync_sel, .parse = pick_syncs,
         .error = "--sync needs a list of flush, lock, fence, pscw, or all"},
        {"--mode", APP_OPT_CHOICE, &mode, .choices = MODES, .error = "--mode needs latency, bandwidth or both"},
        {"--sizes", APP_OPT_LIST, &size_list, .lo = 1, .hi = 1L << 30,
         .error = "--sizes needs a comma-separated list of sizes >= 1"},
        {"--iters", APP_OPT_LONG, &iters, .lo = 1, .hi = 100000000L, .error = "--iters needs an integer >= 1"},
        {"--warmup", APP_OPT_LONG, &warmup, .lo = 0, .hi = 100000000L, .error = "--warmup needs an integer >= 0"},
        {"--window", APP_OPT_LONG, &window, .lo = 1, .hi = 4096, .error = "--window needs 1..4096"},
    };
    app_parse_args(&(app_cli){.prog = "rma", .usage = USAGE, .unknown = "unexpected argument '%s'"},
                   opts, APP_NOPTS(opts), argc, argv);
    if (procs < 2) app_usage_error("rma", USAGE, "needs at least 2 processes");
    const int lat_on = mode != 1, bw_on = mode != 0;
    static const long dflt[] = {8, 64, 1024, 16384, 262144, 4194304};
    app_list_or_default(&size_list, dflt, 6);
    const long *sizes = size_list.v;
    const int nsizes = size_list.n;
    long maxb = 8;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > maxb) maxb = sizes[i];
    win_bytes = maxb;
    MPI_Win_allocate((MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    buf = malloc((size_t)maxb);
    if (!buf) {
        fprintf(stderr, "rma: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int other = rank == 0 ? 1 : 0;
    MPI_Group_incl(world, 1, &other, &peer_group);
    MPI_Group_free(&world);

    double p2p = p2p_latency();
    if (rank == 0) {
        printf("# rma procs=%d iters=%ld warmup=%ld window=%ld\n", procs, iters, warmup, window);
        printf("# p2p_latency_8B=%.9e\n", p2p);
        printf("op,sync,mode,bytes,time_s,bandwidth_MBps\n");
    }
    for (int op = 0; op < NOPS; op++) {
        if (!(op_sel >> op & 1)) continue;
        for (int sy = 0; sy < NSYNCS; sy++) {
            if (!(sync_sel >> sy & 1)) continue;
            for (int si = 0; si < nsizes; si++) {
                long bytes = sizes[si];
                int atomic = op == OP_FOP || op == OP_CAS;
                if (atomic) {
                    if (si > 0) continue;   /* one size: one int64 */
                    bytes = 8;
                }
                if (op == OP_ACC && bytes < 4) continue;
                for (int mode = 0; mode < 2; mode++) {
                    if ((mode == 0 && !lat_on) || (mode == 1 && (!bw_on || atomic))) continue;
                    prepare(op, bytes);
                    long n0 = 0, n1 = 0;
                    double t;
                    long w = window;
                    while (w > 1 && w * bytes > MAX_WINDOW_BYTES) w /= 2;
                    if (mode == 0) {
                        t = latency(op, sy, bytes, iters, warmup, &n0, &n1);
                    } else {
                        t = bandwidth(op, sy, bytes, w, iters, warmup, &n0);
                        n1 = 0;
                    }
                    char what[64];
                    snprintf(what, sizeof what, "%s/%s/%s", op_names[op], sync_names[sy], mode ? "bandwidth" : "latency");
                    check(op, bytes, n0, n1, what);
                    if (rank == 0) {
                        double bw = mode ? (double)(w * bytes) / t / 1e6 : (double)bytes / t / 1e6;
                        printf("%s,%s,%s,%ld,%.9e,%.3f\n", op_names[op], sync_names[sy], mode ? "bandwidth" : "latency",
                               bytes, t, bw);
                    }
                }
            }
        }
    }
    int all = 0;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("# check=%s\n", all ? "FAIL" : "ok");
    MPI_Group_free(&peer_group);
    MPI_Win_free(&win);
    free(buf);
    free(size_list.v);
    MPI_Finalize();
    return all ? 1 : 0;
}
