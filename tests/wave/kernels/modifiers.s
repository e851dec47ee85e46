// modifiers.s: what clang rarely emits, written by hand and assembled by
// llvm-mc at test time: DPP (quad_perm, row_shl without bound_ctrl,
// wave_shr with it, row_bcast:15 under a row mask), SDWA (byte and word
// selects, sign extension, a preserved destination), s_set_gpr_idx and
// s_movrels. Each lane stores v10..v17 to out[8 * lane ...].
.amdgcn_target "amdgcn-amd-amdhsa--gfx900"
.text
.globl k
.p2align 8
.type k,@function
k:
  v_mul_u32_u24 v1, 3, v0
  v_add_u32 v1, 0x64, v1
  v_mov_b32 v10, 7
  v_mov_b32 v11, 7
  v_mov_b32_dpp v10, v1 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf
  v_mov_b32_dpp v11, v1 row_shl:1 row_mask:0xf bank_mask:0xf
  v_mov_b32_dpp v12, v1 wave_shr:1 row_mask:0xf bank_mask:0xf bound_ctrl:0
  v_mov_b32 v13, 7
  v_mov_b32_dpp v13, v1 row_bcast:15 row_mask:0xa bank_mask:0xf
  v_mov_b32 v2, 0x11223344
  v_add_u32 v2, v2, v0
  v_mov_b32 v3, 0x55667788
  v_mov_b32 v14, 0xaabbccdd
  v_add_u32_sdwa v14, v2, v3 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:BYTE_0 src1_sel:WORD_1
  v_mov_b32_sdwa v15, sext(v2) dst_sel:WORD_1 dst_unused:UNUSED_SEXT src0_sel:BYTE_3
  s_mov_b32 s4, 2
  s_set_gpr_idx_on s4, gpr_idx(SRC0)
  v_mov_b32 v16, v1
  s_set_gpr_idx_off
  s_mov_b32 s6, 60
  s_mov_b32 s7, 61
  s_mov_b32 s8, 62
  s_mov_b32 m0, 2
  s_movrels_b32 s5, s6
  v_mov_b32 v17, s5
  s_load_dwordx2 s[20:21], s[0:1], 0x0
  v_mul_u32_u24 v30, 32, v0
  s_waitcnt lgkmcnt(0)
  global_store_dwordx4 v30, v[10:13], s[20:21]
  global_store_dwordx4 v30, v[14:17], s[20:21] offset:16
  s_endpgm
.rodata
.p2align 6
.amdhsa_kernel k
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr 32
  .amdhsa_next_free_sgpr 32
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 1 ]
amdhsa.kernels:
  - .name: k
    .symbol: k.kd
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
