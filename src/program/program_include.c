/* SPDX-License-Identifier: MIT */
/*
 * program_include.c: a program's includes (see program.h): the resolver
 * kiln uses locally and a client uses to gather its program's files (depth,
 * cycles, #pragma once, bounds), and the gathering itself.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <shaderc/shaderc.h>

#include "program_private.h"
#include "base/file.h"

/* ---- includes --------------------------------------------------------------- */

struct include_result {
    shaderc_include_result r;
    char *name;
    char *content;
};

/* Reads a whole included file, opened through base's bounded open (without
 * blocking: a FIFO is never waited on; a regular file of at most
 * PROG_MAX_INCLUDE_BYTES, refused unread past it) and read only up to that
 * bound. KILN_OK with *out the bytes, or NULL when it cannot be opened (the
 * search goes on); KILN_ERR_IO when it is refused or unreadable,
 * KILN_ERR_NO_MEMORY when its bytes cannot be kept: why says so, naming
 * the path. Nothing is raised: the caller raises or warns. */
static kiln_result read_file(const char *path, char **out, size_t *len, char *why, size_t why_cap)
{
    why[0] = 0;
    *out = NULL;
    int fd;
    uint64_t size;
    enum file_open_status st = file_open_bounded(path, PROG_MAX_INCLUDE_BYTES, "the largest included file kiln reads",
                                                 true, &fd, &size, why, why_cap);
    if (st == FILE_ABSENT) {
        why[0] = 0;   /* not here: the search goes on */
        return KILN_OK;
    }
    if (st != FILE_OPENED)
        return KILN_ERR_IO;
    kiln_result r = KILN_OK;
    struct bytes b = {0};
    char tmp[8192];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, why_cap, "cannot read %s: %s", path, strerror(errno));
            r = KILN_ERR_IO;
            break;
        }
        if (b.len + (size_t)n > PROG_MAX_INCLUDE_BYTES) {   /* it grew past the bound while read */
            snprintf(why, why_cap, "%s is larger than the largest included file kiln reads (%u bytes): not read",
                     path, PROG_MAX_INCLUDE_BYTES);
            r = KILN_ERR_IO;
            break;
        }
        prog_text_put(&b, tmp, (size_t)n);
    }
    close(fd);
    if (r == KILN_OK && b.oom) {
        snprintf(why, why_cap, "out of host memory reading %s", path);
        r = KILN_ERR_NO_MEMORY;
    }
    if (r < 0) {
        free(b.p);
        return r;
    }
    if (!b.p && !(b.p = (uint8_t *)str_dup(""))) {
        snprintf(why, why_cap, "out of host memory reading %s", path);
        return KILN_ERR_NO_MEMORY;
    }
    *out = (char *)b.p;
    *len = b.len;
    return KILN_OK;
}

/* The file an #include names, from the snapshot or the disk: as read_file,
 * KILN_OK with *out NULL when it is not found. */
static kiln_result include_find(const struct prog_source *src, const char *req, bool relative, const char *from,
                                char *path, size_t path_cap, char **out, size_t *len, char *why, size_t why_cap)
{
    why[0] = 0;
    *out = NULL;
    if (src->includes || src->includes_sealed) {
        /* A snapshot: the files exactly as its first request read them.
         * glslang asks for an "x" it could not open again as <x>; the scan
         * keyed the "x" lookup alone, so a refusal there answers both. */
        const struct prog_include *refused_as_relative = NULL;
        for (uint32_t i = 0; i < src->include_count; i++) {
            const struct prog_include *f = &src->includes[i];
            if (strcmp(f->req, req) || strcmp(f->from, from))
                continue;
            if (f->relative != relative) {
                if (!relative && f->refused)
                    refused_as_relative = f;
                continue;
            }
            if (!f->content && f->refused) {
                snprintf(why, why_cap, "%s", f->refused);
                return KILN_ERR_IO;
            }
            if (!f->content)
                return KILN_OK;
            snprintf(path, path_cap, "%s", f->path ? f->path : req);
            *len = f->len;
            if (!(*out = str_ndup(f->content, f->len))) {
                snprintf(why, why_cap, "out of host memory for include '%s'", req);
                return KILN_ERR_NO_MEMORY;
            }
            return KILN_OK;
        }
        if (refused_as_relative) {
            snprintf(why, why_cap, "%s", refused_as_relative->refused);
            return KILN_ERR_IO;
        }
        return KILN_OK;
    }
    kiln_result r = KILN_OK;
    if (relative) {
        const char *slash = strrchr(from, '/');
        if (slash)
            snprintf(path, path_cap, "%.*s/%s", (int)(slash - from), from, req);
        else
            snprintf(path, path_cap, "%s", req);
        r = read_file(path, out, len, why, why_cap);
    }
    for (uint32_t i = 0; r == KILN_OK && !*out && i < src->include_dir_count; i++) {
        snprintf(path, path_cap, "%s/%s", src->include_dirs[i], req);
        r = read_file(path, out, len, why, why_cap);
    }
    return r;
}

kiln_result prog_include_read(const struct prog_source *src, const char *req, bool relative, const char *from,
                              char *path, size_t path_cap, char **content, size_t *len, char *why, size_t why_cap)
{
    kiln_result r = include_find(src, req, relative, from, path, path_cap, content, len, why, why_cap);
    if (r < 0)
        log_warn("#include \"%s\" in %s: %s", req, from, why);
    return r;
}

static void refusal_forget(struct prog_includer *in);

/* ---- gathering a program's includes ------------------------------------------ */

struct gather {
    struct prog_include *v;
    uint32_t n, cap;
    uint64_t bytes;              /* of the files' contents */
    bool oom;
};

static void gather_note(struct gather *g, const char *req, const char *from, bool relative, const char *path,
                        const char *content, size_t len, const char *refused)
{
    if (g->oom || !vec_reserve((void **)&g->v, &g->cap, g->n + 1, sizeof *g->v)) {
        g->oom = true;
        return;
    }
    struct prog_include *e = &g->v[g->n++];
    *e = (struct prog_include){.req = str_dup(req), .from = str_dup(from), .relative = relative,
                               .path = path ? str_dup(path) : NULL,
                               .content = content ? str_ndup(content, len) : NULL, .len = len,
                               .refused = refused ? str_dup(refused) : NULL};
    g->bytes += content ? len : 0;
    g->oom |= !e->req || !e->from || (path && !e->path) || (content && !e->content) || (refused && !e->refused);
}

/* Notes each file `text` includes, recursively, as read. */
static void gather_from(const struct prog_source *src, const char *text, size_t len, const char *from,
                        unsigned depth, struct gather *g)
{
    if (depth > PROG_MAX_INCLUDE_DEPTH)   /* deeper, the compile refuses the include */
        return;
    size_t pos = 0, n, blanks;
    const char *rest;
    while (!g->oom && (rest = prog_next_directive(text, len, &pos, "include", &n, &blanks))) {
        if (!n || (rest[0] != '"' && rest[0] != '<'))
            continue;
        char close = rest[0] == '"' ? '"' : '>';
        const char *end = memchr(rest + 1, close, n - 1);
        if (!end || g->n >= PROG_MAX_INCLUDE_FILES)
            continue;
        char req[PATH_MAX];
        snprintf(req, sizeof req, "%.*s", (int)(end - rest - 1), rest + 1);
        char path[PATH_MAX] = "", why[PATH_MAX + 160];
        size_t clen = 0;
        char *content = NULL;
        kiln_result r = prog_include_read(src, req, close == '"', from, path, sizeof path, &content, &clen, why,
                                          sizeof why);
        g->oom |= r == KILN_ERR_NO_MEMORY;   /* not "not found": the files would describe another program */
        /* A refused file keeps its reason: a compile served from these
         * files says why it was refused, not "not found". */
        gather_note(g, req, from, close == '"', content ? path : NULL, content, clen, r == KILN_ERR_IO ? why : NULL);
        if (content)
            gather_from(src, content, clen, path, depth + 1, g);
        free(content);
    }
}

kiln_result prog_include_gather(const struct prog_source *src, struct prog_include **out, uint32_t *count,
                                uint64_t *bytes)
{
    struct gather g = {0};
    if (src->lang != KILN_LANGUAGE_SPIRV)   /* a module's bytes include nothing */
        gather_from(src, src->source, src->source_len, src->name, 0, &g);
    if (g.oom) {
        prog_includes_free(g.v, g.n);
        *out = NULL;
        *count = 0;
        *bytes = 0;
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory reading the files %s includes", src->name);
    }
    *out = g.v;
    *count = g.n;
    *bytes = g.bytes;
    return KILN_OK;
}

void prog_includer_init(struct prog_includer *in, const struct prog_source *src)
{
    *in = (struct prog_includer){.src = src};
}

void prog_includer_finish(struct prog_includer *in)
{
    for (uint32_t i = 0; i <= PROG_MAX_INCLUDE_DEPTH; i++)
        free(in->chain[i]);
    for (uint32_t i = 0; i < in->once_count; i++)
        free(in->once[i]);
    free(in->once);
    refusal_forget(in);
    *in = (struct prog_includer){0};
}

static size_t skip_blanks(const char *line, size_t i, size_t n)
{
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    return i;
}

const char *prog_next_directive(const char *text, size_t len, size_t *pos, const char *name, size_t *rest_len,
                                size_t *blanks)
{
    size_t name_len = strlen(name);
    while (*pos < len) {
        const char *line = text + *pos;
        const char *nl = memchr(line, '\n', len - *pos);
        size_t n = nl ? (size_t)(nl - line) : len - *pos;
        *pos += n + 1;
        size_t i = skip_blanks(line, 0, n);
        if (i >= n || line[i] != '#')
            continue;
        i = skip_blanks(line, i + 1, n);
        if (n - i < name_len || memcmp(line + i, name, name_len))
            continue;
        size_t after = i + name_len;
        i = skip_blanks(line, after, n);
        *blanks = i - after;
        *rest_len = n - i;
        return line + i;
    }
    return NULL;
}

/* Whether text has a "#pragma once" line (blanks allowed around '#'). */
static bool has_pragma_once(const char *text, size_t len)
{
    size_t pos = 0, n, blanks;
    const char *rest;
    while ((rest = prog_next_directive(text, len, &pos, "pragma", &n, &blanks)))
        if (blanks && n >= 4 && !memcmp(rest, "once", 4) &&
            (n == 4 || rest[4] == ' ' || rest[4] == '\t' || rest[4] == '\r'))
            return true;
    return false;
}

/* Sets chain[at] to name (copied unless it is already that). */
static bool chain_set(struct prog_includer *in, uint32_t at, const char *name)
{
    if (in->chain[at] && !strcmp(in->chain[at], name))
        return true;
    char *copy = str_dup(name);
    if (!copy)
        return false;
    free(in->chain[at]);
    in->chain[at] = copy;
    return true;
}

/* "a.h includes b.h includes ... includes last", from chain[first] on. */
static void chain_text(const struct prog_includer *in, uint32_t first, uint32_t count, const char *last, char *out,
                       size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (uint32_t k = first; k < count && n < cap; k++)
        n += (size_t)snprintf(out + n, cap - n, "%s includes ", in->chain[k] ? in->chain[k] : "?");
    if (n < cap)
        snprintf(out + n, cap - n, "%s", last);
}

/* prog_include_resolve's work; *refusal set when an error is a refusal (a
 * cycle, too deep, a file refused), not a file not found. */
static kiln_result resolve_once(struct prog_includer *in, const char *from, const char *req, bool relative,
                                size_t depth, char **content, size_t *len, char *path, size_t path_cap, bool *refusal)
{
    *refusal = true;
    *content = NULL;
    *len = 0;
    if (path_cap)
        path[0] = 0;
    if (depth < 1)
        depth = 1;
    char text[1024];
    if (depth > PROG_MAX_INCLUDE_DEPTH) {
        chain_text(in, 0, PROG_MAX_INCLUDE_DEPTH + 1, req, text, sizeof text);
        return KILN_RAISE(KILN_ERR_LIMIT, "#include \"%s\" in %s: includes nested deeper than %d: %s", req, from,
                          PROG_MAX_INCLUDE_DEPTH, text);
    }
    /* The chain down to the requesting file: the compiler includes depth
     * first, so chain[depth - 1] is `from` and deeper entries are done. */
    uint32_t d = (uint32_t)depth;
    for (uint32_t k = d; k <= PROG_MAX_INCLUDE_DEPTH; k++) {
        free(in->chain[k]);
        in->chain[k] = NULL;
    }
    if (!chain_set(in, d - 1, from))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory following #include \"%s\" in %s", req, from);
    char why[PATH_MAX + 128];
    size_t n = 0;
    char *c;
    kiln_result found = include_find(in->src, req, relative, from, path, path_cap, &c, &n, why, sizeof why);
    if (found < 0)   /* refused (KILN_ERR_IO) or out of memory */
        return KILN_RAISE(found, "#include \"%s\" in %s: %s", req, from, why);
    if (!c) {
        *refusal = false;
        return KILN_RAISE(KILN_ERR_IO, "cannot open include '%s' (searched %s%u include folder%s)", req,
                          relative ? "the including file's folder and " : "", in->src->include_dir_count,
                          in->src->include_dir_count == 1 ? "" : "s");
    }
    /* A cycle: this very step (from -> path) was taken before on the
     * chain, so the compiler would take it again for ever. A header whose
     * guard or #pragma once stopped it the first time never gets here. */
    for (uint32_t k = 0; k + 1 < d; k++) {
        if (in->chain[k] && in->chain[k + 1] && !strcmp(in->chain[k], from) && !strcmp(in->chain[k + 1], path)) {
            free(c);
            chain_text(in, k, d, path, text, sizeof text);
            return KILN_RAISE(KILN_ERR_COMPILE, "#include cycle: %s", text);
        }
    }
    if (!chain_set(in, d, path)) {
        free(c);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory following #include \"%s\" in %s", req, from);
    }
    if (has_pragma_once(c, n)) {
        bool given = false;
        for (uint32_t i = 0; i < in->once_count && !given; i++)
            given = !strcmp(in->once[i], path);
        if (given) {
            c[0] = 0;   /* given once already: nothing more of it */
            n = 0;
        } else {
            char *copy = NULL;
            if (!vec_reserve((void **)&in->once, &in->once_cap, in->once_count + 1, sizeof *in->once) ||
                !(copy = str_dup(path))) {
                free(c);
                return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory following #include \"%s\" in %s", req,
                                  from);
            }
            in->once[in->once_count++] = copy;
        }
    }
    *content = c;
    *len = n;
    return KILN_OK;
}

static void refusal_forget(struct prog_includer *in)
{
    free(in->refused_req);
    free(in->refused_from);
    in->refused_req = in->refused_from = NULL;
}

kiln_result prog_include_resolve(struct prog_includer *in, const char *from, const char *req, bool relative,
                                 size_t depth, char **content, size_t *len, char *path, size_t path_cap)
{
    /* glslang asks again for an "x" it was refused, as <x>, and reports
     * the second answer: a refusal of "x" (a cycle above all) stands for
     * <x> too, or it would read as a file not found. */
    if (!relative && in->refused_req && !strcmp(in->refused_req, req) && !strcmp(in->refused_from, from)) {
        *content = NULL;
        *len = 0;
        if (path_cap)
            path[0] = 0;
        refusal_forget(in);
        return KILN_RAISE(in->refused_code, "%s", in->refused_msg);
    }
    refusal_forget(in);
    bool refusal = false;
    kiln_result r = resolve_once(in, from, req, relative, depth, content, len, path, path_cap, &refusal);
    if (r < 0 && r != KILN_ERR_NO_MEMORY && refusal && relative) {
        in->refused_req = str_dup(req);
        in->refused_from = str_dup(from);
        if (!in->refused_req || !in->refused_from)
            refusal_forget(in);   /* then <x> reads as not found: the compile fails all the same */
        in->refused_code = r;
        snprintf(in->refused_msg, sizeof in->refused_msg, "%s", err_last());
    }
    return r;
}

void prog_includes_free(struct prog_include *inc, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(inc[i].req);
        free(inc[i].from);
        free(inc[i].path);
        free(inc[i].content);
        free(inc[i].refused);
    }
    free(inc);
}

/* shaderc's include callback: prog_include_resolve, its error turned into
 * the result shaderc reports (an empty source name, the message as
 * content). */
/* What prog_shaderc_include answers when it cannot allocate its result: shaderc
 * takes no NULL. An empty name reads "cannot find or open"; the compile is
 * then failed with KILN_ERR_NO_MEMORY (the includer's oom). Never written. */
static const char oom_content[] = "out of host memory resolving this #include";
static shaderc_include_result oom_result = {"", 0, oom_content, sizeof oom_content - 1, NULL};

static void include_oom(struct prog_includer *inc, const char *why)
{
    if (!inc->oom)
        snprintf(inc->oom_msg, sizeof inc->oom_msg, "%s", why);
    inc->oom = true;
}

shaderc_include_result *prog_shaderc_include(void *ud, const char *req, int type, const char *from, size_t depth)
{
    struct prog_includer *inc = ud;
    struct include_result *res = mem_calloc(1, sizeof *res);
    if (!res) {
        char why[256];
        snprintf(why, sizeof why, "out of host memory for the result of #include \"%.64s\" in %.64s", req, from);
        include_oom(inc, why);
        return &oom_result;
    }
    char path[PATH_MAX];
    size_t len = 0;
    char *content = NULL;
    kiln_result rr = prog_include_resolve(inc, from, req, type == shaderc_include_type_relative, depth, &content,
                                          &len, path, sizeof path);
    if (rr == KILN_ERR_NO_MEMORY)
        include_oom(inc, kiln_last_error());
    if (rr == KILN_OK) {
        res->name = str_dup(path);
        res->content = content;
        res->r.content_length = len;
    } else {
        /* shaderc reports an empty source_name as "cannot find or open",
         * followed by the content: the reason. */
        res->name = str_dup("");
        res->content = str_dup(kiln_last_error());
        res->r.content_length = res->content ? strlen(res->content) : 0;
        err_clear();
    }
    res->r.source_name = res->name ? res->name : "";
    res->r.source_name_length = res->name ? strlen(res->name) : 0;
    res->r.content = res->content ? res->content : "";
    res->r.user_data = res;
    return &res->r;
}

void prog_shaderc_release(void *ud, shaderc_include_result *r)
{
    (void)ud;
    struct include_result *res = r->user_data;
    if (!res)
        return;   /* oom_result */
    free(res->name);
    free(res->content);
    free(res);
}
