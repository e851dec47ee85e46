/* SPDX-License-Identifier: MIT */
/*
 * kiln_wave.h: libkiln-wave, guest AMD GCN (gfx9) machine code on kiln.
 *
 * A code object (what `clang -target amdgcn-amd-amdhsa -mcpu=gfx900 -c`
 * writes, or `ld.lld -shared` links) is loaded once; its kernels are
 * listed and run at a level: a model of the guest wavefront. Every level
 * reports the same observation (each wave's registers, every lane, and each
 * buffer's written ranges and content; docs/wave.md gives its layout), so
 * two levels' runs of one kernel are compared byte for byte and a
 * disagreement names the wave, register and lane, or the buffer byte.
 *
 * Levels live in one table (kiln_wave_level_get): the reference
 * interpreter ("reference"), the oracle every faster level is judged
 * against, is its first row; the GPU levels ("lane", "wavefront",
 * "subgroup") are rows that are not built yet, and a run at one says so,
 * where a name outside the table is refused as unknown. Before a run a
 * level's analysis says whether it can run a kernel faithfully on a
 * device, or names the instruction and offset that rule it out.
 *
 * Errors: every call returns a kiln_result (kiln.h's codes); the message
 * of the calling thread's last failure is kiln_wave_last_error()'s (this
 * library's own, apart from kiln_last_error()). Nothing in a code object
 * is trusted before it is checked; no input crashes or hangs a run: each
 * run is bounded by budgets of instructions, work and wall-clock time.
 *
 * Threads: a loaded code object may be read and run from several threads
 * at once; a result belongs to one thread at a time.
 */
#ifndef KILN_WAVE_H
#define KILN_WAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_WAVE_API __attribute__((visibility("default")))
#else
#define KILN_WAVE_API
#endif

/* The message of this thread's last failed kiln_wave_* call. */
KILN_WAVE_API const char *kiln_wave_last_error(void);

/* ---- code objects ------------------------------------------------------------------------ */

typedef struct kiln_wave_code kiln_wave_code;

/* Loads the code object in bytes[0..size) (copied as needed; the caller
 * keeps bytes). KILN_ERR_INVALID names what is wrong: the field, the
 * section, the byte offset. */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_code_load(const void *bytes, size_t size, kiln_wave_code **out);
/* NULL is a no-op. */
KILN_WAVE_API void kiln_wave_code_destroy(kiln_wave_code *code);

typedef struct kiln_wave_code_info {
    const char *target;            /* "gfx900" */
    uint32_t code_object_version;  /* 3, 4 or 5 */
    bool relocatable;              /* a -c object (kiln applied its relocations) */
    uint32_t kernel_count;
    uint64_t image_size;           /* bytes of the laid-out image */
} kiln_wave_code_info;
/* Strings live as long as code. */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_code_info_get(const kiln_wave_code *code, kiln_wave_code_info *out);

/* What an argument is (the metadata's .value_kind). */
typedef enum kiln_wave_arg_kind {
    KILN_WAVE_ARG_BY_VALUE = 0,
    KILN_WAVE_ARG_GLOBAL_BUFFER = 1,
    KILN_WAVE_ARG_LOCAL_POINTER = 2,   /* a __local pointer: dynamic LDS */
    KILN_WAVE_ARG_OTHER = 3,           /* images, samplers, pipes, queues: listed, never run */
    KILN_WAVE_ARG_HIDDEN = 4,          /* filled by kiln, never given by a caller */
} kiln_wave_arg_kind;

typedef struct kiln_wave_arg_info {
    const char *name;              /* "" when the metadata gives none */
    const char *type_name;         /* "float*", "uint"; "" when none */
    const char *value_kind;        /* the metadata's spelling: "global_buffer", "hidden_block_count_x" */
    kiln_wave_arg_kind kind;
    uint32_t offset, size;         /* in the kernarg segment */
} kiln_wave_arg_info;

typedef struct kiln_wave_kernel_info {
    const char *name;
    uint64_t code_addr, code_size; /* image address and bytes of its code */
    uint64_t descriptor_addr;      /* image address of its 64-byte kernel descriptor */
    uint32_t vgprs, sgprs;         /* allocated (the descriptor's granules) */
    uint32_t md_vgprs, md_sgprs;   /* used, as the metadata says */
    uint32_t lds_bytes;            /* LDS the kernel declares */
    uint32_t scratch_bytes;        /* scratch per work-item */
    uint32_t kernarg_size;
    uint32_t reqd_size[3];         /* reqd_work_group_size; 0s when not given */
    uint32_t max_flat_size;        /* 0 when not given */
    uint32_t arg_count;            /* every argument, hidden ones last */
    uint32_t explicit_count;       /* the ones a caller gives: args 0..explicit_count-1 */
} kiln_wave_kernel_info;

/* Kernel index (0..kernel_count-1); strings live as long as code. */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_kernel_get(const kiln_wave_code *code, uint32_t index,
                                                             kiln_wave_kernel_info *out);
/* The index of the kernel named name; KILN_ERR_INVALID listing the
 * kernels there are when none is. */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_kernel_find(const kiln_wave_code *code, const char *name,
                                                              uint32_t *index);
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_arg_get(const kiln_wave_code *code, uint32_t kernel, uint32_t arg,
                                                          kiln_wave_arg_info *out);

/* A kernel described for people, in the sections flags asks for, in this
 * order: its initial register setup (KILN_WAVE_DESCRIBE_SETUP), every
 * decoded instruction with its offset and words (KILN_WAVE_DESCRIBE_DISASM),
 * its instruction counts per encoding family (KILN_WAVE_DESCRIBE_COUNTS).
 * *text is NUL-terminated, owned by the caller (kiln_wave_free). A word
 * that does not decode ends the code with a line saying where and why, and
 * the call returns KILN_ERR_INVALID with the text still given. */
#define KILN_WAVE_DESCRIBE_SETUP 1u
#define KILN_WAVE_DESCRIBE_DISASM 2u
#define KILN_WAVE_DESCRIBE_COUNTS 4u
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_kernel_describe(const kiln_wave_code *code, uint32_t kernel,
                                                                  uint32_t flags, char **text);

/* Frees what a kiln_wave_* call gave the caller (text, observations). */
KILN_WAVE_API void kiln_wave_free(void *p);

/* ---- levels ------------------------------------------------------------------------------ */

typedef struct kiln_wave_level_info {
    const char *name;              /* "reference", "lane", "wavefront", "subgroup" */
    const char *summary;           /* one line for people */
    bool built;                    /* false: a row of the table whose level is not built yet */
} kiln_wave_level_info;

/* Rows 0..count-1 of the level table (row 0: the reference interpreter). */
KILN_WAVE_API uint32_t kiln_wave_level_count(void);
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_level_get(uint32_t row, kiln_wave_level_info *out);

/* Whether level can run kernel faithfully on a device with caps (NULL for
 * the levels that need no device). KILN_OK: it can. KILN_ERR_INVALID
 * otherwise, the message saying which of three it is: a name outside the
 * table (listing the table), a row of the table whose level is not built
 * (programs tell it apart by kiln_wave_level_info.built), or a kernel the
 * level cannot run, naming the instruction and its image offset. Level
 * "auto": KILN_OK when some level runs it (kiln_wave_level_choose). */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_level_check(const kiln_wave_code *code, uint32_t kernel,
                                                              const char *level, const kiln_caps *caps);

/* "auto": the level a run at "auto" takes for kernel on a device with caps
 * (NULL: a GPU): the first level whose check passes, cheapest first as
 * bench_wave measures them per kind of device (a GPU: lane, subgroup,
 * wavefront, reference; a CPU device: wavefront, lane, subgroup,
 * reference). *level is the
 * row's name (static); why[0..cap), when not NULL, says the choice for
 * people with each level ruled out before it and the reason (the
 * instruction, its offset and the rule). KILN_ERR_INVALID when no level
 * runs it, every reason in the message. A level pinned by name is never
 * swapped for another: a run at a level that cannot run the kernel fails
 * naming the instruction. */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_level_choose(const kiln_wave_code *code, uint32_t kernel,
                                                               const kiln_caps *caps, const char **level, char *why,
                                                               size_t cap);

/* ---- runs -------------------------------------------------------------------------------- */

typedef enum kiln_wave_value_kind {
    KILN_WAVE_VALUE_BYTES = 0,     /* a by-value argument: bytes[0..size), little-endian */
    KILN_WAVE_VALUE_BUFFER = 1,    /* a global buffer: data[0..size), written in place */
    KILN_WAVE_VALUE_LOCAL = 2,     /* a __local pointer: size bytes of dynamic LDS */
} kiln_wave_value_kind;

/* One explicit argument's value, in the kernel's argument order. */
typedef struct kiln_wave_value {
    kiln_wave_value_kind kind;
    uint8_t bytes[16];
    void *data;                    /* BUFFER: borrowed; must outlive the result */
    uint64_t size;
} kiln_wave_value;

#define KILN_WAVE_DEFAULT_MAX_INSTRUCTIONS 200000000ull
#define KILN_WAVE_DEFAULT_MAX_WORK 500000000ull
#define KILN_WAVE_DEFAULT_MAX_SECONDS 60.0
#define KILN_WAVE_WORK_UNIT_BYTES 1024u   /* memory cleared or moved that counts as one unit of work */
#define KILN_WAVE_MAX_GROUP 1024u         /* work-items per workgroup */

/* A dispatch. Zero is every field's default. */
typedef struct kiln_wave_run_desc {
    const char *level;             /* NULL: "reference"; "auto": the cheapest valid here (kiln_wave_level_choose) */
    uint32_t kernel;               /* its index */
    uint32_t groups[3];            /* workgroups per axis; 0 counts as 1 */
    uint32_t block[3];             /* work-items per group; all 0: reqd_work_group_size, else 64 */
    const kiln_wave_value *args;   /* explicit_count of them; borrowed for the call */
    uint32_t arg_count;
    uint64_t max_instructions;     /* across every wave; 0: the default */
    uint64_t max_work;             /* units: an instruction, or KILN_WAVE_WORK_UNIT_BYTES moved or cleared; 0: the default */
    double max_seconds;            /* wall-clock; 0: the default */
    bool observe;                  /* keep each wave's final registers for kiln_wave_observation */
    /* The context a level that runs on a device runs on (its programs,
     * buffers and schemes are made there, through kiln.h's calls, and
     * destroyed before the run returns); borrowed. Zero: the level makes a
     * context of the default device for the run and destroys it after.
     * The reference, on no device, ignores it. */
    kiln_context context;
} kiln_wave_run_desc;

typedef struct kiln_wave_result kiln_wave_result;

/* Runs the dispatch. Arguments are checked against the kernel's (count,
 * kind, size) first, each refusal naming the argument. On a failure of the
 * run itself the buffers hold what was written before it and *out still
 * holds the counts of what ran (destroy it); the message names the
 * instruction, its offset, the wave and what went wrong; a budget passed
 * is KILN_ERR_LIMIT naming it. */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_run(const kiln_wave_code *code, const kiln_wave_run_desc *desc,
                                                      kiln_wave_result **out);
KILN_WAVE_API void kiln_wave_result_destroy(kiln_wave_result *result);

typedef struct kiln_wave_run_stats {
    const char *level;             /* the level that ran */
    uint64_t instructions;         /* executed, every wave counted */
    uint64_t bytes;                /* memory cleared or moved, as the work budget counts it */
    uint32_t waves;
    /* a run at "auto": the level chosen and, for each cheaper level ruled
     * out, its reason (the instruction and its offset), for people;
     * NULL when the run named its level. The result's storage. */
    const char *choice;
} kiln_wave_run_stats;
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_run_stats_get(const kiln_wave_result *result,
                                                                kiln_wave_run_stats *out);

/* The observation of a run made with desc.observe (its buffers read now):
 * the binary layout of docs/wave.md, or its JSON form. *bytes is the
 * caller's (kiln_wave_free). */
typedef enum kiln_wave_form { KILN_WAVE_FORM_BINARY = 0, KILN_WAVE_FORM_JSON = 1 } kiln_wave_form;
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_observation(const kiln_wave_result *result, kiln_wave_form form,
                                                              void **bytes, size_t *size);

/* Compares two binary observations. KILN_OK with *same set: true when
 * every wave's registers and every buffer's content and written ranges
 * agree (instruction counts, which levels may differ in, are said in why
 * when they differ, never judged); false with the first difference in
 * why[0..cap): the wave, its group and index, the register and the lane,
 * or the buffer, its byte and both values, or the shapes that differ.
 * KILN_ERR_INVALID when either is not a whole observation of this version
 * (the message says which and why). */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_compare(const void *a, size_t a_size, const void *b,
                                                          size_t b_size, bool *same, char *why, size_t cap);

/* ---- diff ------------------------------------------------------------------------------- */

/* What kiln_wave_diff found. */
typedef struct kiln_wave_diff_report {
    bool same;                     /* the two runs' observations agree (the rest is empty) */
    char first[512];               /* the first difference of the whole runs, as kiln_wave_compare names it */
    bool bisected;                 /* an instruction was found after which the two first differ */
    uint64_t offset;               /* its image offset */
    char instruction[128];         /* its disassembly */
    uint32_t group[3], wave;       /* the wave it was run by */
    uint64_t step;                 /* which instruction of that wave's run it was (1: the first it ran) */
    uint64_t execution;            /* which execution of that instruction (1: the first; more inside loops) */
    char at_step[512];             /* the first difference once every wave has run `step` instructions;
                                    * not bisected, why not (a level that cannot stop a wave) */
    uint32_t runs;                 /* runs made, both levels counted */
} kiln_wave_diff_report;

/* Runs desc's kernel at desc->level (NULL: the reference) and at level_b,
 * both observed, and compares them; where they differ, bisects to the
 * first instruction after which they differ: both levels run again with
 * every wave stopped after its first N instructions, N searched for the
 * least that differs. Two runs at one level are refused (they would prove
 * nothing). The buffers hold what they held before the call when it
 * returns (each run starts from them). KILN_OK with *out filled whether
 * the two agree or not; a run's own failure is its error. */
KILN_WAVE_API KILN_NODISCARD kiln_result kiln_wave_diff(const kiln_wave_code *code, const kiln_wave_run_desc *desc,
                                                       const char *level_b, kiln_wave_diff_report *out);

#ifdef __cplusplus
}
#endif

#endif
