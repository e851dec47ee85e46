/* SPDX-License-Identifier: MIT */
/*
 * cmd_archive.c: `kiln archive path|ls|verify|compact|gc`: where the
 * pipeline archive of the chosen device (KILN_DEVICE) lives, what files it
 * holds, a check of every entry (verify exits 1 when any file or entry is
 * corrupt), and tidying: compact merges small run archives into one file,
 * gc removes least recently used files past a size.
 *
 * Exit statuses tell the cases apart (exit_statuses below, and the README):
 * a folder that cannot be used is not corruption. A read-only folder (a
 * shipped archive) is listed and verified like any other; whether it is
 * read-only is the archive's own verdict (kiln_archive_info.readonly), and
 * the system is asked only to say why a folder cannot be used or written.
 *
 * ls and verify take --json: one object on stdout, the files as
 * kiln_archive_file (status as a word), the folder as kiln_archive_info,
 * and the totals; the exit status stays as without it, and a failure is
 * {"ok": false, ...}.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "parse.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kiln archive path|ls|verify|compact|gc [--max-size SIZE] [--json]\n"
               "  path     print the archive folder of the chosen device (KILN_DEVICE, KILN_ARCHIVE_DIR)\n"
               "  ls       list its files: size, entries, status\n"
               "  verify   check every entry; print counts by cause; exit 1 on any corruption\n"
               "  compact  merge its small run archives (2 or more, 8 MiB or less each) into one file\n"
               "  gc       remove least recently used files until the folder holds at most SIZE\n"
               "           (--max-size: bytes, or with K, M, G, T (powers of 1024); default\n"
               "           KILN_ARCHIVE_MAX_SIZE, else 1G)\n"
               "  --json   (ls, verify) one JSON object on stdout: {\"ok\", \"exit_status\", \"dir\",\n"
               "           \"readonly\", \"files\": [{\"name\", \"bytes\", \"status\": ok|corrupt|\n"
               "           device_mismatch|version, \"entries\", \"corrupt\", \"salvaged\"}], \"totals\":\n"
               "           {\"files\", \"bytes\", \"entries\", \"corrupt\", \"unusable_files\"}}; \"ok\" is\n"
               "           false when the exit status is not 0 (then \"error\" says why)\n"
               "It acts on this machine's archive folder, locally, whatever KILN_REMOTE says: a kiln\n"
               "server's archive is the server's, and a client's tidy is refused there.\n");
}

enum {
    EXIT_CORRUPT = 1,    /* verify found a corrupt file or entry */
    EXIT_USAGE = 2,
    EXIT_UNUSABLE = 3,   /* the archive is off, or its folder cannot be used (or, to tidy, written) */
    EXIT_FAILED = 4,     /* the command failed otherwise (no device, a file that could not be removed) */
};

static void exit_statuses(FILE *f)
{
    fprintf(f, "exit status:\n"
               "  0  done (a read-only folder is listed and verified like any other)\n"
               "  1  verify found a corrupt file or entry\n"
               "  2  bad arguments\n"
               "  3  the archive is off (KILN_ARCHIVE=0), or its folder cannot be used (compact and gc:\n"
               "     cannot be written); the message says why\n"
               "  4  the command failed otherwise (no device, a file that could not be removed)\n");
}

/* Why the folder cannot be used (or, write: written), as the system says
 * it: the reason in a message, not the verdict (kiln_archive_info has that). */
static void folder_problem(const char *dir, bool write, char *why, size_t cap)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        snprintf(why, cap, "%s", strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, cap, "it is not a folder");
    else if (access(dir, R_OK | X_OK) < 0 || (write && access(dir, W_OK) < 0))
        snprintf(why, cap, "%s", strerror(errno));
    else
        snprintf(why, cap, "see the log above");
}

static const char *status_name(kiln_archive_status s)
{
    switch (s) {
    case KILN_ARCHIVE_FILE_OK: return "ok";
    case KILN_ARCHIVE_FILE_CORRUPT: return "corrupt header";
    case KILN_ARCHIVE_FILE_DEVICE_MISMATCH: return "another device pair";
    case KILN_ARCHIVE_FILE_VERSION: return "another format version";
    }
    return "?";
}

static const char *status_word(kiln_archive_status s)
{
    switch (s) {
    case KILN_ARCHIVE_FILE_OK: return "ok";
    case KILN_ARCHIVE_FILE_CORRUPT: return "corrupt";
    case KILN_ARCHIVE_FILE_DEVICE_MISMATCH: return "device_mismatch";
    case KILN_ARCHIVE_FILE_VERSION: return "version";
    }
    return "unknown";
}

static int tidy(kiln_context ctx, const char *verb, uint64_t max_size)
{
    bool compact = !strcmp(verb, "compact");
    kiln_archive_tidy_result t;
    kiln_result r = kiln_archive_tidy(ctx, &(kiln_archive_tidy_desc){.compact = compact, .gc = !compact,
                                                                     .max_size = max_size},
                                      &t);
    if (r < 0) {
        cli_fail(verb, r);
        return EXIT_FAILED;
    }
    if (t.busy) {
        printf("another process is tidying this archive folder: nothing done\n");
        return 0;
    }
    if (compact)
        printf("compact: %u small files merged into one (%llu entries kept, %llu duplicates and %llu bad entries "
               "dropped)\n",
               t.merged, (unsigned long long)t.entries_kept, (unsigned long long)t.duplicates_dropped,
               (unsigned long long)t.bad_dropped);
    else
        printf("gc: %u least recently used files removed\n", t.removed);
    printf("folder: %u files, %llu bytes -> %u files, %llu bytes\n", t.files_before,
           (unsigned long long)t.bytes_before, t.files_after, (unsigned long long)t.bytes_after);
    return 0;
}

/* The command; j: --json's object, open, to fill (ls and verify). */
static int archive(int argc, char **argv, struct cli_json *j)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *f = argc == 2 ? stdout : stderr;
        usage(f);
        exit_statuses(f);
        return argc == 2 ? 0 : EXIT_USAGE;
    }
    const char *verb = argv[1];
    if (strcmp(verb, "path") && strcmp(verb, "ls") && strcmp(verb, "verify") && strcmp(verb, "compact") &&
        strcmp(verb, "gc")) {
        fprintf(stderr, "kiln archive: unknown command '%s'\n", verb);
        usage(stderr);
        return 2;
    }
    uint64_t max_size = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        if (!strcmp(a, "--json")) {
            if (!j) {
                fprintf(stderr, "kiln archive %s: --json is for ls and verify\n", verb);
                return 2;
            }
            continue;
        }
        if (!strncmp(a, "--max-size=", 11))
            val = a + 11;
        else if (!strcmp(a, "--max-size") && i + 1 < argc)
            val = argv[++i];
        if (!val || strcmp(verb, "gc")) {
            fprintf(stderr, "kiln archive %s: unexpected argument '%s'\n", verb, a);
            cli_note_failure("unexpected argument '%s'", a);
            usage(stderr);
            return 2;
        }
        char why[PARSE_WHY_LEN] = "0 bytes would remove every file";
        if (!parse_size(val, &max_size, why) || !max_size) {
            fprintf(stderr, "kiln archive gc: bad --max-size: %s\n", why);
            return 2;
        }
    }
    /* The archive is this machine's folder, acted on here: a local context
     * whatever KILN_REMOTE says (a server tidies its own; a client's tidy
     * is refused there). */
    kiln_context ctx;
    kiln_result r = kiln_context_create(&(kiln_context_desc){.remote = "local"}, &ctx);
    if (r < 0) {
        cli_fail("cannot make a context", r);
        return EXIT_FAILED;
    }
    kiln_archive_info info;
    if ((r = kiln_archive_info_get(ctx, &info)) < 0) {
        kiln_context_destroy(ctx);
        cli_fail("archive", r);
        return EXIT_FAILED;
    }
    bool tidying = !strcmp(verb, "compact") || !strcmp(verb, "gc");
    if (!info.enabled && !info.dir[0]) {
        printf("archive: off (KILN_ARCHIVE=0, or no KILN_ARCHIVE_DIR, XDG_CACHE_HOME or HOME to put it in)\n");
        cli_note_failure("the archive is off (KILN_ARCHIVE=0, or no KILN_ARCHIVE_DIR, XDG_CACHE_HOME or HOME)");
        kiln_context_destroy(ctx);
        return !strcmp(verb, "path") ? 0 : EXIT_UNUSABLE;
    }
    if (!info.enabled || (tidying && info.readonly)) {
        char why[256];
        folder_problem(info.dir, tidying, why, sizeof why);
        if (!strcmp(verb, "path"))
            printf("%s\n", info.dir);
        if (info.enabled)
            fprintf(stderr, "kiln archive %s: the archive folder %s is read-only (%s): it can be listed and "
                            "verified, not tidied\n", verb, info.dir, why);
        else
            fprintf(stderr, "kiln archive %s: the archive folder %s cannot be used: %s\n", verb, info.dir, why);
        cli_note_failure("the archive folder %s cannot be used: %s", info.dir, why);
        kiln_context_destroy(ctx);
        return EXIT_UNUSABLE;
    }
    if (!strcmp(verb, "path")) {
        printf("%s\n", info.dir);
        kiln_context_destroy(ctx);
        return 0;
    }
    if (tidying) {
        int rc = tidy(ctx, verb, max_size);
        kiln_context_destroy(ctx);
        return rc;
    }
    uint32_t count = 0;
    kiln_archive_file *files = calloc(info.file_count ? info.file_count : 1, sizeof *files);
    if (!files || (r = kiln_archive_files(ctx, 0, files, info.file_count, &count)) < 0) {
        free(files);
        kiln_context_destroy(ctx);
        if (files)
            cli_fail("archive", r);
        else
            fprintf(stderr, "kiln archive: out of memory\n");
        return EXIT_FAILED;
    }
    count = count < info.file_count ? count : info.file_count;
    uint64_t entries = 0, corrupt = 0, bad_files = 0, bytes = 0;
    if (!j)
        printf("%s\n", info.dir);
    else {
        cli_json_str(j, "dir", info.dir);
        cli_json_bool(j, "readonly", info.readonly);
        cli_json_open(j, "files", '[');
    }
    for (uint32_t i = 0; i < count; i++) {
        const kiln_archive_file *f = &files[i];
        if (j) {
            cli_json_open(j, NULL, '{');
            cli_json_str(j, "name", f->name);
            cli_json_uint(j, "bytes", f->bytes);
            cli_json_str(j, "status", status_word(f->status));
            cli_json_uint(j, "entries", f->entries);
            cli_json_uint(j, "corrupt", f->corrupt);
            cli_json_bool(j, "salvaged", f->salvaged);
            cli_json_close(j, '}');
        }
        entries += f->entries;
        corrupt += f->corrupt;
        bad_files += f->status != KILN_ARCHIVE_FILE_OK;
        bytes += f->bytes;
        if (j)
            continue;
        printf("  %-40s %10llu bytes  %6llu entries  %s", f->name, (unsigned long long)f->bytes,
               (unsigned long long)f->entries, status_name(f->status));
        if (f->corrupt)
            printf(", %llu corrupt entries", (unsigned long long)f->corrupt);
        printf("%s\n", f->salvaged ? " (index unusable: entries found by a scan)" : "");
    }
    if (!j)
        printf("%u files, %llu bytes, %llu good entries, %llu corrupt entries, %llu files unusable\n", count,
               (unsigned long long)bytes, (unsigned long long)entries, (unsigned long long)corrupt,
               (unsigned long long)bad_files);
    if (j) {
        cli_json_close(j, ']');
        cli_json_open(j, "totals", '{');
        cli_json_uint(j, "files", count);
        cli_json_uint(j, "bytes", bytes);
        cli_json_uint(j, "entries", entries);
        cli_json_uint(j, "corrupt", corrupt);
        cli_json_uint(j, "unusable_files", bad_files);
        cli_json_close(j, '}');
    }
    free(files);
    kiln_context_destroy(ctx);
    if (!strcmp(verb, "verify") && (corrupt || bad_files)) {
        fprintf(stderr, "kiln archive verify: corruption found\n");
        cli_note_failure("corruption found");
        return EXIT_CORRUPT;
    }
    return 0;
}

int cmd_archive(int argc, char **argv)
{
    bool json = false;
    for (int i = 2; i < argc; i++)
        json |= !strcmp(argv[i], "--json");
    if (!json || (strcmp(argv[1], "ls") && strcmp(argv[1], "verify")))
        return archive(argc, argv, NULL);
    /* The object goes to a memory stream first; the text lines, which
     * would go to stdout, go to stderr. */
    FILE *jf = cli_json_stdout();
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        fprintf(stderr, "kiln archive: out of memory\n");
        cli_json_failure(jf, EXIT_FAILED);
        if (jf != stdout)
            fclose(jf);
        return EXIT_FAILED;
    }
    struct cli_json j;
    cli_json_init(&j, mem);
    cli_json_open(&j, NULL, '{');
    int rc = archive(argc, argv, &j);
    cli_json_bool(&j, "ok", rc == 0);
    cli_json_int(&j, "exit_status", rc);
    if (rc)
        cli_json_str(&j, "error", cli_last_failure()[0] ? cli_last_failure() : NULL);
    cli_json_close(&j, '}');
    fclose(mem);
    if (rc && rc != EXIT_CORRUPT)
        cli_json_failure(jf, rc);   /* nothing was listed */
    else
        fwrite(text, 1, len, jf);
    free(text);
    if (jf != stdout)
        fclose(jf);
    return rc;
}
