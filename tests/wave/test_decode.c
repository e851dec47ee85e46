/* SPDX-License-Identifier: MIT */
/*
 * test_decode.c: the gfx9 decoder and printer held to LLVM's AMDGPU
 * disassembler, which is the reference kiln's decoder must match.
 *
 * errors_name_offset_and_dwords, ir_shapes: without LLVM, the decoder's
 *   contract (errors naming the byte offset and the dwords, never a read
 *   past the buffer) and the IR's shapes for instructions whose words are
 *   written here.
 * compiled_kernel: two OpenCL C kernels (one in half precision) compiled
 *   by clang for gfx900 at test time, at -O2 and at -O0 (scratch); every
 *   instruction llvm-objdump lists decodes in kiln to the same length and
 *   text (skipped, saying so, where clang lacks the target).
 * every_form: for every op of ops.def and each encoding it claims (e32,
 *   VOP3, SDWA, DPP; each memory addressing mode), a handful of encodings
 *   with different operand kinds (registers, scalars, inline constants,
 *   literals, modifiers) are made here. LLVM disassembles them (the words
 *   assembled by `llvm-mc -filetype=obj` from .long lines, read back by
 *   `llvm-objdump -d`), its text is assembled again with `llvm-mc
 *   -show-encoding`, and kiln decodes those bytes: kiln's verdict must be
 *   LLVM's for every candidate, and kiln's printed opcode and operands must
 *   be LLVM's text for every instruction; every op must have a form both
 *   decode.
 * random_words: dwords drawn at random under the prefix of each listed
 *   family, wholly at random, and forms with one to three bits flipped,
 *   each at its own 16-byte slot; kiln and LLVM must agree on whether the
 *   first dword starts an instruction and on its length, and where both
 *   decode, on the text. Set aside and counted: words of the families kiln
 *   does not decode (MIMG, MTBUF, EXP, VINTRP), words LLVM decodes while
 *   marking an operand invalid (kiln must refuse them), SDWA words with a
 *   select of 7 (llvm-objdump 14 crashes on them; kiln must refuse them),
 *   and any other slot llvm-objdump crashes on.
 *
 * KILN_DECODE_RANDOM sets the number of random slots (20000 by default,
 * seconds; the large run is KILN_DECODE_RANDOM=1000000), KILN_DECODE_SEED
 * the seed, KILN_DECODE_SHOW how many disagreements to print. The program
 * skips (exit 77) where llvm-mc lacks the amdgcn target or llvm-objdump is
 * missing (KILN_LLVM_MC, KILN_LLVM_OBJDUMP name other binaries).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "test.h"
#include "wave/decode.h"

#define SKIP 77

static char tmpdir[256];
static const char *mc = "llvm-mc", *objdump = "llvm-objdump";

/* ---- running LLVM ---- */

static bool run(const char *cmd)
{
    int rc = system(cmd);
    return rc == 0;
}

static bool llvm_has_amdgcn(void)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "%s --version 2>/dev/null | grep -q amdgcn", mc);
    if (!run(cmd))
        return false;
    snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", objdump);
    return run(cmd);
}

/* A slot: four dwords at a 16-byte boundary, the candidate first, s_nop
 * after it. */
#define SLOT 4
#define NOP 0xbf800000u

struct verdict {
    bool crashed;    /* LLVM itself crashed on this slot */
    bool valid;
    unsigned len;    /* dwords */
    char text[320];  /* LLVM's text */
};

static char *read_file_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

/* LLVM's verdict on each slot of words (nslots * SLOT dwords). */
static bool llvm_disassemble(const uint32_t *words, size_t nslots, struct verdict *out)
{
    char s_path[300], o_path[300], d_path[300], cmd[1400];
    snprintf(s_path, sizeof s_path, "%s/slots.s", tmpdir);
    snprintf(o_path, sizeof o_path, "%s/slots.o", tmpdir);
    snprintf(d_path, sizeof d_path, "%s/slots.txt", tmpdir);
    FILE *f = fopen(s_path, "w");
    if (!f)
        return false;
    fprintf(f, ".text\n");
    for (size_t i = 0; i < nslots * SLOT; i++)
        fprintf(f, ".long 0x%08" PRIx32 "\n", words[i]);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s -arch=amdgcn -mcpu=gfx900 -filetype=obj %s -o %s && "
             "%s -d --mcpu=gfx900 %s > %s 2>/dev/null",
             mc, s_path, o_path, objdump, o_path, d_path);
    if (!run(cmd))
        return false;
    char *text = read_file_all(d_path, NULL);
    if (!text)
        return false;
    for (size_t i = 0; i < nslots; i++)
        out[i] = (struct verdict){ false, false, 0, "?" };
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *mark = strstr(line, "// ");
        if (!mark)
            continue;
        char *colon = strchr(mark, ':');
        if (!colon)
            continue;
        unsigned long long addr = strtoull(mark + 3, NULL, 16);
        if (addr % (SLOT * 4))
            continue;
        size_t slot = addr / (SLOT * 4);
        if (slot >= nslots)
            continue;
        unsigned n = 0;
        for (char *p = colon + 1; *p == ' ';) {
            char *end;
            strtoul(p + 1, &end, 16);
            if (end - (p + 1) != 8)
                break;
            n++;
            p = end;
        }
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        char *e = mark;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        struct verdict *v = &out[slot];
        size_t tl = KILN_MIN((size_t)(e - s), sizeof v->text - 1);
        memcpy(v->text, s, tl);
        v->text[tl] = 0;
        v->valid = strncmp(v->text, ".long", 5) != 0;
        v->len = n;
    }
    free(text);
    return true;
}

/* The same, robust to LLVM crashing on a word (llvm-objdump 14 does, on
 * SDWA selects of 7): a batch that fails is split until the slot that
 * crashes is alone, and that slot is marked crashed. */
static bool llvm_verdicts(const uint32_t *words, size_t nslots, struct verdict *out)
{
    if (llvm_disassemble(words, nslots, out))
        return true;
    if (nslots == 1) {
        out[0] = (struct verdict){ true, false, 0, "(llvm-objdump crashed)" };
        return true;
    }
    size_t half = nslots / 2;
    return llvm_verdicts(words, half, out) &&
           llvm_verdicts(words + half * SLOT, nslots - half, out + half);
}

/* ---- comparing texts ---- */

/* Lower case, one space between tokens, hex numbers in decimal, the
 * "; comment" and LLVM's notes in comments gone. */
static void normalize(const char *in, char *out, size_t cap)
{
    size_t k = 0;
    bool space = false;
    for (const char *p = in; *p && k + 24 < cap; p++) {
        if (*p == ';')
            break;
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            if (!end)
                break;
            p = end + 1;
            space = k > 0;
            continue;
        }
        if (isspace((unsigned char)*p)) {
            space = k > 0;
            continue;
        }
        if (space) {
            out[k++] = ' ';
            space = false;
        }
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2]) &&
            (p == in || !isalnum((unsigned char)p[-1]))) {
            char *end;
            unsigned long long v = strtoull(p + 2, &end, 16);
            k += (size_t)snprintf(out + k, cap - k, "%llu", v);
            p = end - 1;
            continue;
        }
        out[k++] = (char)tolower((unsigned char)*p);
    }
    while (k && out[k - 1] == ' ')
        k--;
    out[k] = 0;
}

/* ---- forms ---- */

struct cand {
    uint32_t w[SLOT];
    unsigned op;
};

static unsigned nforms, forms_cap;
static struct cand *forms;

static void add_form(unsigned op, const uint32_t *w, unsigned n)
{
    if (nforms == forms_cap) {
        forms_cap = forms_cap ? forms_cap * 2 : 1024;
        forms = realloc(forms, forms_cap * sizeof *forms);
        if (!forms)
            abort();
    }
    struct cand *c = &forms[nforms++];
    for (unsigned i = 0; i < SLOT; i++)
        c->w[i] = i < n ? w[i] : NOP;
    c->op = op;
}

/* Register numbers aligned for any width. */
enum { VD = 12, VA = 4, VB = 8, VC = 16, SD = 8, SA = 12, SB = 20 };

static void forms_scalar(unsigned op, const struct wave_op_info *in)
{
    uint32_t w[3];
    unsigned opc = in->opcode;
    static const unsigned srcs[][2] = {
        { SA, SB }, { 193, 242 }, { 255, SB }, { 106, 126 }, { 124, 128 }, { 248, 255 },
    };
    for (unsigned v = 0; v < KILN_ARRAY_LEN(srcs); v++) {
        unsigned s0 = srcs[v][0], s1 = srcs[v][1];
        if (in->src[0] >= 2 && s0 == 124)
            s0 = 106;
        if (in->src[1] >= 2 && s1 == 124)
            s1 = 106;
        unsigned d = in->dst ? (v == 4 && in->dst == 1 ? 124 : SD) : 0;
        unsigned n = 1;
        switch (in->family) {
        case WAVE_FAM_SOP1:
            w[0] = 0xbe800000u | d << 16 | opc << 8 | (in->src[0] ? s0 : 0);
            break;
        case WAVE_FAM_SOP2: w[0] = 0x80000000u | opc << 23 | d << 16 | s1 << 8 | s0; break;
        case WAVE_FAM_SOPC: w[0] = 0xbf000000u | opc << 16 | s1 << 8 | s0; break;
        default: return;
        }
        if (s0 == 255 || s1 == 255)
            w[n++] = 0x12345678;
        add_form(op, w, n);
    }
}

static void forms_sopk_sopp(unsigned op, const struct wave_op_info *in)
{
    static const uint16_t imms[] = { 0x1234, 0xfff0, 3, 0 };
    for (unsigned v = 0; v < KILN_ARRAY_LEN(imms); v++) {
        uint32_t w[2] = { 0, 0xcafe };
        if (in->family == WAVE_FAM_SOPP)
            w[0] = 0xbf800000u | in->opcode << 16 | imms[v];
        else
            w[0] = 0xb0000000u | in->opcode << 23 | (in->dst || in->src[0] ? 5u : 0u) << 16 | imms[v];
        add_form(op, w, op == WAVE_OP_S_SETREG_IMM32_B32 ? 2 : 1);
    }
}

static void forms_smem(unsigned op, const struct wave_op_info *in)
{
    for (unsigned v = 0; v < 3; v++) {
        uint32_t w[2];
        bool imm = v != 1;
        unsigned sdata = in->dst || in->src[2] ? SD : 0;
        w[0] = 0xc0000000u | in->opcode << 18 | (imm ? 1u << 17 : 0) | (v == 2 ? 1u << 16 : 0) |
               sdata << 6 | (in->src[0] ? (4u >> 1) : 0);
        w[1] = imm ? 0x10 : 7;
        add_form(op, w, 2);
    }
}

static void vop3_form(unsigned op, const struct wave_op_info *in, unsigned opc3, unsigned v)
{
    static const unsigned src_sets[][3] = {
        { 256 + VA, 256 + VB, 256 + VC }, { SA, 242, 256 + VC }, { 256 + VA, SA, 128 },
        { 130, 256 + VB, SA },
    };
    unsigned set = v % KILN_ARRAY_LEN(src_sets);
    unsigned mods = v / KILN_ARRAY_LEN(src_sets);
    uint32_t w[2];
    unsigned vdst = in->dst ? VD : 0;
    if (in->family == WAVE_FAM_VOPC)
        vdst = v == 5 ? 106 : SD;
    if (op == WAVE_OP_V_READLANE_B32 || op == WAVE_OP_V_READFIRSTLANE_B32)
        vdst = SD;
    unsigned s[3];
    for (unsigned i = 0; i < 3; i++)
        s[i] = src_sets[set][i];
    w[0] = 0xd0000000u | opc3 << 16 | vdst;
    w[1] = 0;
    bool vop3b = in->family == WAVE_FAM_VOP3B || (in->flags & WAVE_F_VCC_OUT);
    if (vop3b)
        w[0] |= (mods ? 106u : (unsigned)SD + 2) << 8;
    unsigned nsrc = 0;
    for (unsigned i = 0; i < 3; i++)
        if (in->src[i] || (i == 2 && (in->flags & WAVE_F_VCC_IN)))
            nsrc = i + 1;
    if (in->flags & WAVE_F_MAC)
        nsrc = 2;
    if (in->family == WAVE_FAM_VOP1 && !in->src[0])
        nsrc = 0;
    for (unsigned i = 0; i < nsrc; i++) {
        unsigned code = s[i];
        if (i == 2 && in->family == WAVE_FAM_VOP2 && (in->flags & WAVE_F_VCC_IN))
            code = mods ? 106 : SA;
        w[1] |= code << (9 * i);
    }
    if (mods == 1) { /* neg and abs on every source */
        w[0] |= ((1u << nsrc) - 1) << 8;
        w[1] |= ((1u << nsrc) - 1) << 29;
    } else if (mods == 2) { /* clamp and omod */
        w[0] |= 1u << 15;
        w[1] |= 1u << 27;
    } else if (mods == 3) { /* op_sel */
        if (!vop3b)
            w[0] |= 0xfu << 11;
    }
    add_form(op, w, 2);
}

static void forms_vop(unsigned op, const struct wave_op_info *in)
{
    uint32_t w[3];
    unsigned opc = in->opcode;
    static const unsigned src0s[] = { 256 + VA, SA, 130, 255, 242, 124 };
    bool dst_s = op == WAVE_OP_V_READFIRSTLANE_B32;
    /* e32 */
    for (unsigned v = 0; v < KILN_ARRAY_LEN(src0s); v++) {
        unsigned s0 = src0s[v], n = 1;
        if (!in->src[0])
            s0 = 0;
        if (op == WAVE_OP_V_MADMK_F32 || op == WAVE_OP_V_MADAK_F32 || op == WAVE_OP_V_MADMK_F16 ||
            op == WAVE_OP_V_MADAK_F16) {
            if (s0 == 255)
                continue;
        }
        unsigned vdst = in->dst ? (dst_s ? SD : VD) : 0;
        switch (in->family) {
        case WAVE_FAM_VOP1: w[0] = 0x7e000000u | vdst << 17 | opc << 9 | s0; break;
        case WAVE_FAM_VOP2: w[0] = opc << 25 | vdst << 17 | (unsigned)VB << 9 | s0; break;
        default: w[0] = 0x7c000000u | opc << 17 | (unsigned)VB << 9 | s0; break;
        }
        if (s0 == 255 || op == WAVE_OP_V_MADMK_F32 || op == WAVE_OP_V_MADAK_F32 ||
            op == WAVE_OP_V_MADMK_F16 || op == WAVE_OP_V_MADAK_F16)
            w[n++] = 0x40490fdb;
        add_form(op, w, n);
    }
    /* VOP3 */
    if (!(in->flags & WAVE_F_NOE64)) {
        unsigned opc3 = in->family == WAVE_FAM_VOPC ? opc
                        : in->family == WAVE_FAM_VOP2 ? 256 + opc
                                                      : 320 + opc;
        for (unsigned v = 0; v < 16; v++)
            vop3_form(op, in, opc3, v);
    }
    /* SDWA */
    if (in->flags & WAVE_F_SDWA) {
        static const uint32_t sdwa[] = {
            0x06060600u | VA,                                     /* all DWORD */
            0x0509150 | VA | 1u << 19 | 4u << 8 | 1u << 11,       /* selects, sext, pad */
            0x06860600u | SA,                                     /* src0 an SGPR */
            0x06062600u | VA | 1u << 13 | 1u << 20 | 1u << 21 | 1u << 28, /* clamp, neg, abs */
            0x06060600u | VA | 2u << 11,                          /* preserve */
            0x06068600u | VA | (unsigned)SD << 8,                 /* VOPC: sdst */
        };
        for (unsigned v = 0; v < KILN_ARRAY_LEN(sdwa); v++) {
            uint32_t s = sdwa[v];
            unsigned vdst = in->dst ? VD : 0;
            if (in->family == WAVE_FAM_VOP1) {
                s &= 0x00ffffffu;
                if (!in->src[0])
                    s &= ~0xffu;
                w[0] = 0x7e000000u | vdst << 17 | opc << 9 | 0xf9;
            } else if (in->family == WAVE_FAM_VOP2) {
                w[0] = opc << 25 | vdst << 17 | (unsigned)VB << 9 | 0xf9;
            } else {
                w[0] = 0x7c000000u | opc << 17 | (unsigned)VB << 9 | 0xf9;
                s &= ~0x3f00u;
                if (v == 5)
                    s |= (0x80u | SD) << 8;
            }
            w[1] = s;
            add_form(op, w, 2);
        }
    }
    /* DPP */
    if (in->flags & WAVE_F_DPP) {
        static const uint32_t dpp[] = {
            0xff00e400u | VA,                     /* quad_perm identity */
            0xff000000u | VA | 0x101u << 8 | 1u << 19, /* row_shl:1 bound_ctrl */
            0xa5000000u | VA | 0x140u << 8 | 0x3u << 20, /* row_mirror, neg, abs */
            0xff000000u | VA | 0x143u << 8,       /* row_bcast:31 */
            0xff000000u | VA | 0x13cu << 8 | 0xfu << 20, /* wave_ror, all mods */
        };
        for (unsigned v = 0; v < KILN_ARRAY_LEN(dpp); v++) {
            unsigned vdst = in->dst ? VD : 0;
            uint32_t s = dpp[v];
            if (!in->src[0])
                s &= ~0xffu;
            if (in->family == WAVE_FAM_VOP1)
                w[0] = 0x7e000000u | vdst << 17 | opc << 9 | 0xfa;
            else
                w[0] = opc << 25 | vdst << 17 | (unsigned)VB << 9 | 0xfa;
            w[1] = s;
            add_form(op, w, 2);
        }
    }
}

static void forms_vop3(unsigned op, const struct wave_op_info *in)
{
    for (unsigned v = 0; v < 16; v++)
        vop3_form(op, in, in->opcode, v);
}

static void forms_vop3p(unsigned op, const struct wave_op_info *in)
{
    unsigned n = in->src[2] ? 3 : 2;
    for (unsigned v = 0; v < 4; v++) {
        uint32_t w[2];
        w[0] = 0xd3800000u | in->opcode << 16 | VD;
        w[1] = (256u + VA) | (v == 1 ? SA : 256u + VB) << 9 | (n == 3 ? (v == 2 ? 242u : 256u + VC) : 0) << 18;
        if (v == 0)
            w[1] |= 3u << 27, w[0] |= (n == 3 ? 1u : 0u) << 14;
        if (v == 3) {
            w[0] |= 1u << 15 | 1u << 11 | 2u << 8;
            w[1] |= 1u << 27 | 1u << 29;
        }
        add_form(op, w, 2);
    }
}

static void forms_ds(unsigned op, const struct wave_op_info *in)
{
    for (unsigned v = 0; v < 3; v++) {
        uint32_t w[2];
        bool gws = strncmp(in->name, "ds_gws", 6) == 0;
        w[0] = 0xd8000000u | in->opcode << 17 | (v == 1 ? 0x0804u : 0) | (v == 2 || gws ? 1u << 16 : 0);
        w[1] = (in->dst ? (unsigned)VD << 24 : 0) | (in->src[0] ? 1u : 0) |
               (in->src[1] ? (unsigned)VA << 8 : 0) | (in->src[2] ? (unsigned)VB << 16 : 0);
        add_form(op, w, 2);
    }
}

static void forms_flat(unsigned op, const struct wave_op_info *in)
{
    unsigned seg = in->family == WAVE_FAM_FLAT ? 0 : in->family == WAVE_FAM_SCRATCH ? 1 : 2;
    for (unsigned v = 0; v < 4; v++) {
        uint32_t w[2];
        unsigned saddr = seg == 0 ? 0 : v == 1 ? (seg == 2 ? 2u : 5u) : 0x7f;
        unsigned off = v == 2 ? (seg ? 0x1ff8u : 8u) : v == 3 ? 0x7ffu : 0;
        w[0] = 0xdc000000u | in->opcode << 18 | seg << 14 | off | (v == 2 ? 3u << 16 : 0);
        w[1] = (unsigned)VA | (in->src[2] ? (unsigned)VB << 8 : 0) | saddr << 16 |
               (in->dst ? (unsigned)VD << 24 : 0);
        add_form(op, w, 2);
    }
}

static void forms_mubuf(unsigned op, const struct wave_op_info *in)
{
    for (unsigned v = 0; v < 7; v++) {
        uint32_t w[2];
        unsigned offen = v == 1 || v == 3, idxen = v == 2 || v == 3;
        w[0] = 0xe0000000u | in->opcode << 18 | offen << 12 | idxen << 13 |
               (v == 4 ? (1u << 14 | 1u << 17 | 4u) : 0) | (v == 5 ? 1u << 16 : 0);
        unsigned soff = v == 6 ? 128u : 1u;
        w[1] = (unsigned)VA | (unsigned)VB << 8 | 2u << 16 | soff << 24;
        if (!in->dst && !in->src[2])
            w[1] = (v == 6 ? 0 : w[1] & 0xffff00ffu);
        add_form(op, w, 2);
    }
}

/* Every value of one operand field, for a few ops standing for each kind of
 * field: a 9-bit source of 32, 64 and 16 bits, an 8-bit scalar source, a
 * 7-bit scalar destination of one, two and four dwords, an SDWA source,
 * VOPC's and v_readfirstlane's 8-bit scalar destination, MUBUF's soffset
 * and srsrc, global's saddr, SMEM's sbase. */
static void make_sweeps(void)
{
    uint32_t w[3];
    for (unsigned c = 0; c < 512; c++) {
        w[0] = 0x02000000u | (unsigned)VD << 17 | (unsigned)VB << 9 | c; /* v_add_f32_e32 */
        w[1] = 0x12345678u;
        add_form(WAVE_OP_V_ADD_F32, w, 2);
        w[0] = 0x4c000000u | (unsigned)VD << 17 | (unsigned)VB << 9 | c; /* v_add_u16_e32 */
        add_form(WAVE_OP_V_ADD_U16, w, 2);
        w[0] = 0xd2800000u | VD; /* v_add_f64 */
        w[1] = c | (256u + VB) << 9;
        add_form(WAVE_OP_V_ADD_F64, w, 2);
        w[0] = 0xd38f0000u | VD; /* v_pk_add_f16 */
        w[1] = c | (256u + VB) << 9 | 3u << 27;
        add_form(WAVE_OP_V_PK_ADD_F16, w, 2);
    }
    for (unsigned c = 0; c < 256; c++) {
        w[1] = 0x12345678u;
        w[0] = 0xbe800000u | (unsigned)SD << 16 | c; /* s_mov_b32 */
        add_form(WAVE_OP_S_MOV_B32, w, 2);
        w[0] = 0xbe800100u | (unsigned)SD << 16 | c; /* s_mov_b64 */
        add_form(WAVE_OP_S_MOV_B64, w, 2);
        w[0] = 0xd0410000u | c; /* v_cmp_lt_f32_e64 sdst */
        w[1] = (256u + VA) | (256u + VB) << 9;
        add_form(WAVE_OP_V_CMP_LT_F32, w, 2);
        w[0] = 0x7e000400u | c << 17 | (256u + VA); /* v_readfirstlane_b32 sdst */
        add_form(WAVE_OP_V_READFIRSTLANE_B32, w, 1);
        w[0] = 0x020000f9u | (unsigned)VD << 17 | (unsigned)VB << 9; /* v_add_f32_sdwa src0 */
        w[1] = 0x06060600u | c;
        add_form(WAVE_OP_V_ADD_F32, w, 2);
        w[1] |= 1u << 23;
        add_form(WAVE_OP_V_ADD_F32, w, 2);
        w[0] = 0xe0500000u; /* buffer_load_dword soffset */
        w[1] = c << 24 | 2u << 16 | (unsigned)VB << 8;
        add_form(WAVE_OP_BUFFER_LOAD_DWORD, w, 2);
    }
    for (unsigned c = 0; c < 128; c++) {
        w[1] = 0x12345678u;
        w[0] = 0xbe800000u | c << 16 | (unsigned)SA; /* s_mov_b32 sdst */
        add_form(WAVE_OP_S_MOV_B32, w, 1);
        w[0] = 0xbe800100u | c << 16 | (unsigned)SA; /* s_mov_b64 sdst */
        add_form(WAVE_OP_S_MOV_B64, w, 1);
        w[0] = 0xc00a0000u | c << 6 | 2u; /* s_load_dwordx4 sdata */
        w[1] = 0x10;
        add_form(WAVE_OP_S_LOAD_DWORDX4, w, 2);
        w[0] = 0xdc508000u; /* global_load_dword saddr */
        w[1] = (unsigned)VA | c << 16 | (unsigned)VD << 24;
        add_form(WAVE_OP_GLOBAL_LOAD_DWORD, w, 2);
    }
    for (unsigned c = 0; c < 64; c++) {
        w[0] = 0xc00a0000u | (unsigned)SD << 6 | c; /* s_load_dwordx4 sbase */
        w[1] = 0x10;
        add_form(WAVE_OP_S_LOAD_DWORDX4, w, 2);
        w[0] = 0xc0220000u | (unsigned)SD << 6 | c; /* s_buffer_load_dword sbase */
        add_form(WAVE_OP_S_BUFFER_LOAD_DWORD, w, 2);
    }
    for (unsigned c = 0; c < 32; c++) {
        w[0] = 0xe0500000u; /* buffer_load_dword srsrc */
        w[1] = 1u << 24 | c << 16 | (unsigned)VB << 8;
        add_form(WAVE_OP_BUFFER_LOAD_DWORD, w, 2);
    }
}

static void make_forms(void)
{
    make_sweeps();
    for (unsigned op = 1; op < WAVE_OP_COUNT; op++) {
        const struct wave_op_info *in = wave_op_info(op);
        switch (in->family) {
        case WAVE_FAM_SOP1:
        case WAVE_FAM_SOP2:
        case WAVE_FAM_SOPC: forms_scalar(op, in); break;
        case WAVE_FAM_SOPK:
        case WAVE_FAM_SOPP: forms_sopk_sopp(op, in); break;
        case WAVE_FAM_SMEM: forms_smem(op, in); break;
        case WAVE_FAM_VOP1:
        case WAVE_FAM_VOP2:
        case WAVE_FAM_VOPC: forms_vop(op, in); break;
        case WAVE_FAM_VOP3A:
        case WAVE_FAM_VOP3B: forms_vop3(op, in); break;
        case WAVE_FAM_VOP3P: forms_vop3p(op, in); break;
        case WAVE_FAM_DS: forms_ds(op, in); break;
        case WAVE_FAM_FLAT:
        case WAVE_FAM_GLOBAL:
        case WAVE_FAM_SCRATCH: forms_flat(op, in); break;
        case WAVE_FAM_MUBUF: forms_mubuf(op, in); break;
        default: break;
        }
    }
}

/* kiln's verdict on a slot. */
static int kiln_len(const uint32_t *w, struct wave_instr *in)
{
    int n = wave_decode(w, SLOT, 0, in);
    return n > 0 ? n : 0;
}

static unsigned shown, show_max = 40;
static void report(const char *what, const uint32_t *w, const char *llvm, const char *kiln)
{
    if (shown++ >= show_max)
        return;
    fprintf(stderr, "  %s: %08" PRIx32 " %08" PRIx32 " %08" PRIx32 "\n    llvm: %s\n    kiln: %s\n",
            what, w[0], w[1], w[2], llvm, kiln);
}

/* Assembles LLVM's texts again; fills each text's encoding (up to 3 dwords)
 * or leaves n 0 where it did not assemble. */
struct asm_out {
    uint32_t w[SLOT];
    unsigned n;
    char text[320];
};

static bool llvm_assemble(char (*texts)[320], size_t count, struct asm_out *out)
{
    char s_path[300], o_path[300], e_path[300], cmd[1200];
    snprintf(s_path, sizeof s_path, "%s/texts.s", tmpdir);
    snprintf(o_path, sizeof o_path, "%s/texts.enc", tmpdir);
    snprintf(e_path, sizeof e_path, "%s/texts.err", tmpdir);
    FILE *f = fopen(s_path, "w");
    if (!f)
        return false;
    for (size_t i = 0; i < count; i++)
        fprintf(f, "%s\n", texts[i]);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -arch=amdgcn -mcpu=gfx900 -show-encoding %s > %s 2> %s", mc,
             s_path, o_path, e_path);
    run(cmd); /* lines in error are listed in e_path */
    char *enc = read_file_all(o_path, NULL), *err = read_file_all(e_path, NULL);
    if (!enc || !err) {
        free(enc);
        free(err);
        return false;
    }
    bool *bad = calloc(count + 1, sizeof *bad);
    for (char *p = err; (p = strstr(p, ".s:")) != NULL; p += 3) {
        unsigned long line = strtoul(p + 3, NULL, 10);
        if (line >= 1 && line <= count && strstr(p, "error"))
            bad[line - 1] = true;
    }
    size_t next = 0;
    for (char *line = strtok(enc, "\n"); line; line = strtok(NULL, "\n")) {
        char *e = strstr(line, "; encoding: [");
        if (!e)
            continue;
        while (next < count && bad[next])
            out[next++].n = 0;
        if (next >= count)
            break;
        struct asm_out *a = &out[next++];
        uint8_t bytes[16];
        unsigned nb = 0;
        for (char *p = e + 13; *p && *p != ']' && nb < 16;) {
            bytes[nb++] = (uint8_t)strtoul(p, &p, 16);
            if (*p == ',')
                p++;
        }
        a->n = nb / 4;
        for (unsigned i = 0; i < SLOT; i++)
            a->w[i] = i < a->n ? (uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
                                     (uint32_t)bytes[4 * i + 2] << 16 |
                                     (uint32_t)bytes[4 * i + 3] << 24
                               : NOP;
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t tl = KILN_MIN((size_t)(e - s), sizeof a->text - 1);
        memcpy(a->text, s, tl);
        a->text[tl] = 0;
    }
    while (next < count)
        out[next++].n = 0;
    free(bad);
    free(enc);
    free(err);
    return true;
}

TEST(every_form)
{
    struct verdict *v = calloc(nforms, sizeof *v);
    uint32_t *words = malloc((size_t)nforms * SLOT * sizeof *words);
    REQUIRE(v && words);
    for (unsigned i = 0; i < nforms; i++)
        memcpy(&words[i * SLOT], forms[i].w, sizeof forms[i].w);
    REQUIRE(llvm_verdicts(words, nforms, v));
    free(words);
    unsigned agree_valid = 0, agree_invalid = 0, disagree = 0, compared = 0, text_bad = 0,
             reasm_bad = 0, dis_bad = 0;
    char(*texts)[320] = calloc(nforms, sizeof *texts);
    unsigned *which = calloc(nforms, sizeof *which);
    unsigned ntexts = 0;
    unsigned *claimed = calloc(WAVE_OP_COUNT, sizeof *claimed);
    REQUIRE(texts && which && claimed);
    for (unsigned i = 0; i < nforms; i++) {
        struct wave_instr in;
        int n = kiln_len(forms[i].w, &in);
        char kt[320];
        if (n)
            wave_print(&in, kt, sizeof kt);
        else
            snprintf(kt, sizeof kt, "error: %s", kiln_last_error());
        if (n == 0 && v[i].valid && strstr(v[i].text, "invalid")) {
            agree_invalid++; /* LLVM decodes it marking an operand invalid */
            continue;
        }
        if ((n > 0) != v[i].valid || (n > 0 && (unsigned)n != v[i].len)) {
            disagree++;
            report(v[i].valid ? "LLVM decodes, kiln does not (or another length)"
                              : "kiln decodes, LLVM does not",
                   forms[i].w, v[i].text, kt);
            continue;
        }
        if (!n) {
            agree_invalid++;
            continue;
        }
        agree_valid++;
        claimed[forms[i].op]++;
        /* the words as made, printed: llvm-objdump's text */
        char kn[400], ln[400];
        normalize(kt, kn, sizeof kn);
        normalize(v[i].text, ln, sizeof ln);
        if (strcmp(kn, ln) != 0) {
            dis_bad++;
            report("text differs from llvm-objdump's", forms[i].w, v[i].text, kt);
        }
        memcpy(texts[ntexts], v[i].text, sizeof texts[0]);
        which[ntexts++] = i;
    }
    struct asm_out *a = calloc(ntexts ? ntexts : 1, sizeof *a);
    REQUIRE(a && llvm_assemble(texts, ntexts, a));
    for (unsigned t = 0; t < ntexts; t++) {
        if (!a[t].n) {
            reasm_bad++;
            continue;
        }
        struct wave_instr in;
        int n = kiln_len(a[t].w, &in);
        char kt[320], kn[400], ln[400];
        if (n <= 0) {
            snprintf(kt, sizeof kt, "error: %s", kiln_last_error());
            report("assembled by LLVM, refused by kiln", a[t].w, a[t].text, kt);
            text_bad++;
            continue;
        }
        wave_print(&in, kt, sizeof kt);
        normalize(kt, kn, sizeof kn);
        normalize(a[t].text, ln, sizeof ln);
        compared++;
        if (strcmp(kn, ln) != 0) {
            text_bad++;
            report("text differs", a[t].w, a[t].text, kt);
        }
    }
    unsigned ops_without = 0;
    for (unsigned op = 1; op < WAVE_OP_COUNT; op++)
        if (!claimed[op]) {
            ops_without++;
            if (shown++ < show_max)
                fprintf(stderr, "  no form of %s was decoded by both\n", wave_op_name(op));
        }
    printf("forms: %u candidates; both decode %u (%u printed otherwise than llvm-objdump), "
           "both refuse %u, disagree %u; %u re-assembled and compared, %u differ, %u did not "
           "re-assemble; %u of %u ops had no form both decode\n",
           nforms, agree_valid, dis_bad, agree_invalid, disagree, compared, text_bad, reasm_bad,
           ops_without, WAVE_OP_COUNT - 1);
    CHECK_EQ(disagree, 0);
    CHECK_EQ(text_bad, 0);
    CHECK_EQ(dis_bad, 0);
    CHECK_EQ(ops_without, 0);
    free(a);
    free(texts);
    free(which);
    free(claimed);
    free(v);
}

/* ---- random ---- */

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Kinds of random slot: under each family's prefix, wholly random, and a
 * form of every_form with one to three of its bits flipped (which reaches
 * the field rules that random words seldom meet). */
enum { R_SOP2, R_SOPK, R_SOP1, R_SOPC, R_SOPP, R_SMEM, R_VOP2, R_VOP1, R_VOPC, R_SDWA, R_DPP,
       R_VOP3, R_VOP3P, R_DS, R_FLAT, R_MUBUF, R_ANY, R_MUTANT, R_KINDS };
static const char *const kind_names[R_KINDS] = { "SOP2", "SOPK", "SOP1", "SOPC", "SOPP", "SMEM",
                                                 "VOP2", "VOP1", "VOPC", "SDWA", "DPP",  "VOP3",
                                                 "VOP3P", "DS",  "FLAT", "MUBUF", "any", "mutant" };

static uint32_t random_first(unsigned kind)
{
    uint32_t w = rnd();
    switch (kind) {
    case R_SOP2:
        w = (w & 0x3fffffffu) | 0x80000000u;
        if ((w >> 28) == 0xb)
            w ^= 1u << 28;
        return w;
    case R_SOPK: return (w & 0x007fffffu) | 0xb0000000u | (rnd() % 29) << 23;
    case R_SOP1: return (w & 0x007fffffu) | 0xbe800000u;
    case R_SOPC: return (w & 0x007fffffu) | 0xbf000000u;
    case R_SOPP: return (w & 0x007fffffu) | 0xbf800000u;
    case R_SMEM: return (w & 0x03ffffffu) | 0xc0000000u;
    case R_VOP2: return (w & 0x01ffffffu) | (rnd() % 62) << 25;
    case R_VOP1: return (w & 0x01ffffffu) | 0x7e000000u;
    case R_VOPC: return (w & 0x01ffffffu) | 0x7c000000u;
    case R_SDWA:
    case R_DPP: {
        static const uint32_t pre[3] = { 0x7e000000u, 0x7c000000u, 0 };
        unsigned k = rnd() % 3;
        w = (w & 0x01fffe00u) | pre[k];
        if (k == 2)
            w |= (rnd() % 62) << 25;
        return w | (kind == R_SDWA ? 0xf9u : 0xfau);
    }
    case R_VOP3:
        w = (w & 0x03ffffffu) | 0xd0000000u;
        if (((w >> 23) & 7) == 7)
            w ^= 1u << 25;
        return w;
    case R_VOP3P: return (w & 0x007fffffu) | 0xd3800000u;
    case R_DS: return (w & 0x03ffffffu) | 0xd8000000u;
    case R_FLAT: return (w & 0x03ffffffu) | 0xdc000000u;
    case R_MUBUF: return (w & 0x03ffffffu) | 0xe0000000u;
    default: return w;
    }
}

/* SDWA words with a select of 7 (reserved): llvm-objdump 14 crashes on
 * them, so they are not shown to it; kiln must refuse them. */
static bool sdwa_sel7(const uint32_t *w)
{
    if ((w[0] >> 31) || (w[0] & 0x1ff) != 0xf9)
        return false;
    bool vop1 = (w[0] >> 25) == 0x3f, vopc = (w[0] >> 25) == 0x3e;
    unsigned op1 = (w[0] >> 9) & 0xff;
    if (vop1 && (op1 == 0 || op1 == 53 || op1 == 81))
        return false; /* v_nop, v_clrexcp, v_swap_b32: no SDWA form, read as plain */
    return (!vopc && ((w[1] >> 8) & 7) == 7) || ((w[1] >> 16) & 7) == 7 ||
           (!vop1 && ((w[1] >> 24) & 7) == 7);
}

/* Whether the slot's first dword is of an encoding set aside: the
 * families kiln does not decode, and MUBUF opcode 113, which LLVM 14 reads
 * as a second buffer_wbinvl1 though the Vega ISA has no such opcode. */
static bool set_aside(uint32_t w)
{
    if ((w >> 26) == 0x38 && ((w >> 18) & 0x7f) == 113)
        return true;
    const char *e = wave_encoding_name(w);
    if (!strcmp(e, "MIMG") || !strcmp(e, "MTBUF") || !strcmp(e, "EXP") || !strcmp(e, "VINTRP"))
        return true;
    /* the interpolation ops in the VOP3 encoding belong to VINTRP */
    if ((w >> 26) == 0x34 && ((w >> 23) & 7) != 7) {
        unsigned opc = (w >> 16) & 0x3ff;
        return opc >= 0x270 && opc <= 0x277;
    }
    return false;
}

/* The instruction of len dwords at w decodes the same from a buffer that
 * holds exactly it, and from one a dword shorter fails naming the end, or
 * (v_nop, v_clrexcp, v_swap_b32 whose DPP dword is cut off) decodes as a
 * shorter plain instruction; under ASan a read past either is caught. */
static bool bounds_hold(const uint32_t *w, unsigned len)
{
    struct wave_instr a, b;
    uint32_t *exact = malloc(len * sizeof *exact);
    if (!exact)
        return false;
    memcpy(exact, w, len * sizeof *exact);
    bool ok = wave_decode(exact, len, 0, &a) == (int)len && wave_decode(w, SLOT, 0, &b) == (int)len &&
              memcmp(&a, &b, sizeof a) == 0;
    if (len > 1) {
        memmove(exact, w, (len - 1) * sizeof *exact);
        int r = wave_decode(exact, len - 1, 0, &a);
        ok = ok && (r < 0 ? strstr(kiln_last_error(), "past the end") != NULL : r < (int)len);
    }
    free(exact);
    return ok;
}

TEST(random_words)
{
    uint64_t count = env_u64("KILN_DECODE_RANDOM", 20000);
    rng_state = env_u64("KILN_DECODE_SEED", 0x9e3779b97f4a7c15ull) | 1;
    const size_t batch = 100000;
    uint32_t *w = malloc(batch * SLOT * sizeof *w);
    struct verdict *v = malloc(batch * sizeof *v);
    REQUIRE(w && v);
    uint64_t agree[R_KINDS] = { 0 }, agree_valid[R_KINDS] = { 0 }, differ[R_KINDS] = { 0 },
             aside[R_KINDS] = { 0 }, crashed[R_KINDS] = { 0 }, flagged[R_KINDS] = { 0 }, sel7[R_KINDS] = { 0 },
             text_differ[R_KINDS] = { 0 };
    uint64_t done = 0;
    unsigned kinds[100000];
    while (done < count) {
        size_t n = (size_t)KILN_MIN((uint64_t)batch, count - done);
        for (size_t i = 0; i < n; i++) {
            unsigned kind = (unsigned)(rnd() % R_KINDS);
            kinds[i] = kind;
            uint32_t *s = &w[i * SLOT];
            if (kind == R_MUTANT && nforms) {
                memcpy(s, forms[rnd() % nforms].w, SLOT * sizeof *s);
                unsigned flips = 1 + rnd() % 3;
                for (unsigned f = 0; f < flips; f++) {
                    unsigned bit = rnd() % 64;
                    s[bit / 32] ^= 1u << (bit % 32);
                }
                continue;
            }
            s[0] = random_first(kind);
            s[1] = rnd();
            s[2] = rnd();
            s[3] = NOP;
        }
        /* the words LLVM crashes on go to it as s_nop; kiln sees them */
        static uint32_t shown_w[100000 * SLOT];
        memcpy(shown_w, w, n * SLOT * sizeof *w);
        for (size_t i = 0; i < n; i++)
            if (sdwa_sel7(&w[i * SLOT]))
                shown_w[i * SLOT] = shown_w[i * SLOT + 1] = NOP;
        REQUIRE(llvm_verdicts(shown_w, n, v));
        for (size_t i = 0; i < n; i++) {
            uint32_t *s = &w[i * SLOT];
            unsigned kind = kinds[i];
            if (set_aside(s[0])) {
                aside[kind]++;
                continue;
            }
            struct wave_instr in;
            int k = kiln_len(s, &in);
            if (k > 0 && !bounds_hold(s, (unsigned)k)) {
                differ[kind]++;
                report("decoded otherwise from a buffer that ends with it", s, "", "");
            }
            if (sdwa_sel7(s)) {
                sel7[kind]++;
                if (k) {
                    differ[kind]++;
                    report("SDWA select 7 decoded by kiln", s, "(not shown to LLVM)", "");
                }
                continue;
            }
            if (v[i].crashed) {
                if (crashed[kind]++ < 2)
                    printf("  note: llvm-objdump crashed on %08" PRIx32 " %08" PRIx32 " %08" PRIx32
                           " (kiln: %s)\n", s[0], s[1], s[2], k ? "decodes" : "refuses");
                continue;
            }
            /* LLVM decodes a few words while marking an operand invalid
             * (its text says "invalid immediate"): kiln must refuse those */
            if (v[i].valid && strstr(v[i].text, "invalid")) {
                if (k == 0) {
                    flagged[kind]++;
                    continue;
                }
            }
            bool same = (k > 0) == v[i].valid && (k == 0 || (unsigned)k == v[i].len);
            if (same) {
                agree[kind]++;
                agree_valid[kind] += k > 0;
                if (k > 0) {
                    char kt[320], kn[400], ln[400];
                    wave_print(&in, kt, sizeof kt);
                    normalize(kt, kn, sizeof kn);
                    normalize(v[i].text, ln, sizeof ln);
                    if (strcmp(kn, ln) != 0) {
                        text_differ[kind]++;
                        report("text differs", s, v[i].text, kt);
                    }
                }
            } else {
                differ[kind]++;
                char kt[320];
                if (k)
                    wave_print(&in, kt, sizeof kt);
                else
                    snprintf(kt, sizeof kt, "error: %s", kiln_last_error());
                report(kind_names[kind], s, v[i].text, kt);
            }
        }
        done += n;
    }
    uint64_t ta = 0, tv = 0, td = 0, ts = 0, tc = 0, tf = 0, t7 = 0, tt = 0;
    printf("random: %" PRIu64 " slots\n", count);
    for (unsigned k = 0; k < R_KINDS; k++) {
        printf("  %-6s agreed %" PRIu64 " (%" PRIu64 " decoding), disagreed %" PRIu64
               ", set aside %" PRIu64 ", LLVM crashed %" PRIu64 ", LLVM marks invalid %" PRIu64
               ", SDWA select 7 %" PRIu64 "\n",
               kind_names[k], agree[k], agree_valid[k], differ[k], aside[k], crashed[k], flagged[k],
               sel7[k]);
        tf += flagged[k];
        t7 += sel7[k];
        tt += text_differ[k];
        ta += agree[k];
        tv += agree_valid[k];
        td += differ[k];
        ts += aside[k];
        tc += crashed[k];
    }
    printf("  total  agreed %" PRIu64 " (%" PRIu64 " decoding), disagreed %" PRIu64
           ", set aside %" PRIu64 ", LLVM crashed %" PRIu64 ", LLVM marks invalid %" PRIu64
           ", SDWA select 7 %" PRIu64 "\n", ta, tv, td, ts, tc, tf, t7);
    printf("  of those decoding, %" PRIu64 " printed otherwise than LLVM\n", tt);
    CHECK_EQ(tt, 0);
    CHECK_EQ(td, 0);
    free(w);
    free(v);
}

/* The decoder's own contract, without LLVM: bounds, errors naming the
 * offset and the dwords. */
TEST(errors_name_offset_and_dwords)
{
    struct wave_instr in;
    /* s_mov_b32 s0, literal with the literal missing */
    uint32_t lit[2] = { 0xbf800000u, 0xbe8000ffu };
    CHECK(wave_decode(lit, 2, 4, &in) < 0);
    CHECK_MSG("byte offset 0x4");
    CHECK_MSG("0xbe8000ff");
    /* an unknown SOPP opcode */
    uint32_t sopp = 0xbfff0000u;
    CHECK(wave_decode(&sopp, 1, 0, &in) < 0);
    CHECK_MSG("SOPP opcode 127");
    /* a VOP3 word at the end of the buffer */
    uint32_t vop3 = 0xd1010000u;
    CHECK(wave_decode(&vop3, 1, 0, &in) < 0);
    CHECK_MSG("past the end");
    /* MIMG is refused by name */
    uint32_t mimg[2] = { 0xf0000000u, 0 };
    CHECK(wave_decode(mimg, 2, 0, &in) < 0);
    CHECK_MSG("MIMG");
    /* misaligned and past the end */
    CHECK(wave_decode(mimg, 2, 2, &in) < 0);
    CHECK_MSG("multiple of 4");
    CHECK(wave_decode(mimg, 2, 8, &in) < 0);
    CHECK_MSG("past the code");
    /* a good one: v_add_f32_e32 v0, 1.0, v1 */
    uint32_t add = 0x020002f2u;
    CHECK_EQ(wave_decode(&add, 1, 0, &in), 1);
    CHECK_EQ(in.op, WAVE_OP_V_ADD_F32);
    CHECK_EQ(in.src[0].kind, WAVE_OPND_CONST);
    CHECK_EQ(wave_const_bits(in.src[0].value, 32), 0x3f800000);
    char t[64];
    wave_print(&in, t, sizeof t);
    CHECK(strcmp(t, "v_add_f32_e32 v0, 1.0, v1") == 0);
    /* the printer never writes past its buffer and reports the full length */
    char small[8];
    size_t need = wave_print(&in, small, sizeof small);
    CHECK_EQ(need, strlen(t));
    CHECK_EQ(strlen(small), sizeof small - 1);
    /* exec and vcc are scalar registers at their codes */
    uint32_t andexec = 0x86fe6a7eu; /* s_and_b64 exec, exec, vcc */
    CHECK_EQ(wave_decode(&andexec, 1, 0, &in), 1);
    CHECK_EQ(in.dst[0].kind, WAVE_OPND_SGPR);
    CHECK_EQ(in.dst[0].reg, WAVE_SREG_EXEC_LO);
    CHECK_EQ(in.dst[0].count, 2);
    CHECK_EQ(in.src[1].reg, WAVE_SREG_VCC_LO);
}

/* Code as clang emits it: a kernel with loops, divergent branches, LDS and
 * a barrier, 64-bit arithmetic, float math, conversions and an atomic,
 * compiled for gfx900; every instruction llvm-objdump lists decodes in
 * kiln to the same length and text. Skipped where clang lacks the target. */
static const char kernel_src[] =
    "__kernel void mix(__global float *out, __global int *in, __global ulong *big,\n"
    "                  __global double *d, int n, float s) {\n"
    "    __local float tile[64];\n"
    "    uint gid = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();\n"
    "    uint lid = __builtin_amdgcn_workitem_id_x();\n"
    "    float acc = 0.0f;\n"
    "    for (int i = 0; i < n; i++) {\n"
    "        int v = in[(gid + i) % 1024];\n"
    "        if (v & 1) acc += (float)v * s;\n"
    "        else acc -= sqrt((float)(v & 255)) / (s + 1.0f);\n"
    "        if (v < 0) break;\n"
    "    }\n"
    "    tile[lid] = acc;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    acc += tile[63 - lid];\n"
    "    big[gid] = (ulong)gid * 0x100000001ul + (ulong)(long)acc + (big[gid] >> 3);\n"
    "    d[gid] = d[gid] * 1.5 + (double)acc;\n"
    "    atomic_add(in + (gid & 7), (int)acc);\n"
    "    out[gid] = acc > 0 ? fmin(acc, 3.0f) : (float)(short)acc;\n"
    "}\n"
    "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    "__kernel void halves(__global half *a, __global half2 *b, __global short *c,\n"
    "                     __global uchar *u, float s) {\n"
    "    uint gid = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();\n"
    "    half x = a[gid];\n"
    "    half2 y = b[gid];\n"
    "    y = y * (half2)(x, (half)s) + y.yx;\n"
    "    b[gid] = fma(y, y, (half2)(1.0h, 2.0h));\n"
    "    c[gid] = (short)(c[gid] * 3 + (short)x) >> 1;\n"
    "    u[gid] = (uchar)((u[gid] >> 2) | (u[gid + 1] << 3));\n"
    "    a[gid] = max(x, (half)s) * (half)0.5f;\n"
    "}\n";

/* Compiles kernel_src at opt (-O2, and -O0 whose private arrays go to
 * scratch) and checks every instruction; returns the count, 0 where clang
 * cannot compile for amdgcn. */
static unsigned check_kernel(const char *opt, unsigned *bad_out)
{
    char cl[300], obj[300], dis[300], cmd[1400];
    snprintf(cl, sizeof cl, "%s/k.cl", tmpdir);
    snprintf(obj, sizeof obj, "%s/k.o", tmpdir);
    snprintf(dis, sizeof dis, "%s/k.txt", tmpdir);
    FILE *f = fopen(cl, "w");
    if (!f)
        return 0;
    fputs(kernel_src, f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "clang -x cl -target amdgcn-amd-amdhsa -mcpu=gfx900 -nogpulib %s -c %s -o %s 2>/dev/null",
             opt, cl, obj);
    if (!run(cmd))
        return 0;
    snprintf(cmd, sizeof cmd, "%s -d --mcpu=gfx900 %s > %s", objdump, obj, dis);
    char *text = run(cmd) ? read_file_all(dis, NULL) : NULL;
    if (!text)
        return 0;
    unsigned count = 0, bad = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *mark = strstr(line, "// ");
        char *colon = mark ? strchr(mark, ':') : NULL;
        if (!colon)
            continue;
        uint32_t w[SLOT] = { NOP, NOP, NOP, NOP };
        unsigned n = 0;
        for (char *p = colon + 1; *p == ' ' && n < 3;) {
            char *end;
            unsigned long v = strtoul(p + 1, &end, 16);
            if (end - (p + 1) != 8)
                break;
            w[n++] = (uint32_t)v;
            p = end;
        }
        *mark = 0;
        struct wave_instr in;
        char kt[320], kn[400], ln[400];
        int k = wave_decode(w, n, 0, &in);
        if (k > 0)
            wave_print(&in, kt, sizeof kt);
        else
            snprintf(kt, sizeof kt, "error: %s", kiln_last_error());
        normalize(kt, kn, sizeof kn);
        normalize(line, ln, sizeof ln);
        count++;
        if (k != (int)n || strcmp(kn, ln) != 0) {
            bad++;
            report("compiled kernel", w, line, kt);
        }
    }
    free(text);
    *bad_out = bad;
    return count;
}

TEST(compiled_kernel)
{
    unsigned bad2 = 0, bad0 = 0;
    unsigned n2 = check_kernel("-O2", &bad2), n0 = check_kernel("-O0", &bad0);
    if (!n2 && !n0) {
        printf("  (clang cannot compile for amdgcn here: no compiled kernel is checked)\n");
        return;
    }
    printf("compiled kernels: %u instructions at -O2, %u at -O0; %u and %u differ from llvm-objdump\n",
           n2, n0, bad2, bad0);
    CHECK(n2 > 50 && n0 > 50);
    CHECK_EQ(bad2 + bad0, 0);
}

/* The IR's shapes that the interpreter reads, for a few instructions
 * (their words as llvm-mc -show-encoding gives them). */
#define OPND(o, k, r, c)                                                                           \
    do {                                                                                           \
        CHECK_EQ((o).kind, (k));                                                                   \
        CHECK_EQ((o).reg, (r));                                                                    \
        CHECK_EQ((o).count, (c));                                                                  \
    } while (0)
TEST(ir_shapes)
{
    struct wave_instr in;
    /* v_addc_co_u32_e32 v1, vcc, v2, v3, vcc: vcc made explicit */
    uint32_t addc[] = { 0x38020702u };
    REQUIRE(wave_decode(addc, 1, 0, &in) == 1);
    CHECK_EQ(in.op, WAVE_OP_V_ADDC_CO_U32);
    CHECK_EQ(in.enc, WAVE_ENC_NATIVE);
    OPND(in.dst[0], WAVE_OPND_VGPR, 1, 1);
    OPND(in.dst[1], WAVE_OPND_SGPR, WAVE_SREG_VCC_LO, 2);
    OPND(in.src[0], WAVE_OPND_VGPR, 2, 1);
    OPND(in.src[1], WAVE_OPND_VGPR, 3, 1);
    OPND(in.src[2], WAVE_OPND_SGPR, WAVE_SREG_VCC_LO, 2);
    /* v_addc_co_u32_e64 v1, s[4:5], v2, v3, s[6:7] */
    uint32_t addc3[] = { 0xd11c0401u, 0x001a0702u };
    REQUIRE(wave_decode(addc3, 2, 0, &in) == 2);
    CHECK_EQ(in.op, WAVE_OP_V_ADDC_CO_U32);
    CHECK_EQ(in.enc, WAVE_ENC_VOP3);
    OPND(in.dst[1], WAVE_OPND_SGPR, 4, 2);
    OPND(in.src[2], WAVE_OPND_SGPR, 6, 2);
    /* global_load_dword v1, v2, s[4:5] offset:-8 */
    uint32_t gl[] = { 0xdc509ff8u, 0x01040002u };
    REQUIRE(wave_decode(gl, 2, 0, &in) == 2);
    CHECK_EQ(in.op, WAVE_OP_GLOBAL_LOAD_DWORD);
    OPND(in.dst[0], WAVE_OPND_VGPR, 1, 1);
    OPND(in.src[0], WAVE_OPND_VGPR, 2, 1);
    OPND(in.src[1], WAVE_OPND_SGPR, 4, 2);
    CHECK_EQ(in.mods.offset, -8);
    /* global_load_dwordx2 v[1:2], v[2:3], off */
    uint32_t gl2[] = { 0xdc548000u, 0x017f0002u };
    REQUIRE(wave_decode(gl2, 2, 0, &in) == 2);
    OPND(in.dst[0], WAVE_OPND_VGPR, 1, 2);
    OPND(in.src[0], WAVE_OPND_VGPR, 2, 2);
    CHECK_EQ(in.src[1].kind, WAVE_OPND_NONE);
    /* ds_write2_b32 v1, v2, v3 offset0:4 offset1:8 */
    uint32_t ds[] = { 0xd81c0804u, 0x00030201u };
    REQUIRE(wave_decode(ds, 2, 0, &in) == 2);
    CHECK_EQ(in.op, WAVE_OP_DS_WRITE2_B32);
    OPND(in.src[0], WAVE_OPND_VGPR, 1, 1);
    OPND(in.src[1], WAVE_OPND_VGPR, 2, 1);
    OPND(in.src[2], WAVE_OPND_VGPR, 3, 1);
    CHECK_EQ(in.mods.offset0, 4);
    CHECK_EQ(in.mods.offset1, 8);
    /* v_mac_f32_e32 v1, v2, v3: the accumulator is src[2] */
    uint32_t mac[] = { 0x2c020702u };
    REQUIRE(wave_decode(mac, 1, 0, &in) == 1);
    OPND(in.src[2], WAVE_OPND_VGPR, 1, 1);
    /* v_cmp_lt_f32_e64 s[4:5], -v1, |v2| */
    uint32_t cmp[] = { 0xd0410204u, 0x20020501u };
    REQUIRE(wave_decode(cmp, 2, 0, &in) == 2);
    CHECK_EQ(in.op, WAVE_OP_V_CMP_LT_F32);
    CHECK_EQ(in.dst[0].kind, WAVE_OPND_NONE);
    OPND(in.dst[1], WAVE_OPND_SGPR, 4, 2);
    CHECK_EQ(in.mods.neg, 1);
    CHECK_EQ(in.mods.abs, 2);
    /* buffer_load_dword v1, v2, s[4:7], s8 offen offset:16 */
    uint32_t buf[] = { 0xe0501010u, 0x08010102u };
    REQUIRE(wave_decode(buf, 2, 0, &in) == 2);
    OPND(in.dst[0], WAVE_OPND_VGPR, 1, 1);
    OPND(in.src[0], WAVE_OPND_VGPR, 2, 1);
    OPND(in.src[1], WAVE_OPND_SGPR, 4, 4);
    OPND(in.src[2], WAVE_OPND_SGPR, 8, 1);
    CHECK_EQ(in.mods.offen, 1);
    CHECK_EQ(in.mods.offset, 16);
    /* s_load_dwordx4 s[4:7], s[2:3], 0x10 */
    uint32_t sl[] = { 0xc00a0101u, 0x00000010u };
    REQUIRE(wave_decode(sl, 2, 0, &in) == 2);
    OPND(in.dst[0], WAVE_OPND_SGPR, 4, 4);
    OPND(in.src[0], WAVE_OPND_SGPR, 2, 2);
    CHECK_EQ(in.src[1].kind, WAVE_OPND_IMM);
    CHECK_EQ(in.src[1].value, 16);
    /* v_mov_b32_sdwa v1, v2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_0 */
    uint32_t sdwa[] = { 0x7e0202f9u, 0x00001502u };
    REQUIRE(wave_decode(sdwa, 2, 0, &in) == 2);
    CHECK_EQ(in.enc, WAVE_ENC_SDWA);
    CHECK_EQ(in.mods.dst_sel, 5);
    CHECK_EQ(in.mods.dst_unused, 2);
    CHECK_EQ(in.mods.src_sel[0], 0);
    /* v_mov_b32_dpp v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf */
    uint32_t dpp[] = { 0x7e0202fau, 0xff011102u };
    REQUIRE(wave_decode(dpp, 2, 0, &in) == 2);
    CHECK_EQ(in.enc, WAVE_ENC_DPP);
    CHECK_EQ(in.mods.dpp_ctrl, 0x111);
    OPND(in.src[0], WAVE_OPND_VGPR, 2, 1);
    /* s_cbranch_scc0 -3: the offset sign-extended, in dwords */
    uint32_t br[] = { 0xbf84fffdu };
    REQUIRE(wave_decode(br, 1, 0, &in) == 1);
    CHECK_EQ((int32_t)in.src[0].value, -3);
    /* v_fma_f32 v1, v2, 0.5, s3 clamp mul:2 */
    uint32_t fma[] = { 0xd1cb8001u, 0x080de102u };
    REQUIRE(wave_decode(fma, 2, 0, &in) == 2);
    CHECK_EQ(in.src[1].kind, WAVE_OPND_CONST);
    CHECK_EQ(wave_const_bits(in.src[1].value, 32), 0x3f000000);
    CHECK_EQ(wave_const_bits(in.src[1].value, 64), 0x3fe0000000000000ll);
    OPND(in.src[2], WAVE_OPND_SGPR, 3, 1);
    CHECK_EQ(in.mods.clamp, 1);
    CHECK_EQ(in.mods.omod, 1);
    /* every op's info names it back */
    for (unsigned op = 1; op < WAVE_OP_COUNT; op++)
        CHECK(wave_op_info(op) && strcmp(wave_op_name(op), wave_op_info(op)->name) == 0);
    CHECK(wave_op_info(0) == NULL && wave_op_info(WAVE_OP_COUNT) == NULL);
}

int main(void)
{
    show_max = (unsigned)env_u64("KILN_DECODE_SHOW", 40);
    RUN(errors_name_offset_and_dwords);
    RUN(ir_shapes);
    const char *e = getenv("KILN_LLVM_MC");
    if (e && *e)
        mc = e;
    e = getenv("KILN_LLVM_OBJDUMP");
    if (e && *e)
        objdump = e;
    if (!llvm_has_amdgcn()) {
        printf("SKIP: %s lacks the amdgcn target (or %s is missing); the differential tests "
               "against LLVM did not run\n", mc, objdump);
        return test_failed_ ? 1 : SKIP;
    }
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/kiln-decode-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp %s: %s\n", tmpdir, strerror(errno));
        return 1;
    }
    make_forms();
    RUN(every_form);
    RUN(compiled_kernel);
    RUN(random_words);
    free(forms);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    run(cmd);
    return test_failed_ ? 1 : 0;
}
