// scratch.s: a kernel with 128 KiB of scratch per work-item (8 MiB a
// wave), written by hand as clang refuses a stack frame that large, and
// assembled by llvm-mc at test time. Each lane reads the last dword of its
// scratch (zero: the group before wrote it, and a group starts with its
// scratch cleared), writes the first and the last dword through the
// private segment buffer, reads both back and stores the sum of the three
// to out[lane]: 1 + group + 0x1000 + lane, the last group's value
// remaining. Workgroups of up to 1024 work-items (1D).
.amdgcn_target "amdgcn-amd-amdhsa--gfx900"
.text
.globl big_scratch
.p2align 8
.type big_scratch,@function
big_scratch:
  // s[0:3] private segment buffer, s[4:5] kernarg segment, s6 workgroup
  // id x, s7 scratch wave offset; v0 work-item id x
  s_load_dwordx2 s[8:9], s[4:5], 0x0
  v_mov_b32 v1, 0x1fffc
  buffer_load_dword v4, v1, s[0:3], s7 offen
  s_waitcnt vmcnt(0)
  v_add_u32 v2, s6, 1
  v_add_u32 v3, 0x1000, v0
  buffer_store_dword v2, off, s[0:3], s7
  buffer_store_dword v3, v1, s[0:3], s7 offen
  buffer_load_dword v5, off, s[0:3], s7
  buffer_load_dword v7, v1, s[0:3], s7 offen
  v_lshlrev_b32 v6, 2, v0
  s_waitcnt vmcnt(0) lgkmcnt(0)
  v_add3_u32 v4, v4, v5, v7
  global_store_dword v6, v4, s[8:9]
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel big_scratch
  .amdhsa_user_sgpr_private_segment_buffer 1
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_system_sgpr_workgroup_id_x 1
  .amdhsa_system_sgpr_private_segment_wavefront_offset 1
  .amdhsa_private_segment_fixed_size 131072
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 16
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 1 ]
amdhsa.kernels:
  - .name: big_scratch
    .symbol: big_scratch.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 131072
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .max_flat_workgroup_size: 1024
    .args:
      - .name: out
        .offset: 0
        .size: 8
        .value_kind: global_buffer
        .address_space: global
...
.end_amdgpu_metadata
