/* SPDX-License-Identifier: MIT */
/*
 * fuzz_include.c: fuzz target for the include resolver on its own
 * (prog_include_resolve), without the compiler. The input is up to eight
 * files separated by NUL bytes: the first is the program (main.comp), the
 * others f1.h .. f7.h, served from an include snapshot as the compile
 * service serves them. The target then does what the preprocessor does:
 * it walks the program depth first, resolving every `#include "x"` and
 * `#include <x>` line and descending into what it got, and stops at the
 * first error, as a compile does.
 *
 * A crash, a sanitizer report, a leak, a success deeper than
 * PROG_MAX_INCLUDE_DEPTH, an error other than the documented ones, or a
 * walk that does not end is a bug. The walk is bounded only by the
 * resolver (depth, cycles) plus a cap on includes per input that stops
 * diamond-shaped fan-out (each file including the next many times) from
 * being slow rather than wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program/program.h"

#define FILES 8
#define MAX_RESOLVES 4096

static const char *const k_names[FILES] = {"main.comp", "f1.h", "f2.h", "f3.h", "f4.h", "f5.h", "f6.h", "f7.h"};

struct walk {
    struct prog_includer in;
    unsigned resolves;
    bool stopped;
};

static void walk_file(struct walk *w, const char *name, const char *text, size_t len, size_t depth)
{
    for (size_t pos = 0; pos < len && !w->stopped;) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + 1;
        if (n < 11 || memcmp(line, "#include ", 9))
            continue;
        char open = line[9], close = open == '"' ? '"' : open == '<' ? '>' : 0;
        const char *end = close ? memchr(line + 10, close, n - 10) : NULL;
        if (!end || end - (line + 10) > 64)
            continue;
        char req[80];
        snprintf(req, sizeof req, "%.*s", (int)(end - (line + 10)), line + 10);
        if (strlen(req) != (size_t)(end - (line + 10)))
            continue;   /* a NUL inside the name */
        if (++w->resolves > MAX_RESOLVES) {
            w->stopped = true;
            return;
        }
        char *content, path[256];
        size_t clen;
        kiln_result r = prog_include_resolve(&w->in, name, req, open == '"', depth + 1, &content, &clen, path,
                                             sizeof path);
        if (r != KILN_OK) {
            if (r != KILN_ERR_LIMIT && r != KILN_ERR_COMPILE && r != KILN_ERR_IO && r != KILN_ERR_NO_MEMORY)
                abort();
            w->stopped = true;   /* a compile stops at its first error */
            return;
        }
        if (depth + 1 > PROG_MAX_INCLUDE_DEPTH)
            abort();
        walk_file(w, path, content, clen, depth + 1);
        free(content);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text[FILES] = {0};
    size_t len[FILES] = {0};
    size_t pos = 0;
    for (int i = 0; i < FILES && pos <= size; i++) {
        const uint8_t *nul = memchr(data + pos, 0, size - pos);
        size_t n = nul ? (size_t)(nul - (data + pos)) : size - pos;
        text[i] = (const char *)data + pos;
        len[i] = n;
        pos += n + 1;
    }
    /* The snapshot: every file as seen from every file, "x" and <x>. */
    static struct prog_include inc[FILES * (FILES - 1) * 2];
    uint32_t count = 0;
    for (int from = 0; from < FILES; from++)
        for (int req = 1; req < FILES; req++)
            for (int rel = 0; rel < 2; rel++)
                inc[count++] = (struct prog_include){
                    .req = (char *)k_names[req], .from = (char *)k_names[from], .relative = rel,
                    .path = text[req] ? (char *)k_names[req] : NULL,
                    .content = text[req] ? (char *)text[req] : NULL, .len = len[req]};
    struct prog_source src = {.name = (char *)k_names[0], .includes = inc, .include_count = count};
    struct walk w = {0};
    prog_includer_init(&w.in, &src);
    if (text[0])
        walk_file(&w, k_names[0], text[0], len[0], 0);
    prog_includer_finish(&w.in);
    return 0;
}

/* Writes seeds into dir: a cycle, a diamond, a guarded header, #pragma once. */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    static const struct { const char *name; const char *bytes; size_t len; } seeds[] = {
#define SEED(n, s) {n, s, sizeof s - 1}
        SEED("cycle", "#include \"f1.h\"\n\0#include \"f2.h\"\n\0#include \"f1.h\"\n"),
        SEED("self", "#include \"f1.h\"\n\0#include \"f1.h\"\n"),
        SEED("diamond", "#include \"f1.h\"\n#include <f2.h>\n\0#include \"f3.h\"\n\0#include \"f3.h\"\n\0int x;\n"),
        SEED("once", "#include \"f1.h\"\n#include \"f1.h\"\n\0#pragma once\n#include \"f2.h\"\n\0int y;\n"),
        SEED("guard", "#include \"f1.h\"\n#include \"f1.h\"\n\0#ifndef F1\n#define F1\n#endif\n"),
        SEED("missing", "#include \"nope.h\"\n"),
#undef SEED
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(seeds[i].bytes, 1, seeds[i].len, f) != seeds[i].len || fclose(f))
            return 1;
    }
    return 0;
}
