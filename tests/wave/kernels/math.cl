/* SPDX-License-Identifier: MIT */
/* math.cl: integer and floating-point arithmetic, conversions. */
#include "common.h"

__kernel void int_math(__global uint *out, __global const uint *a, __global const uint *b)
{
    uint g = gid_x();
    uint x = a[g], y = b[g] | 1u;
    int sx = (int)x, sy = (int)y;
    __global uint *o = out + 12 * g;
    o[0] = x + y * 3u;
    o[1] = x * y;
    o[2] = (uint)(((ulong)x * y) >> 32);
    o[3] = x / y;
    o[4] = x % y;
    o[5] = (uint)(sx / sy);
    o[6] = (uint)(sx % sy);
    o[7] = (x << (y & 31)) ^ (x >> (y & 15)) ^ (uint)(sx >> (y & 31));
    o[8] = (uint)__builtin_popcount(x) + (uint)__builtin_clz(y) * 64u;
    o[9] = (x << (y & 31)) | (x >> ((32u - (y & 31)) & 31));
    o[10] = (uint)((ulong)x * (ulong)y >> 16);
    o[11] = (uint)(((long)sx * (long)sy) >> 33) + (x < y) + (sx < sy) * 2u;
}

__kernel void float_math(__global float *out, __global const float *a, __global const float *b)
{
    uint g = gid_x();
    float x = a[g], y = b[g];
    __global float *o = out + 8 * g;
    o[0] = x + y;
    o[1] = x * y - 1.5f;
    o[2] = __builtin_fmaf(x, y, 0.25f);
    o[3] = x / y;
    o[4] = __builtin_sqrtf(__builtin_fabsf(x));
    o[5] = __builtin_fminf(x, y) + __builtin_fmaxf(x, y) * 2.0f;
    o[6] = __builtin_floorf(x) + __builtin_truncf(y) * 0.5f;
    o[7] = x > y ? x - y : y * 0.125f;
}

__kernel void conversions(__global int *oi, __global float *of, __global double *od, __global const float *in)
{
    uint g = gid_x();
    float x = in[g];
    oi[4 * g] = (int)x;
    oi[4 * g + 1] = (int)(uint)__builtin_fabsf(x);
    oi[4 * g + 2] = (int)(short)(int)x;
    oi[4 * g + 3] = (int)(uchar)(int)x;
    of[2 * g] = (float)(int)(g * 2654435761u);
    of[2 * g + 1] = (float)(g * 2654435761u);
    double d = (double)x * 3.0 + (double)(int)g;
    od[2 * g] = d;
    od[2 * g + 1] = (double)(long)(d * 1000.0) + (double)(ulong)g;
}
