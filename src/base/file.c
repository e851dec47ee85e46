/* SPDX-License-Identifier: MIT */
/*
 * file.c: the bounded open of files kiln did not create (see file.h).
 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *file_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a folder";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

enum file_open_status file_open_bounded(const char *path, uint64_t max_bytes, const char *bound, bool follow, int *fd,
                                        uint64_t *size, char *why, size_t why_cap)
{
    *fd = -1;
    *size = 0;
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (follow ? 0 : O_NOFOLLOW));
    if (f < 0) {
        int e = errno;
        struct stat lst;
        if (!follow && e == ELOOP && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
            snprintf(why, why_cap, "%s is a symbolic link: not followed (kiln follows no links in a folder it "
                     "writes)", path);
            errno = e;
            return FILE_REFUSED;
        }
        snprintf(why, why_cap, "cannot open %s: %s", path, strerror(e));
        errno = e;
        return FILE_ABSENT;
    }
    struct stat st;
    if (fstat(f, &st) < 0) {
        snprintf(why, why_cap, "cannot stat %s: %s", path, strerror(errno));
        close(f);
        return FILE_REFUSED;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_cap, "%s is not a regular file (%s): not read", path, file_kind(st.st_mode));
        close(f);
        return FILE_REFUSED;
    }
    if ((uint64_t)st.st_size > max_bytes) {
        snprintf(why, why_cap, "%s is %llu bytes, past %s (%llu bytes): not read", path,
                 (unsigned long long)st.st_size, bound, (unsigned long long)max_bytes);
        close(f);
        return FILE_TOO_LARGE;
    }
    *fd = f;
    *size = (uint64_t)st.st_size;
    return FILE_OPENED;
}

DIR *file_opendir_nofollow(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}
