/* SPDX-License-Identifier: MIT */
/* bench.cl: the kernels bench_wave times at each level against the same
 * computation written in GLSL: two that move memory and do little else,
 * one that computes. */
#include "common.h"

// y = a * x + y, one float a work-item
__kernel void saxpy(__global float *y, __global const float *x, float a)
{
    uint g = gid_x();
    y[g] = a * x[g] + y[g];
}

// out = in * k + 1, one uint a work-item
__kernel void scale(__global uint *out, __global const uint *in, uint k)
{
    uint g = gid_x();
    out[g] = in[g] * k + 1u;
}

// 64 steps of a polynomial a work-item: computing, not moving
__kernel void poly(__global float *out, __global const float *in)
{
    uint g = gid_x();
    float x = in[g], acc = 0.0f;
    for (int i = 0; i < 64; i++)
        acc = acc * x + 0.25f;
    out[g] = acc;
}
