/*
 * cli.h: the kiln command-line tool's commands and shared helpers. The tool
 * uses only the public API (kiln.h).
 */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln.h"

int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_archive(int argc, char **argv);

/* Prints "kiln: <msg>" and the call's error to stderr; returns 1. */
int cli_fail(const char *what, kiln_result r);
/* Parses a WORD: decimal, 0x hex, negative decimal, or a float with an f
 * suffix (its IEEE-754 bits). */
bool cli_parse_word(const char *s, uint32_t *out);
/* Parses an unsigned decimal or 0x number into *out; false if malformed. */
bool cli_parse_u64(const char *s, uint64_t *out);
/* qsort's comparison of doubles, ascending. */
int cli_cmp_double(const void *a, const void *b);
/* Reads a whole file; NULL with errno set on failure. */
char *cli_read_file(const char *path, size_t *len);
bool cli_write_file(const char *path, const void *data, size_t len);
/* Specialization events as the tools print them (spec_print.c). */
struct cli_spec {
    uint64_t warms, promotions, demotions, failed, pinned;
    bool promoted;
    uint64_t first_promote;   /* frame index (0-based) of the first promotion */
    uint64_t last_event;      /* frame index of the last event */
};
/* Prints the scheme's new events, one line each, to stderr as "TOOL: submit
 * N: promote node 'x' (prog): slot0=0x7"; frame is the current frame's
 * index; tty: each line first clears a progress line. Returns whether any
 * was printed. */
bool cli_spec_drain(kiln_context ctx, kiln_scheme scheme, const char *tool, uint64_t frame, bool tty,
                    struct cli_spec *st);
/* The summary lines: counts, and the median frame time before the first
 * promotion against after the last event. */
void cli_spec_summary(FILE *f, const char *label, const struct cli_spec *st, const double *ms, uint64_t frames);
/* Writes an 8-bit RGBA image as PNG. */
bool cli_write_png(const char *path, const uint8_t *rgba, uint32_t w, uint32_t h);

#endif
