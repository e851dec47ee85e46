/* SPDX-License-Identifier: MIT */
/* crosslane.cl: cross-lane work as GCN code does it, for the levels that
 * simulate a wave: a wave-wide prefix sum and reduction through DPP (row
 * shifts, row broadcasts, wave shifts), ds_swizzle's modes, forward and
 * backward permutes, ballots and mbcnt, a divergent walk with early exits,
 * 64-bit integers and float special values. */
#include "common.h"

// inclusive prefix sum over the wave (DPP row_shr 1, 2, 4, 8, then row_bcast:15
// and row_bcast:31), its total read from lane 63, and the rotates
__kernel void wave_scan(__global uint *out, __global const uint *in)
{
    uint g = gid_x();
    int v = (int)in[g];
    int s = v;
    s += __builtin_amdgcn_update_dpp(0, s, 0x111, 0xf, 0xf, false);   // row_shr:1
    s += __builtin_amdgcn_update_dpp(0, s, 0x112, 0xf, 0xf, false);   // row_shr:2
    s += __builtin_amdgcn_update_dpp(0, s, 0x114, 0xf, 0xf, false);   // row_shr:4
    s += __builtin_amdgcn_update_dpp(0, s, 0x118, 0xf, 0xf, false);   // row_shr:8
    s += __builtin_amdgcn_update_dpp(0, s, 0x142, 0xa, 0xf, false);   // row_bcast:15
    s += __builtin_amdgcn_update_dpp(0, s, 0x143, 0xc, 0xf, false);   // row_bcast:31
    __global uint *o = out + 8 * g;
    o[0] = (uint)s;
    o[1] = __builtin_amdgcn_readlane(s, 63);
    o[2] = (uint)__builtin_amdgcn_mov_dpp(v, 0x134, 0xf, 0xf, false);   // wave_rol:1
    o[3] = (uint)__builtin_amdgcn_mov_dpp(v, 0x13c, 0xf, 0xf, false);   // wave_ror:1
    o[4] = (uint)__builtin_amdgcn_mov_dpp(v, 0x130, 0xf, 0xf, true);    // wave_shl:1
    o[5] = (uint)__builtin_amdgcn_mov_dpp(v, 0x140, 0xf, 0xf, false);   // row_mirror
    o[6] = (uint)__builtin_amdgcn_mov_dpp(v, 0x141, 0x5, 0x3, false);   // row_half_mirror, masks
    o[7] = (uint)__builtin_amdgcn_mov_dpp(v, 0x1b, 0xf, 0xf, false);    // quad_perm [3,2,1,0]
}

// ds_swizzle in its bit-mask and quad modes, a forward permute, a backward one
__kernel void swizzles(__global uint *out, __global const uint *in)
{
    uint g = gid_x(), l = LID_X() & 63u;
    int v = (int)in[g];
    __global uint *o = out + 6 * g;
    o[0] = (uint)__builtin_amdgcn_ds_swizzle(v, 0x041f);               // xor 1 (and 0x1f)
    o[1] = (uint)__builtin_amdgcn_ds_swizzle(v, 0x201f);               // xor 8
    o[2] = (uint)__builtin_amdgcn_ds_swizzle(v, 0x00e0 | 0x10);        // or 7, and 0x10
    o[3] = (uint)__builtin_amdgcn_ds_swizzle(v, 0x8000 | 0xb1);        // quad perm [1,0,3,2]
    o[4] = (uint)__builtin_amdgcn_ds_permute((int)(((l * 7u) & 63u) * 4u), v);
    o[5] = (uint)__builtin_amdgcn_ds_bpermute((int)(((63u - l) & 63u) * 4u), v);
}

// ballots and counts of set lanes below each lane, under divergence
__kernel void ballots(__global uint *out, __global const uint *in)
{
    uint g = gid_x();
    uint v = in[g];
    __global uint *o = out + 6 * g;
    ulong odd = __builtin_amdgcn_uicmp(v & 1u, 0u, 33);         // ne: a ballot of odd values
    ulong big = __builtin_amdgcn_uicmp(v, 500u, 34);            // ugt
    o[0] = (uint)odd;
    o[1] = (uint)(odd >> 32);
    o[2] = __builtin_amdgcn_mbcnt_hi((uint)(big >> 32), __builtin_amdgcn_mbcnt_lo((uint)big, 0u));
    if (v & 2u) {
        ulong inner = __builtin_amdgcn_uicmp(v & 4u, 0u, 32);   // eq, among the lanes that came in
        o[3] = (uint)inner ^ (uint)(inner >> 32);
        o[4] = __builtin_amdgcn_readfirstlane(v);
    } else {
        o[3] = 0xffffffffu;
        o[4] = __builtin_amdgcn_readfirstlane(v * 3u);
    }
    o[5] = __builtin_popcount((uint)odd) + __builtin_popcount((uint)(odd >> 32));
}

// a walk whose lanes leave at different depths, some early
__kernel void early_exits(__global uint *out, __global const uint *in)
{
    uint g = gid_x();
    uint v = in[g], acc = g;
    if (v % 7u == 0u) {
        out[g] = 7u;
        return;
    }
    for (uint i = 0; i < (v & 15u); i++) {
        acc = acc * 3u + i;
        if ((acc & 0x3fu) == 5u) {
            out[g] = acc;
            return;
        }
        if (i > (v >> 4) % 11u)
            break;
        if ((acc ^ v) & 1u)
            continue;
        acc ^= v;
    }
    out[g] = acc + 1000000u;
}

// 64-bit integers and float special values
__kernel void specials(__global ulong *o64, __global uint *o32, __global const uint *in)
{
    uint g = gid_x();
    ulong a = ((ulong)in[g] << 33) | in[(g + 1) & 63u];
    ulong b = a * 0x9e3779b97f4a7c15ul + (a >> 17);
    o64[2 * g] = b ^ (b << 23);
    o64[2 * g + 1] = (a > b ? a - b : b - a) >> (in[g] & 63u);
    float x = as_float(in[g]) , y = (float)(int)in[g] / 3.0f;
    float inf = as_float(0x7f800000u), ninf = as_float(0xff800000u);
    __global uint *o = o32 + 4 * g;
    o[0] = (x < inf) + 2u * (y > ninf) + 4u * (y != y) + 8u * (x == x);
    o[1] = as_uint(__builtin_fmaxf(y, inf * 0.0f));   // max with a NaN: the other
    o[2] = as_uint(__builtin_fminf(-y, 0.0f));
    o[3] = (uint)(int)(y * 1.0e30f);       // saturates
}
