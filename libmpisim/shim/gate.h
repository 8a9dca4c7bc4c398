/* The compute gate (docs/architecture.md "The compute gate"): at most a number of ranks of a host
 * compute at once. A rank takes a slot when its MPI call returns to the program and gives it
 * back when it enters the next one; waiting ranks get free slots least virtual clock first. The
 * slots live in a shared-memory segment named after the run's secret: atomics while uncontended,
 * a futex while contended, no allocation after ms_gate_open. Internal to the shim. */
#ifndef MS_SHIM_GATE_H
#define MS_SHIM_GATE_H

#include <stdint.h>

typedef struct ms_gate_stats {
    int32_t slots;       /* the host's slots at the end (0: no gate); more than at the start after timeouts */
    uint64_t waits;      /* returns to the program that had to wait for a slot */
    int64_t wait_ns;     /* wall time spent waiting for slots */
    uint64_t timeouts;   /* waits that gave up (no rank left computation for timeout_ns) and widened the gate */
} ms_gate_stats;

/* Attach this rank (rank of size) to the host's gate of `slots` slots; slots <= 0 or no shared
 * memory leaves the gate off (returns -1; the run goes on ungated). A wait longer than
 * timeout_ns during which no rank of the host gave a slot back ends with the rank computing
 * anyway and the host's gate one slot wider. */
int ms_gate_open(const char *secret, int rank, int size, int slots, int64_t timeout_ns);
/* Remove the segment's name once every rank of the host has opened it (after a barrier). */
void ms_gate_unlink(const char *secret);
/* Back to the program: take a slot (waits if none is free). clock_ps orders the waiters. */
void ms_gate_take(int64_t clock_ps);
/* Into an MPI call: give the slot back, handing it to the waiter with the least clock. */
void ms_gate_leave(void);
void ms_gate_close(void);
void ms_gate_get_stats(ms_gate_stats *st);

#endif
