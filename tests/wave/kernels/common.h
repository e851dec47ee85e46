/* SPDX-License-Identifier: MIT */
/*
 * common.h: what the test kernels use in place of OpenCL's library, which
 * -nogpulib leaves out: work-item and workgroup ids from the builtins,
 * the workgroup's size from the dispatch packet (hsa_kernel_dispatch_packet_t:
 * workgroup_size_x/y/z are the u16s at bytes 4, 6 and 8).
 */
#define LID_X() __builtin_amdgcn_workitem_id_x()
#define LID_Y() __builtin_amdgcn_workitem_id_y()
#define GRP_X() __builtin_amdgcn_workgroup_id_x()
#define GRP_Y() __builtin_amdgcn_workgroup_id_y()

static inline uint local_size(int axis)
{
    __constant ushort *p = (__constant ushort *)__builtin_amdgcn_dispatch_ptr();
    return p[2 + axis];
}
static inline uint gid_x(void) { return GRP_X() * local_size(0) + LID_X(); }
static inline uint gid_y(void) { return GRP_Y() * local_size(1) + LID_Y(); }
