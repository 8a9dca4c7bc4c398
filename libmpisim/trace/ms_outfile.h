/* Output files created without following another user's links (docs/architecture.md, "Security
 * and failures"). Every file mpisim writes (a report, a trace, a timeline, a table) goes through
 * here: the directory is opened component by component, following only links whose owner is this
 * user or root; the file is created under a temporary name in that directory (O_CREAT|O_EXCL|
 * O_NOFOLLOW) and renamed over the name only once it is complete, so a link planted at the name
 * is never written through and a failed write leaves no half file. A name that is a character
 * device or a FIFO (/dev/null, /dev/full, a pipe) is written directly; "-" is standard output
 * where the caller allows it. No globals; errors come back as text. */
#ifndef MS_OUTFILE_H
#define MS_OUTFILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MS_OUT_NAME_MAX 256

typedef struct ms_outfile {
    const char *path;            /* as the user gave it, for messages */
    const char *what;            /* what it is, for messages ("the report"), or "" */
    int dirfd;                   /* the directory the file goes into, or -1 */
    int fd;                      /* the file being written, or -1 */
    FILE *f;
    int direct;                  /* written in place: standard output, a device, a FIFO */
    int is_stdout;
    char name[MS_OUT_NAME_MAX];  /* the final name in dirfd */
    char tmp[MS_OUT_NAME_MAX];   /* the temporary name in dirfd ("" once renamed or removed) */
    dev_t tmp_dev;
    ino_t tmp_ino;
    int keep_mode;               /* the file replaced had this mode (-1: none) */
} ms_outfile;

enum { MS_OUT_STDOUT = 1 };   /* flags: "-" means standard output */

/* Open `path` for writing as above; the stream is o->f. -1 and a message naming path, and `what`
 * it is ("the report": "cannot write the report PATH: ..."; NULL: nothing). */
int ms_outfile_open(ms_outfile *o, const char *path, int flags, const char *what, char *err, size_t errlen);
/* The file is complete: flush, close and rename it into place. -1 (and nothing left under the
 * temporary name) if any write, the close or the rename failed: a full disk says so here. */
int ms_outfile_commit(ms_outfile *o, char *err, size_t errlen);
/* Give up: the temporary file is removed, whatever was at the name stays. */
void ms_outfile_discard(ms_outfile *o);

/* For a writer that creates the file itself (HDF5): the directory and the names as for
 * ms_outfile_open, but nothing is created; *tmp_path is a path to the temporary name through the
 * directory's descriptor (/proc/self/fd/N/NAME), which the writer must create exclusively
 * (H5F_ACC_EXCL: O_CREAT|O_EXCL never follows a link). Then ms_outfile_commit or _discard. */
int ms_outfile_reserve(ms_outfile *o, const char *path, const char *what, char *tmp_path, size_t len, char *err,
                       size_t errlen);

/* The directory that would hold `path`, opened component by component as above (O_DIRECTORY),
 * and path's last component into leaf (not ".", ".." or empty). The descriptor, or -1. */
int ms_open_parent_dir(const char *path, char *leaf, size_t leaflen, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
