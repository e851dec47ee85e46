/* SPDX-License-Identifier: MIT */
/*
 * save.c: writing archive files so that no crash corrupts them (see
 * archive.h), cleaning up after dead processes, and loading small files
 * whole.
 *
 * Every step of a save passes through step(), which is where a test's
 * fault (kill, ENOSPC, EIO at the Nth step) strikes.
 */
#define _GNU_SOURCE
#include "archive.h"
#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1u << 20)

#ifdef KILN_TEST_HOOKS
static _Atomic uint32_t fault_kind, fault_at, steps;

void arc_fault_set(enum arc_fault fault, uint32_t at)
{
    atomic_store(&fault_kind, (uint32_t)fault);
    atomic_store(&fault_at, at);
}

uint32_t arc_fault_steps(void) { return atomic_load(&steps); }

/* One step of a save: 0 to go on, or an errno the step is to fail with. */
static int step(void)
{
    uint32_t n = atomic_fetch_add(&steps, 1) + 1;
    if (n != atomic_load(&fault_at))
        return 0;
    switch ((enum arc_fault)atomic_load(&fault_kind)) {
    case ARC_FAULT_KILL:
        kill(getpid(), SIGKILL);
        for (;;)
            pause();
    case ARC_FAULT_ENOSPC: return ENOSPC;
    case ARC_FAULT_EIO: return EIO;
    case ARC_FAULT_NONE: break;
    }
    return 0;
}
#else
static inline int step(void) { return 0; }   /* shipped builds: no fault injection */
#endif

/* The file operations of a save, each behind a fault step: -1 with errno
 * set on failure, as the system calls they wrap. */
static int fail_with(int e)
{
    errno = e;
    return -1;
}
static int s_openat(int dfd, const char *name, int flags, mode_t mode)
{
    int e = step();
    return e ? fail_with(e) : openat(dfd, name, flags, mode);
}
static ssize_t s_write(int fd, const void *p, size_t n)
{
    int e = step();
    return e ? fail_with(e) : write(fd, p, n);
}
static int s_fsync(int fd)
{
    int e = step();
    return e ? fail_with(e) : fsync(fd);
}
static int s_renameat(int dfd, const char *from, const char *to)
{
    int e = step();
    return e ? fail_with(e) : renameat(dfd, from, dfd, to);
}
static int s_dup(int fd)
{
    int e = step();
    return e ? fail_with(e) : fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

kiln_result arc_save(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096], tmp[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", name, (long)getpid());
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd < 0) {
        int e = errno;
        struct stat st;
        if ((e == ELOOP || e == ENOTDIR) && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode))
            return KILN_RAISE(KILN_ERR_IO, "archive save of %s: the folder %s is a symbolic link: not written "
                              "through (kiln follows no links in a folder it writes)", path, dir);
        return KILN_RAISE(KILN_ERR_IO, "archive save of %s: cannot open the folder %s: %s", path, dir, strerror(e));
    }
    const char *what = "create";
    int fd = s_openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        int e = errno;
        close(dir_fd);
        return KILN_RAISE(KILN_ERR_IO, "archive save of %s: %s %s/%s: %s", path, what, dir, tmp, strerror(e));
    }
    const uint8_t *p = data;
    size_t done = 0;
    int err = 0;
    while (!err && done < len) {
        size_t n = KILN_MIN(len - done, (size_t)CHUNK);
        what = "write";
        ssize_t w = s_write(fd, p + done, n);
        if (w < 0) {
            if (errno != EINTR)
                err = errno;
            continue;
        }
        done += (size_t)w;
    }
    if (!err) {
        what = "fsync";
        if (s_fsync(fd) < 0)
            err = errno;
    }
    if (close(fd) < 0 && !err) {
        what = "close";
        err = errno;
    }
    if (!err) {
        what = "rename";
        if (s_renameat(dir_fd, tmp, name) < 0)
            err = errno;
    }
    if (err) {
        unlinkat(dir_fd, tmp, 0);
        close(dir_fd);
        return KILN_RAISE(KILN_ERR_IO, "archive save of %s: %s: %s", path, what, strerror(err));
    }
    /* The rename is durable once the folder is. */
    what = "folder fsync";
    int dfd = s_dup(dir_fd);
    close(dir_fd);
    if (dfd < 0 || s_fsync(dfd) < 0) {
        err = errno;
        if (dfd >= 0)
            close(dfd);
        /* The file is whole and in place; only its durability is in doubt. */
        return KILN_RAISE(KILN_ERR_IO, "archive save of %s: %s: %s", path, what, strerror(err));
    }
    close(dfd);
    return KILN_OK;
}

uint32_t arc_clean_tmp(const char *dir)
{
    DIR *d = file_opendir_nofollow(dir);
    if (!d)
        return 0;
    uint32_t removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".tmp"))
            continue;
        /* "<name>.<pid>.tmp": the writer's pid sits before ".tmp". */
        const char *end = e->d_name + n - 4, *dot = end;
        while (dot > e->d_name && dot[-1] != '.')
            dot--;
        char *stop;
        long pid = strtol(dot, &stop, 10);
        if (dot == end || stop != end || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
            continue;   /* its writer still runs */
        removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
    }
    closedir(d);
    return removed;
}

kiln_result arc_open_bounded(const char *path, uint64_t max_bytes, bool follow, int *fd, uint64_t *size)
{
    char why[PATH_MAX + 160];
    switch (file_open_bounded(path, KILN_MIN(max_bytes, ARC_MAX_FILE), "the largest archive file kiln reads", follow,
                              fd, size, why, sizeof why)) {
    case FILE_OPENED:
        return KILN_OK;
    case FILE_TOO_LARGE:
        return KILN_RAISE(KILN_ERR_LIMIT, "%s", why);
    default:
        return KILN_RAISE(KILN_ERR_IO, "%s", why);
    }
}

kiln_result arc_load(struct arc_loaded *l, const char *path, uint64_t max_bytes)
{
    *l = (struct arc_loaded){0};
    int fd;
    uint64_t size;
    KILN_TRY(arc_open_bounded(path, max_bytes, false, &fd, &size));
    uint8_t *p = size ? mem_alloc((size_t)size) : NULL;
    if (size && !p) {
        close(fd);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory reading %s (%llu bytes)", path,
                          (unsigned long long)size);
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, p + done, (size_t)size - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(p);
            close(fd);
            return KILN_RAISE(KILN_ERR_IO, "cannot read %s: %s", path, strerror(e));
        }
        if (n == 0)
            break;   /* cut since it was opened: what was there */
        done += (size_t)n;
    }
    close(fd);
    l->data = p;
    l->size = done;
    return KILN_OK;
}

void arc_loaded_free(struct arc_loaded *l)
{
    free(l->data);
    *l = (struct arc_loaded){0};
}
