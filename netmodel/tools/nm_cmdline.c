/* netmodel's options on the common command line (nm_cmdline.h): --routing checked against the
 * routing registry, and the progress printer of long route set-ups. */
#include "nm_cmdline.h"

#include <string.h>
#include <time.h>

const char *nm_cmdline_routing(const cm_cmdline *c, int key, const char *val)
{
    static char set[128];
    if (cm_cmdline_choice(c, key, nm_routing_at, val) != 0) return NULL;
    snprintf(set, sizeof set, "network.routing=%s", val);
    return set;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void nm_progress_print(void *printer, const char *what, double done, double total)
{
    nm_progress_printer *p = printer;
    double now = mono_s();
    if (strncmp(p->what, what, sizeof p->what - 1) != 0) {   /* a new stage */
        snprintf(p->what, sizeof p->what, "%s", what);
        p->start = now;
        p->last = 0;
    }
    int end = done >= total;
    if (end) p->what[0] = '\0';   /* the next call starts a stage, even of the same name */
    if (end ? p->last == 0 : (now - p->start < 2.0 || (p->last > 0 && now - p->last < 2.0))) return;
    fprintf(stderr, "%s: routes: %s: %.0f%% (%.0f of %.0f)%s\n", p->prog, what, total > 0 ? 100.0 * done / total : 100.0,
            done, total, end ? ", done" : "");
    p->last = now;
}

void nm_progress_attach(nm_config *cfg, nm_progress_printer *p, const char *prog)
{
    memset(p, 0, sizeof *p);
    p->prog = prog;
    nm_config_set_progress(cfg, nm_progress_print, p);
}
