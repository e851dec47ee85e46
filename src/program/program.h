/*
 * program: a compute program's provenance (GLSL source, entry, defines,
 * include folders) turned into SPIR-V with shaderc, and the SPIR-V's
 * interface read back with SPIRV-Cross.
 *
 * The prelude: kiln inserts, after the source's header (#version,
 * #extension, #pragma lines, comments), a push-constant block of 8 u32
 * words and the macros KILN_SPEC_<ENTRY>_UW0..7, each defaulting to its word
 * unless already defined, plus the accessors kiln_param(n), kiln_paramf(n)
 * and kiln_parami(n). A #line directive puts the source's own line numbers
 * back, so compiler messages point at the author's lines.
 *
 * The pipeline layout of a program follows its interface (its signature),
 * never what one variant happens to read: every variant of a program binds
 * exactly like it.
 */
#ifndef KILN_PROGRAM_H
#define KILN_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* A program's provenance, owned (deep copy of a kiln_program_desc). */
struct prog_source {
    char *source;
    size_t source_len;
    char *name;
    char *entry;
    uint32_t define_count;
    struct prog_define { char *name, *value; } *defines;
    uint32_t include_dir_count;
    char **include_dirs;
    int optimize;              /* 1 or -1 */
    /* Included files as read once (by the compile service when it keyed the
     * request): the compile serves #include from here, so the SPIR-V is made
     * from exactly the bytes its key holds. NULL: read from disk. */
    struct prog_include *includes;
    uint32_t include_count;
};

struct prog_include {
    char *req;        /* as written between quotes or brackets */
    char *from;       /* the including file's name */
    bool relative;    /* "x" (true) or <x> */
    char *path;       /* where it was found; NULL when it was not */
    char *content;
    size_t len;
};

/* What a compile produced. On failure spirv is NULL and log holds the
 * compiler's messages; on success log may hold warnings. */
struct prog_output {
    uint32_t *spirv;
    size_t words;
    char *log;
    kiln_program_interface iface;
    double seconds;
};

/* Validates a desc and deep-copies it. */
KILN_NODISCARD kiln_result prog_source_init(struct prog_source *src, const kiln_program_desc *desc);
/* Deep-copies a provenance (not its include snapshot). */
KILN_NODISCARD kiln_result prog_source_copy(struct prog_source *dst, const struct prog_source *src);
/* Deep-copies a provenance with its include snapshot (the variant reads the
 * universal's files as they were) and the given defines added (copied). */
KILN_NODISCARD kiln_result prog_source_variant(struct prog_source *dst, const struct prog_source *src,
                                               const struct prog_define *add, uint32_t add_count);
void prog_source_finish(struct prog_source *src);

/* The entry's name as the prelude's macros spell it (KILN_SPEC_<ENTRY>_UW0):
 * upper case, at most 63 characters. */
void prog_entry_upper(const char *entry, char out[64]);

/* The source text the compiler sees: prelude inserted, #line restored.
 * Returns a malloc'd string (NULL on exhaustion); *len receives its length. */
char *prog_preprocess(const struct prog_source *src, size_t *len);

/* Reads the file an #include names, the way the compiler resolves it:
 * from src's include snapshot when it has one, else relative to the
 * including file `from` first when `relative` ("x"), then each include
 * folder. Returns the malloc'd content (NULL if not found) and
 * writes the path it came from. */
char *prog_include_read(const struct prog_source *src, const char *req, bool relative, const char *from,
                        char *path, size_t path_cap, size_t *len);

void prog_includes_free(struct prog_include *inc, uint32_t n);

/* Compiles to SPIR-V and reflects it. KILN_OK when it compiled; a compile
 * error is KILN_ERR_COMPILE with out->log filled. Thread-safe. */
kiln_result prog_compile(const struct prog_source *src, struct prog_output *out);
void prog_output_finish(struct prog_output *out);

/* Reads the interface of a SPIR-V compute module. On an unsupported
 * resource (an image, a second descriptor set) returns KILN_ERR_LAYOUT. */
kiln_result prog_reflect(const uint32_t *spirv, size_t words, kiln_program_interface *out);

/* True when a node bound for `a` can run `b` unchanged: the same bindings
 * with the same kinds and access. Otherwise writes the first difference. */
bool prog_iface_compatible(const kiln_program_interface *a, const kiln_program_interface *b, char *why,
                           size_t cap);

/* fold_guard.c: rewrites every OpSDiv / OpSRem / OpSMod of a module so that
 * no optimizer can fold a signed division by -1 (which traps in SPIRV-Tools'
 * host arithmetic), keeping every value the module computes (see the file's
 * comment). Returns 0 with *out (mem_alloc'd, the caller frees it) the
 * guarded module and *rewritten (may be NULL) the ops rewritten; 1 when the
 * module divides nothing (*out NULL: keep the input); -1 when the module
 * cannot be guarded and must not be optimized, -2 out of host memory: err
 * says why in both cases. `in` is borrowed. Thread-safe. */
int prog_fold_guard(const uint32_t *in, size_t words, uint32_t **out, size_t *out_words, uint32_t *rewritten,
                    char *err, size_t err_cap);
/* Process-wide counts: ops guarded, modules left unoptimized because they
 * could not be guarded. */
void prog_fold_guard_counts(uint64_t *ops, uint64_t *skipped);
void prog_fold_guard_count_skip(void);

/* The first line of a compile log that says "error", for one-line messages. */
void prog_log_first_error(const char *log, char *buf, size_t cap);

#endif
