/* SPDX-License-Identifier: MIT */
/* control.cl: loops with per-lane trip counts, divergent and nested
 * branches, break and continue, select chains. */
#include "common.h"

__kernel void loop_sum(__global uint *out, uint n)
{
    uint g = gid_x();
    uint trips = (g * 7u) % n;   /* lanes of one wave run different counts */
    uint acc = g;
    for (uint i = 0; i < trips; i++)
        acc = acc * 31u + (i ^ g);
    out[g] = acc;
}

__kernel void branches(__global int *out, __global const int *in)
{
    uint g = gid_x();
    int v = in[g];
    int r;
    if (v < 0) {
        if (v < -100)
            r = v * 3;
        else
            r = -v;
    } else if (v & 1) {
        r = v >> 1;
        for (int i = 0; i < (v & 7); i++) {
            if (i == 5)
                break;
            if (i & 1)
                continue;
            r += i * v;
        }
    } else {
        r = v / 3 + v % 5;
    }
    out[g] = r;
}

__kernel void nested(__global uint *out, uint rows)
{
    uint g = gid_x();
    uint acc = 0;
    for (uint i = 0; i < rows; i++) {
        if ((g + i) % 3 == 0)
            continue;
        for (uint j = 0; j <= (g & 15); j++) {
            if (j * i > 40)
                break;
            acc += (i + 1) * (j ^ g);
        }
        if (acc > 100000u)
            break;
    }
    out[g] = acc;
}

__kernel void selects(__global float *out, __global const float *in, float lo, float hi)
{
    uint g = gid_x();
    float x = in[g];
    float y = x < lo ? lo : x > hi ? hi : x;
    int k = x < 0.0f ? -1 : x == 0.0f ? 0 : x < 1.0f ? 1 : x < 10.0f ? 2 : 3;
    out[2 * g] = y;
    out[2 * g + 1] = (float)k + (g & 1 ? y : -y);
}
