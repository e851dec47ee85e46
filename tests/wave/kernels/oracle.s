// oracle.s: what the reference interpreter once got wrong, written by hand
// and assembled by llvm-mc at test time, in two kernels that differ only in
// MODE.IEEE (ieee: on, compute's default; noieee: off):
// - DPP with bound_ctrl where src1 is src0's register: a lane with no
//   source reads 0 for src0 only (v10 wave_shr:1, v11 row_shr:1);
// - VOP3's clamp on integer adds and subtracts saturates (v12 v_add_u32,
//   v13 v_sub_u32, v14 v_add_co_u32, v15 v_add_i32 signed, v16 v_add_u16),
//   and without it they wrap (v20 v_sub_u32, v21 v_add_co_u32);
// - v_max_f32 and v_min_f32 of a signalling NaN give it quieted in IEEE
//   mode and the other operand otherwise (v17, v18); a quiet NaN gives the
//   other operand in both (v19).
// Each lane stores v10..v21 to out[12 * lane ...].
.amdgcn_target "amdgcn-amd-amdhsa--gfx900"
.macro oracle_body
  v_mul_u32_u24 v1, 3, v0
  v_add_u32 v1, 0x64, v1
  v_add_u32_dpp v10, v1, v1 wave_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
  v_add_u32_dpp v11, v1, v1 row_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
  v_mov_b32 v2, 0xffffffc0
  v_add_u32 v2, v2, v0
  v_add_u32_e64 v12, v2, 32 clamp
  v_sub_u32_e64 v13, v0, 32 clamp
  v_add_co_u32_e64 v14, s[10:11], v2, 32 clamp
  v_mov_b32 v3, 0x7ffffff0
  v_add_u32 v3, v3, v0
  v_mov_b32 v4, 8
  v_add_i32 v15, v3, v4 clamp
  v_mov_b32 v5, 0xffe0
  v_add_u16_e64 v16, v5, v0 clamp
  v_mov_b32 v6, 0x7f800001
  v_max_f32 v17, v6, 1.0
  v_min_f32 v18, 1.0, v6
  v_mov_b32 v7, 0x7fc00000
  v_max_f32 v19, 2.0, v7
  v_sub_u32_e64 v20, v0, 32
  v_add_co_u32_e64 v21, s[12:13], v2, 32
  s_load_dwordx2 s[20:21], s[0:1], 0x0
  v_mul_u32_u24 v30, 48, v0
  s_waitcnt lgkmcnt(0)
  global_store_dwordx4 v30, v[10:13], s[20:21]
  global_store_dwordx4 v30, v[14:17], s[20:21] offset:16
  global_store_dwordx4 v30, v[18:21], s[20:21] offset:32
  s_endpgm
.endm
.text
.globl ieee
.p2align 8
.type ieee,@function
ieee:
  oracle_body
.globl noieee
.p2align 8
.type noieee,@function
noieee:
  oracle_body
.rodata
.p2align 6
.amdhsa_kernel ieee
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 32
  .amdhsa_ieee_mode 1
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel noieee
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 32
  .amdhsa_ieee_mode 0
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 1 ]
amdhsa.kernels:
  - .name: ieee
    .symbol: ieee.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 32
    .vgpr_count: 32
    .max_flat_workgroup_size: 64
    .args:
      - .offset: 0
        .size: 8
        .value_kind: global_buffer
        .address_space: global
  - .name: noieee
    .symbol: noieee.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 32
    .vgpr_count: 32
    .max_flat_workgroup_size: 64
    .args:
      - .offset: 0
        .size: 8
        .value_kind: global_buffer
        .address_space: global
...
.end_amdgpu_metadata
