/* Communicators (split from shim.c): the ids the model knows them by, agreed without messages. */
#define _GNU_SOURCE
#include "shim_state.h"

#include <stdlib.h>
#include <string.h>

typedef struct ms_comm_info {
    uint64_t id;
    uint64_t children;           /* communicators created from this one so far */
} ms_comm_info;
static ms_comm_info world_info = {MS_COMM_WORLD_ID, 0}, self_info = {MS_COMM_SELF_ID, 0};

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
    if (!ci) {
        int inter = 0;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter) ms_fatal("intercommunicators are not modelled yet");
        ms_fatal("a communicator made by a call mpisim does not model was used");
    }
    return ci->id;
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

static void comm_attach(MPI_Comm comm, uint64_t id)
{
    ms_comm_info *ci = malloc(sizeof *ci);
    if (!ci) ms_fatal("out of memory");
    ci->id = id;
    ci->children = 0;
    PMPI_Comm_set_attr(comm, S.comm_keyval, ci);
}

int ms_comm_register(MPI_Comm parent, MPI_Comm newcomm)
{
    ms_comm_info *pi = comm_info(parent);
    if (!pi) ms_fatal("a communicator made by a call mpisim does not model was used");
    uint64_t seq = ++pi->children; /* same on every member of parent: creation is collective */
    if (newcomm == MPI_COMM_NULL) return MPI_SUCCESS;
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

uint64_t ms_comm_prepare_group(MPI_Comm parent, MPI_Group group, int tag)
{
    int n = 0;
    PMPI_Group_size(group, &n);
    int32_t *members = group_world_ranks(group, n);
    uint64_t key = comm_id_of(mix64(ms_comm_id(parent) ^ mix64(0x6367ULL << 32 ^ (uint32_t)tag)), members, n);
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
    uint64_t id = comm_id_of(mix64(key ^ mix64(++cg_seen[i].count)), members, n);
    comm_add(id, members, n);
    free(members);
    return id;
}

void ms_comm_attach(MPI_Comm comm, uint64_t id)
{
    if (comm != MPI_COMM_NULL) comm_attach(comm, id);
}

int comm_attr_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    free(attr);
    return MPI_SUCCESS;
}
