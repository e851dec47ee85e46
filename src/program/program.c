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
 * include folders. The resolver (prog_include_resolve, program_include.c) bounds what the
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

static bool is_ident(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

bool prog_define_name_ok(const char *name, char *why, size_t cap)
{
    if (!name) {
        snprintf(why, cap, "its name is NULL");
        return false;
    }
    const char *p = name;
    while (isalnum((unsigned char)*p) || *p == '_')
        p++;
    if (p == name || isdigit((unsigned char)*name)) {
        snprintf(why, cap, "a define's name is an identifier, or a function-like macro's head NAME(a, b)");
        return false;
    }
    if (!*p)
        return true;
    if (*p != '(') {
        snprintf(why, cap, "'%c' after the identifier: a define's name is an identifier, or NAME(a, b)", *p);
        return false;
    }
    /* NAME(params): identifiers separated by commas, blanks allowed (the
     * GLSL preprocessor has no variadic macros). */
    p++;
    for (bool first = true;; first = false) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (first && *p == ')')
            break;
        const char *q = p;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        if (q == p || isdigit((unsigned char)*p)) {
            snprintf(why, cap, "parameter %s of the macro is not an identifier", *p ? p : "(missing)");
            return false;
        }
        p = q;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == ')')
            break;
        if (*p != ',') {
            snprintf(why, cap, "the macro's parameters are identifiers separated by commas and end with ')'");
            return false;
        }
        p++;
    }
    if (p[1]) {
        snprintf(why, cap, "text after the macro's ')': its body is the define's value");
        return false;
    }
    return true;
}

static int cmp_constant(const void *a, const void *b)
{
    const kiln_spec_constant *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The module's words a SPIR-V desc (defaults applied) gives: spirv, or
 * source's bytes. */
static const void *desc_module(const kiln_program_desc *d, size_t *bytes)
{
    *bytes = d->spirv ? d->spirv_words * 4 : d->source_len;
    return d->spirv ? (const void *)d->spirv : (const void *)d->source;
}

static uint32_t word_at(const void *p, size_t i)
{
    uint32_t w;
    memcpy(&w, (const unsigned char *)p + 4 * i, 4);
    return w;
}

/* The checks of a SPIR-V desc's module that need no SPIRV-Tools: whole
 * words, a header, the magic number. */
static kiln_result spirv_desc_check(const kiln_program_desc *d)
{
    const char *from = d->spirv ? "spirv" : "source";
    size_t bytes;
    const void *m = desc_module(d, &bytes);
    if (!d->spirv && bytes % 4)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: a SPIR-V module in source must be whole 32-bit words: "
                          "source_len is %zu bytes%s", bytes,
                          d->source_len == strlen(d->source) ? " (source_len 0 measures up to the first NUL byte, "
                          "which a module holds: give source_len, or the words in spirv)" : "");
    if (bytes < 20)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: the SPIR-V module in %s is %zu words; its header alone is 5",
                          from, bytes / 4);
    uint32_t magic = word_at(m, 0);
    if (magic == 0x03022307u)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: the SPIR-V module in %s has its words byte-swapped "
                          "(magic number 0x03022307): kiln takes a module in this machine's little-endian words", from);
    if (magic != 0x07230203u)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: %s is not a SPIR-V module: its first word is 0x%08x, "
                          "SPIR-V's magic number is 0x07230203", from, magic);
    if (d->define_count)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: %u defines given with a SPIR-V module; defines are "
                          "GLSL's (a module's own specialization constants are set by constants)", d->define_count);
    if (d->include_dir_count)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: %u include folders given with a SPIR-V module, which "
                          "includes nothing", d->include_dir_count);
    if (d->preamble)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: a preamble given with a SPIR-V module, which has no "
                          "preprocessor (its specialization constants are set by constants)");
    return KILN_OK;
}

kiln_result prog_desc_check(const kiln_program_desc *desc)
{
    kiln_program_desc d = kiln_program_desc_defaults(desc);
    if ((unsigned)d.language > KILN_LANGUAGE_SPIRV)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: language %d is none of kiln's (0 auto, 1 GLSL, 2 HLSL, "
                          "3 SPIR-V)", (int)d.language);
    if (d.spirv && d.source)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: both source and spirv are given; give one");
    if (d.spirv_words && !d.spirv)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: spirv_words is %zu but spirv is NULL", d.spirv_words);
    if (d.spirv && d.language != KILN_LANGUAGE_SPIRV)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: spirv holds a SPIR-V module but language is %s",
                          d.language == KILN_LANGUAGE_GLSL ? "GLSL" : "HLSL");
    if (!d.source && !d.spirv)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: source is NULL");
    if (!is_ident(d.entry) || strlen(d.entry) >= 64)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: entry '%s' is not a GLSL identifier of under 64 characters",
                          d.entry);
    if (d.define_count && !d.defines)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: define_count is %u but defines is NULL", d.define_count);
    uint64_t text_bytes = d.preamble ? strlen(d.preamble) : 0;
    for (uint32_t i = 0; i < d.define_count && text_bytes <= KILN_MAX_PREAMBLE_BYTES; i++) {
        kiln_define def = kiln_define_defaults(&d.defines[i]);
        char why[160];
        if (!prog_define_name_ok(def.name, why, sizeof why))
            return KILN_RAISE(KILN_ERR_INVALID, "program desc: define %u '%s': %s", i, def.name ? def.name : "(null)",
                              why);
        if (strpbrk(def.value, "\n\r"))
            return KILN_RAISE(KILN_ERR_INVALID, "program desc: define %u '%s': its value holds a line break (a "
                              "define is one line; put longer text in the preamble)", i, def.name);
        text_bytes += strlen(def.name) + strlen(def.value) + 10;   /* as "#define N V\n" */
    }
    if (text_bytes > KILN_MAX_PREAMBLE_BYTES)
        return KILN_RAISE(KILN_ERR_LIMIT, "program desc: its defines and preamble hold more than %u bytes "
                          "(KILN_MAX_PREAMBLE_BYTES)", KILN_MAX_PREAMBLE_BYTES);
    for (int a = 0; a < 3; a++)
        if (d.workgroup_size[a] > 65535)
            return KILN_RAISE(KILN_ERR_INVALID, "program desc: workgroup_size[%d] is %u; no device takes more than "
                              "65535 on an axis", a, d.workgroup_size[a]);
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
    if (d.language == KILN_LANGUAGE_SPIRV)
        return spirv_desc_check(&d);
    return KILN_OK;
}

kiln_result prog_source_init(struct prog_source *src, const kiln_program_desc *desc)
{
    *src = (struct prog_source){0};
    if (!desc)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc is NULL");
    KILN_TRY(prog_desc_check(desc));
    kiln_program_desc d = kiln_program_desc_defaults(desc);
    src->lang = d.language;
    if (d.language == KILN_LANGUAGE_SPIRV) {
        const void *m = desc_module(&d, &src->source_len);
        src->source = str_ndup(m, src->source_len);   /* its bytes, and a NUL after them */
    } else if (memchr(d.source, 0, d.source_len)) {
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: source holds a NUL byte within source_len%s",
                          d.language == KILN_LANGUAGE_GLSL ? " (a SPIR-V module goes in spirv, or in source "
                          "with language KILN_LANGUAGE_SPIRV)" : "");
    } else {
        src->source = str_ndup(d.source, d.source_len);
        src->source_len = d.source_len;
    }
    src->name = str_dup(d.name);
    src->entry = str_dup(d.entry);
    src->optimize = d.optimize < 0 ? -1 : 1;   /* canonical: any positive is 1 */
    src->defines = mem_calloc(d.define_count + 1, sizeof *src->defines);
    src->include_dirs = mem_calloc(d.include_dir_count + 1, sizeof *src->include_dirs);
    src->constants = mem_alloc((d.constant_count + 1) * sizeof *src->constants);
    src->preamble = d.preamble ? str_dup(d.preamble) : NULL;
    memcpy(src->workgroup_size, d.workgroup_size, sizeof src->workgroup_size);
    bool ok = src->source && src->name && src->entry && src->defines && src->include_dirs && src->constants &&
              (!d.preamble || src->preamble);
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
    kiln_define *defs = mem_alloc((src->define_count + 1) * sizeof *defs);
    if (!defs)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory copying a program desc");
    for (uint32_t i = 0; i < src->define_count; i++)
        defs[i] = (kiln_define){src->defines[i].name, src->defines[i].value};
    kiln_program_desc d = {
        .language = src->lang, .preamble = src->preamble,
        .workgroup_size = {src->workgroup_size[0], src->workgroup_size[1], src->workgroup_size[2]},
        .source = src->source, .source_len = src->source_len, .name = src->name, .entry = src->entry,
        .optimize = src->optimize, .defines = defs, .define_count = src->define_count,
        .include_dirs = (const char *const *)src->include_dirs, .include_dir_count = src->include_dir_count,
        .constants = src->constants, .constant_count = src->constant_count,
    };
    kiln_result r = prog_source_init(dst, &d);
    free(defs);
    KILN_TRY(r);
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
    free(src->preamble);
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
    if (text_has_push_constant(src->source, src->source_len) ||
        (src->preamble && text_has_push_constant(src->preamble, strlen(src->preamble))))
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
        prog_text_put(&b, "#version 450\n", 13);
    prog_text_put(&b, src->source, head);
    if (head && src->source[head - 1] != '\n')
        prog_text_put(&b, "\n", 1);
    if (src->preamble) {   /* the host's, after #version and #extension as hosts put it */
        size_t n = strlen(src->preamble);
        prog_text_put(&b, src->preamble, n);
        if (n && src->preamble[n - 1] != '\n')
            prog_text_put(&b, "\n", 1);
    }
    if (own_push) {
        /* The program's own block is its param words: kiln declares none,
         * and kiln_param(n) / kiln_len(b), which read kiln's, name the way
         * out when used (prog_compile turns the marker into a message). */
        bytes_putf(&b, "#define kiln_param(n) " PROG_OWN_PUSH_MARKER "_kiln_param()\n");
        bytes_putf(&b, "#define kiln_paramf(n) " PROG_OWN_PUSH_MARKER "_kiln_param()\n");
        bytes_putf(&b, "#define kiln_parami(n) " PROG_OWN_PUSH_MARKER "_kiln_param()\n");
        bytes_putf(&b, "#define kiln_len(b) " PROG_OWN_PUSH_MARKER "_kiln_len()\n");
        static const char axis_own[] = "XYZ";
        for (int a = 0; a < 3; a++)
            bytes_putf(&b, "#ifndef KILN_SPEC_%s_GROUPS_%c\n#define KILN_SPEC_%s_GROUPS_%c gl_NumWorkGroups.%c\n#endif\n",
                      entry_uc, axis_own[a], entry_uc, axis_own[a], "xyz"[a]);
        bytes_putf(&b, "#define kiln_groups() uvec3(KILN_SPEC_%s_GROUPS_X, KILN_SPEC_%s_GROUPS_Y, KILN_SPEC_%s_GROUPS_Z)\n",
                  entry_uc, entry_uc, entry_uc);
        goto entry;
    }
    static const char block[] = "layout(push_constant) uniform kiln_params_block {\n"
                                "    uint uw0; uint uw1; uint uw2; uint uw3; uint uw4; uint uw5; uint uw6; uint uw7;\n"
                                "    uint len0; uint len1; uint len2; uint len3; uint len4; uint len5; uint len6;\n"
                                "    uint len7; uint len8; uint len9; uint len10; uint len11; uint len12; uint len13;\n"
                                "    uint len14; uint len15;\n"
                                "} kiln_pc;\n";
    prog_text_put(&b, block, sizeof block - 1);
    for (int n = 0; n < KILN_PARAM_WORDS; n++)
        bytes_putf(&b, "#ifndef KILN_SPEC_%s_UW%d\n#define KILN_SPEC_%s_UW%d kiln_pc.uw%d\n#endif\n", entry_uc, n,
                  entry_uc, n, n);
    for (int n = 0; n < KILN_MAX_BINDINGS; n++)
        bytes_putf(&b, "#ifndef KILN_SPEC_%s_LEN%d\n#define KILN_SPEC_%s_LEN%d kiln_pc.len%d\n#endif\n", entry_uc, n,
                  entry_uc, n, n);
    static const char axis[] = "XYZ";
    for (int a = 0; a < 3; a++)
        bytes_putf(&b, "#ifndef KILN_SPEC_%s_GROUPS_%c\n#define KILN_SPEC_%s_GROUPS_%c gl_NumWorkGroups.%c\n#endif\n",
                  entry_uc, axis[a], entry_uc, axis[a], "xyz"[a]);
    bytes_putf(&b, "#define kiln_param(n) KILN_SPEC_%s_UW##n\n", entry_uc);
    bytes_putf(&b, "#define kiln_len(b) KILN_SPEC_%s_LEN##b\n", entry_uc);
    bytes_putf(&b, "#define kiln_groups() uvec3(KILN_SPEC_%s_GROUPS_X, KILN_SPEC_%s_GROUPS_Y, KILN_SPEC_%s_GROUPS_Z)\n",
              entry_uc, entry_uc, entry_uc);
    prog_text_put(&b, "#define kiln_paramf(n) uintBitsToFloat(kiln_param(n))\n", 54);
    prog_text_put(&b, "#define kiln_parami(n) int(kiln_param(n))\n", 42);
entry:
    if (strcmp(src->entry, "main"))
        bytes_putf(&b, "#define %s main\n", src->entry);
    bytes_putf(&b, "#line %u\n", lines + 1);
    prog_text_put(&b, src->source + head, src->source_len - head);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return (char *)b.p;
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
        bytes_putf(&b, "%s: error: kiln_param(n) reads kiln's push-constant block, and this program declares its own "
                      "push_constant block, so kiln adds none: read your block's members instead (a node's param "
                      "words are your block's words: word n is bytes 4n..4n+3)\n", src->name);
    if (len)
        bytes_putf(&b, "%s: error: kiln_len(b) reads kiln's push-constant block, and this program declares its own "
                      "push_constant block, so kiln adds none: use the buffer's .length() instead\n", src->name);
    prog_text_put(&b, log, strlen(log) + 1);
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
                                 const uint32_t workgroup_size[3], struct prog_output *out)
{
    kiln_result r;
    char err[512];
    uint32_t *opt;
    size_t opt_words;
    char *why = NULL;
    if ((r = prog_set_local_size(name, workgroup_size, &out->spirv, &out->words, &why)) < 0) {
        if (why) {
            free(out->log);
            out->log = why;
        }
        free(out->spirv);
        out->spirv = NULL;
        out->words = 0;
        return r;
    }
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
        int env = prog_spirv_env(out->spirv[1]);
        if (prog_spirv_optimize(out->spirv, out->words, env < 0 ? prog_spirv_env(0x00010500) : env, &opt,
                                &opt_words, err, sizeof err) == 0) {
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
    static const uint32_t kept[3] = {0, 0, 0};   /* the universal's module has the host's size already */
    kiln_result r = finish_module(name, universal->iface.entry, 1, universal->iface.own_push_block != 0, kept, out);
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

/* A SPIR-V program: the module as given (validated, its one entry kept),
 * then guarded, optimized and reflected as any compile's. Its push block,
 * if any, is its own: no prelude ever touched it. */
static kiln_result take_module(const struct prog_source *src, struct prog_output *out, uint64_t t0)
{
    kiln_result r = prog_spirv_take(src, &out->spirv, &out->words, &out->log);
    if (r == KILN_OK) {
        if (!out->log)   /* else a note of what kiln changed */
            out->log = str_dup("");
        r = out->log ? finish_module(src->name, src->entry, src->optimize, true, src->workgroup_size, out)
                     : KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the log of %s", src->name);
    }
    if (!out->log) {
        prog_output_finish(out);
        return r == KILN_ERR_NO_MEMORY ? r : KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the log of %s",
                                                          src->name);
    }
    out->seconds = (double)(time_now_ns() - t0) / 1e9;
    return r;
}

/* An HLSL compile's module, its entry (which keeps its HLSL name) named
 * "main" as every pipeline's. On failure out->log says why (replacing the
 * compiler's, which holds nothing then) and the SPIR-V is freed. */
static kiln_result hlsl_entry(const struct prog_source *src, struct prog_output *out)
{
    uint32_t *renamed;
    size_t words;
    char *log = NULL;
    kiln_result r = prog_spirv_entry(src->name, src->entry, out->spirv, out->words, &renamed, &words, &log);
    free(out->spirv);
    out->spirv = r == KILN_OK ? renamed : NULL;
    out->words = r == KILN_OK ? words : 0;
    if (log) {
        free(out->log);
        out->log = log;
    }
    return r;
}

/* An HLSL program's text: the preamble, then the source from its line 1. */
static char *hlsl_text(const struct prog_source *src, size_t *len)
{
    if (!src->preamble) {
        *len = src->source_len;
        return str_ndup(src->source, src->source_len);
    }
    struct bytes b = {0};
    prog_text_put(&b, src->preamble, strlen(src->preamble));
    prog_text_put(&b, "\n#line 1\n", 9);
    prog_text_put(&b, src->source, src->source_len);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return (char *)b.p;
}

/* An HLSL compile's registers as bindings (hlsl_in.c), read from its
 * preprocessed text (a preprocess that fails leaves the error to the
 * compile). On a refusal out->log says why. */
static kiln_result hlsl_registers(shaderc_compiler_t compiler, shaderc_compile_options_t opts,
                                  const struct prog_source *src, const char *text, size_t len, struct prog_output *out)
{
    struct prog_includer inc;
    prog_includer_init(&inc, src);
    shaderc_compile_options_set_include_callbacks(opts, prog_shaderc_include, prog_shaderc_release, &inc);
    shaderc_compilation_result_t pre = shaderc_compile_into_preprocessed_text(
        compiler, text, len, shaderc_compute_shader, *src->name ? src->name : "program.hlsl", src->entry, opts);
    bool oom = inc.oom;
    prog_includer_finish(&inc);
    shaderc_compile_options_set_include_callbacks(opts, NULL, NULL, NULL);
    kiln_result r = KILN_OK;
    if (!pre || oom)
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory preprocessing %s", src->name);
    else if (shaderc_result_get_compilation_status(pre) == shaderc_compilation_status_success)
        r = prog_hlsl_map_registers(opts, src->name, shaderc_result_get_bytes(pre), shaderc_result_get_length(pre),
                                    &out->log);
    if (pre)
        shaderc_result_release(pre);
    return r;
}

kiln_result prog_compile(const struct prog_source *src, struct prog_output *out)
{
    *out = (struct prog_output){0};
    uint64_t t0 = time_now_ns();
    if (src->lang == KILN_LANGUAGE_SPIRV)
        return take_module(src, out, t0);
    bool hlsl = src->lang == KILN_LANGUAGE_HLSL;
    if (!hlsl && strcmp(src->entry, "main") && !source_has_function(src, src->entry)) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s: error: entry '%s' is not a function of the source (no '%s(' found)\n",
                 src->name, src->entry, src->entry);
        out->log = str_dup(buf);
        if (!out->log)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile log of %s", src->name);
        return KILN_RAISE(KILN_ERR_COMPILE, "%s", buf);
    }
    char why[320];
    if (!hlsl && version_refused(src, why, sizeof why)) {
        out->log = str_dup(why);
        if (!out->log)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile log of %s", src->name);
        return KILN_RAISE(KILN_ERR_COMPILE, "%s failed to compile: %.*s", src->name, (int)strcspn(why, "\n"), why);
    }
    size_t len = src->source_len;
    /* HLSL gets no prelude: its push constants are its own
     * ([[vk::push_constant]]), and its entry keeps its name until the
     * module is made (renamed "main" below). */
    bool own_push = hlsl || prog_declares_push_block(src);
    char *text = hlsl ? hlsl_text(src, &len) : prog_preprocess(src, own_push, &len);
    pthread_once(&the_compiler_once, make_compiler);
    shaderc_compiler_t compiler = the_compiler;
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    if (!text || !compiler || !opts) {
        free(text);
        shaderc_compile_options_release(opts);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory starting a compile of %s", src->name);
    }
    if (hlsl) {
        /* SPIR-V 1.3 for Vulkan 1.1: Debian's shaderc refuses
         * RWStructuredBuffer at 1.4 and later. Registers map to bindings
         * by class, each class its own range of a set (space), so t0 and
         * u0 never alias (hlsl_in.c; [[vk::binding]] is kept). */
        shaderc_compile_options_set_source_language(opts, shaderc_source_language_hlsl);
        shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
        shaderc_compile_options_set_target_spirv(opts, shaderc_spirv_version_1_3);
        shaderc_compile_options_set_hlsl_io_mapping(opts, true);
        /* A resource without register() or [[vk::binding]], and the
         * $Global cbuffer of globals outside any cbuffer, take the next
         * free binding of their set. */
        shaderc_compile_options_set_auto_bind_uniforms(opts, true);
    } else {
        shaderc_compile_options_set_source_language(opts, shaderc_source_language_glsl);
        shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    }
    /* Optimized below with bindings preserved (optimize.cpp), never here. */
    shaderc_compile_options_set_optimization_level(opts, shaderc_optimization_level_zero);
    for (uint32_t i = 0; i < src->define_count; i++)
        shaderc_compile_options_add_macro_definition(opts, src->defines[i].name, strlen(src->defines[i].name),
                                                     src->defines[i].value, strlen(src->defines[i].value));
    struct prog_includer inc;
    shaderc_compilation_result_t res;
    bool inc_oom;
    char inc_why[sizeof inc.oom_msg];
    if (hlsl) {
        kiln_result hr = hlsl_registers(compiler, opts, src, text, len, out);
        if (hr != KILN_OK) {
            free(text);
            shaderc_compile_options_release(opts);
            return hr;
        }
    }
    for (;;) {
        prog_includer_init(&inc, src);
        shaderc_compile_options_set_include_callbacks(opts, prog_shaderc_include, prog_shaderc_release, &inc);
        /* shaderc asserts that a message names its file: an empty name
         * (a caller's "") would abort the process on the first error. */
        res = shaderc_compile_into_spv(compiler, text, len, shaderc_compute_shader,
                                       *src->name ? src->name : "program.comp", hlsl ? src->entry : "main", opts);
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
            r = hlsl ? hlsl_entry(src, out) : KILN_OK;
            if (r == KILN_OK)
                r = finish_module(src->name, src->entry, src->optimize, own_push, src->workgroup_size, out);
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
