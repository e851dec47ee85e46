/* SPDX-License-Identifier: MIT */
/*
 * program.c: provenance, the param prelude, and the shaderc compile.
 *
 * shaderc is used through its C API, with one compiler object for the whole
 * process, made on first use and kept: shaderc_compile_into_spv may be called
 * from several threads at once, and glslang frees its built-in symbol tables
 * whenever the last compiler object goes, so a compiler per compile would pay
 * ~150 ms to rebuild them each time (measured by bench/bench_compile).
 * #include "x" is resolved against the including file's folder first, then
 * the program's include folders in order; #include <x> only against the
 * include folders. The resolver (prog_include_resolve) bounds what the
 * source can make it do: includes nest at most PROG_MAX_INCLUDE_DEPTH deep,
 * a cycle is refused naming its chain, an included file is read only if it
 * is a regular file of at most PROG_MAX_INCLUDE_BYTES, opened without
 * blocking.
 */
#define _GNU_SOURCE
#include "program_private.h"

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

#include "base/file.h"

/* optimize.cpp: speed passes with every declared binding kept. */
int prog_spirv_optimize(const uint32_t *in, size_t words, uint32_t **out, size_t *out_words, char *err,
                        size_t err_cap);

static bool is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

static int cmp_constant(const void *a, const void *b)
{
    const kiln_spec_constant *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

kiln_result prog_desc_check(const kiln_program_desc *desc)
{
    kiln_program_desc d = kiln_program_desc_defaults(desc);
    if (!d.source)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: source is NULL");
    if (!is_ident(d.entry) || strlen(d.entry) >= 64)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: entry '%s' is not a GLSL identifier of under 64 characters",
                          d.entry);
    if (d.define_count > KILN_MAX_DEFINES)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: %u defines, at most %d", d.define_count,
                          KILN_MAX_DEFINES);
    if (d.define_count && !d.defines)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: define_count is %u but defines is NULL", d.define_count);
    for (uint32_t i = 0; i < d.define_count; i++)
        if (!is_ident(d.defines[i].name))
            return KILN_RAISE(KILN_ERR_INVALID, "program desc: define %u name '%s' is not an identifier", i,
                              d.defines[i].name ? d.defines[i].name : "(null)");
    if (d.include_dir_count > KILN_MAX_INCLUDE_DIRS)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: %u include folders, at most %d", d.include_dir_count,
                          KILN_MAX_INCLUDE_DIRS);
    if (d.include_dir_count && !d.include_dirs)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: include_dir_count is %u but include_dirs is NULL",
                          d.include_dir_count);
    for (uint32_t i = 0; i < d.include_dir_count; i++)
        if (!d.include_dirs[i])
            return KILN_RAISE(KILN_ERR_INVALID, "program desc: include folder %u is NULL", i);
    if (d.constant_count > KILN_MAX_SPEC_CONSTANTS)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: %u specialization constants, at most %d",
                          d.constant_count, KILN_MAX_SPEC_CONSTANTS);
    if (d.constant_count && !d.constants)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: constant_count is %u but constants is NULL",
                          d.constant_count);
    for (uint32_t i = 0; i < d.constant_count; i++)
        for (uint32_t k = 0; k < i; k++)
            if (d.constants[k].id == d.constants[i].id)
                return KILN_RAISE(KILN_ERR_INVALID, "program desc: specialization constant id %u is set twice "
                                  "(constants %u and %u: 0x%x and 0x%x)", d.constants[i].id, k, i,
                                  d.constants[k].word, d.constants[i].word);
    return KILN_OK;
}

kiln_result prog_source_init(struct prog_source *src, const kiln_program_desc *desc)
{
    *src = (struct prog_source){0};
    if (!desc)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc is NULL");
    KILN_TRY(prog_desc_check(desc));
    kiln_program_desc d = kiln_program_desc_defaults(desc);
    if (memchr(d.source, 0, d.source_len))
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: source holds a NUL byte within source_len");
    src->source = str_ndup(d.source, d.source_len);
    src->source_len = d.source_len;
    src->name = str_dup(d.name);
    src->entry = str_dup(d.entry);
    src->optimize = d.optimize < 0 ? -1 : 1;   /* canonical: any positive is 1 */
    src->defines = mem_calloc(d.define_count + 1, sizeof *src->defines);
    src->include_dirs = mem_calloc(d.include_dir_count + 1, sizeof *src->include_dirs);
    src->constants = mem_alloc((d.constant_count + 1) * sizeof *src->constants);
    bool ok = src->source && src->name && src->entry && src->defines && src->include_dirs && src->constants;
    if (ok && d.constant_count) {
        memcpy(src->constants, d.constants, d.constant_count * sizeof *src->constants);
        src->constant_count = d.constant_count;
        qsort(src->constants, src->constant_count, sizeof *src->constants, cmp_constant);
    }
    for (uint32_t i = 0; ok && i < d.define_count; i++) {
        kiln_define def = kiln_define_defaults(&d.defines[i]);
        src->defines[i].name = str_dup(def.name);
        src->defines[i].value = str_dup(def.value);
        src->define_count = i + 1;
        ok = src->defines[i].name && src->defines[i].value;
    }
    for (uint32_t i = 0; ok && i < d.include_dir_count; i++) {
        src->include_dirs[i] = str_dup(d.include_dirs[i]);
        src->include_dir_count = i + 1;
        ok = src->include_dirs[i] != NULL;
    }
    if (!ok) {
        prog_source_finish(src);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory copying a program desc");
    }
    return KILN_OK;
}

kiln_result prog_source_copy(struct prog_source *dst, const struct prog_source *src)
{
    kiln_define defs[KILN_MAX_DEFINES];
    for (uint32_t i = 0; i < src->define_count; i++)
        defs[i] = (kiln_define){src->defines[i].name, src->defines[i].value};
    kiln_program_desc d = {
        .source = src->source, .source_len = src->source_len, .name = src->name, .entry = src->entry,
        .optimize = src->optimize, .defines = defs, .define_count = src->define_count,
        .include_dirs = (const char *const *)src->include_dirs, .include_dir_count = src->include_dir_count,
        .constants = src->constants, .constant_count = src->constant_count,
    };
    KILN_TRY(prog_source_init(dst, &d));
    dst->includes_sealed = src->includes_sealed;   /* a copy never reads a disk its source could not */
    return KILN_OK;
}

kiln_result prog_source_variant(struct prog_source *dst, const struct prog_source *src, const struct prog_define *add,
                                uint32_t add_count)
{
    KILN_TRY(prog_source_copy(dst, src));
    bool ok = true;
    struct prog_define *defs = mem_realloc(dst->defines, (dst->define_count + add_count + 1) * sizeof *defs);
    if (defs) {
        dst->defines = defs;
        for (uint32_t i = 0; ok && i < add_count; i++) {
            struct prog_define *d = &defs[dst->define_count];
            d->name = str_dup(add[i].name);
            d->value = str_dup(add[i].value);
            if (d->name && d->value) {
                dst->define_count++;
            } else {
                free(d->name);
                free(d->value);
                ok = false;
            }
        }
    }
    if (ok && defs && src->include_count) {
        dst->includes = mem_calloc(src->include_count, sizeof *dst->includes);
        ok = dst->includes != NULL;
        for (uint32_t i = 0; ok && i < src->include_count; i++) {
            const struct prog_include *f = &src->includes[i];
            struct prog_include *t = &dst->includes[i];
            dst->include_count = i + 1;
            *t = (struct prog_include){.req = str_dup(f->req), .from = str_dup(f->from), .relative = f->relative,
                                       .path = f->path ? str_dup(f->path) : NULL,
                                       .content = f->content ? str_ndup(f->content, f->len) : NULL, .len = f->len,
                                       .refused = f->refused ? str_dup(f->refused) : NULL};
            ok = t->req && t->from && (!f->path || t->path) && (!f->content || t->content) &&
                 (!f->refused || t->refused);
        }
    }
    if (!ok || !defs) {
        prog_source_finish(dst);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory making a program variant");
    }
    return KILN_OK;
}

void prog_source_finish(struct prog_source *src)
{
    free(src->source);
    free(src->name);
    free(src->entry);
    for (uint32_t i = 0; i < src->define_count; i++) {
        free(src->defines[i].name);
        free(src->defines[i].value);
    }
    free(src->defines);
    for (uint32_t i = 0; i < src->include_dir_count; i++)
        free(src->include_dirs[i]);
    free(src->include_dirs);
    free(src->constants);
    prog_includes_free(src->includes, src->include_count);
    *src = (struct prog_source){0};
}

/* ---- the prelude ---------------------------------------------------------- */

/* Text in a growing byte buffer (base's struct bytes), kept NUL-terminated. */
static void sb_put(struct bytes *b, const char *s, size_t n)
{
    uint8_t *at = bytes_put(b, NULL, n + 1);
    if (!at)
        return;
    memcpy(at, s, n);
    b->len--;   /* the NUL stays after the text, outside its length */
}

static void sb_printf(struct bytes *b, const char *fmt, ...) KILN_PRINTF(2, 3);
static void sb_printf(struct bytes *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb_put(b, tmp, (size_t)KILN_MIN(n, (int)sizeof tmp - 1));
}

/* Length of the header the prelude goes after: blank lines, comments and
 * #version/#extension/#pragma lines at the top. *lines receives how many
 * lines it spans and *has_version whether it declares #version. */
static size_t header_len(const char *s, size_t len, unsigned *lines, bool *has_version)
{
    size_t pos = 0, end = 0;
    unsigned n = 0, end_lines = 0;
    bool in_comment = false;
    *has_version = false;
    while (pos < len) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        size_t next = nl ? (size_t)(nl - s) + 1 : len;
        const char *l = s + pos, *le = s + next;
        while (l < le && (*l == ' ' || *l == '\t' || *l == '\r'))
            l++;
        bool header = false;
        if (in_comment) {
            header = true;
        } else if (l >= le || *l == '\n' || (le - l >= 2 && l[0] == '/' && l[1] == '/')) {
            header = true;
        } else if (le - l >= 2 && l[0] == '/' && l[1] == '*') {
            header = true;
            in_comment = true;
            l += 2;
        } else if (*l == '#') {
            const char *d = l + 1;
            while (d < le && (*d == ' ' || *d == '\t'))
                d++;
            size_t rest = (size_t)(le - d);
            if (rest >= 7 && !strncmp(d, "version", 7)) {
                header = true;
                *has_version = true;
            } else if ((rest >= 9 && !strncmp(d, "extension", 9)) || (rest >= 6 && !strncmp(d, "pragma", 6)))
                header = true;
        }
        if (!header)
            break;
        if (in_comment) {
            for (const char *c = l; c + 1 < le; c++)
                if (c[0] == '*' && c[1] == '/') {
                    in_comment = false;
                    break;
                }
        }
        pos = next;
        n++;
        if (!in_comment) {
            end = pos;
            end_lines = n;
        }
    }
    *lines = end_lines;
    return end;
}

void prog_entry_upper(const char *entry, char out[64])
{
    size_t i = 0;
    for (; entry[i] && i < 63; i++)
        out[i] = (char)toupper((unsigned char)entry[i]);
    out[i] = 0;
}

/* Whether text holds the word `push_constant` outside comments. */
static bool text_has_push_constant(const char *t, size_t n)
{
    static const char word[] = "push_constant";
    const size_t wl = sizeof word - 1;
    for (size_t i = 0; i < n; i++) {
        if (t[i] == '/' && i + 1 < n && t[i + 1] == '/') {
            while (i < n && t[i] != '\n')
                i++;
        } else if (t[i] == '/' && i + 1 < n && t[i + 1] == '*') {
            for (i += 2; i + 1 < n && !(t[i] == '*' && t[i + 1] == '/'); i++)
                ;
            i++;
        } else if (t[i] == 'p' && n - i >= wl && !memcmp(t + i, word, wl) &&
                   (i == 0 || !(isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_')) &&
                   (i + wl == n || !(isalnum((unsigned char)t[i + wl]) || t[i + wl] == '_'))) {
            return true;
        }
    }
    return false;
}

bool prog_declares_push_block(const struct prog_source *src)
{
    if (text_has_push_constant(src->source, src->source_len))
        return true;
    for (uint32_t i = 0; i < src->include_count; i++)
        if (src->includes[i].content && text_has_push_constant(src->includes[i].content, src->includes[i].len))
            return true;
    return false;
}

char *prog_preprocess(const struct prog_source *src, bool own_push, size_t *len)
{
    struct bytes b = {0};
    unsigned lines;
    bool has_version;
    size_t head = header_len(src->source, src->source_len, &lines, &has_version);
    char entry_uc[64];
    prog_entry_upper(src->entry, entry_uc);

    if (!has_version)
        sb_put(&b, "#version 450\n", 13);
    sb_put(&b, src->source, head);
    if (head && src->source[head - 1] != '\n')
        sb_put(&b, "\n", 1);
    if (own_push) {
        /* The program's own block is its param words: kiln declares none,
         * and kiln_param(n) / kiln_len(b), which read kiln's, name the way
         * out when used (prog_compile turns the marker into a message). */
        sb_printf(&b, "#define kiln_param(n) " PROG_OWN_PUSH_MARKER "_kiln_param()\n");
        sb_printf(&b, "#define kiln_paramf(n) " PROG_OWN_PUSH_MARKER "_kiln_param()\n");
        sb_printf(&b, "#define kiln_parami(n) " PROG_OWN_PUSH_MARKER "_kiln_param()\n");
        sb_printf(&b, "#define kiln_len(b) " PROG_OWN_PUSH_MARKER "_kiln_len()\n");
        static const char axis_own[] = "XYZ";
        for (int a = 0; a < 3; a++)
            sb_printf(&b, "#ifndef KILN_SPEC_%s_GROUPS_%c\n#define KILN_SPEC_%s_GROUPS_%c gl_NumWorkGroups.%c\n#endif\n",
                      entry_uc, axis_own[a], entry_uc, axis_own[a], "xyz"[a]);
        sb_printf(&b, "#define kiln_groups() uvec3(KILN_SPEC_%s_GROUPS_X, KILN_SPEC_%s_GROUPS_Y, KILN_SPEC_%s_GROUPS_Z)\n",
                  entry_uc, entry_uc, entry_uc);
        goto entry;
    }
    static const char block[] = "layout(push_constant) uniform kiln_params_block {\n"
                                "    uint uw0; uint uw1; uint uw2; uint uw3; uint uw4; uint uw5; uint uw6; uint uw7;\n"
                                "    uint len0; uint len1; uint len2; uint len3; uint len4; uint len5; uint len6;\n"
                                "    uint len7; uint len8; uint len9; uint len10; uint len11; uint len12; uint len13;\n"
                                "    uint len14; uint len15;\n"
                                "} kiln_pc;\n";
    sb_put(&b, block, sizeof block - 1);
    for (int n = 0; n < KILN_PARAM_WORDS; n++)
        sb_printf(&b, "#ifndef KILN_SPEC_%s_UW%d\n#define KILN_SPEC_%s_UW%d kiln_pc.uw%d\n#endif\n", entry_uc, n,
                  entry_uc, n, n);
    for (int n = 0; n < KILN_MAX_BINDINGS; n++)
        sb_printf(&b, "#ifndef KILN_SPEC_%s_LEN%d\n#define KILN_SPEC_%s_LEN%d kiln_pc.len%d\n#endif\n", entry_uc, n,
                  entry_uc, n, n);
    static const char axis[] = "XYZ";
    for (int a = 0; a < 3; a++)
        sb_printf(&b, "#ifndef KILN_SPEC_%s_GROUPS_%c\n#define KILN_SPEC_%s_GROUPS_%c gl_NumWorkGroups.%c\n#endif\n",
                  entry_uc, axis[a], entry_uc, axis[a], "xyz"[a]);
    sb_printf(&b, "#define kiln_param(n) KILN_SPEC_%s_UW##n\n", entry_uc);
    sb_printf(&b, "#define kiln_len(b) KILN_SPEC_%s_LEN##b\n", entry_uc);
    sb_printf(&b, "#define kiln_groups() uvec3(KILN_SPEC_%s_GROUPS_X, KILN_SPEC_%s_GROUPS_Y, KILN_SPEC_%s_GROUPS_Z)\n",
              entry_uc, entry_uc, entry_uc);
    sb_put(&b, "#define kiln_paramf(n) uintBitsToFloat(kiln_param(n))\n", 54);
    sb_put(&b, "#define kiln_parami(n) int(kiln_param(n))\n", 42);
entry:
    if (strcmp(src->entry, "main"))
        sb_printf(&b, "#define %s main\n", src->entry);
    sb_printf(&b, "#line %u\n", lines + 1);
    sb_put(&b, src->source + head, src->source_len - head);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return (char *)b.p;
}

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
        sb_put(&b, tmp, (size_t)n);
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
/* What include_resolve answers when it cannot allocate its result: shaderc
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

static shaderc_include_result *include_resolve(void *ud, const char *req, int type, const char *from, size_t depth)
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

static void include_release(void *ud, shaderc_include_result *r)
{
    (void)ud;
    struct include_result *res = r->user_data;
    if (!res)
        return;   /* oom_result */
    free(res->name);
    free(res->content);
    free(res);
}

/* ---- compile ----------------------------------------------------------------- */

/* Whether the source names `entry` as a function: the identifier followed
 * (after blanks) by '('. A cheap textual check: an entry defined only in an
 * included file is not seen. */
static bool source_has_function(const struct prog_source *src, const char *entry)
{
    size_t n = strlen(entry);
    const char *s = src->source, *end = src->source + src->source_len;
    for (const char *p = s; (p = memmem(p, (size_t)(end - p), entry, n)); p += n) {
        if (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
            continue;
        const char *q = p + n;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
            q++;
        if (q < end && *q == '(')
            return true;
    }
    return false;
}

/* The compiler's log, with a line naming the way out before any error a
 * kiln accessor caused in a program with its own push_constant block
 * (prog_preprocess's markers). A malloc'd copy; NULL on exhaustion. */
static char *own_push_log(const struct prog_source *src, const char *log)
{
    bool param = strstr(log, PROG_OWN_PUSH_MARKER "_kiln_param") != NULL;
    bool len = strstr(log, PROG_OWN_PUSH_MARKER "_kiln_len") != NULL;
    if (!param && !len)
        return str_dup(log);
    struct bytes b = {0};
    if (param)
        sb_printf(&b, "%s: error: kiln_param(n) reads kiln's push-constant block, and this program declares its own "
                      "push_constant block, so kiln adds none: read your block's members instead (a node's param "
                      "words are your block's words: word n is bytes 4n..4n+3)\n", src->name);
    if (len)
        sb_printf(&b, "%s: error: kiln_len(b) reads kiln's push-constant block, and this program declares its own "
                      "push_constant block, so kiln adds none: use the buffer's .length() instead\n", src->name);
    sb_put(&b, log, strlen(log) + 1);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return (char *)b.p;
}

static shaderc_compiler_t the_compiler;
static pthread_once_t the_compiler_once = PTHREAD_ONCE_INIT;
static void make_compiler(void) { the_compiler = shaderc_compiler_initialize(); }

/* Guards (fold_guard), optimizes (optimize > 0) and reflects out->spirv,
 * in place. A failure frees the SPIR-V: KILN_ERR_NO_MEMORY, or
 * KILN_ERR_COMPILE with out->log saying why (an interface kiln cannot
 * bind). */
static kiln_result finish_module(const char *name, const char *entry, int optimize, bool own_push,
                                 struct prog_output *out)
{
    kiln_result r;
    char err[512];
    uint32_t *opt;
    size_t opt_words;
    /* The specialization constants the source declares, listed before the
     * optimizer drops those the code never reads (spec_const.c says why).
     * A listing that fails (no memory) leaves the optimized module's. */
    kiln_program_interface declared;
    bool have_declared = optimize > 0 && prog_has_spec_constants(out->spirv, out->words);
    if (have_declared && prog_declared_constants(out->spirv, out->words, &declared) < 0) {
        have_declared = false;
        err_clear();
    }
    int guard = optimize > 0 ? prog_fold_guard(out->spirv, out->words, &opt, &opt_words, NULL, err, sizeof err) : 1;
    if (guard == 0) {
        free(out->spirv);
        out->spirv = opt;
        out->words = opt_words;
    } else if (guard == -1) {
        /* The optimizer could fold INT_MIN / -1 and trap in this
         * process: the module runs unoptimized (correct, slower). */
        prog_fold_guard_count_skip();
        log_warn("%s: %s; not optimized, so that no signed division by -1 can be folded", name, err);
    }
    if (optimize > 0 && guard >= 0) {
        if (prog_spirv_optimize(out->spirv, out->words, &opt, &opt_words, err, sizeof err) == 0) {
            free(out->spirv);
            out->spirv = opt;
            out->words = opt_words;
        } else {
            /* The unoptimized module is correct; only slower. */
            log_warn("%s: %s; using the unoptimized SPIR-V", name, err);
        }
    }
    if (guard == -2) {
        /* Out of host memory guarding the divisions: the compile fails for
         * want of memory, as for any other allocation here; running the
         * module unoptimized would hide it. */
        free(out->spirv);
        out->spirv = NULL;
        out->words = 0;
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "%s: %s", name, err);
    }
    if ((r = prog_reflect(out->spirv, out->words, own_push, &out->iface)) < 0) {
        /* An interface kiln cannot bind is a failure of this program. */
        char buf[1024];
        snprintf(buf, sizeof buf, "%s: error: %s\n", name, kiln_last_error());
        free(out->log);
        out->log = str_dup(buf);
        free(out->spirv);
        out->spirv = NULL;
        out->words = 0;
        return KILN_RAISE(KILN_ERR_COMPILE, "%s: %s", name, buf);
    }
    snprintf(out->iface.entry, sizeof out->iface.entry, "%s", entry);
    if (have_declared)
        prog_spec_merge_declared(&out->iface, &declared);
    return KILN_OK;
}

kiln_result prog_bake_variant(const struct prog_output *universal, const char *name, const struct prog_push_word *baked,
                              uint32_t count, struct prog_output *out)
{
    *out = (struct prog_output){0};
    uint64_t t0 = time_now_ns();
    char why[512];
    uint32_t *spirv;
    size_t words;
    int b = prog_push_bake(universal->spirv, universal->words, baked, count, &spirv, &words, NULL, why, sizeof why);
    if (b == -2)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "%s: %s", name, why);
    if (b < 0) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s: error: baking its push-constant words: %s\n", name, why);
        out->log = str_dup(buf);
        return out->log ? KILN_RAISE(KILN_ERR_COMPILE, "%s", buf)
                        : KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the log of %s", name);
    }
    if (b == 1) {   /* nothing to bake (every load kept): the universal's module */
        spirv = mem_alloc(universal->words * 4);
        if (!spirv)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory copying the SPIR-V of %s", name);
        memcpy(spirv, universal->spirv, universal->words * 4);
        words = universal->words;
    }
    out->spirv = spirv;
    out->words = words;
    out->log = str_dup("");
    if (!out->log) {
        prog_output_finish(out);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the log of %s", name);
    }
    kiln_result r = finish_module(name, universal->iface.entry, 1, universal->iface.own_push_block != 0, out);
    if (r == KILN_OK) {
        /* The layout follows the universal's signature: its push block,
         * though the optimizer may have dropped every load of it. */
        out->iface.push_constant_size = universal->iface.push_constant_size;
        out->iface.param_words = universal->iface.param_words;
        out->iface.params_read = universal->iface.params_read;
        /* It runs with its universal's specialization constants, as set
         * (its pipeline gets their values), and lists what the source
         * declares, a constant the baking made dead too. */
        out->iface.constant_count = universal->iface.constant_count;
        memcpy(out->iface.constants, universal->iface.constants, sizeof out->iface.constants);
        memcpy(out->iface.workgroup_size, universal->iface.workgroup_size, sizeof out->iface.workgroup_size);
        char diff[256];
        if (!prog_iface_compatible(&universal->iface, &out->iface, diff, sizeof diff))   /* defensive: never seen */
            r = KILN_RAISE(KILN_ERR_COMPILE, "%s: its baked variant binds differently: %s", name, diff);
    }
    out->seconds = (double)(time_now_ns() - t0) / 1e9;
    return r;
}

/* Asked for a desktop #version below 150, or one with no number, glslang
 * fails to parse its own built-ins and prints them, a quarter megabyte,
 * to standard output (not to the compile's log): into `kiln run --json`'s
 * output, or a server's. A compute shader needs 420, or 310 es, anyway, so
 * kiln refuses a #version below those with glslang's own words before
 * glslang sees it. True (why filled in, a log line) when refused. */
static bool version_refused(const struct prog_source *src, char *why, size_t cap)
{
    unsigned lines;
    bool has_version, in_comment = false;
    size_t head = header_len(src->source, src->source_len, &lines, &has_version);
    unsigned line = 1;
    for (size_t pos = 0; has_version && pos < head; line++) {
        const char *s = src->source + pos, *nl = memchr(s, '\n', head - pos);
        size_t n = nl ? (size_t)(nl - s) : head - pos;
        const char *p = s, *e = s + n;
        pos += n + 1;
        while (p < e && (*p == ' ' || *p == '\t'))
            p++;
        bool opens = !in_comment && e - p >= 2 && p[0] == '/' && p[1] == '*';
        if (in_comment || opens) {   /* the header's comments: only whether one is still open matters */
            in_comment = true;
            for (const char *c = opens ? p + 2 : p; c + 1 < e; c++)
                if (c[0] == '*' && c[1] == '/')
                    in_comment = false;
            continue;
        }
        if (p == e || *p != '#')
            continue;
        for (p++; p < e && (*p == ' ' || *p == '\t'); p++) {
        }
        if (e - p < 7 || strncmp(p, "version", 7))
            continue;
        unsigned long v = 0;
        bool digits = false;
        for (p += 7; p < e && (*p == ' ' || *p == '\t'); p++) {
        }
        for (; p < e && *p >= '0' && *p <= '9' && v < 100000; p++, digits = true)
            v = v * 10 + (unsigned long)(*p - '0');
        for (; p < e && (*p == ' ' || *p == '\t'); p++) {
        }
        bool es = e - p >= 2 && !strncmp(p, "es", 2);
        if (digits && v >= (es ? 310u : 420u))
            return false;
        snprintf(why, cap, "%s:%u: error: '#version' : compute shaders require es profile with version 310 or above, "
                 "or non-es profile with version 420 or above (the line is '%.*s')\n", src->name, line,
                 (int)KILN_MIN(n, 80), s);
        return true;
    }
    return false;
}

kiln_result prog_compile(const struct prog_source *src, struct prog_output *out)
{
    *out = (struct prog_output){0};
    uint64_t t0 = time_now_ns();
    if (strcmp(src->entry, "main") && !source_has_function(src, src->entry)) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s: error: entry '%s' is not a function of the source (no '%s(' found)\n",
                 src->name, src->entry, src->entry);
        out->log = str_dup(buf);
        if (!out->log)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile log of %s", src->name);
        return KILN_RAISE(KILN_ERR_COMPILE, "%s", buf);
    }
    char why[320];
    if (version_refused(src, why, sizeof why)) {
        out->log = str_dup(why);
        if (!out->log)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile log of %s", src->name);
        return KILN_RAISE(KILN_ERR_COMPILE, "%s failed to compile: %.*s", src->name, (int)strcspn(why, "\n"), why);
    }
    size_t len;
    bool own_push = prog_declares_push_block(src);
    char *text = prog_preprocess(src, own_push, &len);
    pthread_once(&the_compiler_once, make_compiler);
    shaderc_compiler_t compiler = the_compiler;
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    if (!text || !compiler || !opts) {
        free(text);
        shaderc_compile_options_release(opts);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory starting a compile of %s", src->name);
    }
    shaderc_compile_options_set_source_language(opts, shaderc_source_language_glsl);
    shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    /* Optimized below with bindings preserved (optimize.cpp), never here. */
    shaderc_compile_options_set_optimization_level(opts, shaderc_optimization_level_zero);
    for (uint32_t i = 0; i < src->define_count; i++)
        shaderc_compile_options_add_macro_definition(opts, src->defines[i].name, strlen(src->defines[i].name),
                                                     src->defines[i].value, strlen(src->defines[i].value));
    struct prog_includer inc;
    shaderc_compilation_result_t res;
    bool inc_oom;
    char inc_why[sizeof inc.oom_msg];
    for (;;) {
        prog_includer_init(&inc, src);
        shaderc_compile_options_set_include_callbacks(opts, include_resolve, include_release, &inc);
        /* shaderc asserts that a message names its file: an empty name
         * (a caller's "") would abort the process on the first error. */
        res = shaderc_compile_into_spv(compiler, text, len, shaderc_compute_shader,
                                       *src->name ? src->name : "program.comp", "main", opts);
        free(text);
        text = NULL;
        inc_oom = inc.oom;
        memcpy(inc_why, inc.oom_msg, sizeof inc_why);
        prog_includer_finish(&inc);
        /* A push_constant block the scan did not see (spelled through a
         * macro): glslang refuses kiln's beside it; compile again without. */
        const char *m = res ? shaderc_result_get_error_message(res) : NULL;
        if (own_push || inc_oom || !res || shaderc_result_get_compilation_status(res) == shaderc_compilation_status_success ||
            !m || !strstr(m, "Only one push_constant block"))
            break;
        own_push = true;
        shaderc_result_release(res);
        text = prog_preprocess(src, own_push, &len);
        if (!text) {
            shaderc_compile_options_release(opts);
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory starting a compile of %s", src->name);
        }
    }
    kiln_result r = KILN_OK;
    const char *msg = res ? shaderc_result_get_error_message(res) : "shaderc returned no result";
    out->log = own_push_log(src, msg ? msg : "");
    if (inc_oom) {
        /* Not the program's fault: what the compile saw was not its source. */
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "%s: %s", src->name, inc_why);
    } else if (!res || shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success) {
        char first[256];
        prog_log_first_error(out->log, first, sizeof first);
        r = KILN_RAISE(KILN_ERR_COMPILE, "%s failed to compile: %s", src->name, first);
    } else {
        size_t bytes = shaderc_result_get_length(res);
        out->words = bytes / 4;
        out->spirv = mem_alloc(bytes ? bytes : 4);
        if (!out->spirv) {
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory keeping the SPIR-V of %s", src->name);
        } else {
            memcpy(out->spirv, shaderc_result_get_bytes(res), bytes);
            r = finish_module(src->name, src->entry, src->optimize, own_push, out);
        }
    }
    if (res)
        shaderc_result_release(res);
    shaderc_compile_options_release(opts);
    if (!out->log) {
        prog_output_finish(out);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory keeping the log of %s", src->name);
    }
    out->seconds = (double)(time_now_ns() - t0) / 1e9;
    return r;
}

void prog_output_finish(struct prog_output *out)
{
    free(out->spirv);
    free(out->log);
    *out = (struct prog_output){0};
}

void prog_log_first_error(const char *log, char *buf, size_t cap)
{
    const char *line = log, *pick = NULL;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (!pick && n && memmem(line, n, "error", 5))
            pick = line;
        line = nl ? nl + 1 : NULL;
    }
    if (!pick)
        pick = log ? log : "";
    const char *nl = strchr(pick, '\n');
    size_t n = nl ? (size_t)(nl - pick) : strlen(pick);
    snprintf(buf, cap, "%.*s", (int)n, pick);
}
