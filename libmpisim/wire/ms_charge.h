/* What a rank's computation is charged in virtual time: its measured nanoseconds (CPU or wall
 * time, by shim.compute) times shim.cpu_factor, in picoseconds. One definition for the shim, which
 * charges live, and replay, which recharges a trace's raw times under another factor, so that the
 * two cannot drift apart. */
#ifndef MS_CHARGE_H
#define MS_CHARGE_H

#include <stdint.h>

/* unrounded: replay scales it again (--cpu-scale) before it rounds */
static inline double ms_charge_ps_exact(double ns, double cpu_factor) { return ns * 1000.0 * cpu_factor; }

static inline int64_t ms_charge_ps(int64_t ns, double cpu_factor)
{
    return (int64_t)(ms_charge_ps_exact((double)ns, cpu_factor) + 0.5);
}

#endif
