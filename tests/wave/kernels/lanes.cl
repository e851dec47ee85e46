/* SPDX-License-Identifier: MIT */
/* lanes.cl: lane-crossing builtins (readfirstlane, mbcnt, ds_swizzle,
 * ds_bpermute, a DPP move with bound_ctrl, readlane, a ballot) and half
 * precision (scalar, packed, SDWA conversions). */
#include "common.h"
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void lanes(__global uint *out, __global const uint *in)
{
    uint g = gid_x(), l = LID_X() & 63u;
    uint v = in[g];
    __global uint *o = out + 8 * g;
    o[0] = __builtin_amdgcn_readfirstlane(v);
    o[1] = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
    o[2] = (uint)__builtin_amdgcn_ds_swizzle((int)v, 0x041f);
    o[3] = (uint)__builtin_amdgcn_ds_bpermute((int)(((l + 5u) & 63u) * 4u), (int)v);
    o[4] = (uint)__builtin_amdgcn_mov_dpp((int)v, 0x111, 0xf, 0xf, true);
    o[5] = __builtin_amdgcn_readlane(v, 7);
    ulong b = __builtin_amdgcn_uicmp(v & 1u, 0u, 33);
    o[6] = (uint)b;
    o[7] = (uint)(b >> 32);
}
__kernel void halves(__global float *out, __global const float *in)
{
    uint g = gid_x();
    half x = (half)in[2 * g], y = (half)in[2 * g + 1];
    half s = x + y;
    half p = x * y;
    half m = x < y ? x : y;
    half2 v = (half2)(x, y);
    half2 w = v * (half2)(y, x);
    __global float *o = out + 6 * g;
    o[0] = (float)s;
    o[1] = (float)p;
    o[2] = (float)m;
    o[3] = (float)w.x;
    o[4] = (float)w.y;
    o[5] = (float)(short)x + (float)(ushort)(y > (half)0 ? y : -y);
}
