/* The shim's connection to the model server: a TCP socket, or the rank's slot in the server's
 * shared segment (libmpisim/wire/ms_shm.h) when the rank runs on the server's host. Both carry
 * the same protocol.h byte stream; this file only moves bytes. No MPI, no globals: the unit
 * tests (tests/shim) drive it in one process. */
#ifndef MS_TRANSPORT_H
#define MS_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ms_shm_slot;

typedef struct ms_transport {
    int fd;                      /* TCP connection, or -1 */
    void *shm;                   /* the mapped segment, or NULL */
    size_t shm_bytes;
    struct ms_shm_slot *slot;    /* this rank's rings and doorbell */
    int rank;
    int server_pid;
    unsigned quiet_waits;        /* sleeps that timed out in a row (looks at the server's pid now and then) */
    uint64_t sleeps;             /* futex sleeps (each one is a wake-up system call for the server) */
    char *out;                   /* batched messages not yet sent */
    size_t out_len, out_cap;
    char *in;                    /* bytes received, not yet handled */
    size_t in_len, in_cap;
} ms_transport;

void ms_tp_init(ms_transport *t);
/* "host:port" or "[v6 address]:port"; 0 or -1 */
int ms_tp_connect_tcp(ms_transport *t, const char *spec);
/* Open the segment `name`, check it, claim slot `rank`. 0, or -1 with why in err (then use TCP). */
int ms_tp_attach_shm(ms_transport *t, const char *name, int rank, char *err, size_t errlen);
/* A process of `rank` ends without having entered MPI_Init: say so in its slot of the segment
 * (if there is one, and the slot is still free), so that the run names the rank that left first. */
void ms_tp_note_left_early(const char *name, int rank);
/* Append one message (header + a + b) to the batch. -1: out of memory. */
int ms_tp_put(ms_transport *t, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
/* Send the batch. -1: the server is gone (or refused this rank). */
int ms_tp_flush(ms_transport *t);
/* Append what the server has sent to t->in, waiting up to wait_ms for something when nothing is
 * there (0: only look). Bytes read, or -1 when the server is gone or refused this rank. */
long ms_tp_read(ms_transport *t, int wait_ms);
/* The same with the wait in microseconds (over TCP rounded up to a millisecond). */
long ms_tp_read_us(ms_transport *t, int64_t wait_us);
/* Wake `rank` (on this host's segment) if it sleeps in a wait, without data: it drives its real MPI
 * once (a "kick", ms_shm.h). Nothing over TCP. */
void ms_tp_kick(ms_transport *t, int rank);
/* Whether the server is still there, as far as this side can tell now (the shared segment's
 * server by its pid; a TCP connection's close says it on read). */
int ms_tp_server_alive(const ms_transport *t);
/* One message now, bypassing the batch, or nothing: for a signal handler (async-signal-safe) while
 * no ms_tp_flush is under way. 0 sent, -1 not (no room, no connection). */
int ms_tp_send_now(ms_transport *t, uint32_t type, const void *a, size_t alen);
/* Complete messages at the start of t->in: the length of the first (header included), or 0. */
size_t ms_tp_next(const ms_transport *t);
/* Drop the first n bytes of t->in (handled messages). */
void ms_tp_consume(ms_transport *t, size_t n);
void ms_tp_close(ms_transport *t);

#ifdef __cplusplus
}
#endif
#endif
