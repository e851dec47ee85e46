/* SPDX-License-Identifier: MIT */
/*
 * segment.c: shared memory segments. memfd_create is called through
 * syscall() (a libc may lack the wrapper); the segment is sized, then
 * sealed against shrinking and growing and against further sealing, so a
 * peer holding it can neither cut it under our mapping (a read past a
 * file's end is SIGBUS) nor change the seals. Where memfd is missing
 * (ENOSYS), or when asked, a POSIX shm object is opened with O_EXCL and
 * unlinked at once: nothing is left in /dev/shm, but it cannot be sealed,
 * so adopting such a segment must be allowed explicitly.
 *
 * Adopting trusts nothing the peer said: the size it announced is checked
 * against fstat before anything is mapped, and the seals are read back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/transport.h"

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001u
#define MFD_ALLOW_SEALING 0x0002u
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS 1033
#define F_GET_SEALS 1034
#define F_SEAL_SEAL 0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#endif

static int memfd(const char *name)
{
#ifdef SYS_memfd_create
    return (int)syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
#else
    (void)name;
    errno = ENOSYS;
    return -1;
#endif
}

static int shm_fallback(void)
{
    static _Atomic uint32_t counter;
    for (int tries = 0; tries < 16; tries++) {
        char name[64];
        snprintf(name, sizeof name, "/kiln-%ld-%u-%llx", (long)getpid(), atomic_fetch_add(&counter, 1),
                 (unsigned long long)time_now_ns());
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            shm_unlink(name);
            return fd;
        }
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

static kiln_result map(struct tp_segment *s, int fd, uint64_t size)
{
    void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return KILN_RAISE(e == ENOMEM ? KILN_ERR_NO_MEMORY : KILN_ERR_IO, "segment of %llu bytes: mmap: %s",
                          (unsigned long long)size, strerror(e));
    }
    s->fd = fd;
    s->map = p;
    s->size = size;
    return KILN_OK;
}

static kiln_result check_size(uint64_t size)
{
    if (!size || size > TP_SEGMENT_MAX)
        return KILN_RAISE(KILN_ERR_LIMIT, "a segment of %llu bytes: segments are 1 to %llu bytes",
                          (unsigned long long)size, (unsigned long long)TP_SEGMENT_MAX);
    return KILN_OK;
}

kiln_result tp_segment_create(struct tp_segment *s, const char *name, uint64_t size, unsigned flags)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    KILN_TRY(check_size(size));
    int fd = -1;
    bool sealable = false;
    if (!(flags & TP_SEGMENT_SHM)) {
        fd = memfd(name ? name : "kiln");
        sealable = fd >= 0;
        if (fd < 0 && errno != ENOSYS)
            return KILN_RAISE(errno == EMFILE || errno == ENFILE ? KILN_ERR_LIMIT : KILN_ERR_IO,
                              "segment '%s': memfd_create: %s", name ? name : "kiln", strerror(errno));
    }
    if (fd < 0) {
        fd = shm_fallback();
        if (fd < 0)
            return KILN_RAISE(KILN_ERR_IO, "segment '%s': shm_open: %s", name ? name : "kiln", strerror(errno));
    }
    if (ftruncate(fd, (off_t)size)) {
        int e = errno;
        close(fd);
        return KILN_RAISE(e == ENOSPC || e == ENOMEM ? KILN_ERR_NO_MEMORY : KILN_ERR_IO,
                          "segment of %llu bytes: ftruncate: %s", (unsigned long long)size, strerror(e));
    }
    if (sealable && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
        int e = errno;
        close(fd);
        return KILN_RAISE(KILN_ERR_IO, "segment: sealing: %s", strerror(e));
    }
    s->sealed = sealable;
    return map(s, fd, size);
}

kiln_result tp_segment_adopt(struct tp_segment *s, int fd, uint64_t size, unsigned flags)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (fd < 0)
        return KILN_RAISE(KILN_ERR_INVALID, "segment: descriptor %d", fd);
    kiln_result r = check_size(size);
    struct stat st;
    if (r == KILN_OK && fstat(fd, &st))
        r = KILN_RAISE(KILN_ERR_IO, "segment: fstat: %s", strerror(errno));
    else if (r == KILN_OK && !S_ISREG(st.st_mode))
        r = KILN_RAISE(KILN_ERR_IO, "segment: the descriptor is not a memory file (mode 0%o)", (unsigned)st.st_mode);
    else if (r == KILN_OK && (st.st_size < 0 || (uint64_t)st.st_size < size))
        r = KILN_RAISE(KILN_ERR_IO, "segment: %lld bytes, short of the %llu announced", (long long)st.st_size,
                       (unsigned long long)size);
    if (r < 0) {
        close(fd);
        return r;
    }
    int seals = fcntl(fd, F_GET_SEALS);
    bool sealed = seals >= 0 && (seals & F_SEAL_SHRINK);
    if (!sealed && !(flags & TP_SEGMENT_UNSEALED_OK)) {
        close(fd);
        return KILN_RAISE(KILN_ERR_IO, "segment: not sealed against shrinking, so its sender could cut it under "
                                       "the mapping");
    }
    s->sealed = sealed && (seals & F_SEAL_GROW);
    return map(s, fd, size);
}

void tp_segment_finish(struct tp_segment *s)
{
    if (s->map)
        munmap(s->map, (size_t)s->size);
    if (s->fd >= 0)
        close(s->fd);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
