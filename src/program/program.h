/* SPDX-License-Identifier: MIT */
/*
 * program: a compute program's provenance (GLSL source, entry, defines,
 * include folders) turned into SPIR-V with shaderc, and the SPIR-V's
 * interface read back with SPIRV-Cross.
 *
 * The prelude: kiln inserts, after the source's header (#version,
 * #extension, #pragma lines, comments), a push-constant block of
 * KILN_PUSH_BYTES (96): 8 u32 param words, then the byte length of the
 * range bound at each of the 16 binding numbers; the macros
 * KILN_SPEC_<ENTRY>_UW0..7 and _LEN0..15, each defaulting to its word
 * unless already defined, and _GROUPS_X..Z (gl_NumWorkGroups); and the
 * accessors kiln_param(n), kiln_paramf(n), kiln_parami(n), kiln_len(b) and
 * kiln_groups(). A #line directive puts the source's own line numbers
 * back, so compiler messages point at the author's lines.
 *
 * The pipeline layout of a program follows its interface (its signature),
 * never what one variant happens to read: every variant of a program binds
 * exactly like it.
 *
 * Baking a shader's own push constants (push_bake.c): a program that
 * declares its own push-constant block gets its variants from its
 * universal SPIR-V, not from GLSL: prog_push_bake replaces each load of the
 * block whose bytes are all baked words (through access chains with
 * constant indices, to a scalar, vector or matrix, laid out by the module's
 * Offset, ArrayStride and MatrixStride decorations) with a constant of
 * those bytes, and leaves the block declared as it was, so the variant binds
 * like its universal program. The optimizer then folds what the constants
 * decide, as it does for the prelude's baked words.
 */
#ifndef KILN_PROGRAM_H
#define KILN_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* A program's provenance, owned (deep copy of a kiln_program_desc). */
struct prog_source {
    /* GLSL, HLSL or SPIR-V (never AUTO). A SPIR-V module is held as its
     * bytes in source (source_len a multiple of 4, at least 20): its
     * entry point named entry, the only one kept at compile. */
    kiln_language lang;
    char *source;
    size_t source_len;
    char *name;
    char *entry;
    char *preamble;              /* NULL: none */
    uint32_t workgroup_size[3];  /* 0: the program's own, axis by axis */
    uint32_t define_count;
    struct prog_define { char *name, *value; } *defines;
    uint32_t include_dir_count;
    char **include_dirs;
    int optimize;              /* 1 or -1 */
    /* Specialization constants to set: sorted by id, each id once. They
     * are no input of the SPIR-V (the compile service keys them apart:
     * one front end serves every set). */
    kiln_spec_constant *constants;
    uint32_t constant_count;
    /* Included files as read once (by the compile service when it keyed the
     * request): the compile serves #include from here, so the SPIR-V is made
     * from exactly the bytes its key holds. NULL: read from disk. */
    struct prog_include *includes;
    uint32_t include_count;
    /* The snapshot is all there is, even empty: nothing is read from disk
     * (a server's client's program, whose files are the client's and came
     * with it; its name is a label, never a path on the server). */
    bool includes_sealed;
};

struct prog_include {
    char *req;        /* as written between quotes or brackets */
    char *from;       /* the including file's name */
    bool relative;    /* "x" (true) or <x> */
    char *path;       /* where it was found; NULL when it was not */
    char *content;    /* NULL: not found, or refused */
    size_t len;
    char *refused;    /* why it was refused (not a regular file, too large, unreadable); else NULL */
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

/* Validates a desc and deep-copies it, its defaults applied
 * (kiln_program_desc_defaults, and kiln_define_defaults for each define). */
KILN_NODISCARD kiln_result prog_source_init(struct prog_source *src, const kiln_program_desc *desc);
/* The checks of a desc that need no compile (desc not NULL; its defaults
 * applied here): source given, the entry an identifier, each array within
 * its limit and not NULL where its count is set, no constant id twice.
 * KILN_ERR_INVALID naming the field. A remote client runs them before
 * encoding a desc, so a NULL array never needs a wire form. */
KILN_NODISCARD kiln_result prog_desc_check(const kiln_program_desc *desc);
/* Deep-copies a provenance (not its include snapshot; whether it is
 * sealed, yes). */
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
char *prog_preprocess(const struct prog_source *src, bool own_push, size_t *len);
/* Whether the program declares its own push_constant block (the word
 * push_constant outside comments in its source or its include snapshot).
 * Such a program gets no block of kiln's: its block's words are the node's
 * param words, kiln_param(n) and kiln_len(b) fail to compile naming the way
 * out, and kiln_groups() reads gl_NumWorkGroups. prog_compile also compiles
 * a program again in this mode when glslang finds a second block the scan
 * missed. */
bool prog_declares_push_block(const struct prog_source *src);
#define PROG_OWN_PUSH_MARKER "kiln_unavailable_beside_an_own_push_constant_block"

/* Reads the file an #include names, the way the compiler resolves it:
 * from src's include snapshot when it has one, else relative to the
 * including file `from` first when `relative` ("x"), then each include
 * folder. KILN_OK with *content the malloc'd bytes (*len of them; path
 * says where they came from), or NULL when no such file is found.
 * KILN_ERR_IO when the file is refused (not a regular file, past
 * PROG_MAX_INCLUDE_BYTES, unreadable), KILN_ERR_NO_MEMORY when it was
 * there but its bytes could not be kept: why says which, naming the path,
 * and is warned about. Nothing is raised. */
KILN_NODISCARD kiln_result prog_include_read(const struct prog_source *src, const char *req, bool relative,
                                             const char *from, char *path, size_t path_cap, char **content,
                                             size_t *len, char *why, size_t why_cap);

void prog_includes_free(struct prog_include *inc, uint32_t n);

/* Steps *pos (a byte offset into text, 0 to start) line by line to the
 * next preprocessor directive named `name` ("include": '#', blanks allowed
 * around it, then the name). Returns the rest of that line after the name
 * and the blanks that follow it (*blanks of them), *rest_len bytes long;
 * NULL at the end of text. */
const char *prog_next_directive(const char *text, size_t len, size_t *pos, const char *name, size_t *rest_len,
                                size_t *blanks);

/* Includes nest at most this deep (the program's own source is depth 0). */
#define PROG_MAX_INCLUDE_DEPTH 32
/* At most this many #include lines are followed per program. */
#define PROG_MAX_INCLUDE_FILES 256
/* The most bytes of included files a program may bring to a server (the
 * files a client's program includes travel with it). */
#define PROG_MAX_BUNDLE_BYTES (32u << 20)
/* The files a program includes, read once: for each #include line its
 * source and those files reach (found by a textual scan, resolved the way
 * the compiler resolves them, following lines under #if branches the
 * compiler may skip, at most PROG_MAX_INCLUDE_FILES, at most
 * PROG_MAX_INCLUDE_DEPTH deep), the request, the includer, where it was
 * found and its bytes, or why it was refused (a file not found has
 * neither). From src's snapshot when it has one (or is sealed), else from
 * disk. *out (free with prog_includes_free) in the order met; *bytes the
 * contents' total. KILN_ERR_NO_MEMORY is the only failure. */
KILN_NODISCARD kiln_result prog_include_gather(const struct prog_source *src, struct prog_include **out,
                                               uint32_t *count, uint64_t *bytes);

/* The largest included file read (16 MiB); a larger one is refused unread. */
#define PROG_MAX_INCLUDE_BYTES (16u << 20)

/*
 * The include resolver of one compile, callable without the compiler (the
 * fuzz target drives it alone). It follows the compiler's include chain
 * (depth first: the requesting file at depth d - 1 is the last one resolved
 * at that depth) to refuse a cycle: an include step (file -> file) taken a
 * second time on one chain, which the compiler would repeat for ever. A
 * header included again and stopped by its guard or #pragma once includes
 * nothing the second time, so never repeats a step: it is fine.
 * `#pragma once` is honoured here (glslang only warns "not implemented"): a
 * file holding that line, given once in this compile, is given empty after.
 */
struct prog_includer {
    const struct prog_source *src;              /* borrowed: dirs and the include snapshot */
    char *chain[PROG_MAX_INCLUDE_DEPTH + 1];    /* owned: chain[0] the program, chain[d] the file at depth d */
    char **once;                                /* owned: paths given that hold #pragma once */
    uint32_t once_count, once_cap;
    /* An include that could not be resolved for want of host memory: the
     * compile then fails with KILN_ERR_NO_MEMORY, oom_msg saying what. */
    bool oom;
    char oom_msg[256];
    /* The last "x" refused (not merely not found), which the compiler then
     * asks for as <x>: the same refusal answers that. */
    char *refused_req, *refused_from;
    kiln_result refused_code;
    char refused_msg[1024];
};
void prog_includer_init(struct prog_includer *in, const struct prog_source *src);
void prog_includer_finish(struct prog_includer *in);
/* Resolves `#include "req"` (relative) or `#include <req>` written in file
 * `from` at include depth `depth` (1: in the program's own source, whose
 * name is src->name), as prog_include_read finds it. On KILN_OK *content is
 * the file's bytes (malloc'd: the caller frees it), *len their count, and
 * path where they came from. Errors, each naming the include and the
 * including file: KILN_ERR_LIMIT past PROG_MAX_INCLUDE_DEPTH (with the
 * chain), KILN_ERR_COMPILE for a cycle ("#include cycle: a.h includes b.h
 * includes a.h ..."), KILN_ERR_IO when not found or refused (not a regular
 * file, past PROG_MAX_INCLUDE_BYTES, unreadable), KILN_ERR_NO_MEMORY. */
KILN_NODISCARD kiln_result prog_include_resolve(struct prog_includer *in, const char *from, const char *req,
                                                bool relative, size_t depth, char **content, size_t *len,
                                                char *path, size_t path_cap);

/* An HLSL program's registers as bindings: register(xN, spaceS) is
 * binding N + the class's shift in set S (as DXC's -fvk-<x>-shift): u
 * (UAVs: RWStructuredBuffer, RWTexture) at N, t (SRVs: StructuredBuffer,
 * Texture) at N + 16, b (cbuffers) at N + 32, s (samplers) at N + 48. A
 * [[vk::binding(n, s)]] attribute gives its binding as written. */
#define PROG_HLSL_SHIFT_U 0
#define PROG_HLSL_SHIFT_T 16
#define PROG_HLSL_SHIFT_B 32
#define PROG_HLSL_SHIFT_S 48

/* Whether name is a define's name: an identifier, or a function-like
 * macro's head NAME(a, b, ...). False with why saying what is wrong. */
bool prog_define_name_ok(const char *name, char *why, size_t cap);

/* Compiles to SPIR-V and reflects it. KILN_OK when it compiled; a compile
 * error is KILN_ERR_COMPILE with out->log filled. Thread-safe. */
kiln_result prog_compile(const struct prog_source *src, struct prog_output *out);
struct prog_push_word;
/* A variant of a compiled program with its own push_constant block: the
 * universal's SPIR-V with the baked words made constants (prog_push_bake;
 * loads it cannot bake stay loads), then guarded, optimized and reflected
 * as any compile. No GLSL is compiled. Its interface is the universal's
 * (checked). Thread-safe; `universal` is only read. */
kiln_result prog_bake_variant(const struct prog_output *universal, const char *name, const struct prog_push_word *baked,
                              uint32_t count, struct prog_output *out);
void prog_output_finish(struct prog_output *out);

/* Reads the interface of a SPIR-V compute module. On a resource kiln
 * cannot bind (an image, a set past KILN_MAX_SETS, an array of unknown
 * length, two kinds on one binding) returns KILN_ERR_LAYOUT naming it. */
kiln_result prog_reflect(const uint32_t *spirv, size_t words, bool own_push, kiln_program_interface *out);

/* A binding kind's name for messages ("storage buffer", "uniform texel
 * buffer"); a constant string. */
const char *prog_kind_name(kiln_binding_kind kind);

/* True when a node bound for `a` can run `b` unchanged: the same bindings
 * (set, binding) with the same kinds, array lengths, formats and access.
 * Otherwise writes the first difference. */
bool prog_iface_compatible(const kiln_program_interface *a, const kiln_program_interface *b, char *why,
                           size_t cap);

/*
 * Specialization constants (spec_const.c). Reflection lists every constant
 * the source declares (prog_reflect, from the module it is given;
 * prog_compile lists those of the unoptimized module, so a constant the
 * optimizer dropped is listed too, with used = 0). prog_spec_apply gives
 * an interface the values a program sets: each entry's value and set
 * flag, and the workgroup size its local_size constants make. The SPIR-V
 * is never rewritten: the values are set when a pipeline is made
 * (VkSpecializationInfo), and what kiln counts from the module (shared
 * memory) reads them in place of the defaults (prog_shared_bytes_set).
 */
/* Gives iface (reflected, nothing set) the values set[0..n) (sorted by
 * id, each once). KILN_ERR_INVALID, raised naming the constant, the id
 * and the value, for an id the interface does not declare, a word the
 * constant's type cannot hold (see kiln.h), a 64-bit constant, or 0 for a
 * workgroup size; iface is then unchanged. */
KILN_NODISCARD kiln_result prog_spec_apply(kiln_program_interface *iface, const kiln_spec_constant *set, uint32_t n);
/* Gives iface's buffer bindings the fixed sizes their blocks have with
 * the constants iface sets (an array member sized by a constant, such as
 * `uint counts[LEVELS + 1]`, is as long as the value set makes it, not
 * its default): reflects a copy of the module whose OpSpecConstant
 * defaults are the values set. Nothing set: nothing to do. */
KILN_NODISCARD kiln_result prog_spec_min_sizes(const uint32_t *spirv, size_t words, kiln_program_interface *iface);
/* Writes a constant's value (bits as kiln_spec_constant_info holds them)
 * as its type reads: "true", "-5", "0.5", "0x3c00 (float16 bits)". */
void prog_spec_value_text(kiln_scalar_type type, uint64_t bits, char *buf, size_t cap);
/* The bytes of a constant's value in a VkSpecializationInfo (bool: 4,
 * VkBool32). */
uint32_t prog_spec_size(kiln_scalar_type type);

/* A loop whose iteration count is not a constant within a device's loop
 * budget (loops.c): its place (the ordinal-th OpLoopMerge of the module,
 * 1-based, in `function`), and its constant bound where it has one past
 * the budget (0: not a constant). */
struct prog_loop {
    uint32_t ordinal;
    uint64_t bound;
    char function[64];
};
/* Up to cap of the module's loops that may run past budget iterations
 * (loops.c says how they are judged), into out; *loops: every loop it
 * has. A module it cannot read gives what it read so far. */
uint32_t prog_loops_unbounded(const uint32_t *spirv, size_t words, uint32_t budget, struct prog_loop *out,
                              uint32_t cap, uint32_t *loops);

/* Bytes of Workgroup (`shared`) memory a module declares: the sum of its
 * Workgroup variables' sizes, computed with explicit type sizes (scalars
 * by width, bool 4, vectors, matrices and arrays by count, structs by the sum
 * of their members; array lengths from specialization constants at their
 * defaults, also through OpSpecConstantOp arithmetic), saturating at
 * UINT64_MAX. KILN_ERR_INVALID for a malformed module. */
kiln_result prog_shared_bytes(const uint32_t *spirv, size_t words, uint64_t *out);
/* The same with specialization constants set: an array length made from a
 * constant (OpSpecConstant, or an OpSpecConstantOp of integer arithmetic
 * over constants) counts at the value the constant runs with, the set
 * ones from iface (entries with set = 1; NULL: none), the others at their
 * defaults. */
kiln_result prog_shared_bytes_set(const uint32_t *spirv, size_t words, const kiln_program_interface *iface,
                                  uint64_t *out);
/* Whether a device can run a program: workgroup size (each dimension and the
 * product), shared memory, push-constant bytes, and storage, uniform and
 * total buffer counts per stage. KILN_ERR_LIMIT names the first limit
 * exceeded, the value and the device's limit. The module's shared memory
 * is counted with the specialization constants iface sets
 * (prog_shared_bytes_set), and the workgroup size is iface's, theirs. */
kiln_result prog_check_limits(const uint32_t *spirv, size_t words, const kiln_program_interface *iface,
                              const kiln_caps *caps);
/* The same checks with the module's shared memory already counted
 * (prog_shared_bytes): the compile service counts it once, when a front end
 * ends, and checks every back end made from that SPIR-V against the count. */
kiln_result prog_check_limits_shared(const kiln_program_interface *iface, uint64_t shared_bytes,
                                     const kiln_caps *caps);

/* spirv_in.c: whether a device can run a module, from the module alone:
 * its SPIR-V version within what the device's Vulkan version takes, each
 * capability whose feature kiln knows on the device (kiln_caps'
 * shader_features, subgroup_ops, storage image formats), each SPIR-V
 * extension one the device's core Vulkan holds. KILN_ERR_LIMIT naming
 * the module (name), the capability or extension and the feature it
 * needs; KILN_ERR_INVALID for a malformed module. */
kiln_result prog_check_device(const char *name, const uint32_t *spirv, size_t words, const kiln_caps *caps);

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

/* One baked word of a module's push-constant block: its byte offset (a
 * multiple of 4) and its value. */
struct prog_push_word {
    uint32_t offset;
    uint32_t value;
};
/* What prog_push_bake did with the loads from push-constant memory. */
struct prog_push_bake_counts {
    uint32_t baked;   /* loads replaced by a constant */
    uint32_t kept;    /* loads left: a struct or array, a dynamic index, bytes not all baked */
};
/* push_bake.c: bakes the words `baked` (count of them, borrowed; any
 * order, each offset once) into the module `in` (borrowed): each OpLoad of
 * a scalar, vector or matrix of 8- to 64-bit ints or floats from the
 * PushConstant block, through OpAccessChain / OpInBoundsAccessChain (or
 * chains of them) with OpConstant indices, whose every byte lies in baked
 * words, becomes that value: a new constant before the first function,
 * taken by an OpCopyObject with the load's result id (by a conversion from
 * a 32-bit constant when the module has only the 8/16-bit storage
 * capabilities); see the file's comment. The variable, its types and
 * decorations stay, and the output is valid wherever the input is.
 * Returns 0 with *out (mem_alloc'd, the caller frees it) the baked module;
 * 1 when no load could be baked (*out NULL: keep the input); -1 for a
 * malformed module (a truncated instruction, an id past the bound, an id
 * defined twice, a cycle of access chains) or baked words that are not
 * 4-aligned or given twice, -2 out of host memory: why says why in both
 * cases. *counts (may be NULL) is filled on 0 and 1. Thread-safe. */
int prog_push_bake(const uint32_t *in, size_t words, const struct prog_push_word *baked, uint32_t count,
                   uint32_t **out, size_t *out_words, struct prog_push_bake_counts *counts, char *why,
                   size_t why_cap);

/* The first line of a compile log that says "error", for one-line messages. */
void prog_log_first_error(const char *log, char *buf, size_t cap);

#endif
