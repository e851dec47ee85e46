/* SPDX-License-Identifier: MIT */
/*
 * file.h: the one bounded open of a file kiln did not create (an included
 * header, an archive file). Such a file may be anything a name can point
 * at, so it is opened without blocking (O_NONBLOCK: opening a FIFO for
 * reading would otherwise wait for a writer for ever; it changes nothing
 * for a regular file), checked with fstat to be a regular file, and
 * refused unread when it is larger than its reader's bound. The reader
 * then reads or maps the descriptor as it needs.
 *
 * Nothing here raises or logs: the reason is written for the caller, who
 * raises it, warns, or (an include search) goes on to the next folder.
 */
#ifndef KILN_FILE_H
#define KILN_FILE_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum file_open_status {
    FILE_OPENED = 0,     /* *fd is open, *size its bytes */
    FILE_ABSENT = 1,     /* it cannot be opened (errno says why: ENOENT, EACCES, ...) */
    FILE_REFUSED = 2,    /* it cannot be examined, or it is not a regular file */
    FILE_TOO_LARGE = 3,  /* it is larger than the bound */
};

/* Opens path for reading as above; with follow false a symbolic link as its
 * last component is refused (FILE_REFUSED, "P is a symbolic link: not
 * followed"): folders kiln writes are read that way. FILE_OPENED: *fd
 * (O_CLOEXEC; the caller closes it) and *size. Otherwise *fd is -1 and why (why_cap bytes) says
 * what, naming the path: "cannot open P: No such file or directory", "P is
 * not a regular file (a FIFO): not read", "P is N bytes, past <bound> (M
 * bytes): not read", where bound names the reader's limit ("the largest
 * archive file kiln reads"). errno is kept for FILE_ABSENT. */
enum file_open_status file_open_bounded(const char *path, uint64_t max_bytes, const char *bound, bool follow, int *fd,
                                        uint64_t *size, char *why, size_t why_cap);

/* Opens a folder kiln writes or removes in, refusing a symbolic link as
 * its last component (O_NOFOLLOW): NULL with errno set (ELOOP or ENOTDIR
 * for a link). The caller closedir()s it. */
DIR *file_opendir_nofollow(const char *dir);

/* What a file that is not a regular one is, for messages: "a FIFO", "a
 * folder", "a character device", "a block device", "a socket". */
const char *file_kind(mode_t mode);

#endif
