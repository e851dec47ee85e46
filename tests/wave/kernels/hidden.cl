/* SPDX-License-Identifier: MIT */
/* hidden.cl: a kernel reading its hidden arguments (the implicit argument
 * pointer) and the dispatch packet; and one calling a function the object
 * does not define, which no loader can resolve. */
#include "common.h"

__kernel void hidden(__global uint *out)
{
    __constant uint *ia = (__constant uint *)__builtin_amdgcn_implicitarg_ptr();
    __constant uint *dp = (__constant uint *)__builtin_amdgcn_dispatch_ptr();
    uint g = gid_x();
    out[4 * g] = ia[0] + ia[1];           /* hidden_global_offset_x */
    out[4 * g + 1] = dp[3];               /* grid_size_x */
    out[4 * g + 2] = dp[0] >> 16;         /* setup: dimensions */
    out[4 * g + 3] = ia[2] + ia[4];       /* hidden_global_offset_y and _z */
}
