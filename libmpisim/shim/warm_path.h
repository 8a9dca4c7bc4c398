/* The way back into the program after a switched-out MPI call (docs/architecture.md, "The cold
 * return path"): which code the next gap will run, so that it can be brought into the caches
 * before the gap's first reading. */
#ifndef MS_WARM_PATH_H
#define MS_WARM_PATH_H

/* Learn the loaded objects' address ranges (to decode only calls into them). */
void ms_wp_init(void);
/* The program called from `site` right after returning to `prev_site` (learned per call). */
void ms_wp_note(const void *prev_site, const void *site);
/* Touch what the way back from the current call (returning to `site` through `wrapper_ret`) into
 * the next wrapper is known to run: the wrapper's return, the program's code up to its next
 * call, that call's PLT stub and GOT slot, the next wrapper's entry. */
int ms_wp_touch(const void *site, const void *wrapper_ret);   /* 1: the next wrapper was probed */

#endif
