/* SPDX-License-Identifier: MIT */
/*
 * out_file.c: the tool's one way to write an output file (cli_out_*), used
 * by every file it writes: run's --out buffers, demo's PNG.
 *
 * Design decisions:
 * - A failed write never destroys what was there. The bytes go to a new
 *   temporary file beside the target (same folder, so the rename stays on
 *   one file system), created with O_EXCL so it is certainly kiln's own;
 *   they are fsync'd, and only then renamed over the target. A failure
 *   anywhere removes that temporary file and nothing else: the target keeps
 *   its old content, or stays absent. So `--buffer 0=p.bin --out 0=p.bin`
 *   is safe even when the disk fills up.
 * - A target that exists and is not a regular file (/dev/null, /dev/full, a
 *   FIFO, a terminal) is written in place: it is opened for writing without
 *   O_TRUNC or O_CREAT, a failed write is reported, and nothing is ever
 *   removed. A folder is refused. A symbolic link is followed: the file it
 *   names is the target, and the link stays.
 * - A replaced regular file keeps its permission bits (and, for root, its
 *   owner); a new file gets 0666 less the umask, as fopen's would.
 * - "-" is standard output: written in place through a dup of fd 1 (never
 *   renamed or removed); a file named - is ./-.
 * - If kiln is killed mid-write, the temporary file stays behind, named
 *   .NAME.kiln-PID-N.tmp, beside the untouched target.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static bool out_fail(struct cli_out *o, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool out_fail(struct cli_out *o, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->why, sizeof o->why, fmt, ap);
    va_end(ap);
    o->failed = true;
    errno = err;
    return false;
}

/* The folder part of path ("." when it has none); malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

static void out_close_fd(struct cli_out *o)
{
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
}

bool cli_out_open(struct cli_out *o, const char *path)
{
    *o = (struct cli_out){.path = path, .fd = -1};
    if (!path || !*path)
        return out_fail(o, EINVAL, "no file name");
    if (!strcmp(path, "-")) {
        fflush(stdout);   /* what the tool printed there comes first */
        o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (o->fd < 0)
            return out_fail(o, errno, "standard output: %s", strerror(errno));
        o->in_place = true;
        return true;
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return out_fail(o, errno, "%s", strerror(errno));
    if (exists && S_ISDIR(st.st_mode))
        return out_fail(o, EISDIR, "is a directory");
    if (exists && !S_ISREG(st.st_mode)) {
        /* A device, FIFO or socket: written in place, never replaced.
         * O_NONBLOCK so a FIFO nobody reads is an error (ENXIO), not a
         * hang; writes block again after. */
        o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (o->fd < 0)
            return out_fail(o, errno, "cannot open it for writing: %s",
                            errno == ENXIO ? "no process has it open for reading" : strerror(errno));
        int fl = fcntl(o->fd, F_GETFL);
        if (fl >= 0)
            (void)fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK);
        o->in_place = true;
        return true;
    }
    if (exists && access(path, W_OK) != 0)
        return out_fail(o, errno, "cannot write it: %s", strerror(errno));
    /* A symbolic link's target is replaced, not the link. */
    struct stat lst;
    if (exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        o->target = realpath(path, NULL);
        if (!o->target)
            return out_fail(o, errno, "cannot resolve the link: %s", strerror(errno));
    } else {
        o->target = strdup(path);
    }
    char *dir = o->target ? dir_of(o->target) : NULL;
    const char *base = o->target ? strrchr(o->target, '/') : NULL;
    base = base ? base + 1 : o->target;
    size_t cap = o->target ? strlen(o->target) + 64 : 0;
    o->tmp = o->target ? malloc(cap) : NULL;
    if (!dir || !o->tmp) {
        free(dir);
        cli_out_abort(o);
        return out_fail(o, ENOMEM, "out of host memory");
    }
    static unsigned counter;
    int err = 0;
    for (int tries = 0; tries < 100; tries++) {
        snprintf(o->tmp, cap, "%s/.%s.kiln-%ld-%u.tmp", dir, base, (long)getpid(), counter++);
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        if (o->fd >= 0 || (err = errno) != EEXIST)
            break;
    }
    if (o->fd < 0) {
        free(o->tmp);
        o->tmp = NULL;
        out_fail(o, err, "cannot create a temporary file in its folder '%s': %s", dir, strerror(err));
        free(dir);
        cli_out_abort(o);
        return false;
    }
    free(dir);
    if (exists) {
        /* Best effort: the replacement keeps the old file's mode and owner. */
        if (geteuid() == 0)
            (void)!fchown(o->fd, st.st_uid, st.st_gid);
        (void)!fchmod(o->fd, st.st_mode & 07777);
    }
    return true;
}

bool cli_out_write(struct cli_out *o, const void *data, size_t len)
{
    if (o->failed || o->fd < 0)
        return false;
    const char *p = data;
    while (len) {
        ssize_t n = write(o->fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return out_fail(o, n < 0 ? errno : EIO, "write failed: %s", strerror(n < 0 ? errno : EIO));
        p += n;
        len -= (size_t)n;
    }
    return true;
}

bool cli_out_commit(struct cli_out *o)
{
    bool ok = !o->failed && o->fd >= 0;
    if (ok && o->tmp && fsync(o->fd) != 0)
        ok = out_fail(o, errno, "write failed: %s", strerror(errno));
    if (o->fd >= 0) {
        int r = close(o->fd);
        o->fd = -1;
        /* In place, a device's own errors were seen by write already. */
        if (ok && r != 0 && errno != EINTR)
            ok = out_fail(o, errno, "write failed: %s", strerror(errno));
    }
    if (ok && o->tmp && rename(o->tmp, o->target) != 0)
        ok = out_fail(o, errno, "cannot replace it: %s", strerror(errno));
    if (ok && o->tmp) {
        free(o->tmp);   /* renamed: no longer a temporary file to remove */
        o->tmp = NULL;
        /* The rename itself is durable once the folder is synced; best effort. */
        char *dir = dir_of(o->target);
        int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    cli_out_abort(o);
    return ok;
}

void cli_out_abort(struct cli_out *o)
{
    int err = errno;
    out_close_fd(o);
    if (o->tmp)
        unlink(o->tmp);   /* kiln's own temporary file, never the target */
    free(o->tmp);
    free(o->target);
    o->tmp = o->target = NULL;
    errno = err;
}

bool cli_write_file(const char *path, const void *data, size_t len, char *why, size_t why_len)
{
    struct cli_out o;
    bool ok = cli_out_open(&o, path) && cli_out_write(&o, data, len) && cli_out_commit(&o);
    if (!ok) {
        snprintf(why, why_len, "%s", o.why);
        cli_out_abort(&o);
    }
    return ok;
}
