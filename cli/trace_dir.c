/* The directory a run makes for its ranks' raw trace files: made, described (meta.json),
 * converted into the HDF5 trace, removed. */
#define _GNU_SOURCE
#include "launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hwloc.h>

#include "ms_driver.h"
#include "ms_server.h"
#include "ms_proc.h"
#include "exit_codes.h"
#include "netmodel.h"
#include "nm_cmdline.h"
#include "study.h"
#ifdef MPISIM_HAVE_NET_TOOL
#include "net_tool.h"
#endif
#include "ms_outfile.h"
#include "ms_trace.h"
#include "replay_cli.h"
#include "report_text.h"
#include "timeline.h"

/* meta.json beside the ranks' raw files: what the HDF5 trace records about the run. Written
 * before the launch (so that a crash leaves it) and again after, with the ranks' bindings. */
int launch_write_trace_meta(const trace_dir *td, const run_opts *o, const nm_config *cfg, int with_bindings)
{
    /* written beside and renamed over: never through a link, never into another's file */
    unlinkat(td->fd, "meta.json.tmp", 0);
    int fd = openat(td->fd, "meta.json.tmp", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return -1;
    }
    fprintf(f, "{\"mpisim_version\": \"%s\", \"nranks\": %d, \"capture_only\": %s, \"program\": [", MPISIM_VERSION,
            o->nranks, o->capture_only ? "true" : "false");
    for (int i = 0; i < o->nprog; i++) {
        if (i) fputs(", ", f);
        nm_json_write_string(f, o->prog[i]);
    }
    fputs("], \"config\": ", f);
    nm_config_write_json(cfg, f, 0);
    char machine[512];
    launch_machine_summary(machine, sizeof machine);
    fprintf(f, ", \"machine\": ");
    nm_json_write_string(f, machine);
    if (with_bindings) {
        /* each rank left its CPU binding beside its records (rank-R.binding) */
        fputs(", \"bindings\": [", f);
        for (int r = 0; r < o->nranks; r++) {
            char bname[64], line[256] = "";
            snprintf(bname, sizeof bname, "rank-%06d.binding", r);
            int bfd = openat(td->fd, bname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            FILE *b = bfd >= 0 ? fdopen(bfd, "r") : NULL;
            if (bfd >= 0 && !b) close(bfd);
            if (b) {
                if (!fgets(line, sizeof line, b)) line[0] = 0;
                fclose(b);
                line[strcspn(line, "\n")] = 0;
            }
            if (r) fputs(", ", f);
            nm_json_write_string(f, line);
        }
        fputs("]", f);
    }
    fputs("}\n", f);
    if (fclose(f) != 0) {
        int e = errno;
        unlinkat(td->fd, "meta.json.tmp", 0);
        errno = e;
        return -1;
    }
    return renameat(td->fd, "meta.json.tmp", td->fd, "meta.json");
}

/* The names mpisim and the shim write in a raw trace directory. */
static int raw_trace_name(const char *n)
{
    size_t len = strlen(n);
    if (!strcmp(n, "meta.json") || !strcmp(n, "meta.json.tmp") || !strcmp(n, TRACE_ID_FILE)) return 1;
    if (strncmp(n, "rank-", 5)) return 0;
    size_t d = strspn(n + 5, "0123456789");
    /* rank-R.fin: a rank that died inside PMPI_Finalize (the shim's mark, shim_state.h) */
    return d > 0 && (!strcmp(n + 5 + d, ".mstrace") || !strcmp(n + 5 + d, ".binding") || !strcmp(n + 5 + d, ".fin")) &&
           5 + d < len;
}

/* Remove the raw trace directory `leaf` of `parent`: only the names mpisim writes (a link is
 * removed, never followed); anything else in it (a subdirectory, another file) is left and named
 * (`shown` names the directory in messages). */
int launch_remove_raw_dir_at(int parent, const char *leaf, const char *shown, char *err, size_t errlen)
{
    struct stat st;
    if (fstatat(parent, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : (snprintf(err, errlen, "%s: %s", shown, strerror(errno)), -1);
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s is not a directory (a link or a file): remove it yourself", shown);
        return -1;
    }
    int fd = openat(parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        snprintf(err, errlen, "cannot open %s: %s", shown, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat es;
        if (!raw_trace_name(e->d_name) || fstatat(fd, e->d_name, &es, AT_SYMLINK_NOFOLLOW) != 0 ||
            S_ISDIR(es.st_mode)) {
            snprintf(err, errlen, "%s holds %s, which mpisim did not write: remove the directory yourself", shown,
                     e->d_name);
            rc = -1;
        } else if (unlinkat(fd, e->d_name, 0) != 0) {
            snprintf(err, errlen, "cannot remove %s/%s: %s", shown, e->d_name, strerror(errno));
            rc = -1;
        }
    }
    closedir(d);
    if (rc == 0 && unlinkat(parent, leaf, AT_REMOVEDIR) != 0) {
        snprintf(err, errlen, "cannot remove %s: %s", shown, strerror(errno));
        rc = -1;
    }
    return rc;
}

void launch_close_trace_dir(trace_dir *td)
{
    if (td->fd >= 0) close(td->fd);
    if (td->parent >= 0) close(td->parent);
    td->fd = td->parent = -1;
}

/* The run is done with it: removed (only what mpisim wrote in it) and closed. */
int launch_remove_trace_dir(trace_dir *td, char *err, size_t errlen)
{
    int rc = td->parent >= 0 ? launch_remove_raw_dir_at(td->parent, td->leaf, td->shown, err, errlen) : 0;
    launch_close_trace_dir(td);
    return rc;
}

/* The ranks' raw files go to a directory this run creates (mkdir fails if the name exists), so
 * no other user can have planted links in it and no earlier run's rank files are mixed in. An
 * existing one (a run that did not finish) is replaced only with --replace-trace. */
int launch_make_trace_dir(const char *trace, int replace, trace_dir *td, char *err, size_t errlen)
{
    memset(td, 0, sizeof *td);
    td->fd = -1;
    snprintf(td->shown, sizeof td->shown, "%s.raw", trace);
    td->parent = ms_open_parent_dir(td->shown, td->leaf, sizeof td->leaf, err, errlen);
    if (td->parent < 0) return -2;   /* an output that cannot be written (no such directory, ...) */
    if (mkdirat(td->parent, td->leaf, 0700) != 0) {
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create the trace directory %.900s: %s", td->shown, strerror(errno));
            launch_close_trace_dir(td);
            return -2;
        }
        if (!replace) {
            snprintf(err, errlen,
                     "%.400s exists (left by a run that did not finish?): convert it with mpisim trace-recover %.400s OUT.h5, "
                     "remove it, or pass --replace-trace to have this run replace it",
                     td->shown, td->shown);
            goto fail;
        }
        if (launch_remove_raw_dir_at(td->parent, td->leaf, td->shown, err, errlen) < 0) goto fail;
        if (mkdirat(td->parent, td->leaf, 0700) != 0) {
            snprintf(err, errlen, "cannot create the trace directory %.900s: %s", td->shown, strerror(errno));
            goto fail;
        }
    }
    td->fd = openat(td->parent, td->leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (td->fd < 0 || fstat(td->fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        /* swapped between the mkdir and the open: not the directory this run made */
        snprintf(err, errlen, "the trace directory %.900s was replaced as it was made (another user's?)", td->shown);
        if (td->fd >= 0) close(td->fd);
        td->fd = -1;
        goto fail;
    }
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", td->fd);
    ssize_t n = readlink(proc, td->abs, sizeof td->abs - 1);
    if (n > 0 && td->abs[0] == '/') td->abs[n] = 0;
    else if (!realpath(td->shown, td->abs)) snprintf(td->abs, sizeof td->abs, "%s", td->shown);
    int ifd = -1;
    if (launch_random_hex(td->token, 33) < 0 ||
        (ifd = openat(td->fd, TRACE_ID_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0 ||
        write(ifd, td->token, strlen(td->token)) != (ssize_t)strlen(td->token) || close(ifd) != 0) {
        snprintf(err, errlen, "cannot write %.900s/%s: %s", td->shown, TRACE_ID_FILE, strerror(errno));
        if (ifd >= 0) close(ifd);
        char e2[256];
        launch_remove_trace_dir(td, e2, sizeof e2);
        return -2;
    }
    return 0;
fail:
    launch_close_trace_dir(td);
    return -1;
}

/* The raw files -> HDF5, from the held directory (trace-recover's own directory otherwise:
 * dir_fd, named dir). 0 converted (partial or not: *ends says), -1 the raw files could not be
 * read, -2 the trace could not be written; what happened is said on stderr. *kept: the raw files
 * stay (partial: they are what the ranks wrote, should someone want to look). */
int launch_convert_trace(int dir_fd, const char *dir, const char *trace, ms_trace_ends *ends, int *kept, int quiet)
{
    char err[1024];
    *kept = 1;
    int rc = ms_trace_convert_at(dir_fd, dir, trace, ends, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "mpisim: the raw trace stays in %s: %s\n", dir, err);
        return rc;   /* -1 reading the raw files, -2 writing the trace */
    }
    if (rc > 0) {
        fprintf(stderr, "mpisim: trace %s is partial: %s (a replay says 'partial trace'); the raw files stay in %s\n",
                trace, err, dir);
        return 0;
    }
    if (!quiet) fprintf(stderr, "mpisim: trace %s\n", trace);
    *kept = 0;
    return 0;
}
