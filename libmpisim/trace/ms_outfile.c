/* Output files created without following another user's links: see ms_outfile.h. */
#define _GNU_SOURCE
#include "ms_outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define PROC_SUPER_MAGIC_ 0x9fa0
#define MAX_LINKS 40   /* as the kernel's ELOOP */

static int failf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A link is followed only if this user or root made it: a link another user planted (in /tmp, a
 * shared project directory) must not decide where our file goes. */
static int trusted_link(const struct stat *st) { return st->st_uid == geteuid() || st->st_uid == 0; }

/* The path still to walk, from the directory `cur` (an O_PATH descriptor). */
typedef struct walker {
    const char *path;
    int cur;
    char rest[PATH_MAX * 2];
    int links;
} walker;

static int walker_init(walker *w, const char *path, char *err, size_t errlen)
{
    w->path = path;
    w->links = 0;
    if (!path || !*path) return failf(err, errlen, "an empty file name");
    if (strlen(path) >= sizeof w->rest) return failf(err, errlen, "%s: the name is too long", path);
    snprintf(w->rest, sizeof w->rest, "%s", path);
    w->cur = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (w->cur < 0) return failf(err, errlen, "%s: cannot open %s: %s", path, path[0] == '/' ? "/" : "the working directory", strerror(errno));
    return 0;
}

/* A link's target goes in front of what is left (a target from "/" starts there again). */
static int walker_splice(walker *w, const char *target, char *err, size_t errlen)
{
    if (++w->links > MAX_LINKS) return failf(err, errlen, "%s: too many levels of symbolic links", w->path);
    char rest[sizeof w->rest];
    int n = snprintf(rest, sizeof rest, "%s%s%s", target, w->rest[0] ? "/" : "", w->rest);
    if (n < 0 || (size_t)n >= sizeof rest) return failf(err, errlen, "%s: the name is too long", w->path);
    memcpy(w->rest, rest, (size_t)n + 1);
    if (target[0] == '/') {
        int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return failf(err, errlen, "%s: cannot open /: %s", w->path, strerror(errno));
        close(w->cur);
        w->cur = fd;
    }
    return 0;
}

/* The next component of what is left (empty ones and "." skipped); *last when nothing follows. */
static int pop(walker *w, char *comp, size_t len, int *last)
{
    for (;;) {
        char *p = w->rest;
        while (*p == '/') p++;
        char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n >= len) return -1;
        memcpy(comp, p, n);
        comp[n] = 0;
        char *after = end ? end : p + n;
        while (*after == '/') after++;
        memmove(w->rest, after, strlen(after) + 1);
        *last = !w->rest[0];
        if (strcmp(comp, ".") || *last) return 0;
    }
}

/* Walk every directory of what is left; the last component goes into leaf ("" when the path ends
 * in a directory: "/", "x/", "x/.."). Each directory is opened O_NOFOLLOW, a link among them is
 * followed only if trusted_link. */
static int walk(walker *w, char *leaf, size_t leaflen, char *err, size_t errlen)
{
    for (;;) {
        int last = 0;
        char comp[NAME_MAX + 1];
        if (!w->rest[0]) {
            leaf[0] = 0;
            return 0;
        }
        if (pop(w, comp, sizeof comp, &last) < 0) return failf(err, errlen, "%s: a name in it is too long", w->path);
        if (last && strcmp(comp, "..") && strcmp(comp, ".")) {
            if (strlen(comp) >= leaflen) return failf(err, errlen, "%s: the name is too long", w->path);
            memcpy(leaf, comp, strlen(comp) + 1);
            return 0;
        }
        struct stat st;
        if (strcmp(comp, "..") && fstatat(w->cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
            if (!trusted_link(&st))
                return failf(err, errlen, "%s: %s is a symbolic link of another user (uid %d): not followed", w->path,
                             comp, (int)st.st_uid);
            char target[PATH_MAX];
            ssize_t n = readlinkat(w->cur, comp, target, sizeof target - 1);
            if (n <= 0) return failf(err, errlen, "%s: cannot read the link %s: %s", w->path, comp, strerror(errno));
            target[n] = 0;
            if (walker_splice(w, target, err, errlen) < 0) return -1;
            continue;
        }
        int fd = openat(w->cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return errno == ENOENT ? failf(err, errlen, "%s: there is no directory %s", w->path, comp)
                   : errno == ENOTDIR ? failf(err, errlen, "%s: %s is not a directory", w->path, comp)
                   : failf(err, errlen, "%s: %s: %s", w->path, comp,
                           errno == ELOOP ? "a symbolic link appeared while it was being opened" : strerror(errno));
        close(w->cur);
        w->cur = fd;
        if (last) {
            leaf[0] = 0;
            return 0;
        }
    }
}

/* "cannot write [what] " before a message that names the path (resolve()'s) */
static int prefix(const ms_outfile *o, char *err, size_t errlen)
{
    if (!err || !errlen) return -1;
    char m[1024];
    snprintf(m, sizeof m, "%s", err);
    snprintf(err, errlen, "cannot write %s%s%s", o->what, o->what[0] ? " " : "", m);
    return -1;
}

static void outfile_init(ms_outfile *o, const char *path, const char *what)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->what = what ? what : "";
    o->dirfd = -1;
    o->fd = -1;
    o->keep_mode = -1;
}

/* Resolve `path` to a directory and a name in it. *kind: 0 a new or regular file to replace, 1
 * to write in place (o->fd is open), or -1. */
static int resolve(ms_outfile *o, const char *path, int allow_direct, char *err, size_t errlen)
{
    walker w;
    if (walker_init(&w, path, err, errlen) < 0) return -1;
    for (;;) {
        if (walk(&w, o->name, sizeof o->name, err, errlen) < 0) goto fail;
        if (!o->name[0]) {
            failf(err, errlen, "%s is a directory", path);
            goto fail;
        }
        struct stat st;
        if (fstatat(w.cur, o->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) {
                failf(err, errlen, "%s: %s", path, strerror(errno));
                goto fail;
            }
            break;   /* a new file */
        }
        if (S_ISLNK(st.st_mode)) {
            struct statfs fs;
            if (allow_direct && st.st_uid == geteuid() && fstatfs(w.cur, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC_) {
                /* /proc/self/fd/N (what /dev/stdout leads to) names an open descriptor of this
                 * process, not a path: it is written where it points. One of our own is taken
                 * as it is (dup: at its offset, after what the program wrote to a file there,
                 * not over it from the start as a new open would) */
                struct stat here, self;
                char *end;
                long n = strtol(o->name, &end, 10);
                if (!*end && n >= 0 && n < INT_MAX && fstat(w.cur, &here) == 0 && stat("/proc/self/fd", &self) == 0 &&
                    here.st_ino == self.st_ino && here.st_dev == self.st_dev)
                    o->fd = fcntl((int)n, F_DUPFD_CLOEXEC, 0);
                else
                    o->fd = openat(w.cur, o->name, O_WRONLY | O_NOCTTY | O_CLOEXEC);
                if (o->fd < 0) {
                    failf(err, errlen, "%s: %s", path, strerror(errno));
                    goto fail;
                }
                o->direct = 1;
                break;
            }
            if (!trusted_link(&st)) {
                failf(err, errlen,
                      "%s is a symbolic link of another user (uid %d): not written through (remove it, or name "
                      "another file)", path, (int)st.st_uid);
                goto fail;
            }
            char target[PATH_MAX];
            ssize_t n = readlinkat(w.cur, o->name, target, sizeof target - 1);
            if (n <= 0) {
                failf(err, errlen, "%s: cannot read the link: %s", path, strerror(errno));
                goto fail;
            }
            target[n] = 0;
            if (walker_splice(&w, target, err, errlen) < 0) goto fail;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            failf(err, errlen, "%s is a directory", path);
            goto fail;
        }
        if (S_ISREG(st.st_mode)) {
            if (st.st_uid == geteuid()) o->keep_mode = (int)(st.st_mode & 07777);
            break;   /* replaced by the new file */
        }
        if (!allow_direct || S_ISBLK(st.st_mode)) {
            failf(err, errlen, "%s is not a regular file", path);
            goto fail;
        }
        /* a character device or a FIFO (/dev/null, /dev/full, a named pipe): written in place; a
         * FIFO nobody reads is an error, not a hang */
        o->fd = openat(w.cur, o->name, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (o->fd < 0) {
            failf(err, errlen, "%s: %s", path, errno == ENXIO ? "a FIFO nobody reads" : strerror(errno));
            goto fail;
        }
        fcntl(o->fd, F_SETFL, fcntl(o->fd, F_GETFL) & ~O_NONBLOCK);
        o->direct = 1;
        break;
    }
    o->dirfd = w.cur;
    return 0;
fail:
    close(w.cur);
    return -1;
}

/* A temporary name beside the final one, not yet taken: ".NAME.XXXXXXXX.tmp" (shortened for a
 * long NAME). */
static void temp_name(ms_outfile *o)
{
    unsigned char r[4] = {0};
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        static unsigned seq;
        unsigned v = (unsigned)getpid() * 2654435761u + ++seq;
        memcpy(r, &v, sizeof r);
    }
    char hex[9];
    snprintf(hex, sizeof hex, "%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
    if (strlen(o->name) + 16 < sizeof o->tmp && strlen(o->name) + 16 <= NAME_MAX)
        snprintf(o->tmp, sizeof o->tmp, ".%.*s.%s.tmp", (int)(sizeof o->tmp - 16), o->name, hex);
    else
        snprintf(o->tmp, sizeof o->tmp, ".mpisim-out.%s.tmp", hex);
}

int ms_outfile_open(ms_outfile *o, const char *path, int flags, const char *what, char *err, size_t errlen)
{
    outfile_init(o, path, what);
    if ((flags & MS_OUT_STDOUT) && path && !strcmp(path, "-")) {
        o->direct = o->is_stdout = 1;
        o->f = stdout;
        return 0;
    }
    if (resolve(o, path, 1, err, errlen) < 0) return prefix(o, err, errlen);
    if (!o->direct) {
        for (int tries = 0; tries < 100 && o->fd < 0; tries++) {
            temp_name(o);
            o->fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
            if (o->fd < 0 && errno != EEXIST) break;
        }
        if (o->fd < 0) {
            int e = errno;
            o->tmp[0] = 0;
            ms_outfile_discard(o);
            failf(err, errlen, "%s: %s", path, strerror(e));
            return prefix(o, err, errlen);
        }
        struct stat st;
        if (fstat(o->fd, &st) == 0) {
            o->tmp_dev = st.st_dev;
            o->tmp_ino = st.st_ino;
        }
    }
    o->f = fdopen(o->fd, "w");
    if (!o->f) {
        int e = errno;
        ms_outfile_discard(o);
        failf(err, errlen, "%s: %s", path, strerror(e));
        return prefix(o, err, errlen);
    }
    o->fd = -1;   /* the stream owns it */
    return 0;
}

int ms_outfile_reserve(ms_outfile *o, const char *path, const char *what, char *tmp_path, size_t len, char *err,
                       size_t errlen)
{
    outfile_init(o, path, what);
    if (resolve(o, path, 0, err, errlen) < 0) return prefix(o, err, errlen);
    temp_name(o);
    char probe[64];
    struct stat st;
    snprintf(probe, sizeof probe, "/proc/self/fd/%d", o->dirfd);
    int n;
    if (stat(probe, &st) == 0 && S_ISDIR(st.st_mode)) {
        n = snprintf(tmp_path, len, "%s/%s", probe, o->tmp);
    } else {
        /* no /proc: the directory by its name (the writer's exclusive create still refuses a link
         * at the temporary name) */
        const char *slash = strrchr(path, '/');
        n = slash ? snprintf(tmp_path, len, "%.*s/%s", (int)(slash - path), path, o->tmp)
                  : snprintf(tmp_path, len, "%s", o->tmp);
    }
    if (n < 0 || (size_t)n >= len) {
        ms_outfile_discard(o);
        return failf(err, errlen, "%s: the name is too long", path);
    }
    return 0;
}

int ms_outfile_commit(ms_outfile *o, char *err, size_t errlen)
{
    int bad = 0, e = 0;
    if (o->f) {
        if (fflush(o->f) != 0 || ferror(o->f)) {
            bad = 1;
            e = errno;
        }
        if (!o->is_stdout && fclose(o->f) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        o->f = NULL;
    }
    if (o->fd >= 0) {
        if (close(o->fd) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        o->fd = -1;
    }
    if (!bad && o->tmp[0]) {
        struct stat st;
        if (fstatat(o->dirfd, o->tmp, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || (o->tmp_ino && (st.st_ino != o->tmp_ino || st.st_dev != o->tmp_dev))) {
            /* what is there now is not the file written: leave it alone */
            o->tmp[0] = 0;
            ms_outfile_discard(o);
            failf(err, errlen, "%s: its temporary file was replaced while it was written", o->path);
            return prefix(o, err, errlen);
        }
        if (o->keep_mode >= 0) fchmodat(o->dirfd, o->tmp, (mode_t)o->keep_mode, 0);
        if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0) {
            bad = 1;
            e = errno;
        } else {
            o->tmp[0] = 0;
        }
    }
    if (bad) {
        ms_outfile_discard(o);
        failf(err, errlen, "%s: %s", o->path, e ? strerror(e) : "write error");
        return prefix(o, err, errlen);
    }
    ms_outfile_discard(o);   /* closes the directory */
    return 0;
}

void ms_outfile_discard(ms_outfile *o)
{
    if (o->f && !o->is_stdout) fclose(o->f);
    o->f = NULL;
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    if (o->tmp[0] && o->dirfd >= 0) unlinkat(o->dirfd, o->tmp, 0);
    o->tmp[0] = 0;
    if (o->dirfd >= 0) close(o->dirfd);
    o->dirfd = -1;
}

int ms_open_parent_dir(const char *path, char *leaf, size_t leaflen, char *err, size_t errlen)
{
    walker w;
    if (walker_init(&w, path, err, errlen) < 0) return -1;
    if (walk(&w, leaf, leaflen, err, errlen) < 0) {
        close(w.cur);
        return -1;
    }
    if (!leaf[0]) {
        close(w.cur);
        return failf(err, errlen, "%s: names a directory, not a new entry in one", path);
    }
    return w.cur;
}
