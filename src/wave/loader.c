/* SPDX-License-Identifier: MIT */
/*
 * loader.c: AMDHSA code objects into a wave_code (see loader.h).
 *
 * The ELF container is read with libelf (gelf_* accessors), but nothing
 * libelf returns is used before it is checked here against the object's
 * own size: section extents, entry sizes, string and symbol indices,
 * relocation sites. Then, in order:
 *   1. layout: every SHF_ALLOC section gets an image address (a relocatable
 *      object's in section order at its alignment; a linked one's its
 *      sh_addr), and its bytes are copied there (SHT_NOBITS stays zero);
 *   2. relocation: each RELA section that targets an allocated section (a
 *      linked object's .rela.dyn: any image address) is applied in the
 *      image, absolute ones against WAVE_IMAGE_BASE;
 *   3. the metadata note (NT_AMDGPU_METADATA, owner "AMDGPU") is parsed:
 *      MessagePack read by a cursor whose every read checks the bytes are
 *      there, nesting bounded, counts checked against what remains;
 *   4. each kernel the metadata lists is joined with its NAME.kd symbol
 *      and descriptor and its code.
 */
#define _POSIX_C_SOURCE 200809L
#include "wave/loader.h"
#include "wave/loader_private.h"

#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
#define ELFOSABI_AMDGPU_HSA 64
#define NT_AMDGPU_METADATA 32
#define KD_SIZE 64

/* ---- errors ---------------------------------------------------------------------- */

struct ld {
    const uint8_t *file;
    size_t file_len;
    Elf *elf;
    bool linked;
    uint64_t *sec_addr;   /* image address of each section (UINT64_MAX: not allocated) */
    size_t nsec;
    struct wave_code *code;
    /* the symbol table */
    Elf_Data *sym_data;
    size_t sym_count;
    size_t sym_strndx;
};

kiln_result ld_bad(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return KILN_RAISE(KILN_ERR_INVALID, "code object: %s", msg);
}

/* ---- targets ---------------------------------------------------------------------- */

static const struct {
    uint32_t mach;
    const char *name;
    bool accepted;
} machs[] = {
    {0x2c, "gfx900", true},  {0x2d, "gfx902", true},  {0x2e, "gfx904", true},  {0x2f, "gfx906", true},
    {0x30, "gfx908", false}, {0x31, "gfx909", true},  {0x32, "gfx90c", true},  {0x3f, "gfx90a", false},
    {0x40, "gfx940", false}, {0x33, "gfx1010", false}, {0x34, "gfx1011", false}, {0x35, "gfx1012", false},
    {0x36, "gfx1030", false}, {0x28, "gfx801", false}, {0x29, "gfx802", false}, {0x2a, "gfx803", false},
    {0x2b, "gfx810", false},
};

/* ---- argument kinds ---------------------------------------------------------------- */

const char *const wave_arg_kind_names[WAVE_ARG_KIND_COUNT] = {
    [WAVE_ARG_BY_VALUE] = "by_value",
    [WAVE_ARG_GLOBAL_BUFFER] = "global_buffer",
    [WAVE_ARG_DYNAMIC_SHARED_POINTER] = "dynamic_shared_pointer",
    [WAVE_ARG_IMAGE] = "image",
    [WAVE_ARG_SAMPLER] = "sampler",
    [WAVE_ARG_PIPE] = "pipe",
    [WAVE_ARG_QUEUE] = "queue",
    [WAVE_ARG_HIDDEN_GLOBAL_OFFSET_X] = "hidden_global_offset_x",
    [WAVE_ARG_HIDDEN_GLOBAL_OFFSET_Y] = "hidden_global_offset_y",
    [WAVE_ARG_HIDDEN_GLOBAL_OFFSET_Z] = "hidden_global_offset_z",
    [WAVE_ARG_HIDDEN_NONE] = "hidden_none",
    [WAVE_ARG_HIDDEN_PRINTF_BUFFER] = "hidden_printf_buffer",
    [WAVE_ARG_HIDDEN_HOSTCALL_BUFFER] = "hidden_hostcall_buffer",
    [WAVE_ARG_HIDDEN_DEFAULT_QUEUE] = "hidden_default_queue",
    [WAVE_ARG_HIDDEN_COMPLETION_ACTION] = "hidden_completion_action",
    [WAVE_ARG_HIDDEN_MULTIGRID_SYNC_ARG] = "hidden_multigrid_sync_arg",
    [WAVE_ARG_HIDDEN_BLOCK_COUNT_X] = "hidden_block_count_x",
    [WAVE_ARG_HIDDEN_BLOCK_COUNT_Y] = "hidden_block_count_y",
    [WAVE_ARG_HIDDEN_BLOCK_COUNT_Z] = "hidden_block_count_z",
    [WAVE_ARG_HIDDEN_GROUP_SIZE_X] = "hidden_group_size_x",
    [WAVE_ARG_HIDDEN_GROUP_SIZE_Y] = "hidden_group_size_y",
    [WAVE_ARG_HIDDEN_GROUP_SIZE_Z] = "hidden_group_size_z",
    [WAVE_ARG_HIDDEN_REMAINDER_X] = "hidden_remainder_x",
    [WAVE_ARG_HIDDEN_REMAINDER_Y] = "hidden_remainder_y",
    [WAVE_ARG_HIDDEN_REMAINDER_Z] = "hidden_remainder_z",
    [WAVE_ARG_HIDDEN_GRID_DIMS] = "hidden_grid_dims",
    [WAVE_ARG_HIDDEN_HEAP_V1] = "hidden_heap_v1",
    [WAVE_ARG_HIDDEN_DYNAMIC_LDS_SIZE] = "hidden_dynamic_lds_size",
    [WAVE_ARG_HIDDEN_PRIVATE_BASE] = "hidden_private_base",
    [WAVE_ARG_HIDDEN_SHARED_BASE] = "hidden_shared_base",
    [WAVE_ARG_HIDDEN_QUEUE_PTR] = "hidden_queue_ptr",
};

const char *wave_arg_kind_name(enum wave_arg_kind k)
{
    return (unsigned)k < WAVE_ARG_KIND_COUNT ? wave_arg_kind_names[k] : "?";
}

/* ---- ELF ------------------------------------------------------------------------------ */

static uint64_t rd(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void wr(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A section's header, with its file extent checked. */
static kiln_result section(struct ld *l, size_t i, Elf_Scn **scn, GElf_Shdr *sh)
{
    *scn = elf_getscn(l->elf, i);
    if (!*scn || !gelf_getshdr(*scn, sh))
        return ld_bad("section %zu's header cannot be read: %s", i, elf_errmsg(-1));
    if (sh->sh_type != SHT_NOBITS && (sh->sh_offset > l->file_len || sh->sh_size > l->file_len - sh->sh_offset))
        return ld_bad("section %zu's bytes (offset %llu, %llu bytes) run past the file's end (%zu bytes)", i,
                   (unsigned long long)sh->sh_offset, (unsigned long long)sh->sh_size, l->file_len);
    return KILN_OK;
}

/* A section's bytes in the file (checked by section()). */
static const uint8_t *section_bytes(struct ld *l, const GElf_Shdr *sh)
{
    return l->file + sh->sh_offset;
}

static const char *strtab_at(struct ld *l, size_t strndx, size_t off)
{
    Elf_Scn *scn;
    GElf_Shdr sh;
    if (strndx == 0 || strndx >= l->nsec || section(l, strndx, &scn, &sh) != KILN_OK || sh.sh_type != SHT_STRTAB)
        return NULL;
    const char *s = (const char *)section_bytes(l, &sh);
    if (off >= sh.sh_size || !memchr(s + off, 0, sh.sh_size - off))
        return NULL;
    return s + off;
}

/* Lays out the allocated sections and copies their bytes. */
static kiln_result layout(struct ld *l)
{
    uint64_t end = 0;
    for (size_t i = 1; i < l->nsec; i++) {
        Elf_Scn *scn;
        GElf_Shdr sh;
        KILN_TRY(section(l, i, &scn, &sh));
        l->sec_addr[i] = UINT64_MAX;
        if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_size == 0 || sh.sh_type == SHT_NULL)
            continue;
        uint64_t align = sh.sh_addralign ? sh.sh_addralign : 1;
        if (align & (align - 1) || align > 65536)
            return ld_bad("section %zu's alignment %llu is not a power of two up to 65536", i,
                       (unsigned long long)align);
        uint64_t at = l->linked ? sh.sh_addr : (end + align - 1) & ~(align - 1);
        if (at > WAVE_MAX_IMAGE || sh.sh_size > WAVE_MAX_IMAGE - at)
            return ld_bad("section %zu (address 0x%llx, %llu bytes) lies past kiln's image limit of %u bytes", i,
                       (unsigned long long)at, (unsigned long long)sh.sh_size, WAVE_MAX_IMAGE);
        l->sec_addr[i] = at;
        if (at + sh.sh_size > end)
            end = at + sh.sh_size;
    }
    if (end == 0)
        return ld_bad("no allocated section holds anything");
    struct wave_code *c = l->code;
    c->image = mem_calloc(1, end);
    if (!c->image)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "code object: an image of %llu bytes", (unsigned long long)end);
    c->image_size = end;
    uint64_t text_lo = UINT64_MAX, text_hi = 0;
    for (size_t i = 1; i < l->nsec; i++) {
        if (l->sec_addr[i] == UINT64_MAX)
            continue;
        Elf_Scn *scn;
        GElf_Shdr sh;
        KILN_TRY(section(l, i, &scn, &sh));
        if (sh.sh_type != SHT_NOBITS)
            memcpy(c->image + l->sec_addr[i], section_bytes(l, &sh), sh.sh_size);
        if (sh.sh_flags & SHF_EXECINSTR) {
            text_lo = KILN_MIN(text_lo, l->sec_addr[i]);
            text_hi = KILN_MAX(text_hi, l->sec_addr[i] + sh.sh_size);
        }
    }
    if (text_lo == UINT64_MAX)
        return ld_bad("no executable section");
    c->text_addr = text_lo;
    c->text_size = text_hi - text_lo;
    return KILN_OK;
}

/* The symbol table: .symtab, else .dynsym. */
static kiln_result find_symbols(struct ld *l)
{
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 1; i < l->nsec; i++) {
            Elf_Scn *scn;
            GElf_Shdr sh;
            KILN_TRY(section(l, i, &scn, &sh));
            if (sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM))
                continue;
            if (sh.sh_entsize != sizeof(Elf64_Sym))
                return ld_bad("symbol table (section %zu) has entries of %llu bytes, not %zu", i,
                           (unsigned long long)sh.sh_entsize, sizeof(Elf64_Sym));
            l->sym_data = elf_getdata(scn, NULL);
            if (!l->sym_data || l->sym_data->d_size < sh.sh_size)
                return ld_bad("symbol table (section %zu) cannot be read: %s", i, elf_errmsg(-1));
            l->sym_count = sh.sh_size / sizeof(Elf64_Sym);
            l->sym_strndx = sh.sh_link;
            return KILN_OK;
        }
    return ld_bad("no symbol table");
}

/* Symbol i's image address, checked; name set to its name or NULL. */
static kiln_result symbol(struct ld *l, size_t i, GElf_Sym *s, const char **name, uint64_t *addr)
{
    if (i >= l->sym_count || !gelf_getsym(l->sym_data, (int)i, s))
        return ld_bad("symbol %zu is past the symbol table's %zu", i, l->sym_count);
    *name = strtab_at(l, l->sym_strndx, s->st_name);
    *addr = UINT64_MAX;
    if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE) {
        if (s->st_shndx == SHN_ABS)
            *addr = s->st_value;
        return KILN_OK;
    }
    if (s->st_shndx >= l->nsec)
        return ld_bad("symbol %zu ('%s') names section %u of %zu", i, *name ? *name : "?", s->st_shndx, l->nsec);
    if (l->linked) {
        *addr = s->st_value;
    } else {
        uint64_t base = l->sec_addr[s->st_shndx];
        if (base == UINT64_MAX)
            return KILN_OK;   /* in a section that is not loaded */
        *addr = base + s->st_value;
    }
    if (*addr > l->code->image_size)
        return ld_bad("symbol %zu ('%s') at 0x%llx lies past the image's %llu bytes", i, *name ? *name : "?",
                   (unsigned long long)*addr, (unsigned long long)l->code->image_size);
    return KILN_OK;
}

static kiln_result find_symbol(struct ld *l, const char *want, GElf_Sym *s, uint64_t *addr)
{
    for (size_t i = 1; i < l->sym_count; i++) {
        const char *name = NULL;
        KILN_TRY(symbol(l, i, s, &name, addr));
        if (name && !strcmp(name, want) && *addr != UINT64_MAX)
            return KILN_OK;
    }
    return ld_bad("no symbol '%s'", want);
}

static kiln_result relocate(struct ld *l)
{
    for (size_t i = 1; i < l->nsec; i++) {
        Elf_Scn *scn;
        GElf_Shdr sh;
        KILN_TRY(section(l, i, &scn, &sh));
        if (sh.sh_type == SHT_REL)
            return ld_bad("section %zu holds REL relocations: AMDGPU objects use RELA", i);
        if (sh.sh_type != SHT_RELA)
            continue;
        uint64_t target_base = 0;
        if (!l->linked) {
            if (sh.sh_info == 0 || sh.sh_info >= l->nsec)
                return ld_bad("relocation section %zu targets section %u of %zu", i, sh.sh_info, l->nsec);
            target_base = l->sec_addr[sh.sh_info];
            if (target_base == UINT64_MAX)
                continue;   /* relocates a section that is not loaded (debug info) */
        }
        if (sh.sh_entsize != sizeof(Elf64_Rela))
            return ld_bad("relocation section %zu has entries of %llu bytes, not %zu", i,
                       (unsigned long long)sh.sh_entsize, sizeof(Elf64_Rela));
        Elf_Data *d = elf_getdata(scn, NULL);
        if (!d || d->d_size < sh.sh_size)
            return ld_bad("relocation section %zu cannot be read: %s", i, elf_errmsg(-1));
        size_t count = sh.sh_size / sizeof(Elf64_Rela);
        if (count && !l->sym_data && sh.sh_link != 0)
            return ld_bad("relocation section %zu without a symbol table", i);
        for (size_t r = 0; r < count; r++) {
            GElf_Rela ra;
            if (!gelf_getrela(d, (int)r, &ra))
                return ld_bad("relocation %zu of section %zu cannot be read", r, i);
            uint32_t type = (uint32_t)GELF_R_TYPE(ra.r_info);
            size_t symi = GELF_R_SYM(ra.r_info);
            uint64_t S = 0;
            if (type == 0)
                continue;
            if (symi) {
                GElf_Sym s;
                const char *name = NULL;
                uint64_t a = UINT64_MAX;
                KILN_TRY(symbol(l, symi, &s, &name, &a));
                if (a == UINT64_MAX)
                    return ld_bad("relocation %zu of section %zu refers to '%s', which the object does not define", r,
                               i, name ? name : "?");
                S = WAVE_IMAGE_BASE + a;
            }
            uint64_t site = target_base + ra.r_offset;
            uint64_t A = (uint64_t)ra.r_addend, P = WAVE_IMAGE_BASE + site, v;
            size_t width;
            switch (type) {
            case 1: v = (S + A) & 0xffffffffu, width = 4; break;           /* R_AMDGPU_ABS32_LO */
            case 2: v = (S + A) >> 32, width = 4; break;                   /* R_AMDGPU_ABS32_HI */
            case 3: v = S + A, width = 8; break;                           /* R_AMDGPU_ABS64 */
            case 4: v = S + A - P, width = 4; break;                       /* R_AMDGPU_REL32 */
            case 5: v = S + A - P, width = 8; break;                       /* R_AMDGPU_REL64 */
            case 6: v = S + A, width = 4; break;                           /* R_AMDGPU_ABS32 */
            case 10: v = (S + A - P) & 0xffffffffu, width = 4; break;      /* R_AMDGPU_REL32_LO */
            case 11: v = (S + A - P) >> 32, width = 4; break;              /* R_AMDGPU_REL32_HI */
            case 13: v = WAVE_IMAGE_BASE + A, width = 8; break;            /* R_AMDGPU_RELATIVE64 */
            case 7: case 8: case 9:
                return ld_bad("relocation %zu of section %zu is a GOT relocation (type %u): kiln's loader makes no "
                           "global offset table",
                           r, i, type);
            default:
                return ld_bad("relocation %zu of section %zu has type %u, which kiln does not know", r, i, type);
            }
            if (site > l->code->image_size || width > l->code->image_size - site)
                return ld_bad("relocation %zu of section %zu writes at 0x%llx, past the image's %llu bytes", r, i,
                           (unsigned long long)site, (unsigned long long)l->code->image_size);
            wr(l->code->image + site, v, width);
        }
    }
    return KILN_OK;
}

/* The metadata note's descriptor bytes, from any SHT_NOTE section. */
static kiln_result find_metadata(struct ld *l, const uint8_t **md, size_t *md_len)
{
    for (size_t i = 1; i < l->nsec; i++) {
        Elf_Scn *scn;
        GElf_Shdr sh;
        KILN_TRY(section(l, i, &scn, &sh));
        if (sh.sh_type != SHT_NOTE)
            continue;
        const uint8_t *p = section_bytes(l, &sh);
        size_t n = sh.sh_size, at = 0;
        while (n - at >= 12) {
            uint64_t namesz = rd(p + at, 4), descsz = rd(p + at + 4, 4), type = rd(p + at + 8, 4);
            uint64_t name_at = at + 12, desc_at = name_at + ((namesz + 3) & ~3ull);
            if (desc_at > n || descsz > n - desc_at)
                return ld_bad("note at byte %zu of section %zu runs past the section's %zu bytes", at, i, n);
            if (type == NT_AMDGPU_METADATA && namesz == 7 && !memcmp(p + name_at, "AMDGPU", 7)) {
                *md = p + desc_at;
                *md_len = descsz;
                return KILN_OK;
            }
            at = desc_at + ((descsz + 3) & ~3ull);
            if (at > n)
                break;
        }
    }
    return ld_bad("no AMDGPU metadata note (NT_AMDGPU_METADATA): code object v3 or later is needed");
}

/* The descriptor at kd_addr into k; code_addr from its entry offset. */
static kiln_result read_descriptor(struct ld *l, struct wave_kernel *k)
{
    const struct wave_code *c = l->code;
    if (k->kd_addr > c->image_size || KD_SIZE > c->image_size - k->kd_addr)
        return ld_bad("kernel '%s': its descriptor at 0x%llx runs past the image's %llu bytes", k->name,
                   (unsigned long long)k->kd_addr, (unsigned long long)c->image_size);
    const uint8_t *kd = c->image + k->kd_addr;
    k->group_segment_size = (uint32_t)rd(kd + 0, 4);
    k->private_segment_size = (uint32_t)rd(kd + 4, 4);
    uint32_t kd_kernarg = (uint32_t)rd(kd + 8, 4);
    int64_t entry = (int64_t)rd(kd + 16, 8);
    k->rsrc3 = (uint32_t)rd(kd + 44, 4);
    k->rsrc1 = (uint32_t)rd(kd + 48, 4);
    k->rsrc2 = (uint32_t)rd(kd + 52, 4);
    k->code_properties = (uint16_t)rd(kd + 56, 2);
    uint64_t code = k->kd_addr + (uint64_t)entry;
    if (code < c->text_addr || code >= c->text_addr + c->text_size || (code & 3))
        return ld_bad("kernel '%s': its descriptor's entry offset %lld leads to 0x%llx, not an instruction of the "
                   "executable section (0x%llx..0x%llx)",
                   k->name, (long long)entry, (unsigned long long)code, (unsigned long long)c->text_addr,
                   (unsigned long long)(c->text_addr + c->text_size));
    k->code_addr = code;
    if (k->kernarg_size == 0)
        k->kernarg_size = kd_kernarg;
    if (k->kernarg_size > (1u << 20))
        return ld_bad("kernel '%s': a kernarg segment of %u bytes, more than kiln's limit of 1 MiB", k->name,
                   k->kernarg_size);
    if (k->group_segment_size > 65536)
        return ld_bad("kernel '%s' declares %u bytes of LDS, more than gfx9's 65536", k->name, k->group_segment_size);
    if (k->private_segment_size > (1u << 20))
        return ld_bad("kernel '%s' declares %u bytes of scratch per work-item, more than kiln's limit of 1 MiB",
                   k->name, k->private_segment_size);
    k->vgprs = ((k->rsrc1 & 0x3f) + 1) * 4;
    k->sgprs = (((k->rsrc1 >> 6) & 0xf) + 1) * 8;
    struct wave_setup *s = &k->setup;
    uint16_t p = k->code_properties;
    s->private_segment_buffer = p & 1;
    s->dispatch_ptr = p & 2;
    s->queue_ptr = p & 4;
    s->kernarg_segment_ptr = p & 8;
    s->dispatch_id = p & 16;
    s->flat_scratch_init = p & 32;
    s->private_segment_size = p & 64;
    if (p & (1u << 10))
        return ld_bad("kernel '%s': its descriptor asks for wave32 (kernel_code_properties bit 10)", k->name);
    s->user_sgpr_count = (k->rsrc2 >> 1) & 0x1f;
    s->private_segment_wave_offset = k->rsrc2 & 1;
    s->workgroup_id[0] = k->rsrc2 & (1u << 7);
    s->workgroup_id[1] = k->rsrc2 & (1u << 8);
    s->workgroup_id[2] = k->rsrc2 & (1u << 9);
    s->workgroup_info = k->rsrc2 & (1u << 10);
    uint32_t tid = (k->rsrc2 >> 11) & 3;
    if (tid == 3)
        return ld_bad("kernel '%s': its descriptor's ENABLE_VGPR_WORKITEM_ID is 3, which is reserved", k->name);
    s->workitem_id_dims = tid + 1;
    uint32_t user = 4 * s->private_segment_buffer + 2 * s->dispatch_ptr + 2 * s->queue_ptr +
                    2 * s->kernarg_segment_ptr + 2 * s->dispatch_id + 2 * s->flat_scratch_init +
                    s->private_segment_size;
    if (user > s->user_sgpr_count)
        return ld_bad("kernel '%s': its descriptor enables %u user SGPRs but USER_SGPR_COUNT is %u", k->name, user,
                   s->user_sgpr_count);
    return KILN_OK;
}

/* The code's extent: the function symbol at code_addr, else to the end of
 * the executable span. */
static kiln_result code_extent(struct ld *l, struct wave_kernel *k)
{
    const struct wave_code *c = l->code;
    uint64_t end = c->text_addr + c->text_size;
    for (size_t i = 1; i < l->sym_count; i++) {
        GElf_Sym s;
        const char *name = NULL;
        uint64_t a = UINT64_MAX;
        KILN_TRY(symbol(l, i, &s, &name, &a));
        if (a == k->code_addr && GELF_ST_TYPE(s.st_info) == STT_FUNC && s.st_size) {
            if (s.st_size > end - a)
                return ld_bad("kernel '%s': its code symbol's size %llu runs past the executable section", k->name,
                           (unsigned long long)s.st_size);
            k->code_size = s.st_size;
            return KILN_OK;
        }
    }
    k->code_size = end - k->code_addr;
    return KILN_OK;
}

static kiln_result check_args(struct wave_kernel *k)
{
    k->explicit_count = 0;
    bool hidden_seen = false;
    for (uint32_t a = 0; a < k->arg_count; a++) {
        const struct wave_arg *g = &k->args[a];
        if ((uint64_t)g->offset + g->size > k->kernarg_size)
            return ld_bad("kernel '%s': argument %u ('%s', offset %u, %u bytes) lies past the kernarg segment's %u "
                       "bytes",
                       k->name, a, g->name, g->offset, g->size, k->kernarg_size);
        if (wave_arg_hidden(g->kind)) {
            hidden_seen = true;
            continue;
        }
        if (hidden_seen)
            return ld_bad("kernel '%s': explicit argument %u ('%s') follows a hidden one", k->name, a, g->name);
        if ((g->kind == WAVE_ARG_GLOBAL_BUFFER && g->size != 8) ||
            (g->kind == WAVE_ARG_DYNAMIC_SHARED_POINTER && g->size != 4))
            return ld_bad("kernel '%s': argument %u ('%s') is a %s of %u bytes", k->name, a, g->name,
                       wave_arg_kind_names[g->kind], g->size);
        k->explicit_count++;
    }
    return KILN_OK;
}

static kiln_result load(struct ld *l, const uint8_t *data, size_t len)
{
    struct wave_code *c = l->code;
    if (len < sizeof(Elf64_Ehdr))
        return ld_bad("%zu bytes are too few for an ELF64 header (64)", len);
    if (memcmp(data, ELFMAG, SELFMAG))
        return ld_bad("not an ELF file (no \\x7fELF magic)");
    if (data[EI_CLASS] != ELFCLASS64 || data[EI_DATA] != ELFDATA2LSB)
        return ld_bad("not a little-endian ELF64 object (class %u, data %u)", data[EI_CLASS], data[EI_DATA]);
    if (elf_version(EV_CURRENT) == EV_NONE)
        return ld_bad("libelf: %s", elf_errmsg(-1));
    l->elf = elf_memory((char *)l->file, len);
    if (!l->elf || elf_kind(l->elf) != ELF_K_ELF)
        return ld_bad("libelf cannot read it: %s", elf_errmsg(-1));
    GElf_Ehdr eh;
    if (!gelf_getehdr(l->elf, &eh))
        return ld_bad("ELF header: %s", elf_errmsg(-1));
    if (eh.e_machine != EM_AMDGPU)
        return ld_bad("e_machine is %u, not EM_AMDGPU (224)", eh.e_machine);
    if (data[EI_OSABI] != ELFOSABI_AMDGPU_HSA)
        return ld_bad("EI_OSABI is %u, not ELFOSABI_AMDGPU_HSA (64)", data[EI_OSABI]);
    uint8_t abi = data[EI_ABIVERSION];
    if (abi < 1 || abi > 3)
        return ld_bad("EI_ABIVERSION is %u: kiln reads code object v3, v4 and v5 (1, 2, 3)", abi);
    if (eh.e_type == ET_REL)
        l->linked = false;
    else if (eh.e_type == ET_DYN || eh.e_type == ET_EXEC)
        l->linked = true;
    else
        return ld_bad("e_type %u is neither relocatable nor linked", eh.e_type);
    c->relocatable = !l->linked;
    uint32_t mach = eh.e_flags & 0xff;
    const char *mname = NULL;
    bool ok = false;
    for (size_t i = 0; i < KILN_ARRAY_LEN(machs); i++)
        if (machs[i].mach == mach)
            mname = machs[i].name, ok = machs[i].accepted;
    if (!mname)
        return ld_bad("e_flags machine 0x%02x is no gfx9 processor kiln knows (it accepts gfx900, gfx902, gfx904, gfx906, "
                   "gfx909, gfx90c)",
                   mach);
    if (!ok)
        return ld_bad("the target is %s: kiln accepts gfx900, gfx902, gfx904, gfx906, gfx909 and gfx90c", mname);
    snprintf(c->target, sizeof c->target, "%s", mname);
    if (elf_getshdrnum(l->elf, &l->nsec) != 0 || l->nsec < 2)
        return ld_bad("no section headers (%s)", elf_errmsg(-1));
    if (l->nsec > 4096)
        return ld_bad("%zu sections, more than kiln's limit of 4096", l->nsec);
    l->sec_addr = mem_calloc(l->nsec, sizeof *l->sec_addr);
    if (!l->sec_addr)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "code object: section table");
    KILN_TRY(layout(l));
    KILN_TRY(find_symbols(l));
    KILN_TRY(relocate(l));
    const uint8_t *md = NULL;
    size_t md_len = 0;
    KILN_TRY(find_metadata(l, &md, &md_len));
    struct md_kernel *mk = NULL;
    uint32_t nk = 0;
    KILN_TRY(ld_parse_metadata(md, md_len, c, &mk, &nk));
    if (c->code_object_version != (uint32_t)abi + 2) {
        for (uint32_t i = 0; i < nk; i++)
            free(mk[i].k.args);
        free(mk);
        return ld_bad("EI_ABIVERSION %u says code object v%u, the metadata v%u", abi, abi + 2, c->code_object_version);
    }
    c->kernels = mem_calloc(nk ? nk : 1, sizeof *c->kernels);
    if (!c->kernels) {
        for (uint32_t i = 0; i < nk; i++)
            free(mk[i].k.args);
        free(mk);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "code object: kernels");
    }
    kiln_result r = KILN_OK;
    for (uint32_t i = 0; i < nk; i++) {
        c->kernels[i] = mk[i].k;   /* the args move over */
        c->kernel_count = i + 1;
        struct wave_kernel *k = &c->kernels[i];
        for (uint32_t j = 0; j < i && r == KILN_OK; j++)
            if (!strcmp(c->kernels[j].name, k->name))
                r = ld_bad("kernel '%s' is listed twice", k->name);
        GElf_Sym s;
        if (r == KILN_OK)
            r = find_symbol(l, mk[i].symbol, &s, &k->kd_addr);
        if (r == KILN_OK)
            r = read_descriptor(l, k);
        if (r == KILN_OK)
            r = code_extent(l, k);
        if (r == KILN_OK)
            r = check_args(k);
    }
    for (uint32_t i = c->kernel_count; i < nk; i++)
        free(mk[i].k.args);
    free(mk);
    return r;
}

kiln_result wave_code_load(const void *data, size_t len, struct wave_code *out)
{
    struct wave_code c = {0};
    struct ld l = {.code = &c, .file_len = len};
    /* libelf takes a writable buffer; the caller's stays untouched */
    uint8_t *copy = mem_alloc(len ? len : 1);
    if (!copy)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "code object: a copy of %zu bytes", len);
    if (len)
        memcpy(copy, data, len);
    l.file = copy;
    kiln_result r = load(&l, copy, len);
    if (l.elf)
        elf_end(l.elf);
    free(l.sec_addr);
    free(copy);
    if (r < 0) {
        wave_code_finish(&c);
        return r;
    }
    *out = c;
    return KILN_OK;
}

void wave_code_finish(struct wave_code *c)
{
    for (uint32_t i = 0; c->kernels && i < c->kernel_count; i++)
        free(c->kernels[i].args);
    free(c->kernels);
    free(c->image);
    *c = (struct wave_code){0};
}

const struct wave_kernel *wave_code_kernel(const struct wave_code *c, const char *name)
{
    for (uint32_t i = 0; i < c->kernel_count; i++)
        if (!strcmp(c->kernels[i].name, name))
            return &c->kernels[i];
    return NULL;
}

void wave_kernarg_fill(const struct wave_kernel *k, uint8_t *kernarg, const struct wave_dispatch_info *d)
{
    for (uint32_t a = 0; a < k->arg_count; a++) {
        const struct wave_arg *g = &k->args[a];
        uint64_t v = 0;
        switch (g->kind) {
        case WAVE_ARG_HIDDEN_BLOCK_COUNT_X: v = d->groups[0]; break;
        case WAVE_ARG_HIDDEN_BLOCK_COUNT_Y: v = d->groups[1]; break;
        case WAVE_ARG_HIDDEN_BLOCK_COUNT_Z: v = d->groups[2]; break;
        case WAVE_ARG_HIDDEN_GROUP_SIZE_X: v = d->block[0]; break;
        case WAVE_ARG_HIDDEN_GROUP_SIZE_Y: v = d->block[1]; break;
        case WAVE_ARG_HIDDEN_GROUP_SIZE_Z: v = d->block[2]; break;
        case WAVE_ARG_HIDDEN_GRID_DIMS: v = d->dims; break;
        case WAVE_ARG_HIDDEN_DYNAMIC_LDS_SIZE: v = d->dynamic_lds; break;
        case WAVE_ARG_HIDDEN_PRIVATE_BASE: v = d->private_base_hi; break;
        case WAVE_ARG_HIDDEN_SHARED_BASE: v = d->shared_base_hi; break;
        default:
            if (!wave_arg_hidden(g->kind))
                continue;
            v = 0;   /* offsets, remainders, and buffers kiln does not provide */
        }
        /* check_args bounded offset + size by kernarg_size */
        wr(kernarg + g->offset, v, KILN_MIN(g->size, 8u));
        if (g->size > 8)
            memset(kernarg + g->offset + 8, 0, g->size - 8);
    }
}

uint32_t *wave_code_words(const struct wave_code *c, size_t *nwords)
{
    size_t n = (size_t)(c->image_size / 4);
    uint32_t *w = mem_alloc(n * 4 + 4);
    if (!w)
        return NULL;
    for (size_t i = 0; i < n; i++)
        w[i] = (uint32_t)c->image[4 * i] | (uint32_t)c->image[4 * i + 1] << 8 | (uint32_t)c->image[4 * i + 2] << 16 |
               (uint32_t)c->image[4 * i + 3] << 24;
    *nwords = n;
    return w;
}
