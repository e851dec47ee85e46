// bounds.s: kernels that meet a level's bounds, written by hand and
// assembled by llvm-mc at test time:
// - forever: a wave that loops without end (the Wavefront level stops it
//   at its bound of block transitions and says so; the reference at its
//   instruction budget);
// - big_lds: a kernel that declares 64 KiB of LDS, all gfx9 has, more
//   than a Vulkan device's shared memory usually holds.
.amdgcn_target "amdgcn-amd-amdhsa--gfx900"
.text
.globl forever
.p2align 8
.type forever,@function
forever:
  s_mov_b32 s2, 0
.Lloop:
  s_add_u32 s2, s2, 1
  s_branch .Lloop
  s_endpgm
.Lforever_end:
  .size forever, .Lforever_end - forever
.globl big_lds
.p2align 8
.type big_lds,@function
big_lds:
  v_mov_b32 v1, 0
  ds_write_b32 v1, v0
  s_endpgm
.Lbig_lds_end:
  .size big_lds, .Lbig_lds_end - big_lds
.rodata
.p2align 6
.amdhsa_kernel forever
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel big_lds
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
  .amdhsa_group_segment_fixed_size 65536
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 1 ]
amdhsa.kernels:
  - .name: forever
    .symbol: forever.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
  - .name: big_lds
    .symbol: big_lds.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 65536
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
...
.end_amdgpu_metadata
