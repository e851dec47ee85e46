/*
 * cli.h: the kiln command-line tool's commands and shared helpers. The tool
 * uses only the public API (kiln.h).
 */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* Reads a whole file; NULL with errno set on failure. */
char *cli_read_file(const char *path, size_t *len);
bool cli_write_file(const char *path, const void *data, size_t len);
/* Writes an 8-bit RGBA image as PNG. */
bool cli_write_png(const char *path, const uint8_t *rgba, uint32_t w, uint32_t h);

#endif
