// oracle2.s: more of what the reference interpreter once got wrong, written
// by hand and assembled by llvm-mc at test time, in two kernels that differ
// only in MODE.FP_DENORM (flush: inputs and results of every precision
// flushed, the assembler's default for f32; keep: none flushed, what clang
// gives gfx900 OpenCL); both in IEEE mode:
// - denormals: v10 v_mul_f32 of a denormal source, v11 and v12 of results
//   that are denormal (positive, negative: a flushed one keeps its sign),
//   v13 v_mul_f16 of a denormal half, v[18:19] v_mul_f64 of a denormal,
//   v20 v_pk_mul_f16 of one, v21 v_max_f32 of one with itself (clang's
//   canonicalisation before fmin and fmax);
// - v_cmp_class of a denormal finds it denormal in either mode (v22 f32,
//   v23 f16: 1 where the class mask 0x90, +/- denormal, matches);
// - DPP row_ror rotates right, as row_shr shifts: lane l of a row reads
//   lane l - n of it, modulo 16 (v14 row_ror:1, v17 row_ror:15);
// - v15 v_fract_f32 of a quiet NaN is that NaN;
// - v16 v_med3_f32 of a signalling NaN, 1.0 and 2.0 is V_MIN3's: 2.0.
// Each lane stores v10..v23 to out[14 * lane ...].
.amdgcn_target "amdgcn-amd-amdhsa--gfx900"
.macro oracle2_body
  v_mul_u32_u24 v1, 3, v0
  v_add_u32 v1, 0x64, v1
  v_mov_b32 v2, 0x00400000
  v_mul_f32 v10, 1.0, v2
  v_mov_b32 v3, 0x00800000
  v_mul_f32 v11, 0.5, v3
  v_mov_b32 v4, 0x80800000
  v_mul_f32 v12, 0.5, v4
  v_mov_b32 v5, 0x200
  v_mul_f16 v13, 1.0, v5
  v_mov_b32_dpp v14, v1 row_ror:1 row_mask:0xf bank_mask:0xf
  v_mov_b32 v6, 0x7fc00000
  v_fract_f32 v15, v6
  v_mov_b32 v7, 0x7f800001
  v_med3_f32 v16, v7, 1.0, 2.0
  v_mov_b32_dpp v17, v1 row_ror:15 row_mask:0xf bank_mask:0xf
  v_mov_b32 v24, -1
  v_mov_b32 v25, 0xfffff
  v_mul_f64 v[18:19], 1.0, v[24:25]
  v_pk_mul_f16 v20, v5, 1.0
  v_max_f32 v21, v2, v2
  v_mov_b32 v26, 0x90
  v_cmp_class_f32 vcc, v2, v26
  v_cndmask_b32 v22, 0, 1, vcc
  v_cmp_class_f16 vcc, v5, v26
  v_cndmask_b32 v23, 0, 1, vcc
  s_load_dwordx2 s[20:21], s[0:1], 0x0
  v_mul_u32_u24 v30, 56, v0
  s_waitcnt lgkmcnt(0)
  global_store_dwordx4 v30, v[10:13], s[20:21]
  global_store_dwordx4 v30, v[14:17], s[20:21] offset:16
  global_store_dwordx4 v30, v[18:21], s[20:21] offset:32
  global_store_dwordx2 v30, v[22:23], s[20:21] offset:48
  s_endpgm
.endm
.text
.globl flush
.p2align 8
.type flush,@function
flush:
  oracle2_body
.globl keep
.p2align 8
.type keep,@function
keep:
  oracle2_body
.rodata
.p2align 6
.amdhsa_kernel flush
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 32
  .amdhsa_ieee_mode 1
  .amdhsa_float_denorm_mode_32 0
  .amdhsa_float_denorm_mode_16_64 0
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel keep
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 32
  .amdhsa_ieee_mode 1
  .amdhsa_float_denorm_mode_32 3
  .amdhsa_float_denorm_mode_16_64 3
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 1 ]
amdhsa.kernels:
  - .name: flush
    .symbol: flush.kd
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
  - .name: keep
    .symbol: keep.kd
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
