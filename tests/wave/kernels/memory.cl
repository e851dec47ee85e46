/* SPDX-License-Identifier: MIT */
/* memory.cl: atomics, LDS with barriers (a fixed array and a __local
 * argument), 64-bit address arithmetic, a 2D grid. */
#include "common.h"

__kernel void atomics(__global uint *counters, __global int *minmax, __global uint *hist)
{
    uint g = gid_x();
    __atomic_fetch_add(&counters[0], g, __ATOMIC_RELAXED);
    __atomic_fetch_add(&counters[1], 1u, __ATOMIC_RELAXED);
    __atomic_fetch_or(&counters[2], 1u << (g & 31), __ATOMIC_RELAXED);
    __atomic_fetch_xor(&counters[3], g * 2654435761u, __ATOMIC_RELAXED);
    int v = (int)(g * 37u % 1001u) - 500;
    __atomic_fetch_min(&minmax[0], v, __ATOMIC_RELAXED);
    __atomic_fetch_max(&minmax[1], v, __ATOMIC_RELAXED);
    uint old = __atomic_fetch_add(&hist[g % 16u], 1u, __ATOMIC_RELAXED);
    (void)old;
    uint expected = 0;
    if (g % 64u == 5u)
        __atomic_compare_exchange_n(&counters[4], &expected, g, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void reduce(__global uint *out, __global const uint *in)
{
    __local uint sh[256];
    uint t = LID_X();
    sh[t] = in[GRP_X() * 256u + t];
    __builtin_amdgcn_s_barrier();
    for (uint s = 128; s > 0; s >>= 1) {
        if (t < s)
            sh[t] += sh[t + s];
        __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup");
        __builtin_amdgcn_s_barrier();
    }
    if (t == 0)
        out[GRP_X()] = sh[0];
}

__kernel void reverse_local(__global int *data, __local int *tmp)
{
    uint t = LID_X(), n = local_size(0);
    uint base = GRP_X() * n;
    tmp[t] = data[base + t];
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
    data[base + t] = tmp[n - 1 - t] * 2 + 1;
}

__kernel void gather64(__global ulong *out, __global const uint *table, ulong stride, ulong bias)
{
    uint g = gid_x();
    ulong idx = ((ulong)g * stride + bias) & 1023ul;
    __global const uint *p = table + idx;
    ulong wide = (ulong)p[0] << 32 | p[1];
    out[g] = wide + ((ulong)g << 40) - idx * 3ul;
}

__kernel void grid2d(__global uint *out, uint width)
{
    uint x = gid_x(), y = gid_y();
    out[y * width + x] = x * 1000u + y;
}

__kernel void private_array(__global int *out, int seed)
{
    int a[24];
    uint g = gid_x();
    for (int i = 0; i < 24; i++)
        a[i] = seed * i + (int)g;
    int s = 0;
    for (int i = 0; i < 24; i++)
        s += a[(i * 7 + g) % 24] * (i + 1);
    out[g] = s;
}
