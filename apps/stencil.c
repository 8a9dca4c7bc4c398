/* stencil: the mesh application core of seed 001 (Wyckoff & Chen): a 2D or 3D grid, mesh or
 * torus, decomposed in blocks over a Cartesian process grid, with a halo exchange per iteration.
 *
 *   Field: f^{n+1} = f^n + dt F(f^n) with F the discrete Laplacian (explicit diffusion step,
 *   5-point in 2D, 7-point in 3D), computed in fixed-point integer arithmetic
 *   (f' = f + (sum of neighbours - 2 d f) / 8, int64), so that the result is bit-identical for any
 *   process count and decomposition. Mesh: the values outside the global grid are 0 (fixed
 *   boundary). Torus: the grid is periodic in every dimension.
 *   Iteration: post MPI_Irecv for the 2 d halos, MPI_Isend the 2 d faces, MPI_Waitall, update.
 *   Halo messages carry the face values (8 bytes per point) padded with zeros to at least --msg
 *   bytes, so the message size can be set independently of the grid (seed 001 used 32-2048 B).
 *   Every rank records MPI_Wtime when it completes each iteration.
 *
 * Usage: stencil [--dims 2|3] [--mesh|--torus] [--grid N | --grid NX,NY[,NZ]] [--iters K]
 *                [--msg BYTES] [--pgrid PX,PY[,PZ]] [--seed S] [--no-verify] [--no-times]
 *   defaults: --dims 2 --mesh --grid 64 (2D) or 16 (3D) --iters 20 --msg 0 --seed 0;
 *   the process grid comes from MPI_Dims_create unless --pgrid is given.
 *
 * Output (rank 0):
 *   # stencil dims=2 topology=mesh grid=64x64 procs=4 pgrid=2x2 iters=20 msg_min_bytes=256 msg_max_bytes=256 seed=0
 *   rank,iter,time_s                        (omitted with --no-times)
 *   <rank>,<iteration>,<completion time of that iteration on that rank>   (P x K lines)
 *   # time_s=<last completion over all ranks> checksum=0x<16 hex> reference=0x<16 hex>|skipped
 *   # check=ok
 * Times are relative to the earliest start (after an MPI_Barrier) over all ranks. The checksum
 * (an order-independent hash of every grid value and its global position) depends only on the
 * grid, topology, iterations and seed; rank 0 checks it against a sequential computation of the
 * whole grid (outside the timed region) unless --no-verify is given.
 */
#include "app_args.h"

static const char *const USAGE =
    "stencil [--dims 2|3] [--mesh|--torus] [--grid N | --grid NX,NY[,NZ]] [--iters K] [--msg BYTES] "
    "[--pgrid PX,PY[,PZ]] [--seed S] [--no-verify] [--no-times]";

/* A block of the grid with one ghost layer in each decomposed dimension. */
typedef struct {
    int dims;
    long l[3];   /* interior extents (l[2] = 1 in 2D) */
    long g[3];   /* ghost width: 1 in the first `dims` dimensions, else 0 */
    long e[3];   /* allocated extents l + 2 g */
    long off[3]; /* global coordinates of interior point (0,0,0) */
} block_t;

static void block_init(block_t *b, int dims, const long l[3], const long off[3])
{
    b->dims = dims;
    for (int d = 0; d < 3; d++) {
        b->l[d] = d < dims ? l[d] : 1;
        b->g[d] = d < dims ? 1 : 0;
        b->e[d] = b->l[d] + 2 * b->g[d];
        b->off[d] = d < dims ? off[d] : 0;
    }
}

static size_t block_points(const block_t *b) { return (size_t)b->e[0] * (size_t)b->e[1] * (size_t)b->e[2]; }

/* index of interior coordinates (i, j, k); ghosts are at -1 and l[d] */
static inline size_t at(const block_t *b, long i, long j, long k)
{
    return ((size_t)(k + b->g[2]) * (size_t)b->e[1] + (size_t)(j + b->g[1])) * (size_t)b->e[0] + (size_t)(i + b->g[0]);
}

static long face_points(const block_t *b, int d)
{
    long n = 1;
    for (int x = 0; x < 3; x++)
        if (x != d)
            n *= b->l[x];
    return n;
}

/* Copy the layer at coordinate c of dimension d (interior range in the other dimensions)
 * into buf (pack != 0) or from buf (pack == 0). */
static void layer_copy(const block_t *b, int64_t *u, int d, long c, int64_t *buf, int pack)
{
    long lo[3] = {0, 0, 0}, hi[3] = {b->l[0], b->l[1], b->l[2]};
    lo[d] = c;
    hi[d] = c + 1;
    size_t n = 0;
    for (long k = lo[2]; k < hi[2]; k++)
        for (long j = lo[1]; j < hi[1]; j++)
            for (long i = lo[0]; i < hi[0]; i++) {
                size_t p = at(b, i, j, k);
                if (pack)
                    buf[n++] = u[p];
                else
                    u[p] = buf[n++];
            }
}

static int64_t initial_value(long x, long y, long z, long seed)
{
    return (int64_t)((x * 7919L + y * 104729L + z * 1299709L + seed * 31L) % 1000003L);
}

static void block_fill_initial(const block_t *b, int64_t *u, long seed)
{
    memset(u, 0, block_points(b) * sizeof(int64_t));
    for (long k = 0; k < b->l[2]; k++)
        for (long j = 0; j < b->l[1]; j++)
            for (long i = 0; i < b->l[0]; i++)
                u[at(b, i, j, k)] = initial_value(b->off[0] + i, b->off[1] + j, b->off[2] + k, seed);
}

/* One explicit diffusion step on the interior: v = u + (sum of neighbours - 2 d u) / 8. */
static void sweep(const block_t *b, const int64_t *u, int64_t *v)
{
    const size_t sx = 1, sy = (size_t)b->e[0], sz = (size_t)b->e[0] * (size_t)b->e[1];
    const int64_t self = 2 * b->dims;
    for (long k = 0; k < b->l[2]; k++)
        for (long j = 0; j < b->l[1]; j++) {
            size_t p = at(b, 0, j, k);
            for (long i = 0; i < b->l[0]; i++, p++) {
                int64_t s = u[p - sx] + u[p + sx] + u[p - sy] + u[p + sy];
                if (b->dims == 3)
                    s += u[p - sz] + u[p + sz];
                v[p] = u[p] + (s - self * u[p]) / 8;
            }
        }
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x7FB5D329728EA185ULL;
    x ^= x >> 27;
    x *= 0x81DADEF4BC2DD44DULL;
    x ^= x >> 33;
    return x;
}

/* Order-independent checksum: sum over points of a hash of (value, global position). */
static uint64_t block_checksum(const block_t *b, const int64_t *u, const long gsize[3])
{
    uint64_t sum = 0;
    for (long k = 0; k < b->l[2]; k++)
        for (long j = 0; j < b->l[1]; j++)
            for (long i = 0; i < b->l[0]; i++) {
                uint64_t gidx = ((uint64_t)(b->off[2] + k) * (uint64_t)gsize[1] + (uint64_t)(b->off[1] + j)) *
                                    (uint64_t)gsize[0] +
                                (uint64_t)(b->off[0] + i);
                sum += mix64((uint64_t)u[at(b, i, j, k)] ^ mix64(gidx + 0x1234567ULL));
            }
    return sum;
}

/* Sequential reference: the whole grid as one block, ghosts filled by the boundary rule. */
static uint64_t reference_checksum(int dims, const long gsize[3], int torus, long iters, long seed)
{
    block_t b;
    const long zero[3] = {0, 0, 0};
    block_init(&b, dims, gsize, zero);
    int64_t *u = app_xcalloc(block_points(&b), sizeof(int64_t));
    int64_t *v = app_xcalloc(block_points(&b), sizeof(int64_t));
    long maxface = 1;
    for (int d = 0; d < dims; d++)
        if (face_points(&b, d) > maxface)
            maxface = face_points(&b, d);
    int64_t *tmp = app_xmalloc((size_t)maxface * sizeof(int64_t));
    block_fill_initial(&b, u, seed);
    for (long it = 0; it < iters; it++) {
        if (torus) {
            for (int d = 0; d < dims; d++) {
                layer_copy(&b, u, d, b.l[d] - 1, tmp, 1);
                layer_copy(&b, u, d, -1, tmp, 0);
                layer_copy(&b, u, d, 0, tmp, 1);
                layer_copy(&b, u, d, b.l[d], tmp, 0);
            }
        }
        sweep(&b, u, v);
        int64_t *t = u;
        u = v;
        v = t;
    }
    uint64_t sum = block_checksum(&b, u, gsize);
    free(u);
    free(v);
    free(tmp);
    return sum;
}

/* Extent and offset of block `c` of `p` blocks over `n` points (the first n % p get one more). */
static void split(long n, long p, long c, long *len, long *off)
{
    long base = n / p, rem = n % p;
    *len = base + (c < rem ? 1 : 0);
    *off = c * base + (c < rem ? c : rem);
}

typedef struct {
    long dims, iters, msg, seed;
    int torus, verify, print_times;
    app_list grid, pgrid;
} options;

static void parse_options(options *o, int argc, char **argv)
{
    *o = (options){.dims = 2, .iters = 20, .verify = 1, .print_times = 1};
    const app_opt opts[] = {
        {"--dims", APP_OPT_LONG, &o->dims, .lo = 2, .hi = 3, .error = "--dims needs 2 or 3"},
        {"--mesh", APP_OPT_FLAG, &o->torus, .set = 0},
        {"--torus", APP_OPT_FLAG, &o->torus, .set = 1},
        {"--grid", APP_OPT_LIST, &o->grid, .lo = 1, .hi = 1L << 24, .reset = 1, .max_n = 3,
         .error = "--grid needs N or NX,NY[,NZ] (positive integers)"},
        {"--pgrid", APP_OPT_LIST, &o->pgrid, .lo = 1, .hi = 1L << 24, .reset = 1, .min_n = 2, .max_n = 3,
         .error = "--pgrid needs PX,PY[,PZ] (positive integers)"},
        {"--iters", APP_OPT_LONG, &o->iters, .lo = 1, .hi = 100000000L, .error = "--iters needs an integer >= 1"},
        {"--msg", APP_OPT_LONG, &o->msg, .lo = 0, .hi = 1L << 30, .error = "--msg needs a size in [0, 1G]"},
        {"--seed", APP_OPT_LONG, &o->seed, .lo = 0, .hi = 1000000000L, .error = "--seed needs an integer in [0, 1e9]"},
        {"--no-verify", APP_OPT_FLAG, &o->verify, .set = 0},
        {"--no-times", APP_OPT_FLAG, &o->print_times, .set = 0},
    };
    app_parse_args(&(app_cli){.prog = "stencil", .usage = USAGE, .unknown = "unexpected argument '%s'"}, opts,
                   APP_NOPTS(opts), argc, argv);
}

/* The grid's extents and the process grid (--pgrid, else MPI_Dims_create), checked. */
static void decompose(const options *o, int procs, long gsize[3], int pdims[3])
{
    const long dims = o->dims;
    const int ngrid = o->grid.n, npg = o->pgrid.n;
    for (int d = 0; d < dims; d++)
        gsize[d] = ngrid == 0 ? (dims == 2 ? 64 : 16) : (ngrid == 1 ? o->grid.v[0] : (d < ngrid ? o->grid.v[d] : -1));
    if (ngrid > 1 && ngrid != dims)
        app_usage_error("stencil", USAGE, "--grid has %d values for %ld dimensions", ngrid, dims);
    if (npg > 0) {
        if (npg != dims)
            app_usage_error("stencil", USAGE, "--pgrid has %d values for %ld dimensions", npg, dims);
        long prod = 1;
        for (int d = 0; d < dims; d++) {
            pdims[d] = (int)o->pgrid.v[d];
            prod *= o->pgrid.v[d];
        }
        if (prod != procs)
            app_usage_error("stencil", USAGE, "--pgrid product %ld differs from the %d processes", prod, procs);
    } else {
        pdims[2] = 0;
        MPI_Dims_create(procs, (int)dims, pdims);
    }
    for (int d = 0; d < dims; d++)
        if (gsize[d] < pdims[d])
            app_usage_error("stencil", USAGE, "grid dimension %d has %ld points for %d processes", d, gsize[d],
                            pdims[d]);
}

/* This rank's halo exchange: neighbours, message sizes (a face, padded to --msg) and buffers. */
typedef struct {
    int dims;
    int nb_lo[3], nb_hi[3];
    size_t mbytes[3];
    size_t bufbytes;
    unsigned char *sbuf, *rbuf; /* 2 dims buffers each, bufbytes apart */
} halo_t;

static void halo_init(halo_t *h, const block_t *b, MPI_Comm cart, int dims, long msg)
{
    h->dims = dims;
    for (int d = 0; d < dims; d++) {
        MPI_Cart_shift(cart, d, 1, &h->nb_lo[d], &h->nb_hi[d]);
        long fp = face_points(b, d);
        h->mbytes[d] = (size_t)fp * sizeof(int64_t);
        if ((size_t)msg > h->mbytes[d])
            h->mbytes[d] = (size_t)msg;
    }
    h->bufbytes = 0;
    for (int d = 0; d < dims; d++)
        if (h->mbytes[d] > h->bufbytes)
            h->bufbytes = h->mbytes[d];
    h->bufbytes = (h->bufbytes + 7) / 8 * 8; /* keep every buffer 8-byte aligned */
    /* 2 d send and 2 d receive buffers, zero padded */
    h->sbuf = app_xcalloc((size_t)(2 * dims), h->bufbytes);
    h->rbuf = app_xcalloc((size_t)(2 * dims), h->bufbytes);
}

/* One iteration: the faces of u to the neighbours, theirs into u's ghosts, then the sweep into v. */
static void iterate(halo_t *h, const block_t *b, MPI_Comm cart, int64_t *u, int64_t *v)
{
    MPI_Request reqs[12];
    const size_t bufbytes = h->bufbytes;
    int nr = 0;
    for (int d = 0; d < h->dims; d++) {
        unsigned char *r_lo = h->rbuf + (size_t)(2 * d) * bufbytes, *r_hi = r_lo + bufbytes;
        unsigned char *s_lo = h->sbuf + (size_t)(2 * d) * bufbytes, *s_hi = s_lo + bufbytes;
        /* tag 2d: data moving towards +d; tag 2d+1: towards -d */
        MPI_Irecv(r_lo, (int)h->mbytes[d], MPI_BYTE, h->nb_lo[d], 2 * d, cart, &reqs[nr++]);
        MPI_Irecv(r_hi, (int)h->mbytes[d], MPI_BYTE, h->nb_hi[d], 2 * d + 1, cart, &reqs[nr++]);
        layer_copy(b, u, d, b->l[d] - 1, (int64_t *)(void *)s_hi, 1);
        layer_copy(b, u, d, 0, (int64_t *)(void *)s_lo, 1);
        MPI_Isend(s_hi, (int)h->mbytes[d], MPI_BYTE, h->nb_hi[d], 2 * d, cart, &reqs[nr++]);
        MPI_Isend(s_lo, (int)h->mbytes[d], MPI_BYTE, h->nb_lo[d], 2 * d + 1, cart, &reqs[nr++]);
    }
    MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
    for (int d = 0; d < h->dims; d++) {
        unsigned char *r_lo = h->rbuf + (size_t)(2 * d) * bufbytes, *r_hi = r_lo + bufbytes;
        if (h->nb_lo[d] != MPI_PROC_NULL)
            layer_copy(b, u, d, -1, (int64_t *)(void *)r_lo, 0);
        if (h->nb_hi[d] != MPI_PROC_NULL)
            layer_copy(b, u, d, b->l[d], (int64_t *)(void *)r_hi, 0);
    }
    sweep(b, u, v);
}

/* Rank 0's output: the header, every rank's iteration times (all), the checksum against the
 * sequential reference. The errors found. */
static long print_results(const options *o, const long gsize[3], const int pdims[3], int procs, const long msg_range[2],
                          const double *all, double t0, double tend, uint64_t sum)
{
    const long dims = o->dims, iters = o->iters;
    long errors = 0;
    char gs[96], ps[64];
    if (dims == 2) {
        snprintf(gs, sizeof gs, "%ldx%ld", gsize[0], gsize[1]);
        snprintf(ps, sizeof ps, "%dx%d", pdims[0], pdims[1]);
    } else {
        snprintf(gs, sizeof gs, "%ldx%ldx%ld", gsize[0], gsize[1], gsize[2]);
        snprintf(ps, sizeof ps, "%dx%dx%d", pdims[0], pdims[1], pdims[2]);
    }
    printf("# stencil dims=%ld topology=%s grid=%s procs=%d pgrid=%s iters=%ld msg_min_bytes=%ld "
           "msg_max_bytes=%ld seed=%ld\n",
           dims, o->torus ? "torus" : "mesh", gs, procs, ps, iters, msg_range[0], msg_range[1], o->seed);
    if (o->print_times) {
        printf("rank,iter,time_s\n");
        for (int r = 0; r < procs; r++)
            for (long it = 0; it < iters; it++)
                printf("%d,%ld,%.9e\n", r, it, all[(size_t)r * (size_t)iters + (size_t)it] - t0);
    }
    char ref[32] = "skipped";
    if (o->verify) {
        uint64_t rsum = reference_checksum((int)dims, gsize, o->torus, iters, o->seed);
        snprintf(ref, sizeof ref, "0x%016llx", (unsigned long long)rsum);
        if (rsum != sum) {
            fprintf(stderr, "stencil: checksum 0x%016llx differs from the sequential reference 0x%016llx\n",
                    (unsigned long long)sum, (unsigned long long)rsum);
            errors++;
        }
    }
    printf("# time_s=%.9e checksum=0x%016llx reference=%s\n", tend - t0, (unsigned long long)sum, ref);
    fflush(stdout);
    return errors;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const int procs = app_world_size();

    options o;
    parse_options(&o, argc, argv);
    const long dims = o.dims, iters = o.iters;
    long gsize[3] = {1, 1, 1};
    int pdims[3] = {0, 0, 1}, periods[3] = {o.torus, o.torus, o.torus};
    decompose(&o, procs, gsize, pdims);

    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, (int)dims, pdims, periods, 0, &cart);
    int crank, coords[3] = {0, 0, 0};
    MPI_Comm_rank(cart, &crank);
    MPI_Cart_coords(cart, crank, (int)dims, coords);

    long l[3] = {1, 1, 1}, off[3] = {0, 0, 0};
    for (int d = 0; d < dims; d++)
        split(gsize[d], pdims[d], coords[d], &l[d], &off[d]);
    block_t b;
    block_init(&b, (int)dims, l, off);
    halo_t h;
    halo_init(&h, &b, cart, (int)dims, o.msg);
    int64_t *u = app_xcalloc(block_points(&b), sizeof(int64_t));
    int64_t *v = app_xcalloc(block_points(&b), sizeof(int64_t));
    double *times = app_xcalloc((size_t)iters, sizeof(double));
    block_fill_initial(&b, u, o.seed);
    memcpy(v, u, block_points(&b) * sizeof(int64_t));

    long my_min = (long)h.mbytes[0], my_max = (long)h.mbytes[0];
    for (int d = 1; d < dims; d++) {
        if ((long)h.mbytes[d] < my_min)
            my_min = (long)h.mbytes[d];
        if ((long)h.mbytes[d] > my_max)
            my_max = (long)h.mbytes[d];
    }
    long msg_range[2] = {0, 0};
    MPI_Reduce(&my_min, &msg_range[0], 1, MPI_LONG, MPI_MIN, 0, cart);
    MPI_Reduce(&my_max, &msg_range[1], 1, MPI_LONG, MPI_MAX, 0, cart);

    MPI_Barrier(cart);
    const double tstart = MPI_Wtime();
    for (long it = 0; it < iters; it++) {
        iterate(&h, &b, cart, u, v);
        int64_t *t = u;
        u = v;
        v = t;
        times[it] = MPI_Wtime();
    }

    /* results, outside the timed region */
    double t0 = 0.0, tend = 0.0;
    MPI_Allreduce(&tstart, &t0, 1, MPI_DOUBLE, MPI_MIN, cart);
    MPI_Reduce(&times[iters - 1], &tend, 1, MPI_DOUBLE, MPI_MAX, 0, cart);
    uint64_t local_sum = block_checksum(&b, u, gsize), sum = 0;
    MPI_Reduce(&local_sum, &sum, 1, MPI_UINT64_T, MPI_SUM, 0, cart);
    double *all = NULL;
    if (crank == 0 && o.print_times)
        all = app_xmalloc((size_t)procs * (size_t)iters * sizeof(double));
    if (o.print_times)
        MPI_Gather(times, (int)iters, MPI_DOUBLE, all, (int)iters, MPI_DOUBLE, 0, cart);

    long errors = 0;
    if (crank == 0)
        errors = print_results(&o, gsize, pdims, procs, msg_range, all, t0, tend, sum);
    /* cart rank 0 is world rank 0 (no reordering), so app_finish prints from the same rank */
    int status = app_finish(errors, "stencil");
    free(all);
    free(h.sbuf);
    free(h.rbuf);
    free(u);
    free(v);
    free(times);
    free(o.grid.v);
    free(o.pgrid.v);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return status;
}
