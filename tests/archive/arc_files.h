/* SPDX-License-Identifier: MIT */
/*
 * arc_files.h: for the archive's tests, every archive file of a folder,
 * mapped and opened for one device pair.
 */
#ifndef KILN_TEST_ARC_FILES_H
#define KILN_TEST_ARC_FILES_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "archive/archive.h"

/* Calls fn for each ".arc" file of dir that maps and opens (its header may
 * still say it serves nothing: f->whole), with its path; the file is closed
 * after. */
static inline void test_each_arc(const char *dir, const struct arc_device *dev,
                                 void (*fn)(void *ud, const char *path, const struct arc_file *f), void *ud)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".arc"))
            continue;
        char path[4096 + 512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct arc_loaded m;
        struct arc_file f;
        if (arc_load(&m, path, ARC_MAX_FILE) != KILN_OK)
            continue;
        if (arc_file_open(&f, m.data, m.size, dev) == KILN_OK) {
            fn(ud, path, &f);
            arc_file_close(&f);
        }
        arc_loaded_free(&m);
    }
    if (d)
        closedir(d);
}

#endif
