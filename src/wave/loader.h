/* SPDX-License-Identifier: MIT */
/*
 * loader: AMDHSA code objects (ELF64, EM_AMDGPU) in, kernels out.
 *
 * A code object is what `clang -x cl -target amdgcn-amd-amdhsa -mcpu=gfx900
 * -c` writes (relocatable: kiln lays its sections out and applies the
 * relocations) or what `ld.lld -shared` makes of it (linked: its sections
 * already have addresses). Either way the result is one image: the bytes
 * of every allocated section at the address the loader gave it, image
 * address 0 first, so code that computes addresses of its own constants
 * (s_getpc_b64 and a relocated offset) finds them at the same distance in
 * the image as on hardware. A caller maps the image at some guest address;
 * image addresses are offsets from it.
 *
 * Accepted targets: the gfx9 processors that share gfx900's instruction
 * set, wave64 register layout and kernel descriptor: gfx900, gfx902,
 * gfx904, gfx906, gfx909 and gfx90c (the e_flags machine field). gfx908
 * and gfx90a (accumulation registers, packed work-item ids, another VGPR
 * granule) and every other generation are refused by name. Code object
 * versions 3, 4 and 5 (ELF ABI versions 1, 2 and 3; clang 14 writes 4).
 *
 * For each kernel (a symbol NAME whose NAME.kd descriptor and metadata
 * entry exist): its code's image address and size, the 64-byte kernel
 * descriptor decoded (the initial SGPR and VGPR setup it asks for, register
 * counts, LDS and scratch sizes), and its arguments as the metadata note
 * lists them (MessagePack, parsed here with every read bounds-checked),
 * hidden arguments included. wave_kernarg_fill gives the hidden ones the
 * values AMDGPUUsage documents.
 *
 * Errors are KILN_ERR_INVALID naming what is wrong: the field, the section,
 * the byte offset. Nothing in the object is trusted before it is checked.
 */
#ifndef KILN_WAVE_LOADER_H
#define KILN_WAVE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

#define WAVE_NAME_LEN 128
#define WAVE_MAX_KERNELS 256
#define WAVE_MAX_ARGS 256
/* The largest image kiln lays out (the span of every allocated section). */
#define WAVE_MAX_IMAGE (256u << 20)
/* The guest address at which the image is mapped: absolute relocations
 * (R_AMDGPU_ABS*, R_AMDGPU_RELATIVE64) are resolved against it, and every
 * model maps the image there. */
#define WAVE_IMAGE_BASE 0x0000100000000000ull

/* What an argument is (the metadata's .value_kind). */
enum wave_arg_kind {
    WAVE_ARG_BY_VALUE,
    WAVE_ARG_GLOBAL_BUFFER,
    WAVE_ARG_DYNAMIC_SHARED_POINTER,   /* a __local pointer: an LDS offset the dispatch gives */
    WAVE_ARG_IMAGE,
    WAVE_ARG_SAMPLER,
    WAVE_ARG_PIPE,
    WAVE_ARG_QUEUE,
    /* hidden: filled by kiln, never given by a caller */
    WAVE_ARG_HIDDEN_GLOBAL_OFFSET_X,
    WAVE_ARG_HIDDEN_GLOBAL_OFFSET_Y,
    WAVE_ARG_HIDDEN_GLOBAL_OFFSET_Z,
    WAVE_ARG_HIDDEN_NONE,
    WAVE_ARG_HIDDEN_PRINTF_BUFFER,
    WAVE_ARG_HIDDEN_HOSTCALL_BUFFER,
    WAVE_ARG_HIDDEN_DEFAULT_QUEUE,
    WAVE_ARG_HIDDEN_COMPLETION_ACTION,
    WAVE_ARG_HIDDEN_MULTIGRID_SYNC_ARG,
    WAVE_ARG_HIDDEN_BLOCK_COUNT_X,
    WAVE_ARG_HIDDEN_BLOCK_COUNT_Y,
    WAVE_ARG_HIDDEN_BLOCK_COUNT_Z,
    WAVE_ARG_HIDDEN_GROUP_SIZE_X,
    WAVE_ARG_HIDDEN_GROUP_SIZE_Y,
    WAVE_ARG_HIDDEN_GROUP_SIZE_Z,
    WAVE_ARG_HIDDEN_REMAINDER_X,
    WAVE_ARG_HIDDEN_REMAINDER_Y,
    WAVE_ARG_HIDDEN_REMAINDER_Z,
    WAVE_ARG_HIDDEN_GRID_DIMS,
    WAVE_ARG_HIDDEN_HEAP_V1,
    WAVE_ARG_HIDDEN_DYNAMIC_LDS_SIZE,
    WAVE_ARG_HIDDEN_PRIVATE_BASE,
    WAVE_ARG_HIDDEN_SHARED_BASE,
    WAVE_ARG_HIDDEN_QUEUE_PTR,
    WAVE_ARG_KIND_COUNT
};
/* The metadata's spelling ("global_buffer", "hidden_global_offset_x"). */
const char *wave_arg_kind_name(enum wave_arg_kind k);
static inline bool wave_arg_hidden(enum wave_arg_kind k) { return k >= WAVE_ARG_HIDDEN_GLOBAL_OFFSET_X; }

struct wave_arg {
    char name[WAVE_NAME_LEN];        /* "" when the metadata gives none */
    char type_name[WAVE_NAME_LEN];   /* "float*", "uint"; "" when none */
    enum wave_arg_kind kind;
    uint32_t offset, size;           /* in the kernarg segment; offset + size <= kernarg_size */
    uint32_t address_space;          /* 0 none, 1 global, 3 local, 4 constant (AMDGPU numbering) */
    bool is_const;
};

/* The kernel descriptor's requests, in the order the hardware loads the
 * registers (AMDGPUUsage, "Initial Kernel Execution State"). */
struct wave_setup {
    /* user SGPRs, from s0 up, each present when asked for */
    bool private_segment_buffer;   /* 4 SGPRs */
    bool dispatch_ptr;             /* 2 */
    bool queue_ptr;                /* 2 */
    bool kernarg_segment_ptr;      /* 2 */
    bool dispatch_id;              /* 2 */
    bool flat_scratch_init;        /* 2 */
    bool private_segment_size;     /* 1 */
    uint32_t user_sgpr_count;      /* rsrc2's USER_SGPR_COUNT: where the system SGPRs start */
    /* system SGPRs, from s[user_sgpr_count] up */
    bool workgroup_id[3];
    bool workgroup_info;
    bool private_segment_wave_offset;   /* rsrc2's ENABLE_PRIVATE_SEGMENT */
    /* VGPRs: v0 = x, v1 = y, v2 = z for the first workitem_id_dims */
    uint32_t workitem_id_dims;     /* 1..3 */
};

struct wave_kernel {
    char name[WAVE_NAME_LEN];
    uint64_t code_addr;            /* image address of the first instruction */
    uint64_t code_size;            /* bytes: the symbol's size, else up to the next symbol or section end */
    uint64_t kd_addr;              /* image address of the descriptor */
    /* the descriptor */
    uint32_t group_segment_size;   /* LDS bytes the kernel declares */
    uint32_t private_segment_size; /* scratch bytes per work-item */
    uint32_t kernarg_size;         /* the kernarg segment's bytes (metadata, else the descriptor) */
    uint32_t kernarg_align;
    uint32_t rsrc1, rsrc2, rsrc3;
    uint16_t code_properties;
    uint32_t vgprs, sgprs;         /* allocated, from rsrc1's granulated counts */
    struct wave_setup setup;
    /* the metadata */
    uint32_t reqd_size[3];         /* reqd_work_group_size; 0s when not given */
    uint32_t max_flat_size;        /* 0 when not given */
    uint32_t wavefront_size;       /* 64 */
    uint32_t md_sgpr_count, md_vgpr_count;
    struct wave_arg *args;         /* owned */
    uint32_t arg_count;            /* every argument, hidden ones included */
    uint32_t explicit_count;       /* the explicit ones: args[0..explicit_count) */
};

struct wave_code {
    uint8_t *image;                /* owned; image_size bytes */
    uint64_t image_size;
    bool relocatable;              /* read from a -c object (relocations applied) */
    char target[64];               /* "gfx900" */
    char target_full[128];         /* metadata's amdhsa.target, "" when absent */
    uint32_t code_object_version;  /* 3, 4 or 5 */
    uint64_t text_addr, text_size; /* the executable section(s): their span in the image */
    struct wave_kernel *kernels;   /* owned */
    uint32_t kernel_count;
};

/* Loads the code object in data[0..len) (borrowed; copied as needed) into
 * *out (caller storage, filled only on success; release it with
 * wave_code_finish). KILN_ERR_INVALID naming what is wrong, or
 * KILN_ERR_NO_MEMORY. */
kiln_result wave_code_load(const void *data, size_t len, struct wave_code *out) __attribute__((warn_unused_result));
void wave_code_finish(struct wave_code *c);
/* The kernel named name, or NULL. */
const struct wave_kernel *wave_code_kernel(const struct wave_code *c, const char *name);
/* The image as dwords in host order (what wave_decode reads): image_size
 * / 4 of them, *nwords set; the caller frees it. NULL out of memory. */
uint32_t *wave_code_words(const struct wave_code *c, size_t *nwords);

/* What a dispatch gives the hidden arguments and the dispatch packet. */
struct wave_dispatch_info {
    uint32_t groups[3];            /* workgroups per axis */
    uint32_t block[3];             /* work-items per workgroup per axis */
    uint32_t dims;                 /* 1..3 */
    uint32_t dynamic_lds;          /* bytes of LDS beyond the kernel's own */
    uint32_t private_base_hi;      /* the high 32 bits of the private (scratch) aperture */
    uint32_t shared_base_hi;       /* the high 32 bits of the shared (LDS) aperture */
};
/* Writes every hidden argument of k into kernarg (kernarg_size bytes) with
 * its documented value: global offsets 0, block counts, group sizes,
 * remainders 0 (kiln's grids are whole groups), dims, the dynamic LDS
 * size, the apertures' high words; buffers kiln does not provide (printf,
 * hostcall, queues, heap, multigrid) 0. */
void wave_kernarg_fill(const struct wave_kernel *k, uint8_t *kernarg, const struct wave_dispatch_info *d);

#endif
