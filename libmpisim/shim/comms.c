/* Communicators (split from shim.c): the ids the model knows them by, agreed without messages. */
#define _GNU_SOURCE
#include "shim_state.h"

#include <stdlib.h>
#include <string.h>

/* An intercommunicator is known to the model as the union of its two groups, the low group's
 * members first (the group holding the least world rank): its point-to-point goes there with
 * the ranks moved (a remote rank r is union rank roff + r), its collectives are MPICH's
 * intercommunicator algorithms on that union (ms_coll_args.inter_low). */
typedef struct ms_comm_info {
    uint64_t id;
    uint64_t children;           /* communicators created from this one so far */
    int inter;                   /* an intercommunicator: the layout below */
    ms_inter x;
} ms_comm_info;
static ms_comm_info world_info = {MS_COMM_WORLD_ID, 0, 0, {0}}, self_info = {MS_COMM_SELF_ID, 0, 0, {0}};

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static ms_comm_info *comm_info(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD) return &world_info;
    if (comm == MPI_COMM_SELF) return &self_info;
    void *v = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, S.comm_keyval, &v, &found);
    return found ? (ms_comm_info *)v : NULL;
}

uint64_t ms_comm_id(MPI_Comm comm)
{
    ms_comm_info *ci = comm_info(comm);
    if (!ci) ms_fatal("a communicator made by a call mpisim does not model was used");
    return ci->id;
}

uint64_t ms_comm_id_x(MPI_Comm comm, int *roff, int *inter)
{
    ms_comm_info *ci = comm_info(comm);
    if (!ci) ms_fatal("a communicator made by a call mpisim does not model was used");
    *inter = ci->inter;
    *roff = ci->inter ? ci->x.roff : 0;
    return ci->id;
}

int ms_comm_inter(MPI_Comm comm, ms_inter *x)
{
    ms_comm_info *ci = comm_info(comm);
    if (!ci || !ci->inter) return 0;
    *x = ci->x;
    return 1;
}

/* World ranks of a group's members, in group order (malloc'd). */
static int32_t *group_world_ranks(MPI_Group g, int n)
{
    int *in = malloc(sizeof(int) * 2 * (size_t)(n + 1));
    int32_t *w = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (!in || !w) ms_fatal("out of memory");
    MPI_Group wg;
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in, wg, in + n);
    PMPI_Group_free(&wg);
    for (int i = 0; i < n; i++) w[i] = in[n + i];
    free(in);
    return w;
}

/* A new communicator's model id: the same on every member, from what they all know. */
static uint64_t comm_id_of(uint64_t seed, const int32_t *members, int n)
{
    int32_t minw = n ? members[0] : 0;
    uint64_t h = seed;
    for (int i = 0; i < n; i++) {
        if (members[i] < minw) minw = members[i];
        h = mix64(h ^ (uint64_t)(uint32_t)members[i]);
    }
    h = mix64(h ^ ((uint64_t)(uint32_t)minw << 32) ^ (uint64_t)(uint32_t)n);
    return h <= MS_COMM_SELF_ID ? h + 2 : h;   /* 0 and 1 are world and self */
}

static void comm_add(uint64_t id, const int32_t *members, int n)
{
    ms_msg_comm_add m = {id, n, 0};
    put_msg(MS_MSG_COMM_ADD, &m, sizeof m, members, sizeof(int32_t) * (size_t)n);
}

static ms_comm_info *comm_attach(MPI_Comm comm, uint64_t id)
{
    ms_comm_info *ci = calloc(1, sizeof *ci);
    if (!ci) ms_fatal("out of memory");
    ci->id = id;
    PMPI_Comm_set_attr(comm, S.comm_keyval, ci);
    return ci;
}

/* An intercommunicator's two groups as world ranks (malloc'd), and whether the local one is the
 * low group (it holds the least world rank). */
static int inter_groups(MPI_Comm inter, int32_t **l, int *ln, int32_t **r, int *rn)
{
    MPI_Group lg, rg;
    PMPI_Comm_size(inter, ln);
    PMPI_Comm_remote_size(inter, rn);
    PMPI_Comm_group(inter, &lg);
    PMPI_Comm_remote_group(inter, &rg);
    *l = group_world_ranks(lg, *ln);
    *r = group_world_ranks(rg, *rn);
    PMPI_Group_free(&lg);
    PMPI_Group_free(&rg);
    int32_t lmin = (*l)[0], rmin = (*r)[0];
    for (int i = 0; i < *ln; i++) lmin = (*l)[i] < lmin ? (*l)[i] : lmin;
    for (int i = 0; i < *rn; i++) rmin = (*r)[i] < rmin ? (*r)[i] : rmin;
    return lmin < rmin;
}

/* An intercommunicator's union (low group first) and its layout, as every member sees them: its
 * model id comes from `seed` (the same on every member of both groups) and the members. */
static void inter_register(MPI_Comm inter, uint64_t seed)
{
    int ln = 0, rn = 0, lr = 0;
    int32_t *l, *r;
    int low = inter_groups(inter, &l, &ln, &r, &rn);
    PMPI_Comm_rank(inter, &lr);
    int32_t *u = malloc(sizeof *u * (size_t)(ln + rn));
    if (!u) ms_fatal("out of memory");
    memcpy(u + (low ? 0 : rn), l, sizeof *u * (size_t)ln);
    memcpy(u + (low ? ln : 0), r, sizeof *u * (size_t)rn);
    uint64_t id = comm_id_of(mix64(seed ^ 0x696e746572ULL), u, ln + rn);   /* "inter" */
    ms_comm_info *ci = comm_attach(inter, id);
    ci->inter = 1;
    ci->x.nlow = low ? ln : rn;
    ci->x.loff = low ? 0 : rn;
    ci->x.lsize = ln;
    ci->x.roff = low ? ln : 0;
    ci->x.rsize = rn;
    ci->x.urank = ci->x.loff + lr;
    comm_add(id, u, ln + rn);
    free(u);
    free(l);
    free(r);
}

int ms_comm_register(MPI_Comm parent, MPI_Comm newcomm)
{
    ms_comm_info *pi = comm_info(parent);
    if (!pi) ms_fatal("a communicator made by a call mpisim does not model was used");
    uint64_t seq = ++pi->children; /* same on every member of parent: creation is collective */
    if (newcomm == MPI_COMM_NULL) return MPI_SUCCESS;
    int is_inter = 0;
    PMPI_Comm_test_inter(newcomm, &is_inter);
    if (is_inter) {   /* a dup or split of an intercommunicator */
        inter_register(newcomm, mix64(pi->id ^ mix64(seq)));
        return MPI_SUCCESS;
    }
    int n = 0;
    MPI_Group g;
    PMPI_Comm_size(newcomm, &n);
    PMPI_Comm_group(newcomm, &g);
    int32_t *members = group_world_ranks(g, n);
    PMPI_Group_free(&g);
    uint64_t id = comm_id_of(mix64(pi->id ^ mix64(seq)), members, n);
    comm_attach(newcomm, id);
    comm_add(id, members, n);
    free(members);
    return MPI_SUCCESS;
}

/* A window on comm: its own model communicator, with comm's members (post, start, complete and
 * wait notices, fence barriers and locks never meet the program's messages). Window creation is
 * collective over comm, in the same order as comm's other creations, on every member. */
uint64_t ms_comm_register_window(MPI_Comm comm)
{
    ms_comm_info *pi = comm_info(comm);
    if (!pi) ms_fatal("a window on a communicator made by a call mpisim does not model");
    uint64_t seq = ++pi->children;
    int n = 0;
    MPI_Group g;
    PMPI_Comm_size(comm, &n);
    PMPI_Comm_group(comm, &g);
    int32_t *members = group_world_ranks(g, n);
    PMPI_Group_free(&g);
    uint64_t id = comm_id_of(mix64(pi->id ^ mix64(seq) ^ 0x77696e646f77ULL), members, n);   /* "window" */
    comm_add(id, members, n);
    free(members);
    return id;
}

/* MPI_Comm_create_group is collective over the group only, so the parent's creation count
 * cannot name the new communicator: its id comes from the parent, the tag, the members and how
 * many times these three have made one before. The model learns the communicator first; the
 * members' creation is timed on it as comm creation is (an allreduce that they leave together). */
static struct cg_seen { uint64_t key, count; } *cg_seen;
static size_t cg_n, cg_cap;

/* How many communicators of this key have been made, this one included. */
static uint64_t times_made(uint64_t key)
{
    size_t i = 0;
    while (i < cg_n && cg_seen[i].key != key) i++;
    if (i == cg_n) {
        if (cg_n == cg_cap) {
            size_t cap = cg_cap ? 2 * cg_cap : 16;
            struct cg_seen *q = realloc(cg_seen, cap * sizeof *q);
            if (!q) ms_fatal("out of memory");
            cg_seen = q;
            cg_cap = cap;
        }
        cg_seen[cg_n++] = (struct cg_seen){key, 0};
    }
    return ++cg_seen[i].count;
}

uint64_t ms_comm_prepare_group(MPI_Comm parent, MPI_Group group, int tag)
{
    int n = 0;
    PMPI_Group_size(group, &n);
    int32_t *members = group_world_ranks(group, n);
    uint64_t key = comm_id_of(mix64(ms_comm_id(parent) ^ mix64(0x6367ULL << 32 ^ (uint32_t)tag)), members, n);
    uint64_t id = comm_id_of(mix64(key ^ mix64(times_made(key))), members, n);
    comm_add(id, members, n);
    free(members);
    return id;
}

void ms_comm_attach(MPI_Comm comm, uint64_t id)
{
    if (comm != MPI_COMM_NULL) comm_attach(comm, id);
}

/* MPI_Intercomm_create is collective over two local communicators that share no parent: the new
 * intercommunicator's id comes from its union's members, the tag and how many intercommunicators
 * these two have made before (both groups create theirs in the same order). */
void ms_comm_register_intercomm(MPI_Comm inter, int tag)
{
    int ln = 0, rn = 0;
    int32_t *l, *r;
    int low = inter_groups(inter, &l, &ln, &r, &rn);
    /* a key both sides compute alike: the two groups in the order of their least members */
    uint64_t hl = comm_id_of(0x6c6fULL, l, ln), hr = comm_id_of(0x6c6fULL, r, rn);
    uint64_t key = low ? mix64(hl ^ mix64(hr)) : mix64(hr ^ mix64(hl));
    key = mix64(key ^ (uint64_t)(uint32_t)tag ^ 0x6963ULL << 40);
    free(l);
    free(r);
    inter_register(inter, mix64(key ^ mix64(times_made(key))));
}

int comm_attr_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    free(attr);
    return MPI_SUCCESS;
}
