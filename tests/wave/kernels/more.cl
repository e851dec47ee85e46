/* SPDX-License-Identifier: MIT */
/* more.cl: calls to functions kept out of line (s_swappc, s_setpc, a
 * stack in scratch), 64-bit division, double precision, LDS atomics, 8 and
 * 16-bit integers, a compare-and-swap loop. */
#include "common.h"

__attribute__((noinline)) static uint mix(uint a, uint b)
{
    uint r = a;
    for (uint i = 0; i < (b & 7u) + 1u; i++)
        r = (r ^ (r >> 3)) * 0x9e3779b1u + b;
    return r;
}

__attribute__((noinline)) static void fill(__private uint *p, uint n, uint seed)
{
    for (uint i = 0; i < n; i++)
        p[i] = mix(seed, i);
}

__kernel void calls(__global uint *out)
{
    uint g = gid_x();
    uint t[10];
    fill(t, 10, g);
    uint s = 0;
    for (uint i = 0; i < 10; i++)
        s += t[(i * 3 + g) % 10] * (i + 1);
    out[g] = mix(g, g * 3u) + s;
}

__kernel void wide_div(__global ulong *out, __global const ulong *a, __global const ulong *b)
{
    uint g = gid_x();
    ulong x = a[g], y = b[g] | 1ul;
    long sx = (long)x, sy = (long)y;
    out[4 * g] = x / y;
    out[4 * g + 1] = x % y;
    out[4 * g + 2] = (ulong)(sx / sy);
    out[4 * g + 3] = (ulong)(sx % sy);
}

__kernel void f64_math(__global double *out, __global const double *a, __global const double *b)
{
    uint g = gid_x();
    double x = a[g], y = b[g];
    out[4 * g] = x / y;
    out[4 * g + 1] = __builtin_sqrt(__builtin_fabs(x));
    out[4 * g + 2] = __builtin_fma(x, y, -1.0) + __builtin_floor(y);
    out[4 * g + 3] = x < y ? __builtin_fmin(x, y * 2.0) : __builtin_fmax(x, -y);
}

__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void lds_histogram(__global uint *out, __global const uint *in)
{
    __local uint hist[16], top;
    uint t = LID_X(), v = in[GRP_X() * 128u + t];
    if (t < 16)
        hist[t] = 0;
    if (t == 0)
        top = 0;
    __builtin_amdgcn_s_barrier();
    __atomic_fetch_add(&hist[v % 16u], 1u, __ATOMIC_RELAXED);
    __atomic_fetch_max(&top, v, __ATOMIC_RELAXED);
    __builtin_amdgcn_s_barrier();
    if (t < 16)
        out[GRP_X() * 17u + t] = hist[t];
    if (t == 16)
        out[GRP_X() * 17u + 16u] = top;
}

__kernel void small_types(__global uchar *ob, __global short *os, __global const uchar *ib, __global const short *is)
{
    uint g = gid_x();
    uchar a = ib[g], b = ib[g + 1];
    short c = is[g], d = is[g + 1];
    ob[g] = (uchar)(a * b + (a >> 2));
    os[2 * g] = (short)(c * d - (short)a);
    os[2 * g + 1] = c < d ? (short)(c >> 3) : (short)(d / (short)((a & 7) + 1));
}

__kernel void float_cas(__global float *acc, __global const float *in)
{
    uint g = gid_x();
    __global uint *p = (__global uint *)&acc[g % 4u];
    uint old = *p, seen;
    for (;;) {
        float f = as_float(old) + in[g];
        seen = __atomic_load_n(p, __ATOMIC_RELAXED);
        if (__atomic_compare_exchange_n(p, &old, as_uint(f), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            break;
    }
    (void)seen;
}
