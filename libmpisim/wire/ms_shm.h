/* The shared-memory transport between the model server and the ranks on its host
 * (docs/architecture.md "Transport").
 *
 * One segment per run, created by the server with mode 0600 under a name that contains the run's
 * secret, unlinked once every rank has attached. It holds one slot per rank: two single-producer
 * single-consumer byte rings (up: rank -> server, down: server -> rank) carrying exactly the
 * bytes the TCP connection would carry (protocol.h messages), so both ends keep one decoder.
 *
 * Waking: a reader that finds nothing sleeps on a futex word ("doorbell") after saying so; a
 * writer bumps the doorbell after each write and makes the wake system call only if the reader
 * said it sleeps. The server has one doorbell for all up rings and a bitmap of the slots written
 * since it last looked, so it never scans every rank. Each rank sleeps on its down ring's
 * doorbell, which another rank may also ring without data ("kick": drive your real MPI, I wait
 * for you in mine).
 *
 * No pointers inside the segment (it is mapped at different addresses): rings name their data
 * by offset. No globals, no MPI: the unit tests use it in one process. */
#ifndef MS_SHM_H
#define MS_SHM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define MS_ALIGN64 alignas(64)
extern "C" {
#else
#define MS_ALIGN64 _Alignas(64)
#endif

#define MS_SHM_MAGIC 0x6d73686dU      /* "mshm" */
#define MS_SHM_VERSION 2U
#define MS_SHM_UP_BYTES (256u * 1024u)  /* per rank: reports are batched, WAITs may list many requests */
#define MS_SHM_DOWN_BYTES (64u * 1024u)

/* A futex word and whether its waiter sleeps (or is about to). */
typedef struct ms_doorbell {
    uint32_t seq;
    uint32_t sleeping;
} ms_doorbell;

/* One byte ring: head and tail count bytes written and read since the start (never wrap). */
typedef struct ms_ring {
    MS_ALIGN64 uint64_t head;       /* written by the producer */
    MS_ALIGN64 uint64_t tail;       /* written by the consumer */
    MS_ALIGN64 ms_doorbell space;   /* the producer waits here for room (rare) */
    uint64_t size;                    /* data bytes, a power of two */
    uint64_t data_off;                /* from the start of the segment */
} ms_ring;

/* slot states: a rank claims its slot once and says when it leaves (its process may outlive
 * MPI_Finalize; a crash is seen by its pid). LEFT_EARLY: a process of this rank ended without
 * entering MPI_Init (the shim's destructor says so, with its place among such exits, because
 * the launcher may end the other ranks a moment later and only the first is the cause). */
enum { MS_SLOT_FREE = 0, MS_SLOT_CLAIMED = 1, MS_SLOT_REFUSED = 2, MS_SLOT_CLOSED = 3, MS_SLOT_LEFT_EARLY = 4 };

typedef struct ms_shm_slot {
    ms_ring up, down;
    MS_ALIGN64 ms_doorbell rank_bell;   /* the rank waits here (down data, or a kick) */
    uint32_t state;                       /* MS_SLOT_*: a rank claims its slot once */
    int32_t pid;
    uint32_t left_order;                  /* LEFT_EARLY: 1 for the first such exit, 2 ... */
} ms_shm_slot;

typedef struct ms_shm_header {
    uint32_t magic, version;
    int32_t nranks;
    uint32_t layout_check;                /* sizeof of the shared structs, folded */
    uint64_t total_bytes;
    int32_t server_pid;                   /* a rank that hears nothing for long looks whether it lives */
    uint32_t early_exits;                 /* processes that ended before MPI_Init, counted */
    MS_ALIGN64 ms_doorbell server_bell; /* the server waits here for any up ring */
    /* then one bit per slot written since the server looked (uint64_t words), then the slots */
} ms_shm_header;

/* Bytes a segment for n ranks takes. */
size_t ms_shm_bytes(int nranks);
/* Lay out a zeroed mapping of ms_shm_bytes(n) bytes. */
void ms_shm_init(void *base, int nranks);
/* Check a mapping made by another process: 0, or -1 (not ours, another version, too short). */
int ms_shm_check(const void *base, size_t mapped);
ms_shm_slot *ms_shm_slot_at(void *base, int rank);

/* Ring: copy up to n bytes in (what fits) or out (what is there); returns the bytes moved. */
size_t ms_ring_write(void *base, ms_ring *r, const void *src, size_t n);
size_t ms_ring_read(void *base, ms_ring *r, void *dst, size_t n);
size_t ms_ring_readable(const ms_ring *r);
size_t ms_ring_writable(const ms_ring *r);

/* Doorbells. The waiter: seen = ms_bell_seq(b); look for work; if none, ms_bell_wait(b, seen, ns)
 * (which says it sleeps, looks once more through `more`, then sleeps unless the bell rang since
 * `seen`). The ringer: after publishing, ms_bell_ring(b). */
uint32_t ms_bell_seq(ms_doorbell *b);
void ms_bell_ring(ms_doorbell *b);
/* Returns 1 if woken or the bell rang, 0 on timeout. more(arg) != 0 means work came meanwhile. */
int ms_bell_wait(ms_doorbell *b, uint32_t seen, int64_t timeout_ns, int (*more)(void *arg), void *arg);

/* The rank side of an up write: mark the slot dirty and ring the server. */
void ms_shm_notify_server(void *base, int rank);
/* The server side: take the set of dirty slots (one word of 64 at a time); 0 when none. */
uint64_t ms_shm_take_dirty(void *base, int word);
/* The process `pid` (the other side of a segment, on this host) has ended: gone, or a zombie
 * nobody has reaped yet (kill(pid, 0) still succeeds for one). */
int ms_shm_pid_gone(int pid);
int ms_shm_dirty_words(int nranks);

/* One step of a spin that waits for another core. */
static inline void ms_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#ifdef __cplusplus
}
#endif
#endif
