/* SPDX-License-Identifier: MIT */
/* levels.cl: kernels that tell the wave levels apart: lanes reading LDS
 * their wave's other lanes wrote with no barrier (lockstep within a wave),
 * a branch on a uniform float, lanes looping to different depths and
 * storing as they go, an escape-time fractal long enough to spend
 * lavapipe's loop budget at the Wavefront level, and lanes taking tickets
 * from an LDS counter in lane order. */
#include "common.h"

/* each lane reads its neighbour's LDS word with no barrier between: the
 * wave's lanes write before any reads, in lockstep */
__kernel void lds_neighbour(__global uint *out, __global const uint *in)
{
    __local uint t[64];
    uint l = LID_X(), g = gid_x();
    t[l] = in[g] * 3u + 1u;
    __asm__ volatile("" ::: "memory");
    out[g] = t[l ^ 1u] + in[g];
}

/* a branch every lane takes alike, on a float argument */
__kernel void uniform_float(__global float *out, __global const float *in, float k)
{
    uint g = gid_x();
    float x = in[g];
    if (k > 0.5f)
        x = x * k + 1.0f;
    else
        x = x - k;
    out[g] = x;
}

/* lanes looping to their own depths, storing in the loop */
__kernel void ragged_loops(__global uint *out, __global const uint *in)
{
    uint g = gid_x();
    uint n = in[g] & 7u, acc = g;
    for (uint i = 0; i < n; i++) {
        acc = acc * 2654435761u + i;
        if (acc & 1u)
            out[8u * g + i] = acc;
        else
            out[8u * g + i] = ~acc;
    }
    out[8u * g + 7u] = acc + n;
}

/* an escape-time fractal: lanes iterate to their own counts, up to iters;
 * long enough at 200 that the Wavefront level's lane loops spend lavapipe's
 * 65,535 loop iterations an invocation */
__kernel void escape(__global uint *image, int w, int h, float scale, int iters)
{
    int x = gid_x(), y = gid_y();
    float cx = (x - w / 2) * scale - 0.5f, cy = (y - h / 2) * scale;
    float zx = 0.0f, zy = 0.0f;
    int k = 0;
    while (zx * zx + zy * zy < 4.0f && k < iters) {
        float t = zx * zx - zy * zy + cx;
        zy = 2.0f * zx * zy + cy;
        zx = t;
        k++;
    }
    image[y * w + x] = k;
}

/* lanes taking tickets from one LDS counter: each gets what the lanes
 * before it (in lane order, as the wave runs them) left */
__kernel void lds_tickets(__global uint *out)
{
    __local uint n;
    uint l = LID_X();
    if (l == 0)
        n = 0;
    __builtin_amdgcn_s_barrier();
    out[gid_x()] = __atomic_fetch_add(&n, 1u + (l & 3u), __ATOMIC_RELAXED);
}
