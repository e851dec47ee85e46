/* SPDX-License-Identifier: MIT */
/*
 * wavefront_gen.c: the Wavefront level's translator, a kernel's IR to one
 * GLSL compute program (wavefront.h gives the model). One pass serves both
 * the check and the translation: with no output it only decides, for each
 * instruction, whether it translates, and the first that does not is the
 * check's answer, named with its image offset and the reason.
 *
 * Every operation's meaning is the reference interpreter's (interp_*.c),
 * written again in GLSL on 32-bit halves: the two must agree bit for bit,
 * and the level is judged by that (tests/wave/test_wavefront.c).
 */
#include "wave/wavefront.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/cfg.h"
#include "wave/decode.h"
#include "wave/interp_private.h"
#include "wave/ir.h"

/* The GLSL every program starts with, after its #version and constants:
 * the buffers, the wave's state and the helpers the instructions call. */
static const char prelude[] =
    "layout(std430, binding = 0) buffer Arena { uint mem[]; };\n"
    "layout(std430, binding = 1) readonly buffer Regions { uvec4 rg[]; };\n"
    "layout(std430, binding = 2) buffer Written { uint wr[]; };\n"
    "layout(std430, binding = 3) readonly buffer Init { uint ini[]; };\n"
    "layout(std430, binding = 4) buffer Out { uint outw[]; };\n"
    "#if LDS_WORDS > 0\n"
    "shared uint lds[LDS_WORDS];\n"
    "#endif\n"
    "#if GROUP_SYNC\n"
    "shared uint nwait;\n"
    "#endif\n"
    "uint s[128];\n"
    "uint v[VFILE];\n"
    "uint ln;\n"
    "#if LOCKSTEP\n"
    /* a wave's lanes as one: every lane runs every instruction (the
     * workgroup is the wave), and what crosses lanes goes through shared
     * memory between barriers, always reached by the whole wave */
    "shared uint xw[64], xa[64], red[2];\n"
    "uvec2 wave_or2(uint a, uint b)\n"
    "{\n"
    "    barrier();\n"
    "    if (ln == 0u) { red[0] = 0u; red[1] = 0u; }\n"
    "    barrier();\n"
    "    if (a != 0u) atomicOr(red[0], a);\n"
    "    if (b != 0u) atomicOr(red[1], b);\n"
    "    barrier();\n"
    "    return uvec2(red[0], red[1]);\n"
    "}\n"
    "uint wave_max(uint a) { barrier(); if (ln == 0u) red[0] = 0u; barrier(); atomicMax(red[0], a); barrier(); return red[0]; }\n"
    "uint lane_read(uint x, uint from) { barrier(); xw[ln] = x; barrier(); return xw[from & 63u]; }\n"
    "#endif\n"
    "bool scc;\n"
    "uint st, fpc, fal, fah, flane;\n"
    "uint pc;\n"
    "\n"
    "bool bitl(uint lo, uint hi, uint l) { return ((((l < 32u) ? lo : hi) >> (l & 31u)) & 1u) != 0u; }\n"
    "void setl(inout uint lo, inout uint hi, uint l, bool f)\n"
    "{\n"
    "    uint m = f ? (1u << (l & 31u)) : 0u;\n"
    "    lo |= (l < 32u) ? m : 0u;\n"
    "    hi |= (l >= 32u) ? m : 0u;\n"
    "}\n"
    "void fault(uint code, uint lo, uint hi, uint lane)\n"
    "{\n"
    "    if (st == 0u) { st = code; fpc = pc; fal = lo; fah = hi; flane = lane; }\n"
    "}\n"
    /* Memory: the region holding n bytes at (lo, hi), as the reference's
     * map (interp.h); its arena byte in b, its written-bitmap base in wb
     * (bit 31 clear: not writable). */
    "bool reach(uint lo, uint hi, uint n, bool w, uint lane, out uint b, out uint wb)\n"
    "{\n"
    "    b = 0u; wb = 0u;\n"
    "    for (uint i = 0u; i < REGIONS; i++) {\n"
    "        uvec4 r = rg[i];\n"
    "        if (r.x == hi && lo < r.z && n <= r.z - lo && (!w || (r.w & 0x80000000u) != 0u)) {\n"
    "            b = r.y + lo; wb = r.w & 0x7fffffffu; return true;\n"
    "        }\n"
    "    }\n"
    "    fault(2u, lo, hi, lane);\n"
    "    return false;\n"
    "}\n"
    "void mark(uint wb, uint lo, uint n)\n"
    "{\n"
    "    for (uint k = 0u; k < n; k++) { uint o = lo + k; atomicOr(wr[wb + (o >> 5u)], 1u << (o & 31u)); }\n"
    "}\n"
    "uint ldb(uint b) { return (mem[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu; }\n"
    "void stb(uint b, uint x)\n"
    "{\n"
    "    uint sh = (b & 3u) * 8u;\n"
    "    atomicAnd(mem[b >> 2u], ~(0xffu << sh));\n"
    "    atomicOr(mem[b >> 2u], (x & 0xffu) << sh);\n"
    "}\n"
    "uint ldn(uint lo, uint hi, uint n, uint lane)\n"
    "{\n"
    "    uint b, wb;\n"
    "    if (!reach(lo, hi, n, false, lane, b, wb)) return 0u;\n"
    "    if (n == 4u && (b & 3u) == 0u) return mem[b >> 2u];\n"
    "    uint x = 0u;\n"
    "    for (uint k = 0u; k < n; k++) x |= ldb(b + k) << (8u * k);\n"
    "    return x;\n"
    "}\n"
    "void stn(uint lo, uint hi, uint n, uint x, uint lane)\n"
    "{\n"
    "    uint b, wb;\n"
    "    if (!reach(lo, hi, n, true, lane, b, wb)) return;\n"
    "    if (n == 4u && (b & 3u) == 0u) mem[b >> 2u] = x;\n"
    "    else for (uint k = 0u; k < n; k++) stb(b + k, x >> (8u * k));\n"
    "    mark(wb, lo, n);\n"
    "}\n"
    /* (lo, hi) + off, off a signed or unsigned 32-bit offset */
    "uvec2 adds(uint lo, uint hi, uint off)\n"
    "{\n"
    "    uint c; uint r = uaddCarry(lo, off, c);\n"
    "    return uvec2(r, hi + c - (((off >> 31u) != 0u) ? 1u : 0u));\n"
    "}\n"
    "uvec2 addu(uint lo, uint hi, uint off) { uint c; uint r = uaddCarry(lo, off, c); return uvec2(r, hi + c); }\n"
    "#if LDS_WORDS > 0\n"
    "bool lreach(uint a, uint n, uint lane)\n"
    "{\n"
    "    if (a < LDS_BYTES && n <= LDS_BYTES - a) return true;\n"
    "    fault(5u, a, 0u, lane);\n"
    "    return false;\n"
    "}\n"
    "uint lldn(uint a, uint n, uint lane)\n"
    "{\n"
    "    if (!lreach(a, n, lane)) return 0u;\n"
    "    if (n == 4u && (a & 3u) == 0u) return lds[a >> 2u];\n"
    "    uint x = 0u;\n"
    "    for (uint k = 0u; k < n; k++) x |= ((lds[(a + k) >> 2u] >> (((a + k) & 3u) * 8u)) & 0xffu) << (8u * k);\n"
    "    return x;\n"
    "}\n"
    "void lstn(uint a, uint n, uint x, uint lane)\n"
    "{\n"
    "    if (!lreach(a, n, lane)) return;\n"
    "    if (n == 4u && (a & 3u) == 0u) { lds[a >> 2u] = x; return; }\n"
    "    for (uint k = 0u; k < n; k++) {\n"
    "        uint b = a + k, sh = (b & 3u) * 8u;\n"
    "        atomicAnd(lds[b >> 2u], ~(0xffu << sh));\n"
    "        atomicOr(lds[b >> 2u], ((x >> (8u * k)) & 0xffu) << sh);\n"
    "    }\n"
    "}\n"
    "#endif\n"
    /* Integer adds and subtracts, with VOP3's clamp (saturating). */
    "uint add_u(uint a, uint b, bool cl) { uint c; uint r = uaddCarry(a, b, c); return (cl && c != 0u) ? 0xffffffffu : r; }\n"
    "uint sub_u(uint a, uint b, bool cl) { uint w; uint r = usubBorrow(a, b, w); return (cl && w != 0u) ? 0u : r; }\n"
    "uint sat_i(uint a, uint r, bool ov, bool cl) { return (cl && ov) ? (((a >> 31u) != 0u) ? 0x80000000u : 0x7fffffffu) : r; }\n"
    "uint add_i(uint a, uint b, bool cl) { uint r = a + b; return sat_i(a, r, (((a ^ r) & (b ^ r)) >> 31u) != 0u, cl); }\n"
    "uint sub_i(uint a, uint b, bool cl) { uint r = a - b; return sat_i(a, r, (((a ^ b) & (a ^ r)) >> 31u) != 0u, cl); }\n"
    /* 16-bit adds and subtracts of the low halves: wrapped, or saturated
     * to the type's range by clamp */
    "uint addsub16(uint a, uint b, bool sub, bool sgn, bool cl)\n"
    "{\n"
    "    int x = sgn ? (int(a << 16u) >> 16) : int(a & 0xffffu), y = sgn ? (int(b << 16u) >> 16) : int(b & 0xffffu);\n"
    "    int r = sub ? x - y : x + y;\n"
    "    if (cl) r = sgn ? clamp(r, -32768, 32767) : clamp(r, 0, 65535);\n"
    "    return uint(r) & 0xffffu;\n"
    "}\n"
    "uint bfe_u(uint a, uint off, uint w)\n"
    "{\n"
    "    off &= 31u; w &= 31u;\n"
    "    return w == 0u ? 0u : (a >> off) & ((1u << w) - 1u);\n"
    "}\n"
    "uint bfe_i(uint a, uint off, uint w)\n"
    "{\n"
    "    off &= 31u; w &= 31u;\n"
    "    if (w == 0u) return 0u;\n"
    "    return uint(int((a >> off) << (32u - w)) >> (32u - w));\n"
    "}\n"
    "uint alignbit(uint a, uint b, uint c) { uint k = c & 31u; return k == 0u ? b : (b >> k) | (a << (32u - k)); }\n"
    "uvec2 shl64(uint lo, uint hi, uint k)\n"
    "{\n"
    "    k &= 63u;\n"
    "    if (k == 0u) return uvec2(lo, hi);\n"
    "    if (k >= 32u) return uvec2(0u, lo << (k - 32u));\n"
    "    return uvec2(lo << k, (hi << k) | (lo >> (32u - k)));\n"
    "}\n"
    "uvec2 shr64(uint lo, uint hi, uint k)\n"
    "{\n"
    "    k &= 63u;\n"
    "    if (k == 0u) return uvec2(lo, hi);\n"
    "    if (k >= 32u) return uvec2(hi >> (k - 32u), 0u);\n"
    "    return uvec2((lo >> k) | (hi << (32u - k)), hi >> k);\n"
    "}\n"
    "uvec2 sar64(uint lo, uint hi, uint k)\n"
    "{\n"
    "    k &= 63u;\n"
    "    uint sgn = ((hi >> 31u) != 0u) ? 0xffffffffu : 0u;\n"
    "    if (k == 0u) return uvec2(lo, hi);\n"
    "    if (k >= 32u) return uvec2(uint(int(hi) >> (k - 32u)), sgn);\n"
    "    return uvec2((lo >> k) | (hi << (32u - k)), uint(int(hi) >> k));\n"
    "}\n"
    "bool ult64(uint al, uint ah, uint bl, uint bh) { return ah < bh || (ah == bh && al < bl); }\n"
    "bool slt64(uint al, uint ah, uint bl, uint bh) { return int(ah) < int(bh) || (ah == bh && al < bl); }\n"
    "uint mulhi_u(uint a, uint b) { uint h, l; umulExtended(a, b, h, l); return h; }\n"
    "uint mulhi_i(uint a, uint b) { int h, l; imulExtended(int(a), int(b), h, l); return uint(h); }\n"
    "uint sx24(uint a) { return uint(int(a << 8u) >> 8); }\n"
    "uvec2 mad64(uint a, uint b, uint cl, uint ch, out bool f)\n"
    "{\n"
    "    uint h, l, c1, c2, c3;\n"
    "    umulExtended(a, b, h, l);\n"
    "    uint rl = uaddCarry(l, cl, c1);\n"
    "    uint rh = uaddCarry(h, ch, c2);\n"
    "    rh = uaddCarry(rh, c1, c3);\n"
    "    f = (c2 | c3) != 0u;\n"
    "    return uvec2(rl, rh);\n"
    "}\n"
    "uint ffbh(uint a) { return a == 0u ? 0xffffffffu : uint(31 - findMSB(a)); }\n"
    "uint ffbl(uint a) { return a == 0u ? 0xffffffffu : uint(findLSB(a)); }\n"
    "uint umed3(uint a, uint b, uint c) { return clamp(c, min(a, b), max(a, b)); }\n"
    "uint imed3(uint a, uint b, uint c) { return uint(clamp(int(c), min(int(a), int(b)), max(int(a), int(b)))); }\n"
    /* Floats, on their bits: NaNs judged by the bits, denormals flushed
     * to a zero of their sign as MODE.FP_DENORM says (DENORM_IN, _OUT),
     * every operation a single rounding (precise). */
    "bool fnan(uint x) { return (x & 0x7fffffffu) > 0x7f800000u; }\n"
    "bool fsnan(uint x) { return fnan(x) && (x & 0x00400000u) == 0u; }\n"
    "uint fin(uint x) { return (DENORM_IN || (x & 0x7f800000u) != 0u) ? x : (x & 0x80000000u); }\n"
    "uint fres(uint x) { return (DENORM_OUT || (x & 0x7f800000u) != 0u) ? x : (x & 0x80000000u); }\n"
    "float fv(uint x) { return uintBitsToFloat(x); }\n"
    "uint fb(float x) { return floatBitsToUint(x); }\n"
    /* a * b + c with one rounding (to nearest even), on integers: the same
     * bits on every device, denormals kept (the caller flushes as MODE
     * says). A NaN operand gives itself quieted, the first of a, b, c; an
     * invalid operation (inf * 0, inf - inf) the default NaN 0xffc00000, as
     * the reference's host computes them. */
    "uvec2 a64(uvec2 a, uvec2 b) { uint c; uint lo = uaddCarry(a.x, b.x, c); return uvec2(lo, a.y + b.y + c); }\n"
    "uvec2 s64(uvec2 a, uvec2 b) { uint w; uint lo = usubBorrow(a.x, b.x, w); return uvec2(lo, a.y - b.y - w); }\n"
    "bool l64(uvec2 a, uvec2 b) { return a.y < b.y || (a.y == b.y && a.x < b.x); }\n"
    "int msb64(uvec2 a) { return a.y != 0u ? 32 + findMSB(a.y) : findMSB(a.x); }\n"
    "uvec2 shl2(uvec2 a, uint k) { return shl64(a.x, a.y, k); }\n"
    "uvec2 shrj(uvec2 a, uint k)   /* right, the bits shifted out kept as one sticky bit */\n"
    "{\n"
    "    if (k == 0u) return a;\n"
    "    if (k >= 64u) return uvec2((a.x | a.y) != 0u ? 1u : 0u, 0u);\n"
    "    uvec2 r = shr64(a.x, a.y, k), back = shl2(r, k);\n"
    "    if (back != a) r.x |= 1u;\n"
    "    return r;\n"
    "}\n"
    "uint fround(uint sg, uvec2 m, int x);\n"
    "uint sfma(uint a, uint b, uint c)\n"
    "{\n"
    "    if (fnan(a)) return a | 0x00400000u;\n"
    "    if (fnan(b)) return b | 0x00400000u;\n"
    "    uint sp = (a ^ b) & 0x80000000u, sc = c & 0x80000000u;\n"
    "    uint ea = (a >> 23u) & 0xffu, eb = (b >> 23u) & 0xffu, ec = (c >> 23u) & 0xffu;\n"
    "    bool za = (a & 0x7fffffffu) == 0u, zb = (b & 0x7fffffffu) == 0u, zc = (c & 0x7fffffffu) == 0u;\n"
    "    bool ia = ea == 255u, ib = eb == 255u, ic = ec == 255u && !fnan(c);\n"
    "    if ((ia && zb) || (ib && za)) return 0xffc00000u;\n"
    "    if (fnan(c)) return c | 0x00400000u;\n"
    "    if (ia || ib) return (ic && sc != sp) ? 0xffc00000u : (sp | 0x7f800000u);\n"
    "    if (ic) return c;\n"
    "    if (za || zb) return zc ? ((sp == sc) ? sp : 0u) : c;\n"
    "    /* finite, the product not zero: m * 2^e exactly, e of the last bit */\n"
    "    uint ma = (a & 0x7fffffu) | (ea != 0u ? 0x800000u : 0u), mb = (b & 0x7fffffu) | (eb != 0u ? 0x800000u : 0u);\n"
    "    int xa = int(max(ea, 1u)) - 150, xb = int(max(eb, 1u)) - 150;\n"
    "    uint ph, pl;\n"
    "    umulExtended(ma, mb, ph, pl);\n"
    "    uvec2 p = uvec2(pl, ph);\n"
    "    int xp = xa + xb;\n"
    "    int sh = 61 - msb64(p);\n"
    "    p = shl2(p, uint(sh)); xp -= sh;\n"
    "    uvec2 m; int x; uint sg;\n"
    "    if (zc) { m = p; x = xp; sg = sp; }\n"
    "    else {\n"
    "        uint mc = (c & 0x7fffffu) | (ec != 0u ? 0x800000u : 0u);\n"
    "        int xc = int(max(ec, 1u)) - 150;\n"
    "        uvec2 q = uvec2(mc, 0u);\n"
    "        int shc = 61 - msb64(q);\n"
    "        q = shl2(q, uint(shc)); xc -= shc;\n"
    "        if (xp >= xc) { q = shrj(q, uint(min(xp - xc, 64))); x = xp; }\n"
    "        else { p = shrj(p, uint(min(xc - xp, 64))); x = xc; }\n"
    "        if (sp == sc) { m = a64(p, q); sg = sp; }\n"
    "        else if (!l64(p, q)) { m = s64(p, q); sg = sp; }\n"
    "        else { m = s64(q, p); sg = sc; }\n"
    "        if ((m.x | m.y) == 0u) return 0u;   /* an exact zero sum: +0 */\n"
    "    }\n"
    "    return fround(sg, m, x);\n"
    "}\n"
    /* sg | m * 2^x (m not zero) rounded to a float, to nearest even */
    "uint fround(uint sg, uvec2 m, int x)\n"
    "{\n"
    "    int top = msb64(m);\n"
    "    int be = x + top + 127;   /* the biased exponent, before rounding */\n"
    "    int k = be >= 1 ? top - 23 : top - 23 + (1 - be);\n"
    "    if (be < 1) be = 0;\n"
    "    uvec2 kept = k >= 64 ? uvec2(0u) : shr64(m.x, m.y, uint(max(k, 0)));\n"
    "    bool up = false;\n"
    "    if (k > 0) {\n"
    "        uvec2 rem = s64(m, k >= 64 ? uvec2(0u) : shl2(kept, uint(k)));\n"
    "        uvec2 hlf = k > 64 ? uvec2(0u, 0xffffffffu) : shl2(uvec2(1u, 0u), uint(k - 1));\n"
    "        up = l64(hlf, rem) || (rem == hlf && (kept.x & 1u) != 0u);\n"
    "    }\n"
    "    uint mant = kept.x + (up ? 1u : 0u);\n"
    "    if (be == 0) { if (mant >= 0x800000u) be = 1; }   /* rounded up into the normals */\n"
    "    else if (mant >= 0x1000000u) { mant >>= 1u; be++; }\n"
    "    if (be >= 255) return sg | 0x7f800000u;\n"
    "    return sg | (uint(be) << 23u) | (mant & 0x7fffffu);\n"
    "}\n"
    /* add and multiply: the device's correctly rounded result where it is
     * a normal number from normal operands; else (a denormal, a zero or a
     * NaN the device may flush or spell otherwise) the exact one */
    "bool fodd(uint x) { uint e = x & 0x7f800000u; return e == 0u || e == 0x7f800000u; }\n"
    "uint fadd(uint a, uint b)\n"
    "{\n"
    "    precise float r = fv(a) + fv(b);\n"
    "    uint rb = fb(r);\n"
    "    return (fodd(a) || fodd(b) || fodd(rb)) ? sfma(a, 0x3f800000u, b) : rb;\n"
    "}\n"
    "uint fmul(uint a, uint b)\n"
    "{\n"
    "    precise float r = fv(a) * fv(b);\n"
    "    uint rb = fb(r);\n"
    "    return (fodd(a) || fodd(b) || fodd(rb)) ? sfma(a, b, 0x80000000u) : rb;\n"
    "}\n"
    "uint ffma(uint a, uint b, uint c) { return sfma(a, b, c); }\n"
    /* v_div_fixup: num / den correctly rounded, with the special cases the
     * reference gives (its quotient: 26 bits by restoring division, the
     * remainder a sticky bit) */
    "uint fdivfix(uint den, uint num)\n"
    "{\n"
    "    if (fnan(den)) return den | 0x00400000u;\n"
    "    if (fnan(num)) return num | 0x00400000u;\n"
    "    uint sg = (den ^ num) & 0x80000000u;\n"
    "    uint ed = (den >> 23u) & 0xffu, en = (num >> 23u) & 0xffu;\n"
    "    bool zd = (den & 0x7fffffffu) == 0u, zn = (num & 0x7fffffffu) == 0u;\n"
    "    if ((zd && zn) || (ed == 255u && en == 255u)) return 0x7fc00000u;\n"
    "    if (zd || en == 255u) return sg | 0x7f800000u;\n"
    "    if (ed == 255u || zn) return sg;\n"
    "    uint md = (den & 0x7fffffu) | (ed != 0u ? 0x800000u : 0u), mn = (num & 0x7fffffu) | (en != 0u ? 0x800000u : 0u);\n"
    "    int xd = int(max(ed, 1u)), xn = int(max(en, 1u));\n"
    "    for (int i = 0; i < 23 && md < 0x800000u; i++) { md <<= 1u; xd--; }   /* a denormal normalized */\n"
    "    for (int i = 0; i < 23 && mn < 0x800000u; i++) { mn <<= 1u; xn--; }\n"
    "    int x = xn - xd;\n"
    "    if (mn < md) { mn <<= 1u; x--; }   /* mn / md in [1, 2) */\n"
    "    uint q = 0u, rem = mn;\n"
    "    for (uint i = 0u; i < 26u; i++) {\n"
    "        q <<= 1u;\n"
    "        if (rem >= md) { rem -= md; q |= 1u; }\n"
    "        rem <<= 1u;\n"
    "    }\n"
    "    /* q = floor(mn / md * 2^25); its bit 25 is the quotient's leading one */\n"
    "    return fround(sg, uvec2((q << 1u) | (rem != 0u ? 1u : 0u), 0u), x - 26);\n"
    "}\n"
    "uint fmad(uint a, uint b, uint c) { return fadd(fmul(a, b), c); }   /* two roundings, the product unflushed */\n"
    "uint fmin_m(uint a, uint b)\n"
    "{\n"
    "    if (IEEE && (fsnan(a) || fsnan(b))) return (fsnan(a) ? a : b) | 0x00400000u;\n"
    "    if (fnan(a)) return b;\n"
    "    if (fnan(b)) return a;\n"
    "    return (fv(a) < fv(b) || (fv(a) == fv(b) && (a >> 31u) != 0u)) ? a : b;\n"
    "}\n"
    "uint fmax_m(uint a, uint b)\n"
    "{\n"
    "    if (IEEE && (fsnan(a) || fsnan(b))) return (fsnan(a) ? a : b) | 0x00400000u;\n"
    "    if (fnan(a)) return b;\n"
    "    if (fnan(b)) return a;\n"
    "    return (fv(a) > fv(b) || (fv(a) == fv(b) && (a >> 31u) == 0u)) ? a : b;\n"
    "}\n"
    /* VOP3's output modifier and clamp on a float result */
    "uint fout(uint r, uint omod, bool cl)\n"
    "{\n"
    "    if (omod == 1u) r = fmul(r, 0x40000000u);\n"
    "    else if (omod == 2u) r = fmul(r, 0x40800000u);\n"
    "    else if (omod == 3u) r = fmul(r, 0x3f000000u);\n"
    "    if (cl) r = fnan(r) ? 0u : (fv(r) < 0.0) ? 0u : (fv(r) > 1.0) ? 0x3f800000u : r;\n"
    "    return r;\n"
    "}\n"
    "uint cvt_u32(uint x)\n"
    "{\n"
    "    if (fnan(x) || fv(x) <= 0.0) return 0u;\n"
    "    if (fv(x) >= 4294967296.0) return 0xffffffffu;\n"
    "    return uint(fv(x));\n"
    "}\n"
    "uint cvt_i32(uint x)\n"
    "{\n"
    "    if (fnan(x)) return 0u;\n"
    "    if (fv(x) >= 2147483648.0) return 0x7fffffffu;\n"
    "    if (fv(x) <= -2147483648.0) return 0x80000000u;\n"
    "    return uint(int(fv(x)));\n"
    "}\n"
    /* float compares: ordered ones false on a NaN */
    "bool fo(uint a, uint b) { return !fnan(a) && !fnan(b); }\n"
    /* 1/x correctly rounded (the reference's 1.0f / x): the device's
     * quotient refined twice by fused steps */
    "uint frcp(uint a)\n"
    "{\n"
    "    if (fnan(a)) return a | 0x00400000u;\n"
    "    if ((a & 0x7fffffffu) == 0u) return (a & 0x80000000u) | 0x7f800000u;\n"
    "    if ((a & 0x7fffffffu) == 0x7f800000u) return a & 0x80000000u;\n"
    "    float x = fv(a);\n"
    "    precise float r = 1.0 / x;\n"
    "    precise float e = fma(-x, r, 1.0);\n"
    "    precise float r1 = fma(e, r, r);\n"
    "    precise float e1 = fma(-x, r1, 1.0);\n"
    "    precise float r2 = fma(e1, r1, r1);\n"
    "    return fb(r2);\n"
    "}\n"
    /* DPP: the lane src0 is read from (interp_valu.c's dpp_source), -1
     * none */
    "int dpp_lane(uint ctrl, uint l)\n"
    "{\n"
    "    int li = int(l), row = li & ~15, in_row = li & 15, k = int(ctrl & 15u);\n"
    "    if (ctrl <= 0xffu) return (li & ~3) + int((ctrl >> (2u * (l & 3u))) & 3u);\n"
    "    if (ctrl >= 0x101u && ctrl <= 0x10fu) return in_row + k < 16 ? li + k : -1;\n"
    "    if (ctrl >= 0x111u && ctrl <= 0x11fu) return in_row - k >= 0 ? li - k : -1;\n"
    "    if (ctrl >= 0x121u && ctrl <= 0x12fu) return row + ((in_row - k) & 15);\n"
    "    if (ctrl == 0x130u) return li + 1 < 64 ? li + 1 : -1;\n"
    "    if (ctrl == 0x134u) return (li + 1) & 63;\n"
    "    if (ctrl == 0x138u) return li >= 1 ? li - 1 : -1;\n"
    "    if (ctrl == 0x13cu) return (li + 63) & 63;\n"
    "    if (ctrl == 0x140u) return row + 15 - in_row;\n"
    "    if (ctrl == 0x141u) return row + (in_row & 8) + 7 - (in_row & 7);\n"
    "    if (ctrl == 0x142u) return row >= 16 ? row - 1 : -1;\n"
    "    if (ctrl == 0x143u) return li >= 32 ? 31 : -1;\n"
    "    return -1;\n"
    "}\n";

/* ---- the translator's state ----------------------------------------------------------- */

struct gen {
    struct bytes *o;                  /* NULL: a dry run (the check) */
    const struct wave_kernel *k;
    const struct wf_shape *sh;
    uint64_t pc;                      /* the instruction's image offset */
    const struct wave_instr *in;
    char why[256];                    /* the first refusal */
};

/* Appends GLSL (nothing in a dry run). */
static void put(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct gen *g, const char *fmt, ...)
{
    if (!g->o)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof buf) {   /* defensive: every line here is short */
        g->o->oom = true;
        return;
    }
    bytes_put(g->o, buf, (size_t)n);
}

/* Refuses the instruction: false, the reason kept. */
static bool refuse(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool refuse(struct gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->why, sizeof g->why, fmt, ap);
    va_end(ap);
    return false;
}

static const char *level_name(const struct wf_shape *sh)
{
    return sh->lockstep ? "Subgroup" : sh->lane ? "Lane" : "Wavefront";
}

/* ---- operands ------------------------------------------------------------------------- */

/* VGPR r of the lane `l` of the lane loop: the wave's file at the
 * Wavefront level, the invocation's own registers at the Lane level (one
 * of four rotating buffers: a line may name four). */
static const char *V(const struct gen *g, unsigned r)
{
    static _Thread_local char buf[4][24];
    static _Thread_local unsigned at;
    char *b = buf[at++ % 4];
    if (g->sh->lane)
        snprintf(b, sizeof buf[0], "v[%uu]", r);
    else
        snprintf(b, sizeof buf[0], "v[%uu + l]", r * 64);
    return b;
}

/* Dword k of a scalar operand (SGPR, constant, literal, immediate) as a
 * GLSL uint expression; bits: the operand's width (32 or 64) for inline
 * constants. */
static bool sval(struct gen *g, const struct wave_operand *o, unsigned k, unsigned bits, char *buf, size_t cap)
{
    switch (o->kind) {
    case WAVE_OPND_SGPR: {
        unsigned code = o->reg + k;
        if (code < 128) {
            snprintf(buf, cap, "s[%u]", code);
            return true;
        }
        switch (code) {
        case WAVE_SREG_SHARED_BASE: case WAVE_SREG_SHARED_LIMIT: snprintf(buf, cap, "%uu", WAVE_SHARED_HI); return true;
        case WAVE_SREG_PRIVATE_BASE: case WAVE_SREG_PRIVATE_LIMIT:
            snprintf(buf, cap, "%uu", WAVE_PRIVATE_HI);
            return true;
        case WAVE_SREG_POPS_EXITING_WAVE_ID: snprintf(buf, cap, "0u"); return true;
        case WAVE_SREG_VCCZ: case WAVE_SREG_EXECZ:
            if (g->sh->lane && !g->sh->lockstep)
                return refuse(g, "it reads whether any lane's bit is set, which one invocation per lane cannot know");
            break;
        default: break;
        }
        switch (code) {
        case WAVE_SREG_VCCZ: snprintf(buf, cap, "(((s[106] | s[107]) == 0u) ? 1u : 0u)"); return true;
        case WAVE_SREG_EXECZ: snprintf(buf, cap, "(((s[126] | s[127]) == 0u) ? 1u : 0u)"); return true;
        case WAVE_SREG_SCC: snprintf(buf, cap, "(scc ? 1u : 0u)"); return true;
        default: return refuse(g, "it reads scalar operand code %u (lds_direct or a code kiln does not model)", code);
        }
    }
    case WAVE_OPND_CONST: {
        uint64_t v = wave_const_bits(o->value, bits == 64 ? 64 : bits == 16 ? 16 : 32);
        snprintf(buf, cap, "%uu", (uint32_t)(k ? v >> 32 : v));
        return true;
    }
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM:
        snprintf(buf, cap, "%uu", k ? 0u : o->value);
        return true;
    default:
        return refuse(g, "an operand of kind %u where a value is read", o->kind);
    }
}

/* Dword k of a vector source for lane `l` (a VGPR's lane, else a scalar
 * value). */
static bool vval(struct gen *g, const struct wave_operand *o, unsigned k, unsigned bits, char *buf, size_t cap)
{
    if (o->kind == WAVE_OPND_VGPR) {
        unsigned r = o->reg + k;
        if (r >= g->sh->vgprs)
            return refuse(g, "it reads v%u, past the kernel's %u VGPRs", r, g->sh->vgprs);
        snprintf(buf, cap, "%s", V(g, r));
        return true;
    }
    return sval(g, o, k, bits, buf, cap);
}

/* The statement writing x to dword k of a scalar destination. */
static bool sdst(struct gen *g, const struct wave_operand *o, unsigned k, const char *x)
{
    if (o->kind != WAVE_OPND_SGPR || o->reg + k >= 128)
        return refuse(g, "it writes a scalar destination kiln does not model (code %u)", o->reg + k);
    put(g, "s[%u] = %s;\n", o->reg + k, x);
    return true;
}

/* The masked write of x to dword k of a vector destination, in a lane
 * loop (`on` the lane's exec bit): a select, never a branch. */
static bool vdst(struct gen *g, const struct wave_operand *o, unsigned k, const char *x)
{
    if (o->kind != WAVE_OPND_VGPR)
        return refuse(g, "its vector destination is no VGPR");
    unsigned r = o->reg + k;
    if (r >= g->sh->vgprs)
        return refuse(g, "it writes v%u, past the kernel's %u VGPRs", r, g->sh->vgprs);
    put(g, "%s = on ? %s : %s;\n", V(g, r), x, V(g, r));
    return true;
}

/* ---- the scalar ALU ------------------------------------------------------------------- */

/* Reads src[0] and src[1] as a, b (32 bits) and, where wide, a1, b1. */
static bool sops(struct gen *g, bool wide_a, bool wide_b)
{
    const struct wave_instr *in = g->in;
    char x[96], y[96];
    if (in->src[0].kind != WAVE_OPND_NONE) {
        if (!sval(g, &in->src[0], 0, wide_a ? 64 : 32, x, sizeof x))
            return false;
        put(g, "uint a = %s;\n", x);
        if (wide_a) {
            if (!sval(g, &in->src[0], 1, 64, y, sizeof y))
                return false;
            put(g, "uint a1 = %s;\n", y);
        }
    }
    if (in->src[1].kind != WAVE_OPND_NONE) {
        if (!sval(g, &in->src[1], 0, wide_b ? 64 : 32, x, sizeof x))
            return false;
        put(g, "uint b = %s;\n", x);
        if (wide_b) {
            if (!sval(g, &in->src[1], 1, 64, y, sizeof y))
                return false;
            put(g, "uint b1 = %s;\n", y);
        }
    }
    return true;
}

/* r (and r1) to the destination, scc from sccx when not NULL. */
static bool sput(struct gen *g, bool wide, const char *sccx)
{
    if (!sdst(g, &g->in->dst[0], 0, "r"))
        return false;
    if (wide && !sdst(g, &g->in->dst[0], 1, "r1"))
        return false;
    if (sccx)
        put(g, "scc = %s;\n", sccx);
    return true;
}

static bool salu(struct gen *g)
{
    const struct wave_instr *in = g->in;
    int16_t k16 = (int16_t)wave_imm_of(in);
    put(g, "{\n");
    bool ok = true;
#define S32(expr, sccx) ok = sops(g, false, false) && (put(g, "uint r = %s;\n", expr), sput(g, false, sccx))
#define S64(lo, hi, sccx) ok = sops(g, true, true) && (put(g, "uint r = %s; uint r1 = %s;\n", lo, hi), sput(g, true, sccx))
#define S64A(lo, hi, sccx) ok = sops(g, true, false) && (put(g, "uint r = %s; uint r1 = %s;\n", lo, hi), sput(g, true, sccx))
    switch (in->op) {
    case WAVE_OP_S_MOV_B32: S32("a", NULL); break;
    case WAVE_OP_S_MOV_B64: S64A("a", "a1", NULL); break;
    case WAVE_OP_S_CMOV_B32: case WAVE_OP_S_CMOV_B64: {
        bool w = in->op == WAVE_OP_S_CMOV_B64;
        char x[64], y[64];
        ok = in->dst[0].kind == WAVE_OPND_SGPR && in->dst[0].reg + (w ? 2u : 1u) <= 128 && sops(g, w, false);
        if (!ok) {
            ok = g->why[0] ? false : refuse(g, "its destination is no scalar register kiln models");
            break;
        }
        snprintf(x, sizeof x, "scc ? a : s[%u]", in->dst[0].reg);
        snprintf(y, sizeof y, "scc ? a1 : s[%u]", in->dst[0].reg + 1u);
        put(g, "uint r = %s;\n", x);
        if (w)
            put(g, "uint r1 = %s;\n", y);
        ok = sput(g, w, NULL);
        break;
    }
    case WAVE_OP_S_NOT_B32: S32("~a", "r != 0u"); break;
    case WAVE_OP_S_NOT_B64: S64A("~a", "~a1", "(r | r1) != 0u"); break;
    case WAVE_OP_S_BCNT1_I32_B32: S32("uint(bitCount(a))", "r != 0u"); break;
    case WAVE_OP_S_BCNT1_I32_B64:
        ok = sops(g, true, false) && (put(g, "uint r = uint(bitCount(a) + bitCount(a1));\n"), sput(g, false, "r != 0u"));
        break;
    case WAVE_OP_S_FF1_I32_B64:
        ok = sops(g, true, false) && (put(g, "uint r = a != 0u ? ffbl(a) : a1 != 0u ? 32u + ffbl(a1) : 0xffffffffu;\n"),
                                      sput(g, false, NULL));
        break;
    case WAVE_OP_S_FF1_I32_B32: S32("ffbl(a)", NULL); break;
    case WAVE_OP_S_SEXT_I32_I8: S32("uint(int(a << 24u) >> 24)", NULL); break;
    case WAVE_OP_S_SEXT_I32_I16: S32("uint(int(a << 16u) >> 16)", NULL); break;
    case WAVE_OP_S_BREV_B32: S32("bitfieldReverse(a)", NULL); break;
    case WAVE_OP_S_ABS_I32: S32("(int(a) < 0) ? 0u - a : a", "r != 0u"); break;
    case WAVE_OP_S_GETPC_B64: {
        uint64_t next = WAVE_IMAGE_BASE + g->pc + 4ull * in->words;
        char lo[32], hi[32];
        snprintf(lo, sizeof lo, "%uu", (uint32_t)next);
        snprintf(hi, sizeof hi, "%uu", (uint32_t)(next >> 32));
        ok = sdst(g, &in->dst[0], 0, lo) && sdst(g, &in->dst[0], 1, hi);
        break;
    }
    case WAVE_OP_S_AND_SAVEEXEC_B64: case WAVE_OP_S_OR_SAVEEXEC_B64: case WAVE_OP_S_XOR_SAVEEXEC_B64:
    case WAVE_OP_S_ANDN2_SAVEEXEC_B64: case WAVE_OP_S_ORN2_SAVEEXEC_B64: case WAVE_OP_S_NAND_SAVEEXEC_B64:
    case WAVE_OP_S_NOR_SAVEEXEC_B64: case WAVE_OP_S_XNOR_SAVEEXEC_B64: case WAVE_OP_S_ANDN1_SAVEEXEC_B64:
    case WAVE_OP_S_ORN1_SAVEEXEC_B64: {
        const char *f = in->op == WAVE_OP_S_AND_SAVEEXEC_B64 ? "a%s & e%s"
                      : in->op == WAVE_OP_S_OR_SAVEEXEC_B64 ? "a%s | e%s"
                      : in->op == WAVE_OP_S_XOR_SAVEEXEC_B64 ? "a%s ^ e%s"
                      : in->op == WAVE_OP_S_ANDN2_SAVEEXEC_B64 ? "a%s & ~e%s"
                      : in->op == WAVE_OP_S_ORN2_SAVEEXEC_B64 ? "a%s | ~e%s"
                      : in->op == WAVE_OP_S_NAND_SAVEEXEC_B64 ? "~(a%s & e%s)"
                      : in->op == WAVE_OP_S_NOR_SAVEEXEC_B64 ? "~(a%s | e%s)"
                      : in->op == WAVE_OP_S_XNOR_SAVEEXEC_B64 ? "~(a%s ^ e%s)"
                      : in->op == WAVE_OP_S_ANDN1_SAVEEXEC_B64 ? "~a%s & e%s" : "~a%s | e%s";
        char lo[64], hi[64];
        snprintf(lo, sizeof lo, f, "", "0");
        snprintf(hi, sizeof hi, f, "1", "1");
        ok = sops(g, true, false);
        if (!ok)
            break;
        put(g, "uint e0 = s[126], e1 = s[127];\n");
        put(g, "uint n0 = %s, n1 = %s;\n", lo, hi);
        put(g, "s[126] = n0; s[127] = n1;\n");
        ok = sdst(g, &in->dst[0], 0, "e0") && sdst(g, &in->dst[0], 1, "e1");
        put(g, "scc = (n0 | n1) != 0u;\n");
        break;
    }
    /* SOP2 */
    case WAVE_OP_S_ADD_U32:
        ok = sops(g, false, false) && (put(g, "uint c; uint r = uaddCarry(a, b, c);\n"), sput(g, false, "c != 0u"));
        break;
    case WAVE_OP_S_SUB_U32: S32("a - b", "b > a"); break;
    case WAVE_OP_S_ADD_I32: S32("a + b", "(((a ^ r) & (b ^ r)) >> 31u) != 0u"); break;
    case WAVE_OP_S_SUB_I32: S32("a - b", "(((a ^ b) & (a ^ r)) >> 31u) != 0u"); break;
    case WAVE_OP_S_ADDC_U32:
        ok = sops(g, false, false) &&
             (put(g, "uint c1, c2; uint r = uaddCarry(a, b, c1); r = uaddCarry(r, scc ? 1u : 0u, c2);\n"),
              sput(g, false, "(c1 | c2) != 0u"));
        break;
    case WAVE_OP_S_SUBB_U32:
        ok = sops(g, false, false) &&
             (put(g, "uint w1, w2; uint r = usubBorrow(a, b, w1); r = usubBorrow(r, scc ? 1u : 0u, w2);\n"),
              sput(g, false, "(w1 | w2) != 0u"));
        break;
    case WAVE_OP_S_MIN_I32: S32("(int(a) < int(b)) ? a : b", "int(a) < int(b)"); break;
    case WAVE_OP_S_MIN_U32: S32("(a < b) ? a : b", "a < b"); break;
    case WAVE_OP_S_MAX_I32: S32("(int(a) > int(b)) ? a : b", "int(a) > int(b)"); break;
    case WAVE_OP_S_MAX_U32: S32("(a > b) ? a : b", "a > b"); break;
    case WAVE_OP_S_CSELECT_B32: S32("scc ? a : b", NULL); break;
    case WAVE_OP_S_CSELECT_B64: S64("scc ? a : b", "scc ? a1 : b1", NULL); break;
    case WAVE_OP_S_AND_B32: S32("a & b", "r != 0u"); break;
    case WAVE_OP_S_OR_B32: S32("a | b", "r != 0u"); break;
    case WAVE_OP_S_XOR_B32: S32("a ^ b", "r != 0u"); break;
    case WAVE_OP_S_ANDN2_B32: S32("a & ~b", "r != 0u"); break;
    case WAVE_OP_S_ORN2_B32: S32("a | ~b", "r != 0u"); break;
    case WAVE_OP_S_NAND_B32: S32("~(a & b)", "r != 0u"); break;
    case WAVE_OP_S_NOR_B32: S32("~(a | b)", "r != 0u"); break;
    case WAVE_OP_S_XNOR_B32: S32("~(a ^ b)", "r != 0u"); break;
    case WAVE_OP_S_AND_B64: S64("a & b", "a1 & b1", "(r | r1) != 0u"); break;
    case WAVE_OP_S_OR_B64: S64("a | b", "a1 | b1", "(r | r1) != 0u"); break;
    case WAVE_OP_S_XOR_B64: S64("a ^ b", "a1 ^ b1", "(r | r1) != 0u"); break;
    case WAVE_OP_S_ANDN2_B64: S64("a & ~b", "a1 & ~b1", "(r | r1) != 0u"); break;
    case WAVE_OP_S_ORN2_B64: S64("a | ~b", "a1 | ~b1", "(r | r1) != 0u"); break;
    case WAVE_OP_S_NAND_B64: S64("~(a & b)", "~(a1 & b1)", "(r | r1) != 0u"); break;
    case WAVE_OP_S_NOR_B64: S64("~(a | b)", "~(a1 | b1)", "(r | r1) != 0u"); break;
    case WAVE_OP_S_XNOR_B64: S64("~(a ^ b)", "~(a1 ^ b1)", "(r | r1) != 0u"); break;
    case WAVE_OP_S_LSHL_B32: S32("a << (b & 31u)", "r != 0u"); break;
    case WAVE_OP_S_LSHR_B32: S32("a >> (b & 31u)", "r != 0u"); break;
    case WAVE_OP_S_ASHR_I32: S32("uint(int(a) >> (b & 31u))", "r != 0u"); break;
    case WAVE_OP_S_LSHL_B64:
        ok = sops(g, true, false) && (put(g, "uvec2 x = shl64(a, a1, b); uint r = x.x, r1 = x.y;\n"),
                                      sput(g, true, "(r | r1) != 0u"));
        break;
    case WAVE_OP_S_LSHR_B64:
        ok = sops(g, true, false) && (put(g, "uvec2 x = shr64(a, a1, b); uint r = x.x, r1 = x.y;\n"),
                                      sput(g, true, "(r | r1) != 0u"));
        break;
    case WAVE_OP_S_ASHR_I64:
        ok = sops(g, true, false) && (put(g, "uvec2 x = sar64(a, a1, b); uint r = x.x, r1 = x.y;\n"),
                                      sput(g, true, "(r | r1) != 0u"));
        break;
    case WAVE_OP_S_BFM_B32: S32("((a & 31u) == 0u ? 0u : ((1u << (a & 31u)) - 1u)) << (b & 31u)", NULL); break;
    case WAVE_OP_S_MUL_I32: S32("a * b", NULL); break;
    case WAVE_OP_S_MUL_HI_U32: S32("mulhi_u(a, b)", NULL); break;
    case WAVE_OP_S_MUL_HI_I32: S32("mulhi_i(a, b)", NULL); break;
    case WAVE_OP_S_BFE_U32:
        ok = sops(g, false, false);
        if (!ok)
            break;
        put(g, "uint w = (b >> 16u) & 0x7fu, o = b & 31u;\n");
        put(g, "uint r = w == 0u ? 0u : w >= 32u ? (a >> o) : bfe_u(a, o, w);\n");
        ok = sput(g, false, "r != 0u");
        break;
    case WAVE_OP_S_BFE_I32: {
        /* widths of 32 and more keep every bit from the offset */
        ok = sops(g, false, false);
        if (!ok)
            break;
        put(g, "uint w = (b >> 16u) & 0x7fu, o = b & 31u;\n");
        put(g, "uint r = w == 0u ? 0u : w >= 32u ? (a >> o) : bfe_i(a, o, w);\n");
        ok = sput(g, false, "r != 0u");
        break;
    }
    case WAVE_OP_S_LSHL1_ADD_U32: case WAVE_OP_S_LSHL2_ADD_U32: case WAVE_OP_S_LSHL3_ADD_U32:
    case WAVE_OP_S_LSHL4_ADD_U32: {
        unsigned sh = in->op == WAVE_OP_S_LSHL1_ADD_U32 ? 1 : in->op == WAVE_OP_S_LSHL2_ADD_U32 ? 2
                    : in->op == WAVE_OP_S_LSHL3_ADD_U32 ? 3 : 4;
        ok = sops(g, false, false);
        if (!ok)
            break;
        /* the carry of the 64-bit sum: the bits shifted out, or the add's */
        put(g, "uint c; uint r = uaddCarry(a << %uu, b, c);\nbool out = c != 0u || (a >> %uu) != 0u;\n", sh,
            32 - sh);
        ok = sput(g, false, "out");
        break;
    }
    /* SOPC */
    case WAVE_OP_S_CMP_EQ_I32: case WAVE_OP_S_CMP_EQ_U32: ok = sops(g, false, false); put(g, "scc = a == b;\n"); break;
    case WAVE_OP_S_CMP_LG_I32: case WAVE_OP_S_CMP_LG_U32: ok = sops(g, false, false); put(g, "scc = a != b;\n"); break;
    case WAVE_OP_S_CMP_GT_I32: ok = sops(g, false, false); put(g, "scc = int(a) > int(b);\n"); break;
    case WAVE_OP_S_CMP_GE_I32: ok = sops(g, false, false); put(g, "scc = int(a) >= int(b);\n"); break;
    case WAVE_OP_S_CMP_LT_I32: ok = sops(g, false, false); put(g, "scc = int(a) < int(b);\n"); break;
    case WAVE_OP_S_CMP_LE_I32: ok = sops(g, false, false); put(g, "scc = int(a) <= int(b);\n"); break;
    case WAVE_OP_S_CMP_GT_U32: ok = sops(g, false, false); put(g, "scc = a > b;\n"); break;
    case WAVE_OP_S_CMP_GE_U32: ok = sops(g, false, false); put(g, "scc = a >= b;\n"); break;
    case WAVE_OP_S_CMP_LT_U32: ok = sops(g, false, false); put(g, "scc = a < b;\n"); break;
    case WAVE_OP_S_CMP_LE_U32: ok = sops(g, false, false); put(g, "scc = a <= b;\n"); break;
    case WAVE_OP_S_CMP_EQ_U64: ok = sops(g, true, true); put(g, "scc = a == b && a1 == b1;\n"); break;
    case WAVE_OP_S_CMP_LG_U64: ok = sops(g, true, true); put(g, "scc = a != b || a1 != b1;\n"); break;
    case WAVE_OP_S_BITCMP0_B32: ok = sops(g, false, false); put(g, "scc = ((a >> (b & 31u)) & 1u) == 0u;\n"); break;
    case WAVE_OP_S_BITCMP1_B32: ok = sops(g, false, false); put(g, "scc = ((a >> (b & 31u)) & 1u) != 0u;\n"); break;
    /* SOPK: src[0] the destination read as a source, the immediate apart */
    case WAVE_OP_S_MOVK_I32: {
        char x[32];
        snprintf(x, sizeof x, "%uu", (uint32_t)(int32_t)k16);
        ok = sdst(g, &in->dst[0], 0, x);
        break;
    }
    case WAVE_OP_S_CMOVK_I32: {
        char x[64];
        snprintf(x, sizeof x, "scc ? %uu : s[%u]", (uint32_t)(int32_t)k16, in->dst[0].reg);
        ok = in->dst[0].kind == WAVE_OPND_SGPR && in->dst[0].reg < 128 && sdst(g, &in->dst[0], 0, x);
        break;
    }
    case WAVE_OP_S_CMPK_EQ_I32: case WAVE_OP_S_CMPK_LG_I32: case WAVE_OP_S_CMPK_GT_I32: case WAVE_OP_S_CMPK_GE_I32:
    case WAVE_OP_S_CMPK_LT_I32: case WAVE_OP_S_CMPK_LE_I32: case WAVE_OP_S_CMPK_EQ_U32: case WAVE_OP_S_CMPK_LG_U32:
    case WAVE_OP_S_CMPK_GT_U32: case WAVE_OP_S_CMPK_GE_U32: case WAVE_OP_S_CMPK_LT_U32: case WAVE_OP_S_CMPK_LE_U32: {
        static const char *const rel[] = {"==", "!=", ">", ">=", "<", "<="};
        unsigned i = (unsigned)(in->op - WAVE_OP_S_CMPK_EQ_I32);
        bool sgn = i < 6;
        char x[64];
        ok = sval(g, &in->src[0], 0, 32, x, sizeof x);
        if (!ok)
            break;
        if (sgn)
            put(g, "scc = int(%s) %s %d;\n", x, rel[i % 6], (int)k16);
        else
            put(g, "scc = %s %s %uu;\n", x, rel[i % 6], wave_imm_of(in) & 0xffffu);
        break;
    }
    case WAVE_OP_S_ADDK_I32: {
        char x[64];
        ok = sval(g, &in->src[0], 0, 32, x, sizeof x);
        if (!ok)
            break;
        put(g, "uint a = %s, b = %uu; uint r = a + b;\n", x, (uint32_t)(int32_t)k16);
        ok = sput(g, false, "(((a ^ r) & (b ^ r)) >> 31u) != 0u");
        break;
    }
    case WAVE_OP_S_MULK_I32: {
        char x[64];
        ok = sval(g, &in->src[0], 0, 32, x, sizeof x);
        if (!ok)
            break;
        put(g, "uint r = %s * %uu;\n", x, (uint32_t)(int32_t)k16);
        ok = sput(g, false, NULL);
        break;
    }
    case WAVE_OP_S_NOP: case WAVE_OP_S_WAITCNT: case WAVE_OP_S_SLEEP: case WAVE_OP_S_SETPRIO:
        break;
    default:
        ok = refuse(g, "%s is not translated at this level yet", wave_op_name(in->op));
    }
#undef S32
#undef S64
#undef S64A
    put(g, "}\n");
    return ok;
}

/* ---- the vector ALU -------------------------------------------------------------------- */

/* How an op reads and writes (vop's table below). */
enum vkind {
    VK_INT,      /* integer result r from uint sources */
    VK_FLOAT,    /* float result r: sources flushed and modified, result flushed, omod and clamp */
};

struct vop {
    enum vkind kind;
    const char *expr;      /* r's expression (a, b, c: the sources' low dwords; a1, b1, c1: high) */
    const char *expr1;     /* r1, the high dword of a 64-bit result, or NULL */
    bool carry;            /* writes a carry-out mask (the statement before r sets bool f) */
    uint8_t wide;          /* bit i: source i is 64 bits */
    bool carry_in;         /* reads the mask src[2] (bit l) as cin */
    bool clamp_ok;         /* an integer op whose clamp the expression applies (CL) */
    bool h16;              /* 16-bit sources (inline constants in their 16-bit form) */
    bool mbits;            /* abs and neg act on the sources' bits, unflushed (v_mov, v_cndmask) */
};

static bool vop_of(unsigned op, struct vop *v)
{
    *v = (struct vop){VK_INT, NULL, NULL, false, 0, false, false, false, false};
#define I(e) v->expr = (e); return true
#define F(e) v->kind = VK_FLOAT, v->expr = (e); return true
    switch (op) {
    case WAVE_OP_V_MOV_B32: v->mbits = true; I("a");
    case WAVE_OP_V_NOT_B32: I("~a");
    case WAVE_OP_V_BFREV_B32: I("bitfieldReverse(a)");
    case WAVE_OP_V_FFBH_U32: I("ffbh(a)");
    case WAVE_OP_V_FFBL_B32: I("ffbl(a)");
    case WAVE_OP_V_CNDMASK_B32: v->carry_in = true, v->mbits = true; I("cin ? b : a");
    case WAVE_OP_V_ADD_U32: v->clamp_ok = true; I("add_u(a, b, CL)");
    case WAVE_OP_V_SUB_U32: v->clamp_ok = true; I("sub_u(a, b, CL)");
    case WAVE_OP_V_SUBREV_U32: v->clamp_ok = true; I("sub_u(b, a, CL)");
    case WAVE_OP_V_ADD_I32: v->clamp_ok = true; I("add_i(a, b, CL)");
    case WAVE_OP_V_SUB_I32: v->clamp_ok = true; I("sub_i(a, b, CL)");
    case WAVE_OP_V_ADD_CO_U32: v->clamp_ok = true, v->carry = true; I("add_u(a, b, CL)");
    case WAVE_OP_V_SUB_CO_U32: v->clamp_ok = true, v->carry = true; I("sub_u(a, b, CL)");
    case WAVE_OP_V_SUBREV_CO_U32: v->clamp_ok = true, v->carry = true; I("sub_u(b, a, CL)");
    case WAVE_OP_V_ADDC_CO_U32: v->clamp_ok = true, v->carry_in = true, v->carry = true; I("add_u(t, ci, CL)");
    case WAVE_OP_V_SUBB_CO_U32: v->clamp_ok = true, v->carry_in = true, v->carry = true; I("sub_u(t, ci, CL)");
    case WAVE_OP_V_SUBBREV_CO_U32: v->clamp_ok = true, v->carry_in = true, v->carry = true; I("sub_u(t, ci, CL)");
    case WAVE_OP_V_MUL_LO_U32: I("a * b");
    case WAVE_OP_V_MUL_HI_U32: I("mulhi_u(a, b)");
    case WAVE_OP_V_MUL_HI_I32: I("mulhi_i(a, b)");
    case WAVE_OP_V_MUL_U32_U24: I("(a & 0xffffffu) * (b & 0xffffffu)");
    case WAVE_OP_V_MUL_HI_U32_U24: I("mulhi_u(a & 0xffffffu, b & 0xffffffu)");
    case WAVE_OP_V_MUL_I32_I24: I("sx24(a) * sx24(b)");
    case WAVE_OP_V_MUL_HI_I32_I24: I("mulhi_i(sx24(a), sx24(b))");
    case WAVE_OP_V_MAD_U32_U24: I("(a & 0xffffffu) * (b & 0xffffffu) + c");
    case WAVE_OP_V_MAD_I32_I24: I("sx24(a) * sx24(b) + c");
    case WAVE_OP_V_MAD_U64_U32: v->wide = 4, v->carry = true; I("m.x");
    case WAVE_OP_V_LSHLREV_B32: I("b << (a & 31u)");
    case WAVE_OP_V_LSHRREV_B32: I("b >> (a & 31u)");
    case WAVE_OP_V_ASHRREV_I32: I("uint(int(b) >> (a & 31u))");
    case WAVE_OP_V_LSHLREV_B64: v->wide = 2, v->expr1 = "x.y"; I("x.x");
    case WAVE_OP_V_LSHRREV_B64: v->wide = 2, v->expr1 = "x.y"; I("x.x");
    case WAVE_OP_V_ASHRREV_I64: v->wide = 2, v->expr1 = "x.y"; I("x.x");
    case WAVE_OP_V_AND_B32: I("a & b");
    case WAVE_OP_V_OR_B32: I("a | b");
    case WAVE_OP_V_XOR_B32: I("a ^ b");
    case WAVE_OP_V_BFE_U32: I("bfe_u(a, b, c)");
    case WAVE_OP_V_BFE_I32: I("bfe_i(a, b, c)");
    case WAVE_OP_V_BFI_B32: I("(a & b) | (~a & c)");
    case WAVE_OP_V_ALIGNBIT_B32: I("alignbit(a, b, c)");
    case WAVE_OP_V_LSHL_ADD_U32: I("(a << (b & 31u)) + c");
    case WAVE_OP_V_ADD_LSHL_U32: I("(a + b) << (c & 31u)");
    case WAVE_OP_V_ADD3_U32: I("a + b + c");
    case WAVE_OP_V_LSHL_OR_B32: I("(a << (b & 31u)) | c");
    case WAVE_OP_V_AND_OR_B32: I("(a & b) | c");
    case WAVE_OP_V_OR3_B32: I("a | b | c");
    case WAVE_OP_V_XAD_U32: I("(a ^ b) + c");
    case WAVE_OP_V_MIN_U32: I("min(a, b)");
    case WAVE_OP_V_MAX_U32: I("max(a, b)");
    case WAVE_OP_V_MIN_I32: I("uint(min(int(a), int(b)))");
    case WAVE_OP_V_MAX_I32: I("uint(max(int(a), int(b)))");
    case WAVE_OP_V_MIN3_U32: I("min(min(a, b), c)");
    case WAVE_OP_V_MAX3_U32: I("max(max(a, b), c)");
    case WAVE_OP_V_MIN3_I32: I("uint(min(min(int(a), int(b)), int(c)))");
    case WAVE_OP_V_MAX3_I32: I("uint(max(max(int(a), int(b)), int(c)))");
    case WAVE_OP_V_MED3_U32: I("umed3(a, b, c)");
    case WAVE_OP_V_MED3_I32: I("imed3(a, b, c)");
    case WAVE_OP_V_BCNT_U32_B32: I("uint(bitCount(a)) + b");
    case WAVE_OP_V_MBCNT_LO_U32_B32: I("uint(bitCount(a & ((l < 32u) ? ((1u << (l & 31u)) - 1u) : 0xffffffffu))) + b");
    case WAVE_OP_V_MBCNT_HI_U32_B32: I("uint(bitCount(a & ((l > 32u) ? ((1u << ((l - 32u) & 31u)) - 1u) : 0u))) + b");
    case WAVE_OP_V_CVT_U32_F32: I("cvt_u32(fin(a))");
    case WAVE_OP_V_CVT_I32_F32: I("cvt_i32(fin(a))");
    case WAVE_OP_V_CVT_F32_U32: F("fb(float(a))");
    case WAVE_OP_V_CVT_F32_I32: F("fb(float(int(a)))");
    case WAVE_OP_V_ADD_F32: F("fadd(a, b)");
    case WAVE_OP_V_SUB_F32: F("fadd(a, b ^ 0x80000000u)");
    case WAVE_OP_V_SUBREV_F32: F("fadd(b, a ^ 0x80000000u)");
    case WAVE_OP_V_MUL_F32: F("fmul(a, b)");
    case WAVE_OP_V_FMA_F32: F("ffma(a, b, c)");
    case WAVE_OP_V_MAD_F32: F("fmad(a, b, c)");
    case WAVE_OP_V_MAC_F32: F("fmad(a, b, c)");
    case WAVE_OP_V_MADMK_F32: case WAVE_OP_V_MADAK_F32: F("fmad(a, b, c)");
    case WAVE_OP_V_MIN_F32: F("fmin_m(a, b)");
    case WAVE_OP_V_MAX_F32: F("fmax_m(a, b)");
    case WAVE_OP_V_MIN3_F32: F("fmin_m(fmin_m(a, b), c)");
    case WAVE_OP_V_MAX3_F32: F("fmax_m(fmax_m(a, b), c)");
    case WAVE_OP_V_RCP_F32: case WAVE_OP_V_RCP_IFLAG_F32: F("frcp(a)");
    /* the division sequence as the reference runs it: div_scale does not
     * scale (its mask is 0), div_fmas is the fma, div_fixup the quotient */
    case WAVE_OP_V_DIV_SCALE_F32: v->carry = true; F("a");
    case WAVE_OP_V_DIV_FMAS_F32: F("ffma(a, b, c)");
    case WAVE_OP_V_DIV_FIXUP_F32: F("fdivfix(b, c)");
    case WAVE_OP_V_FLOOR_F32: F("fnan(a) ? (a | 0x00400000u) : fb(floor(fv(a)))");
    case WAVE_OP_V_CEIL_F32: F("fnan(a) ? (a | 0x00400000u) : fb(ceil(fv(a)))");
    case WAVE_OP_V_TRUNC_F32: F("fnan(a) ? (a | 0x00400000u) : fb(trunc(fv(a)))");
    case WAVE_OP_V_RNDNE_F32: F("fnan(a) ? (a | 0x00400000u) : fb(roundEven(fv(a)))");
    /* 16-bit integers: the low halves, the result's high half zero (gfx9) */
    case WAVE_OP_V_ADD_U16: v->h16 = v->clamp_ok = true; I("addsub16(a, b, false, false, CL)");
    case WAVE_OP_V_SUB_U16: v->h16 = v->clamp_ok = true; I("addsub16(a, b, true, false, CL)");
    case WAVE_OP_V_SUBREV_U16: v->h16 = v->clamp_ok = true; I("addsub16(b, a, true, false, CL)");
    case WAVE_OP_V_ADD_I16: v->h16 = v->clamp_ok = true; I("addsub16(a, b, false, true, CL)");
    case WAVE_OP_V_SUB_I16: v->h16 = v->clamp_ok = true; I("addsub16(a, b, true, true, CL)");
    case WAVE_OP_V_MUL_LO_U16: v->h16 = true; I("(a * b) & 0xffffu");
    case WAVE_OP_V_LSHLREV_B16: v->h16 = true; I("((b & 0xffffu) << (a & 15u)) & 0xffffu");
    case WAVE_OP_V_LSHRREV_B16: v->h16 = true; I("(b & 0xffffu) >> (a & 15u)");
    case WAVE_OP_V_ASHRREV_I16: v->h16 = true; I("uint(int(b << 16u) >> (16u + (a & 15u))) & 0xffffu");
    case WAVE_OP_V_MAX_U16: v->h16 = true; I("max(a & 0xffffu, b & 0xffffu)");
    case WAVE_OP_V_MIN_U16: v->h16 = true; I("min(a & 0xffffu, b & 0xffffu)");
    case WAVE_OP_V_MAX_I16: v->h16 = true; I("uint(max(int(a << 16u) >> 16, int(b << 16u) >> 16)) & 0xffffu");
    case WAVE_OP_V_MIN_I16: v->h16 = true; I("uint(min(int(a << 16u) >> 16, int(b << 16u) >> 16)) & 0xffffu");
    default: break;
    }
#undef I
#undef F
    return false;
}

/* A compare's per-lane bool for op, over a, b (and a1, b1 for 64 bits);
 * *x set for the v_cmpx forms (which write exec too). NULL when op is no
 * compare this level translates. */
static const char *cmp_of(unsigned op, bool *x, bool *wide)
{
    *x = false, *wide = false;
    /* integer, 32 bits: F LT EQ LE GT NE GE T, i32 then u32, v_cmp then v_cmpx */
    static const char *const irel_s[] = {"false", "int(a) < int(b)", "a == b", "int(a) <= int(b)", "int(a) > int(b)",
                                         "a != b", "int(a) >= int(b)", "true"};
    static const char *const irel_u[] = {"false", "a < b", "a == b", "a <= b", "a > b", "a != b", "a >= b", "true"};
    static const char *const lrel_s[] = {"false", "slt64(a, a1, b, b1)", "a == b && a1 == b1",
                                         "!slt64(b, b1, a, a1)", "slt64(b, b1, a, a1)", "a != b || a1 != b1",
                                         "!slt64(a, a1, b, b1)", "true"};
    static const char *const lrel_u[] = {"false", "ult64(a, a1, b, b1)", "a == b && a1 == b1",
                                         "!ult64(b, b1, a, a1)", "ult64(b, b1, a, a1)", "a != b || a1 != b1",
                                         "!ult64(a, a1, b, b1)", "true"};
    /* float, 32 bits: F LT EQ LE GT LG GE O U NGE NLG NGT NLE NEQ NLT TRU */
    static const char *const frel[] = {"false",
                                       "fo(a, b) && fv(a) < fv(b)",
                                       "fo(a, b) && fv(a) == fv(b)",
                                       "fo(a, b) && fv(a) <= fv(b)",
                                       "fo(a, b) && fv(a) > fv(b)",
                                       "fo(a, b) && fv(a) != fv(b)",
                                       "fo(a, b) && fv(a) >= fv(b)",
                                       "fo(a, b)",
                                       "!fo(a, b)",
                                       "!(fo(a, b) && fv(a) >= fv(b))",
                                       "!(fo(a, b) && fv(a) != fv(b))",
                                       "!(fo(a, b) && fv(a) > fv(b))",
                                       "!(fo(a, b) && fv(a) <= fv(b))",
                                       "!(fo(a, b) && fv(a) == fv(b))",
                                       "!(fo(a, b) && fv(a) < fv(b))",
                                       "true"};
    if (op >= WAVE_OP_V_CMP_F_I32 && op <= WAVE_OP_V_CMP_T_I32)
        return irel_s[op - WAVE_OP_V_CMP_F_I32];
    if (op >= WAVE_OP_V_CMP_F_U32 && op <= WAVE_OP_V_CMP_T_U32)
        return irel_u[op - WAVE_OP_V_CMP_F_U32];
    if (op >= WAVE_OP_V_CMPX_F_I32 && op <= WAVE_OP_V_CMPX_T_I32)
        return *x = true, irel_s[op - WAVE_OP_V_CMPX_F_I32];
    if (op >= WAVE_OP_V_CMPX_F_U32 && op <= WAVE_OP_V_CMPX_T_U32)
        return *x = true, irel_u[op - WAVE_OP_V_CMPX_F_U32];
    if (op >= WAVE_OP_V_CMP_F_I64 && op <= WAVE_OP_V_CMP_T_I64)
        return *wide = true, lrel_s[op - WAVE_OP_V_CMP_F_I64];
    if (op >= WAVE_OP_V_CMP_F_U64 && op <= WAVE_OP_V_CMP_T_U64)
        return *wide = true, lrel_u[op - WAVE_OP_V_CMP_F_U64];
    if (op >= WAVE_OP_V_CMPX_F_I64 && op <= WAVE_OP_V_CMPX_T_I64)
        return *wide = true, *x = true, lrel_s[op - WAVE_OP_V_CMPX_F_I64];
    if (op >= WAVE_OP_V_CMPX_F_U64 && op <= WAVE_OP_V_CMPX_T_U64)
        return *wide = true, *x = true, lrel_u[op - WAVE_OP_V_CMPX_F_U64];
    if (op >= WAVE_OP_V_CMP_F_F32 && op <= WAVE_OP_V_CMP_TRU_F32)
        return frel[op - WAVE_OP_V_CMP_F_F32];
    if (op >= WAVE_OP_V_CMPX_F_F32 && op <= WAVE_OP_V_CMPX_TRU_F32)
        return *x = true, frel[op - WAVE_OP_V_CMPX_F_F32];
    return NULL;
}

/* Source i's dwords as uint a/a1 (b, c) inside the lane loop: floats
 * flushed, then abs, then neg, on their bits. */
static bool vsrc(struct gen *g, unsigned i, bool wide, bool fl, bool h16)
{
    const struct wave_instr *in = g->in;
    static const char *const name[] = {"a", "b", "c"};
    char x[96];
    if (i == 0 && in->enc == WAVE_ENC_DPP)
        snprintf(x, sizeof x, "dv");   /* the DPP source lane's src0 (dpp_open) */
    else if (!vval(g, &in->src[i], 0, wide ? 64 : h16 ? 16 : 32, x, sizeof x))
        return false;
    const char *ab = (in->mods.abs >> i) & 1 ? " & 0x7fffffffu" : "", *ng = (in->mods.neg >> i) & 1 ? " ^ 0x80000000u" : "";
    if (fl)
        put(g, "uint %s = (fin(%s)%s)%s;\n", name[i], x, ab, ng);
    else
        put(g, "uint %s = (%s%s)%s;\n", name[i], x, ab, ng);   /* abs and neg on bits: v_mov, v_cndmask */
    if (wide) {
        if (!vval(g, &in->src[i], 1, 64, x, sizeof x))
            return false;
        put(g, "uint %s1 = %s;\n", name[i], x);
    }
    return true;
}

/* The lane loop's head: exec read once, `on` per lane. */
static void lanes_open(struct gen *g, bool masks)
{
    put(g, "{\nuint e0 = s[126], e1 = s[127];\n");
    if (masks)
        put(g, "uint m0 = 0u, m1 = 0u;\n");
    if (g->in->enc == WAVE_ENC_DPP && g->sh->lockstep)   /* src0's lanes, from each lane through shared memory */
        put(g, "uint dsrc[64];\nbarrier();\nxw[ln] = v[%uu];\nbarrier();\nfor (uint i = 0u; i < 64u; i++) dsrc[i] = "
               "xw[i];\n",
            g->in->src[0].reg);
    else if (g->in->enc == WAVE_ENC_DPP)   /* src0's lanes as they were: the destination may be it */
        put(g, "uint dsrc[64];\nfor (uint i = 0u; i < 64u; i++) dsrc[i] = v[%uu + i];\n", g->in->src[0].reg * 64u);
    if (g->sh->lane)   /* the invocation's own lane: a loop of one, so that a fault's break leaves it */
        put(g, "for (uint once = 1u, l = ln; once != 0u; once = 0u) {\nbool on = bitl(e0, e1, l);\n");
    else
        put(g, "for (uint l = 0u; l < 64u; l++) {\nbool on = bitl(e0, e1, l);\n");
}

static bool valu_special(struct gen *g, bool *done)
{
    const struct wave_instr *in = g->in;
    char x[96], y[96];
    *done = true;
    bool crosses = in->op == WAVE_OP_V_READLANE_B32 || in->op == WAVE_OP_V_WRITELANE_B32 ||
                   (in->op == WAVE_OP_V_READFIRSTLANE_B32 && in->src[0].kind == WAVE_OPND_VGPR);
    if (crosses && g->sh->lane && !g->sh->lockstep)
        return refuse(g, "it reads or writes another lane's VGPR, and one invocation per lane has only its own");
    if (crosses && g->sh->lockstep) {   /* through shared memory */
        if (in->op == WAVE_OP_V_WRITELANE_B32) {
            if (!sval(g, &in->src[0], 0, 32, x, sizeof x) || !sval(g, &in->src[1], 0, 32, y, sizeof y))
                return false;
            if (in->dst[0].kind != WAVE_OPND_VGPR || in->dst[0].reg >= g->sh->vgprs)
                return refuse(g, "its destination is no VGPR of the kernel's");
            put(g, "if (ln == (%s & 63u)) v[%uu] = %s;\n", y, in->dst[0].reg, x);
            return true;
        }
        if (in->op == WAVE_OP_V_READLANE_B32) {
            if (!sval(g, &in->src[1], 0, 32, y, sizeof y))
                return false;
            put(g, "{\nuint from = %s & 63u;\n", y);
        } else {
            put(g, "{\nuint from = (s[126] != 0u) ? uint(findLSB(s[126])) : (s[127] != 0u) ? 32u + "
                   "uint(findLSB(s[127])) : 0u;\n");
        }
        if (in->src[0].kind != WAVE_OPND_VGPR || in->src[0].reg >= g->sh->vgprs)
            return refuse(g, "its source is no VGPR of the kernel's");
        put(g, "uint x = lane_read(v[%uu], from);\n", in->src[0].reg);
        bool ok = sdst(g, &in->dst[0], 0, "x");
        put(g, "}\n");
        return ok;
    }
    switch (in->op) {
    case WAVE_OP_V_NOP:
        return true;
    case WAVE_OP_V_READFIRSTLANE_B32: {
        if (in->src[0].kind != WAVE_OPND_VGPR) {
            if (!sval(g, &in->src[0], 0, 32, x, sizeof x))
                return false;
            put(g, "{\n");
            bool ok = sdst(g, &in->dst[0], 0, x);
            put(g, "}\n");
            return ok;
        }
        put(g, "{\nuint l = (s[126] != 0u) ? uint(findLSB(s[126])) : (s[127] != 0u) ? 32u + uint(findLSB(s[127])) "
               ": 0u;\n");
        bool ok = vval(g, &in->src[0], 0, 32, x, sizeof x) && sdst(g, &in->dst[0], 0, x);
        put(g, "}\n");
        return ok;
    }
    case WAVE_OP_V_READLANE_B32: {
        if (!sval(g, &in->src[1], 0, 32, y, sizeof y))
            return false;
        put(g, "{\nuint l = %s & 63u;\n", y);
        bool ok = vval(g, &in->src[0], 0, 32, x, sizeof x) && sdst(g, &in->dst[0], 0, x);
        put(g, "}\n");
        return ok;
    }
    case WAVE_OP_V_WRITELANE_B32: {
        if (!sval(g, &in->src[0], 0, 32, x, sizeof x) || !sval(g, &in->src[1], 0, 32, y, sizeof y))
            return false;
        if (in->dst[0].kind != WAVE_OPND_VGPR || in->dst[0].reg >= g->sh->vgprs)
            return refuse(g, "its destination is no VGPR of the kernel's");
        put(g, "v[%uu + (%s & 63u)] = %s;\n", in->dst[0].reg * 64u, y, x);
        return true;
    }
    default:
        *done = false;
        return true;
    }
}

/* A DPP instruction this level runs: a control the ISA defines, src0 a
 * VGPR. */
static bool dpp_ok(struct gen *g)
{
    const struct wave_instr *in = g->in;
    unsigned c = in->mods.dpp_ctrl;
    bool defined = c <= 0xff || (c >= 0x101 && c <= 0x10f) || (c >= 0x111 && c <= 0x11f) ||
                   (c >= 0x121 && c <= 0x12f) || c == 0x130 || c == 0x134 || c == 0x138 || c == 0x13c ||
                   (c >= 0x140 && c <= 0x143);
    if (!defined)
        return refuse(g, "DPP control 0x%x is reserved", c);
    if (in->src[0].kind != WAVE_OPND_VGPR || in->src[0].reg >= g->sh->vgprs)
        return refuse(g, "a DPP source that is no VGPR of the kernel's");
    return true;
}

/* In a DPP instruction's lane loop: dv, src0 read from the control's
 * source lane (from dsrc, the register as it was before the instruction),
 * 0 where there is none and bound_ctrl is set; `on` cleared for lanes the
 * row and bank masks disable and for lanes without a source otherwise
 * (interp_valu.c: the same rules). */
static bool dpp_open(struct gen *g)
{
    const struct wave_mods *md = &g->in->mods;
    put(g, "int sl = dpp_lane(%uu, l);\n", md->dpp_ctrl);
    put(g, "bool sok = sl >= 0 && bitl(e0, e1, uint(max(sl, 0)));\n");
    put(g, "on = on && ((%uu >> (l >> 4u)) & 1u) != 0u && ((%uu >> ((l >> 2u) & 3u)) & 1u) != 0u && (sok || %s);\n",
        md->row_mask, md->bank_mask, md->bound_ctrl ? "true" : "false");
    put(g, "uint dv = sok ? dsrc[uint(max(sl, 0))] : 0u;\n");
    return true;
}

static bool valu(struct gen *g)
{
    const struct wave_instr *in = g->in;
    const struct wave_op_info *info = wave_op_info(in->op);
    if (in->enc == WAVE_ENC_SDWA)
        return refuse(g, "its SDWA encoding is not translated yet");
    if (in->enc == WAVE_ENC_DPP && g->sh->lane && !g->sh->lockstep)
        return refuse(g, "its DPP source is another lane's, and one invocation per lane has only its own");
    if (in->enc == WAVE_ENC_DPP && !dpp_ok(g))
        return false;
    if (info->family == WAVE_FAM_VOP3P)
        return refuse(g, "packed (VOP3P) operations are not translated yet");
    if (in->mods.op_sel)
        return refuse(g, "VOP3's op_sel is not translated yet");
    bool done;
    if (in->enc != WAVE_ENC_DPP && (!valu_special(g, &done) || done))
        return done && !g->why[0];
    bool x = false, wide = false;
    const char *rel = cmp_of(in->op, &x, &wide);
    if (rel && in->enc == WAVE_ENC_DPP)
        return refuse(g, "a compare in the DPP encoding");
    if (rel) {
        bool fl = in->op >= WAVE_OP_V_CMP_F_F32 && in->op <= WAVE_OP_V_CMPX_TRU_F32;
        if (!fl && (in->mods.abs || in->mods.neg))
            return refuse(g, "abs or neg on an integer compare");
        if (in->mods.clamp || in->mods.omod)
            return refuse(g, "clamp or omod on a compare");
        lanes_open(g, true);
        if (!vsrc(g, 0, wide, fl, false) || !vsrc(g, 1, wide, fl, false))
            return false;
        put(g, "setl(m0, m1, l, on && (%s));\n}\n", rel);
        if (g->sh->lockstep)   /* every lane's bit, the whole mask in every lane */
            put(g, "{ uvec2 wm = wave_or2(m0, m1); m0 = wm.x; m1 = wm.y; }\n");
        /* inactive lanes' bits are 0; v_cmpx writes exec too */
        if (x)
            put(g, "s[126] = m0; s[127] = m1;\n");
        const struct wave_operand *d = &in->dst[1];
        bool ok = sdst(g, d, 0, "m0") && sdst(g, d, 1, "m1");
        put(g, "}\n");
        return ok;
    }
    struct vop v;
    if (!vop_of(in->op, &v))
        return refuse(g, "%s is not translated at this level yet", wave_op_name(in->op));
    bool fl = v.kind == VK_FLOAT;
    if (!fl && !v.mbits && (in->mods.abs || in->mods.neg))
        return refuse(g, "abs or neg on an integer operation");
    if (!fl && in->mods.omod)
        return refuse(g, "omod on an integer operation");
    if (!fl && in->mods.clamp && !v.clamp_ok)
        return refuse(g, "clamp on %s (what it does there is not settled)", info->name);
    if (in->op == WAVE_OP_V_CVT_U32_F32 || in->op == WAVE_OP_V_CVT_I32_F32) {
        if (in->mods.abs || in->mods.neg)
            return refuse(g, "abs or neg on a conversion's source is not translated yet");
    }
    if (in->op == WAVE_OP_V_CVT_F32_U32 || in->op == WAVE_OP_V_CVT_F32_I32)
        fl = false;   /* integer sources; the result is a float (omod, clamp) */
    bool carry = v.carry;
    lanes_open(g, carry);
    unsigned nsrc = info->src[2] && !v.carry_in ? 3 : info->src[1] ? 2 : 1;
    if (in->op == WAVE_OP_V_MAC_F32)
        nsrc = 3;   /* src[2] is the destination, read */
    if (in->enc == WAVE_ENC_DPP && !dpp_open(g))
        return false;
    for (unsigned i = 0; i < nsrc; i++)
        if (!vsrc(g, i, (v.wide >> i) & 1, fl, v.h16))
            return false;
    if (v.carry_in) {
        char lo[96], hi[96];
        if (!sval(g, &in->src[2], 0, 64, lo, sizeof lo) || !sval(g, &in->src[2], 1, 64, hi, sizeof hi))
            return false;
        put(g, "bool cin = bitl(%s, %s, l);\nuint ci = cin ? 1u : 0u;\n", lo, hi);
    }
    put(g, "bool CL = %s;\n", in->mods.clamp ? "true" : "false");
    /* the ops whose result needs a statement before it */
    switch (in->op) {
    case WAVE_OP_V_ADD_CO_U32: put(g, "uint cy; uaddCarry(a, b, cy); bool f = cy != 0u;\n"); break;
    case WAVE_OP_V_SUB_CO_U32: put(g, "uint cy; usubBorrow(a, b, cy); bool f = cy != 0u;\n"); break;
    case WAVE_OP_V_SUBREV_CO_U32: put(g, "uint cy; usubBorrow(b, a, cy); bool f = cy != 0u;\n"); break;
    case WAVE_OP_V_ADDC_CO_U32:
        put(g, "uint c1, c2; uint t = uaddCarry(a, b, c1); uaddCarry(t, ci, c2); bool f = (c1 | c2) != 0u;\n"
               "t = CL && c1 != 0u ? 0xffffffffu : t;\n");
        break;
    case WAVE_OP_V_SUBB_CO_U32:
        put(g, "uint w1, w2; uint t = usubBorrow(a, b, w1); usubBorrow(t, ci, w2); bool f = (w1 | w2) != 0u;\n"
               "t = CL && w1 != 0u ? 0u : t;\n");
        break;
    case WAVE_OP_V_SUBBREV_CO_U32:
        put(g, "uint w1, w2; uint t = usubBorrow(b, a, w1); usubBorrow(t, ci, w2); bool f = (w1 | w2) != 0u;\n"
               "t = CL && w1 != 0u ? 0u : t;\n");
        break;
    case WAVE_OP_V_DIV_SCALE_F32: put(g, "bool f = false;\n"); break;
    case WAVE_OP_V_MAD_U64_U32:
        if (in->mods.clamp)
            return refuse(g, "clamp on v_mad_u64_u32 (what it does there is not settled)");
        put(g, "bool f; uvec2 m = mad64(a, b, c, c1, f);\n");
        break;
    case WAVE_OP_V_LSHLREV_B64: put(g, "uvec2 x = shl64(b, b1, a);\n"); break;
    case WAVE_OP_V_LSHRREV_B64: put(g, "uvec2 x = shr64(b, b1, a);\n"); break;
    case WAVE_OP_V_ASHRREV_I64: put(g, "uvec2 x = sar64(b, b1, a);\n"); break;
    default: break;
    }
    put(g, "uint r = %s;\n", v.expr);
    if (v.kind == VK_FLOAT)
        put(g, "r = fout(fres(r), %uu, CL);\n", in->mods.omod);
    bool ok = vdst(g, &in->dst[0], 0, "r");
    if (ok && (v.expr1 || in->op == WAVE_OP_V_MAD_U64_U32))
        ok = vdst(g, &in->dst[0], 1, v.expr1 ? v.expr1 : "m.y");
    if (ok && carry)
        put(g, "setl(m0, m1, l, on && f);\n");
    put(g, "}\n");
    if (ok && carry && g->sh->lockstep)
        put(g, "{ uvec2 wm = wave_or2(m0, m1); m0 = wm.x; m1 = wm.y; }\n");
    if (ok && carry)
        ok = sdst(g, &in->dst[1], 0, "m0") && sdst(g, &in->dst[1], 1, "m1");
    put(g, "}\n");
    return ok;
}

/* ---- memory ---------------------------------------------------------------------------- */

/* After a memory instruction: a lane that faulted stops its wave. At the
 * Subgroup level the wave stops as one (every lane reaches the barriers
 * the same number of times): the others end as if done, the faulting
 * lane's status is the wave's. A store's bytes are seen by every lane
 * before the next instruction, as the wave's lockstep has it. */
/* An atomic whose result depends on the order lanes reach it (a value
 * returned, a swap): the wave takes its lanes in lane order. */
static bool ordered_atomic(const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    if (!info || !(info->flags & WAVE_F_ATOMIC))
        return false;
    if (info->family == WAVE_FAM_DS)
        return info->dst != 0;
    return in->mods.glc || strstr(wave_op_name(in->op), "swap");
}

/* At the Subgroup level, an ordered atomic's lanes take turns in lane
 * order, the whole wave meeting at a barrier after each turn: turns_open
 * before the lane loop, turns_close after it (then a block the
 * instruction's closing brace ends). */
static void turns_open(struct gen *g)
{
    if (g->sh->lockstep && ordered_atomic(g->in))
        put(g, "for (uint turn = 0u; turn < 64u; turn++) {\nif (turn == ln) {\n");
}

static void turns_close(struct gen *g)
{
    if (g->sh->lockstep && ordered_atomic(g->in))
        put(g, "}\n}\nmemoryBarrierBuffer();\nmemoryBarrierShared();\nbarrier();\n}\n{\n");
}

static void stop_on_fault(struct gen *g)
{
    const struct wave_op_info *info = wave_op_info(g->in->op);
    bool writes = info && (info->flags & (WAVE_F_STORE | WAVE_F_ATOMIC));
    if (!g->sh->lockstep) {
        put(g, "if (st != 0u) break;\n");
        return;
    }
    if (writes)
        put(g, "memoryBarrierBuffer();\nmemoryBarrierShared();\nbarrier();\n");
    put(g, "if (wave_max(st) != 0u) { if (st == 0u) st = 1u; break; }\n");
}

/* The global and flat memory instructions this level translates: bytes
 * per element, elements, signed (sub-dword loads), load or store. */
static bool gmem_of(unsigned op, unsigned *bytes, unsigned *n, bool *sgn, bool *store, const char **atomic)
{
    *sgn = false, *store = false, *atomic = NULL, *n = 1, *bytes = 4;
    switch (op) {
    case WAVE_OP_GLOBAL_LOAD_UBYTE: case WAVE_OP_FLAT_LOAD_UBYTE: *bytes = 1; return true;
    case WAVE_OP_GLOBAL_LOAD_SBYTE: case WAVE_OP_FLAT_LOAD_SBYTE: *bytes = 1, *sgn = true; return true;
    case WAVE_OP_GLOBAL_LOAD_USHORT: case WAVE_OP_FLAT_LOAD_USHORT: *bytes = 2; return true;
    case WAVE_OP_GLOBAL_LOAD_SSHORT: case WAVE_OP_FLAT_LOAD_SSHORT: *bytes = 2, *sgn = true; return true;
    case WAVE_OP_GLOBAL_LOAD_DWORD: case WAVE_OP_FLAT_LOAD_DWORD: return true;
    case WAVE_OP_GLOBAL_LOAD_DWORDX2: case WAVE_OP_FLAT_LOAD_DWORDX2: *n = 2; return true;
    case WAVE_OP_GLOBAL_LOAD_DWORDX3: case WAVE_OP_FLAT_LOAD_DWORDX3: *n = 3; return true;
    case WAVE_OP_GLOBAL_LOAD_DWORDX4: case WAVE_OP_FLAT_LOAD_DWORDX4: *n = 4; return true;
    case WAVE_OP_GLOBAL_STORE_BYTE: case WAVE_OP_FLAT_STORE_BYTE: *bytes = 1, *store = true; return true;
    case WAVE_OP_GLOBAL_STORE_SHORT: case WAVE_OP_FLAT_STORE_SHORT: *bytes = 2, *store = true; return true;
    case WAVE_OP_GLOBAL_STORE_DWORD: case WAVE_OP_FLAT_STORE_DWORD: *store = true; return true;
    case WAVE_OP_GLOBAL_STORE_DWORDX2: case WAVE_OP_FLAT_STORE_DWORDX2: *n = 2, *store = true; return true;
    case WAVE_OP_GLOBAL_STORE_DWORDX3: case WAVE_OP_FLAT_STORE_DWORDX3: *n = 3, *store = true; return true;
    case WAVE_OP_GLOBAL_STORE_DWORDX4: case WAVE_OP_FLAT_STORE_DWORDX4: *n = 4, *store = true; return true;
    /* 32-bit atomics: the GLSL call, over (the word, the data, the compare) */
    case WAVE_OP_GLOBAL_ATOMIC_ADD: case WAVE_OP_FLAT_ATOMIC_ADD: *atomic = "atomicAdd(mem[w], x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_SUB: case WAVE_OP_FLAT_ATOMIC_SUB: *atomic = "atomicAdd(mem[w], 0u - x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_AND: case WAVE_OP_FLAT_ATOMIC_AND: *atomic = "atomicAnd(mem[w], x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_OR: case WAVE_OP_FLAT_ATOMIC_OR: *atomic = "atomicOr(mem[w], x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_XOR: case WAVE_OP_FLAT_ATOMIC_XOR: *atomic = "atomicXor(mem[w], x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_UMIN: case WAVE_OP_FLAT_ATOMIC_UMIN: *atomic = "atomicMin(mem[w], x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_UMAX: case WAVE_OP_FLAT_ATOMIC_UMAX: *atomic = "atomicMax(mem[w], x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_SWAP: case WAVE_OP_FLAT_ATOMIC_SWAP: *atomic = "atomicExchange(mem[w], x)"; return true;
    case WAVE_OP_GLOBAL_ATOMIC_CMPSWAP: case WAVE_OP_FLAT_ATOMIC_CMPSWAP:
        *atomic = "atomicCompSwap(mem[w], y, x)";
        return true;
    default: return false;
    }
}

static bool vmem(struct gen *g)
{
    const struct wave_instr *in = g->in;
    const struct wave_op_info *info = wave_op_info(in->op);
    unsigned bytes, n;
    bool sgn, store;
    const char *atomic;
    if (info->family == WAVE_FAM_MUBUF || info->family == WAVE_FAM_SCRATCH)
        return refuse(g, "%s: scratch and buffer-resource memory are not translated yet", info->name);
    if (!gmem_of(in->op, &bytes, &n, &sgn, &store, &atomic))
        return refuse(g, "%s is not translated at this level yet", info->name);
    if (in->mods.lds || in->mods.tfe)
        return refuse(g, "lds or tfe on %s", info->name);
    char x[96], y[96];
    turns_open(g);
    lanes_open(g, false);
    put(g, "if (on) {\n");
    /* the address */
    if (info->family == WAVE_FAM_GLOBAL && in->src[1].kind == WAVE_OPND_SGPR) {
        if (!sval(g, &in->src[1], 0, 64, x, sizeof x) || !sval(g, &in->src[1], 1, 64, y, sizeof y))
            return false;
        put(g, "uvec2 ad = addu(%s, %s, ", x, y);
        if (!vval(g, &in->src[0], 0, 32, x, sizeof x))
            return false;
        put(g, "%s);\n", x);
    } else {
        if (!vval(g, &in->src[0], 0, 64, x, sizeof x) || !vval(g, &in->src[0], 1, 64, y, sizeof y))
            return false;
        put(g, "uvec2 ad = uvec2(%s, %s);\n", x, y);
    }
    put(g, "ad = adds(ad.x, ad.y, %uu);\n", (uint32_t)in->mods.offset);
    if (atomic) {
        const struct wave_operand *d = &in->src[2];
        if (!vval(g, d, 0, 32, x, sizeof x))
            return false;
        put(g, "uint x = %s;\n", x);
        if (strstr(atomic, "CompSwap")) {   /* data: {new, compare} */
            if (!vval(g, d, 1, 32, y, sizeof y))
                return false;
            put(g, "uint y = %s;\n", y);
        }
        put(g, "uint b, wb;\n");
        put(g, "if ((ad.x & 3u) != 0u) fault(2u, ad.x, ad.y, l);\n");
        put(g, "else if (reach(ad.x, ad.y, 4u, true, l, b, wb)) {\n");
        put(g, "uint w = b >> 2u;\nuint old = %s;\nmark(wb, ad.x, 4u);\n", atomic);
        if (in->mods.glc) {
            if (in->dst[0].kind != WAVE_OPND_VGPR || in->dst[0].reg >= g->sh->vgprs)
                return refuse(g, "its returned value has no VGPR");
            put(g, "%s = old;\n", V(g, in->dst[0].reg));
        }
        put(g, "}\n");
    } else if (store) {
        const struct wave_operand *d = &in->src[2];
        for (unsigned i = 0; i < n; i++) {
            if (!vval(g, d, i, 32, x, sizeof x))
                return false;
            put(g, "{ uvec2 e = addu(ad.x, ad.y, %uu); stn(e.x, e.y, %uu, %s, l); }\n", 4u * i, bytes, x);
        }
    } else {
        if (in->dst[0].kind != WAVE_OPND_VGPR || in->dst[0].reg + n > g->sh->vgprs)
            return refuse(g, "its destination is no VGPR of the kernel's");
        for (unsigned i = 0; i < n; i++)
            put(g, "uint d%u; { uvec2 e = addu(ad.x, ad.y, %uu); d%u = ldn(e.x, e.y, %uu, l); }\n", i, 4u * i, i,
                bytes);
        if (sgn)
            put(g, "d0 = uint(int(d0 << %uu) >> %u);\n", 32 - 8 * bytes, 32 - 8 * bytes);
        for (unsigned i = 0; i < n; i++)
            put(g, "%s = d%u;\n", V(g, in->dst[0].reg + i), i);
    }
    put(g, "}\n}\n");
    turns_close(g);
    stop_on_fault(g);
    put(g, "}\n");
    return true;
}

static bool smem(struct gen *g)
{
    const struct wave_instr *in = g->in;
    unsigned n;
    switch (in->op) {
    case WAVE_OP_S_LOAD_DWORD: n = 1; break;
    case WAVE_OP_S_LOAD_DWORDX2: n = 2; break;
    case WAVE_OP_S_LOAD_DWORDX4: n = 4; break;
    case WAVE_OP_S_LOAD_DWORDX8: n = 8; break;
    case WAVE_OP_S_LOAD_DWORDX16: n = 16; break;
    default: return refuse(g, "%s is not translated at this level yet", wave_op_name(in->op));
    }
    char x[96], y[96], o[96];
    if (!sval(g, &in->src[0], 0, 64, x, sizeof x) || !sval(g, &in->src[0], 1, 64, y, sizeof y) ||
        !sval(g, &in->src[1], 0, 32, o, sizeof o))
        return false;
    if (in->dst[0].kind != WAVE_OPND_SGPR || in->dst[0].reg + n > 128)
        return refuse(g, "its destination is no scalar register kiln models");
    put(g, "{\nuvec2 ad = addu(%s, %s, %s);\nad.x &= ~3u;\n", x, y, o);
    for (unsigned i = 0; i < n; i++)
        put(g, "uint d%u; { uvec2 e = addu(ad.x, ad.y, %uu); d%u = ldn(e.x, e.y, 4u, 64u); }\n", i, 4u * i, i);
    for (unsigned i = 0; i < n; i++)
        put(g, "s[%u] = d%u;\n", in->dst[0].reg + i, i);
    put(g, "if (st != 0u) break;\n}\n");
    return true;
}

/* ds_swizzle_b32, ds_permute_b32, ds_bpermute_b32: lanes exchanged
 * through the data path, no LDS read or written (interp_mem.c: inactive
 * lanes give 0; a permute's later lane wins a target). The Wavefront
 * level computes every lane's result from the wave's arrays; the Subgroup
 * level passes each lane's value (0 where it is off) and address through
 * shared memory, and each lane computes its own. */
static bool ds_cross(struct gen *g)
{
    const struct wave_instr *in = g->in;
    unsigned off = (unsigned)in->mods.offset1 << 8 | in->mods.offset0;
    bool swz = in->op == WAVE_OP_DS_SWIZZLE_B32, perm = in->op == WAVE_OP_DS_PERMUTE_B32;
    bool ls = g->sh->lockstep;
    const char *me = ls ? "ln" : "l";
    const struct wave_operand *d = &in->dst[0];
    if (d->kind != WAVE_OPND_VGPR || d->reg >= g->sh->vgprs)
        return refuse(g, "its destination is no VGPR of the kernel's");
    char x[96], a[96];
    if (!vval(g, swz ? &in->src[0] : &in->src[1], 0, 32, x, sizeof x))
        return false;
    if (!swz && !vval(g, &in->src[0], 0, 32, a, sizeof a))
        return false;
    put(g, "{\nuint e0 = s[126], e1 = s[127];\n");
    if (ls)
        put(g, "bool on = bitl(e0, e1, ln);\nbarrier();\nxw[ln] = on ? %s : 0u;\nxa[ln] = %s;\nbarrier();\nuint o = 0u;\n",
            x, swz ? "0u" : a);
    else
        put(g, "uint sv[64], ov[64];\nfor (uint l = 0u; l < 64u; l++) { sv[l] = bitl(e0, e1, l) ? %s : 0u; ov[l] = 0u; "
               "}\n",
            x);
    if (perm && ls) {   /* the last active lane whose target is this one */
        put(g, "for (uint l = 0u; l < 64u; l++)\n");
        put(g, "if (bitl(e0, e1, l) && (((xa[l] + %uu) >> 2u) & 63u) == ln) o = xw[l];\n", off);
    } else if (perm) {
        put(g, "for (uint l = 0u; l < 64u; l++)\n");
        put(g, "if (bitl(e0, e1, l)) ov[((%s + %uu) >> 2u) & 63u] = sv[l];\n", a, off);
    } else {
        if (!ls)
            put(g, "for (uint l = 0u; l < 64u; l++) {\n");
        if (!swz)
            put(g, "uint t = ((%s + %uu) >> 2u) & 63u;\n", ls ? "xa[ln]" : a, off);
        else if (off & 0x8000)
            put(g, "uint t = (%s & ~3u) | ((%uu >> (2u * (%s & 3u))) & 3u);\n", me, off, me);
        else
            put(g, "uint t = (%s & ~31u) | (((((%s) & 31u) & %uu) | %uu) ^ %uu);\n", me, me, off & 31, (off >> 5) & 31,
                (off >> 10) & 31);
        put(g, ls ? "o = bitl(e0, e1, t) ? xw[t] : 0u;\n" : "ov[l] = bitl(e0, e1, t) ? sv[t] : 0u;\n}\n");
    }
    if (ls)
        put(g, "if (on) v[%uu] = o;\n}\n", d->reg);
    else
        put(g, "for (uint l = 0u; l < 64u; l++) v[%uu + l] = bitl(e0, e1, l) ? ov[l] : v[%uu + l];\n}\n",
            d->reg * 64u, d->reg * 64u);
    return true;
}

static bool ds(struct gen *g)
{
    const struct wave_instr *in = g->in;
    const char *name = wave_op_name(in->op);
    if (in->mods.gds)
        return refuse(g, "%s with gds", name);
    if (in->op == WAVE_OP_DS_SWIZZLE_B32 || in->op == WAVE_OP_DS_PERMUTE_B32 || in->op == WAVE_OP_DS_BPERMUTE_B32)
        return g->sh->lane && !g->sh->lockstep
                   ? refuse(g, "it moves values between lanes, and one invocation per lane has only its own")
                   : ds_cross(g);
    if (!g->sh->lds_bytes)
        return refuse(g, "%s in a kernel that declares no LDS", name);
    unsigned off = (unsigned)in->mods.offset1 << 8 | in->mods.offset0;
    char a[96], x[96];
    if (!vval(g, &in->src[0], 0, 32, a, sizeof a))
        return false;
    const struct wave_operand *d = &in->dst[0];
    bool dst_ok = d->kind == WAVE_OPND_VGPR && d->reg + (d->count ? d->count : 1u) <= g->sh->vgprs;
    turns_open(g);
    lanes_open(g, false);
    put(g, "if (on) {\nuint ad = %s;\n", a);
    switch (in->op) {
    case WAVE_OP_DS_WRITE_B32: case WAVE_OP_DS_WRITE_B16: case WAVE_OP_DS_WRITE_B8: {
        unsigned n = in->op == WAVE_OP_DS_WRITE_B32 ? 4 : in->op == WAVE_OP_DS_WRITE_B16 ? 2 : 1;
        if (!vval(g, &in->src[1], 0, 32, x, sizeof x))
            return false;
        put(g, "lstn(ad + %uu, %uu, %s, l);\n", off, n, x);
        break;
    }
    case WAVE_OP_DS_WRITE_B64:
        if (!vval(g, &in->src[1], 0, 32, x, sizeof x))
            return false;
        put(g, "lstn(ad + %uu, 4u, %s, l);\n", off, x);
        if (!vval(g, &in->src[1], 1, 32, x, sizeof x))
            return false;
        put(g, "lstn(ad + %uu, 4u, %s, l);\n", off + 4, x);
        break;
    case WAVE_OP_DS_WRITE2_B32: case WAVE_OP_DS_WRITE2ST64_B32: {
        unsigned sc = in->op == WAVE_OP_DS_WRITE2_B32 ? 4 : 256;
        if (!vval(g, &in->src[1], 0, 32, x, sizeof x))
            return false;
        put(g, "lstn(ad + %uu, 4u, %s, l);\n", in->mods.offset0 * sc, x);
        if (!vval(g, &in->src[2], 0, 32, x, sizeof x))
            return false;
        put(g, "lstn(ad + %uu, 4u, %s, l);\n", in->mods.offset1 * sc, x);
        break;
    }
    case WAVE_OP_DS_READ_B32: case WAVE_OP_DS_READ_U16: case WAVE_OP_DS_READ_U8: case WAVE_OP_DS_READ_I16:
    case WAVE_OP_DS_READ_I8: {
        unsigned n = in->op == WAVE_OP_DS_READ_B32 ? 4 : in->op == WAVE_OP_DS_READ_U16 || in->op == WAVE_OP_DS_READ_I16 ? 2 : 1;
        bool sg = in->op == WAVE_OP_DS_READ_I16 || in->op == WAVE_OP_DS_READ_I8;
        if (!dst_ok)
            return refuse(g, "its destination is no VGPR of the kernel's");
        put(g, "uint r = lldn(ad + %uu, %uu, l);\n", off, n);
        if (sg)
            put(g, "r = uint(int(r << %uu) >> %u);\n", 32 - 8 * n, 32 - 8 * n);
        put(g, "%s = r;\n", V(g, d->reg));
        break;
    }
    case WAVE_OP_DS_READ_B64:
        if (!dst_ok)
            return refuse(g, "its destination is no VGPR of the kernel's");
        put(g, "uint r0 = lldn(ad + %uu, 4u, l), r1 = lldn(ad + %uu, 4u, l);\n", off, off + 4);
        put(g, "%s = r0; %s = r1;\n", V(g, d->reg), V(g, d->reg + 1));
        break;
    case WAVE_OP_DS_READ2_B32: case WAVE_OP_DS_READ2ST64_B32: {
        unsigned sc = in->op == WAVE_OP_DS_READ2_B32 ? 4 : 256;
        if (!dst_ok)
            return refuse(g, "its destination is no VGPR of the kernel's");
        put(g, "uint r0 = lldn(ad + %uu, 4u, l), r1 = lldn(ad + %uu, 4u, l);\n", in->mods.offset0 * sc,
            in->mods.offset1 * sc);
        put(g, "%s = r0; %s = r1;\n", V(g, d->reg), V(g, d->reg + 1));
        break;
    }
    case WAVE_OP_DS_ADD_U32: case WAVE_OP_DS_ADD_RTN_U32: case WAVE_OP_DS_SUB_U32: case WAVE_OP_DS_SUB_RTN_U32:
    case WAVE_OP_DS_AND_B32: case WAVE_OP_DS_AND_RTN_B32: case WAVE_OP_DS_OR_B32: case WAVE_OP_DS_OR_RTN_B32:
    case WAVE_OP_DS_XOR_B32: case WAVE_OP_DS_XOR_RTN_B32: case WAVE_OP_DS_MIN_U32: case WAVE_OP_DS_MIN_RTN_U32:
    case WAVE_OP_DS_MAX_U32: case WAVE_OP_DS_MAX_RTN_U32: case WAVE_OP_DS_WRXCHG_RTN_B32: {
        unsigned op = in->op;
        const char *call = op == WAVE_OP_DS_ADD_U32 || op == WAVE_OP_DS_ADD_RTN_U32 ? "atomicAdd(lds[w], x)"
                         : op == WAVE_OP_DS_SUB_U32 || op == WAVE_OP_DS_SUB_RTN_U32 ? "atomicAdd(lds[w], 0u - x)"
                         : op == WAVE_OP_DS_AND_B32 || op == WAVE_OP_DS_AND_RTN_B32 ? "atomicAnd(lds[w], x)"
                         : op == WAVE_OP_DS_OR_B32 || op == WAVE_OP_DS_OR_RTN_B32 ? "atomicOr(lds[w], x)"
                         : op == WAVE_OP_DS_XOR_B32 || op == WAVE_OP_DS_XOR_RTN_B32 ? "atomicXor(lds[w], x)"
                         : op == WAVE_OP_DS_MIN_U32 || op == WAVE_OP_DS_MIN_RTN_U32 ? "atomicMin(lds[w], x)"
                         : op == WAVE_OP_DS_MAX_U32 || op == WAVE_OP_DS_MAX_RTN_U32 ? "atomicMax(lds[w], x)"
                         : "atomicExchange(lds[w], x)";
        bool rtn = op == WAVE_OP_DS_ADD_RTN_U32 || op == WAVE_OP_DS_SUB_RTN_U32 || op == WAVE_OP_DS_AND_RTN_B32 ||
                   op == WAVE_OP_DS_OR_RTN_B32 || op == WAVE_OP_DS_XOR_RTN_B32 || op == WAVE_OP_DS_MIN_RTN_U32 ||
                   op == WAVE_OP_DS_MAX_RTN_U32 || op == WAVE_OP_DS_WRXCHG_RTN_B32;
        if (!vval(g, &in->src[1], 0, 32, x, sizeof x))
            return false;
        put(g, "uint a2 = ad + %uu, x = %s;\nif ((a2 & 3u) != 0u || !lreach(a2, 4u, l)) fault(5u, a2, 0u, l);\n", off,
            x);
        put(g, "else {\nuint w = a2 >> 2u;\nuint old = %s;\n", call);
        if (rtn) {
            if (!dst_ok)
                return refuse(g, "its destination is no VGPR of the kernel's");
            put(g, "%s = old;\n", V(g, d->reg));
        }
        put(g, "}\n");
        break;
    }
    default:
        return refuse(g, "%s is not translated at this level yet", name);
    }
    put(g, "}\n}\n");
    turns_close(g);
    stop_on_fault(g);
    put(g, "}\n");
    return true;
}

/* ---- blocks ------------------------------------------------------------------------------ */

#ifdef KILN_TEST_HOOKS
static uint64_t corrupt_at;
static uint32_t corrupt_nth;
void wf_test_corrupt(uint64_t offset, uint32_t nth) { corrupt_at = offset, corrupt_nth = nth; }

/* The test hook's corruption after the instruction at corrupt_at: bit 0 of
 * its first destination flipped (lanes under exec for a VGPR). */
static void corrupt(struct gen *g)
{
    const struct wave_operand *d = &g->in->dst[0];
    if (!corrupt_at || g->pc != corrupt_at)
        return;
    put(g, "ccount++;\nif (ccount == %uu) {\n", corrupt_nth);
    if (d->kind == WAVE_OPND_VGPR && d->reg < g->sh->vgprs)
        put(g, "for (uint l = %s; l < %s; l++) %s ^= bitl(s[126], s[127], l) ? 1u : 0u;\n", g->sh->lane ? "ln" : "0u",
            g->sh->lane ? "ln + 1u" : "64u", V(g, d->reg));
    else if (d->kind == WAVE_OPND_SGPR && d->reg < 128)
        put(g, "s[%u] ^= 1u;\n", d->reg);
    put(g, "}\n");
}
#else
static void corrupt(struct gen *g) { (void)g; }
#endif

static bool instr_body(struct gen *g, const struct wave_cfg *c, uint32_t i);

/* One instruction; false with g->why set when it does not translate. In a
 * bisecting program it first counts itself, and stops the wave at its
 * count (WF_STOPPED, the instruction not run). */
static bool instr(struct gen *g, const struct wave_cfg *c, uint32_t i)
{
    g->in = &c->in[i];
    g->pc = c->pc[i];
    g->why[0] = 0;
    if (g->sh->bisect) {
        uint32_t pc4 = (uint32_t)(c->pc[i] / 4);
        put(g, "if (steps >= stop) { st = 6u; fpc = %uu; break; }\n", pc4);
        put(g, "steps++; lastpc = %uu; watched += (%uu == watch) ? 1u : 0u;\n", pc4, pc4);
    }
    bool ok = instr_body(g, c, i);
    if (ok && !wave_ends_block(g->in->op))
        corrupt(g);
    return ok;
}

static bool instr_body(struct gen *g, const struct wave_cfg *c, uint32_t i)
{
    const struct wave_op_info *info = wave_op_info(g->in->op);
    if (!info)
        return refuse(g, "an instruction without an op");
    uint64_t next = c->pc[i] + 4ull * g->in->words;
    switch (g->in->op) {
    case WAVE_OP_S_ENDPGM:
        put(g, "st = 1u;\nbreak;\n");
        return true;
    case WAVE_OP_S_BARRIER:   /* the wave waits for its group's others (the phase loop) */
        put(g, "pc = %uu;\natb = true;\nbreak;\n", (uint32_t)(next / 4));
        return true;
    case WAVE_OP_S_BRANCH:
        put(g, "pc = %uu;\nbreak;\n", (uint32_t)(wave_branch_target(c->pc[i], g->in) / 4));
        return true;
    case WAVE_OP_S_CBRANCH_SCC0: case WAVE_OP_S_CBRANCH_SCC1: case WAVE_OP_S_CBRANCH_VCCZ:
    case WAVE_OP_S_CBRANCH_VCCNZ: case WAVE_OP_S_CBRANCH_EXECZ: case WAVE_OP_S_CBRANCH_EXECNZ: {
        unsigned op = g->in->op;
        bool lane = g->sh->lane && !g->sh->lockstep;   /* lockstep: masks are whole, branches the wave's */
        if (lane && (op == WAVE_OP_S_CBRANCH_VCCZ || op == WAVE_OP_S_CBRANCH_VCCNZ))
            return refuse(g, "it branches on whether any lane's vcc bit is set, which one invocation per lane cannot "
                             "know");
        if (lane && op == WAVE_OP_S_CBRANCH_EXECZ) {   /* the lane's own bit: off, it skips */
            put(g, "pc = bitl(s[126], s[127], ln) ? %uu : %uu;\nbreak;\n", (uint32_t)(next / 4),
                (uint32_t)(wave_branch_target(c->pc[i], g->in) / 4));
            return true;
        }
        if (lane && op == WAVE_OP_S_CBRANCH_EXECNZ) {
            put(g, "pc = bitl(s[126], s[127], ln) ? %uu : %uu;\nbreak;\n",
                (uint32_t)(wave_branch_target(c->pc[i], g->in) / 4), (uint32_t)(next / 4));
            return true;
        }
        const char *cond = op == WAVE_OP_S_CBRANCH_SCC0 ? "!scc" : op == WAVE_OP_S_CBRANCH_SCC1 ? "scc"
                         : op == WAVE_OP_S_CBRANCH_VCCZ ? "(s[106] | s[107]) == 0u"
                         : op == WAVE_OP_S_CBRANCH_VCCNZ ? "(s[106] | s[107]) != 0u"
                         : op == WAVE_OP_S_CBRANCH_EXECZ ? "(s[126] | s[127]) == 0u" : "(s[126] | s[127]) != 0u";
        put(g, "pc = (%s) ? %uu : %uu;\nbreak;\n", cond, (uint32_t)(wave_branch_target(c->pc[i], g->in) / 4),
            (uint32_t)(next / 4));
        return true;
    }
    default: break;
    }
    switch (info->family) {
    case WAVE_FAM_SOP1: case WAVE_FAM_SOP2: case WAVE_FAM_SOPK: case WAVE_FAM_SOPC: case WAVE_FAM_SOPP:
        return salu(g);
    case WAVE_FAM_SMEM:
        return smem(g);
    case WAVE_FAM_DS:
        return ds(g);
    case WAVE_FAM_FLAT: case WAVE_FAM_GLOBAL: case WAVE_FAM_SCRATCH: case WAVE_FAM_MUBUF:
        return vmem(g);
    default:
        return valu(g);
    }
}

/* Translates (or, with glsl NULL, checks) every instruction. */
static kiln_result translate(const struct wave_code *code, const struct wave_kernel *k, const struct wf_shape *sh,
                             struct bytes *glsl)
{
    if (k->private_segment_size)
        return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s' uses %u bytes of scratch a work-item: scratch is not "
                          "translated at the %s level yet",
                          k->name, k->private_segment_size, level_name(sh));
    struct wave_cfg c;
    kiln_result r = wave_cfg_make(code, k, level_name(sh), &c);
    if (r != KILN_OK)
        return r;
    struct gen g = {.o = glsl, .k = k, .sh = sh};
    if (r == KILN_OK && glsl) {
        bool ieee = (k->rsrc1 >> 23) & 1;
        uint32_t mode = (k->rsrc1 >> 12) & 0xff;
        put(&g, "#version 450\n");
        put(&g, "// kiln %s level: kernel %s, %u waves a group, %u VGPRs\n", level_name(sh), k->name, sh->waves,
            sh->vgprs);
        put(&g, "layout(local_size_x = %u) in;\n", sh->lockstep ? 64u
                                                  : sh->lane ? sh->waves * 64u
                                                  : sh->packed_total ? WF_PACK : sh->waves);
        bool barriers = false;   /* a Lane program's invocations meet only where the kernel has barriers */
        for (uint32_t i = 0; i < c.n; i++)
            barriers |= c.in[i].op == WAVE_OP_S_BARRIER;
        put(&g, "#define LANE %d\n#define LOCKSTEP %d\n#define VFILE %uu\n#define GROUP_SYNC %d\n", sh->lane ? 1 : 0,
            sh->lockstep ? 1 : 0, sh->lane ? sh->vgprs : sh->vgprs * 64u,
            sh->lockstep ? 0 : sh->lane ? barriers : sh->waves > 1);
        put(&g, "#define VGPRS %uu\n#define REGIONS %uu\n#define LDS_BYTES %uu\n#define LDS_WORDS %u\n", sh->vgprs,
            sh->regions, sh->lds_bytes, (sh->lds_bytes + 3) / 4);
        put(&g, "#define IEEE %s\n#define DENORM_IN %s\n#define DENORM_OUT %s\n", ieee ? "true" : "false",
            mode & 0x10 ? "true" : "false", mode & 0x20 ? "true" : "false");
        put(&g, "#define WAVES %u\n#define PHASES %uu\n", sh->waves, WF_PHASE_BOUND);
        if (sh->bisect)
            put(&g, "// bisecting: every instruction counted, the wave stopped at its count\n");
        put(&g, "#define OBSERVE %d\n#define BOUND %uu\n#define INIT_WORDS %uu\n#define OUT_WORDS %uu\n",
            sh->observe ? 1 : 0, WF_BLOCK_BOUND, WF_INIT_WORDS,
            (sh->lane ? WF_LANE_HEAD : WF_OUT_HEAD) + (sh->observe ? 128u + sh->vgprs * 64u : 0u));
        bytes_put(glsl, prelude, sizeof prelude - 1);
        put(&g, "\nvoid main()\n{\n");
        if (sh->lockstep) {   /* a workgroup is a wave, its groups' waves in dispatch order */
            put(&g, "uint wave = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + "
                    "gl_WorkGroupID.x;\nln = gl_LocalInvocationID.x;\n");
        } else if (sh->lane) {   /* a workgroup is a guest group, 64 invocations a wave */
            put(&g, "uint gidx = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + "
                    "gl_WorkGroupID.x;\n");
            put(&g, "uint wave = gidx * WAVES + (gl_LocalInvocationID.x >> 6u);\n");
            put(&g, "ln = gl_LocalInvocationID.x & 63u;\n");
        } else if (sh->packed_total) {   /* WF_PACK independent waves a workgroup, in dispatch order */
            put(&g, "uint wave = gl_GlobalInvocationID.x;\nif (wave >= %uu) return;\n", sh->packed_total);
        } else {
            put(&g, "uint gidx = (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + "
                    "gl_WorkGroupID.x;\n");
            put(&g, "uint wave = gidx * gl_WorkGroupSize.x + gl_LocalInvocationID.x;\n");
        }
        put(&g, "uint ib = wave * INIT_WORDS, ob = wave * OUT_WORDS;\n");
        for (unsigned i = 0; i < 128; i++)   /* each by its index, so that a compiler keeps s in registers */
            put(&g, "s[%u] = ini[ib + %uu];\n", i, i);
        put(&g, "scc = ini[ib + 128u] != 0u;\n");
        if (sh->lane) {
            for (unsigned i = 0; i < sh->vgprs; i++) {
                if (i < 3)
                    put(&g, "v[%u] = ini[ib + %uu + ln];\n", i, 129u + 64u * i);
                else
                    put(&g, "v[%u] = 0u;\n", i);
            }
        } else {
            put(&g, "for (uint i = 0u; i < VGPRS * 64u; i++) v[i] = (i < 192u) ? ini[ib + 129u + i] : 0u;\n");
        }
        put(&g, "#if LDS_WORDS > 0\n");
        put(&g, "for (uint i = gl_LocalInvocationID.x; i < LDS_WORDS; i += gl_WorkGroupSize.x) lds[i] = 0u;\n");
        put(&g, "barrier();\n#endif\n");
        put(&g, "st = 0u; fpc = 0u; fal = 0u; fah = 0u; flane = 0u;\n");
        put(&g, "uint stop = ini[ib + %uu], watch = ini[ib + %uu], steps = 0u, lastpc = 0u, watched = 0u;\n",
            WF_INIT_WORDS - 2, WF_INIT_WORDS - 1);
        put(&g, "uint ninstr = 0u, ninstr1 = 0u, ccount = 0u;\n");
        put(&g, "pc = %uu;\n", (uint32_t)(k->code_addr / 4));
        /* phases: between two barriers of the group, each wave runs its
         * blocks until it ends or reaches s_barrier; then every invocation
         * meets at barrier(), in control flow uniform across the group
         * (the phase loop's exit is read from shared memory after a
         * barrier), and the waves at the barrier go on together */
        put(&g, "uint it = 0u;\nbool atb = false;\n");
        put(&g, "for (uint phase = 0u; phase < PHASES; phase++) {\n");
        put(&g, "for (; it < BOUND; it++) {\n");
        put(&g, "if (st != 0u || atb) break;\n");
        put(&g, "switch (pc) {\n");
    }
    for (uint32_t i = 0; r == KILN_OK && i < c.n; i++) {
        if (c.leader[i]) {
            uint32_t len = 1;
            while (i + len < c.n && !c.leader[i + len])
                len++;
            if (i && !wave_ends_block(c.in[i - 1].op))
                put(&g, "pc = %uu;\nbreak;\n", (uint32_t)(c.pc[i] / 4));   /* fall through to this block */
            if (i)
                put(&g, "}\n");
            put(&g, "case %uu: {\n", (uint32_t)(c.pc[i] / 4));
            put(&g, "{ uint cy; ninstr = uaddCarry(ninstr, %uu, cy); ninstr1 += cy; }\n", len);
        }
        if (!instr(&g, &c, i))
            r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': the %s level cannot run %s at offset 0x%" PRIx64 ": %s",
                           k->name, level_name(sh), wave_op_name(c.in[i].op), c.pc[i],
                           g.why[0] ? g.why : "(no reason given)");
    }
    if (r == KILN_OK && glsl) {
        if (c.n && !wave_ends_block(c.in[c.n - 1].op))
            put(&g, "st = 4u; fpc = %uu;\nbreak;\n", (uint32_t)((c.pc[c.n - 1] + 4ull * c.in[c.n - 1].words) / 4));
        if (c.n)
            put(&g, "}\n");
        put(&g, "default: fault(4u, pc * 4u, 0u, 64u); break;\n");   /* a jump to no block */
        put(&g, "}\n}\n");
        put(&g, "if (st == 0u && !atb) { st = 3u; fpc = pc; }\n");
        put(&g, "#if GROUP_SYNC\n");
        put(&g, "barrier();\nif (gl_LocalInvocationID.x == 0u) nwait = 0u;\nbarrier();\n");
        put(&g, "if (atb) atomicAdd(nwait, 1u);\nbarrier();\nbool again = nwait != 0u;\n");
        put(&g, "#else\nbool again = atb;\n#endif\n");
        put(&g, "atb = false;\nif (!again) break;\n}\n");
        put(&g, "if (st == 0u) { st = 3u; fpc = pc; }\n");
        /* the canary: two passes unless the device's loop budget ran out */
        put(&g, "uint canary = 0u;\nfor (uint i = 0u; i < ini[ib + %uu]; i++) canary++;\n", WF_INIT_WORDS - 3);
        put(&g, "if (canary != 2u && st != 2u && st != 5u) st = 7u;\n");
        if (sh->lane) {
            /* each lane's own head (the run takes the lowest failing
             * lane's); each scalar dword gathered bit by bit into words
             * the run clears (an even code's bit l from lane l, an odd
             * one's from lane 32 + l: a lane mask's bits from their own
             * lanes, a scalar all lanes hold alike whole) */
            put(&g, "uint lb = ob + ln * %uu;\n", WF_LANE_WORDS);
            put(&g, "outw[lb + 0u] = st; outw[lb + 1u] = fpc * 4u; outw[lb + 2u] = fal; outw[lb + 3u] = fah;\n");
            put(&g, "outw[lb + 4u] = flane; outw[lb + 5u] = ninstr; outw[lb + 6u] = ninstr1; outw[lb + 7u] = scc ? 1u : 0u;\n");
            put(&g, "outw[lb + 8u] = steps; outw[lb + 9u] = lastpc * 4u; outw[lb + 10u] = watched;\n");
            put(&g, "#if OBSERVE\n");
            if (sh->lockstep) {   /* every lane holds the wave's scalars whole */
                put(&g, "if (ln == 0u) for (uint i = 0u; i < 128u; i++) outw[ob + %uu + i] = s[i];\n", WF_LANE_HEAD);
            } else {
                put(&g, "uint bit = 1u << (ln & 31u), odd = ln >> 5u;\n");
                put(&g, "for (uint i = odd; i < 128u; i += 2u) if ((s[i] & bit) != 0u) atomicOr(outw[ob + %uu + i], "
                        "bit);\n",
                    WF_LANE_HEAD);
            }
            put(&g, "for (uint i = 0u; i < VGPRS; i++) outw[ob + %uu + i * 64u + ln] = v[i];\n", WF_LANE_HEAD + 128u);
        } else {
            put(&g, "outw[ob + 0u] = st; outw[ob + 1u] = fpc * 4u;\n");
            put(&g, "outw[ob + 2u] = fal; outw[ob + 3u] = fah; outw[ob + 4u] = flane;\n");
            put(&g, "outw[ob + 5u] = ninstr; outw[ob + 6u] = ninstr1; outw[ob + 7u] = scc ? 1u : 0u;\n");
            put(&g, "outw[ob + 8u] = steps; outw[ob + 9u] = lastpc * 4u; outw[ob + 10u] = watched;\n");
            put(&g, "#if OBSERVE\n");
            put(&g, "for (uint i = 0u; i < 128u; i++) outw[ob + %uu + i] = s[i];\n", WF_OUT_HEAD);
            put(&g, "for (uint i = 0u; i < VGPRS * 64u; i++) outw[ob + %uu + i] = v[i];\n", WF_OUT_HEAD + 128u);
        }
        put(&g, "#endif\n}\n");
        if (glsl->oom)
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory translating kernel '%s'", k->name);
    }
    wave_cfg_finish(&c);
    return r;
}

bool wf_independent(const struct wave_code *code, const struct wave_kernel *k)
{
    if (k->group_segment_size)
        return false;
    for (uint32_t i = 0; i < k->explicit_count; i++)
        if (k->args[i].kind == WAVE_ARG_DYNAMIC_SHARED_POINTER)
            return false;
    struct wave_cfg c;
    if (wave_cfg_make(code, k, "Wavefront", &c) != KILN_OK)
        return false;
    bool none = true;
    for (uint32_t i = 0; i < c.n && none; i++)
        none = c.in[i].op != WAVE_OP_S_BARRIER;
    wave_cfg_finish(&c);
    return none;
}

kiln_result wf_translate(const struct wave_code *code, const struct wave_kernel *k, const struct wf_shape *shape,
                         struct bytes *glsl)
{
    return translate(code, k, shape, glsl);
}

kiln_result wf_check(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps)
{
    return wf_check_shape(code, k, caps, false, false);
}

kiln_result wf_check_shape(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps, bool lane,
                           bool lockstep)
{
    /* a check for the workgroup a run gets by default (its required size,
     * else 64 work-items): a larger block's barriers are judged at its run */
    uint32_t items = k->reqd_size[0] ? k->reqd_size[0] * k->reqd_size[1] * k->reqd_size[2] : 64;
    struct wf_shape sh = {.waves = (items + 63) / 64, .vgprs = KILN_MIN(k->vgprs, 256u), .regions = 1,
                          .lds_bytes = k->group_segment_size, .lane = lane || lockstep, .lockstep = lockstep};
    for (uint32_t i = 0; i < k->explicit_count; i++)
        if (k->args[i].kind == WAVE_ARG_DYNAMIC_SHARED_POINTER)
            sh.lds_bytes = 65536;   /* the run's size decides; any may be given */
    KILN_TRY(translate(code, k, &sh, NULL));
    if (caps && k->group_segment_size > caps->max_shared_memory_size)
        return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s' declares %u bytes of LDS; the device's shared memory holds "
                          "%u (the %s level keeps LDS there)",
                          k->name, k->group_segment_size, caps->max_shared_memory_size, level_name(&sh));
    return KILN_OK;
}
