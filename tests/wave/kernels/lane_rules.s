// lane_rules.s: the Lane level's rule, one kernel a case, written by hand
// and assembled by llvm-mc at test time (clang's output covers the common
// patterns; these are the ones it rarely writes). Lanes 0..39 (or 0..31)
// take a branch, the rest skip it:
// - scc_from_mask: s_cbranch_scc0 on the SCC s_and_saveexec set (rule 2);
// - vccz_branch: s_cbranch_vccz (rule 2);
// - count_lanes: s_bcnt1 of a compare's mask (rule 2);
// - wakes_lanes: s_mov_b64 exec, -1 where lanes skip (rule 4);
// - barrier_skipped: s_barrier where lanes skip (rule 4);
// - merged_mask: a mask merged under exec (s_orn2_b64 s[4:5], vcc, exec)
//   and a scalar (s6) written where lanes skip, dead after: valid, s6 and
//   scc blind in Lane's observation;
// - unmerged_mask: the same mask written plainly (rule 4).
.amdgcn_target "amdgcn-amd-amdhsa--gfx900"
.text
.globl scc_from_mask
.p2align 8
.type scc_from_mask,@function
scc_from_mask:
  v_cmp_gt_u32 vcc, 32, v0
  s_and_saveexec_b64 s[2:3], vcc
  s_cbranch_scc0 .Lscc_end
  v_mov_b32 v1, 1
.Lscc_end:
  s_or_b64 exec, exec, s[2:3]
  s_endpgm
.Lscc_from_mask_end:
  .size scc_from_mask, .Lscc_from_mask_end - scc_from_mask
.globl vccz_branch
.p2align 8
.type vccz_branch,@function
vccz_branch:
  v_cmp_gt_u32 vcc, 32, v0
  s_cbranch_vccz .Lvccz_end
  v_mov_b32 v1, 1
.Lvccz_end:
  s_endpgm
.Lvccz_branch_end:
  .size vccz_branch, .Lvccz_branch_end - vccz_branch
.globl count_lanes
.p2align 8
.type count_lanes,@function
count_lanes:
  v_cmp_gt_u32 vcc, 32, v0
  s_bcnt1_i32_b64 s2, vcc
  v_mov_b32 v1, s2
  s_endpgm
.Lcount_lanes_end:
  .size count_lanes, .Lcount_lanes_end - count_lanes
.globl wakes_lanes
.p2align 8
.type wakes_lanes,@function
wakes_lanes:
  v_cmp_gt_u32 vcc, 32, v0
  s_and_saveexec_b64 s[2:3], vcc
  s_cbranch_execz .Lwake_end
  s_mov_b64 exec, -1
  v_mov_b32 v1, 1
.Lwake_end:
  s_or_b64 exec, exec, s[2:3]
  s_endpgm
.Lwakes_lanes_end:
  .size wakes_lanes, .Lwakes_lanes_end - wakes_lanes
.globl barrier_skipped
.p2align 8
.type barrier_skipped,@function
barrier_skipped:
  v_cmp_gt_u32 vcc, 32, v0
  s_and_saveexec_b64 s[2:3], vcc
  s_cbranch_execz .Lbar_end
  s_barrier
  v_mov_b32 v1, 1
.Lbar_end:
  s_or_b64 exec, exec, s[2:3]
  s_endpgm
.Lbarrier_skipped_end:
  .size barrier_skipped, .Lbarrier_skipped_end - barrier_skipped
.globl merged_mask
.p2align 8
.type merged_mask,@function
merged_mask:
  s_mov_b64 s[4:5], -1
  s_mov_b32 s6, 7
  v_cmp_gt_u32 vcc, 40, v0
  s_and_saveexec_b64 s[2:3], vcc
  s_cbranch_execz .Lmerged_join
  v_cmp_gt_u32 vcc, 16, v0
  s_orn2_b64 s[4:5], vcc, exec
  s_mov_b32 s6, 9
  v_mov_b32 v2, s6
.Lmerged_join:
  s_or_b64 exec, exec, s[2:3]
  v_cndmask_b32 v1, 0, 1, s[4:5]
  s_endpgm
.Lmerged_mask_end:
  .size merged_mask, .Lmerged_mask_end - merged_mask
.globl unmerged_mask
.p2align 8
.type unmerged_mask,@function
unmerged_mask:
  s_mov_b64 s[4:5], -1
  v_cmp_gt_u32 vcc, 40, v0
  s_and_saveexec_b64 s[2:3], vcc
  s_cbranch_execz .Lunmerged_join
  v_cmp_gt_u32 vcc, 16, v0
  s_mov_b64 s[4:5], vcc
.Lunmerged_join:
  s_or_b64 exec, exec, s[2:3]
  v_cndmask_b32 v1, 0, 1, s[4:5]
  s_endpgm
.Lunmerged_mask_end:
  .size unmerged_mask, .Lunmerged_mask_end - unmerged_mask
.rodata
.p2align 6
.amdhsa_kernel scc_from_mask
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel vccz_branch
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel count_lanes
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel wakes_lanes
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel barrier_skipped
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel merged_mask
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel unmerged_mask
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 8
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [ 1, 1 ]
amdhsa.kernels:
  - .name: scc_from_mask
    .symbol: scc_from_mask.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
  - .name: vccz_branch
    .symbol: vccz_branch.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
  - .name: count_lanes
    .symbol: count_lanes.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
  - .name: wakes_lanes
    .symbol: wakes_lanes.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
  - .name: barrier_skipped
    .symbol: barrier_skipped.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
  - .name: merged_mask
    .symbol: merged_mask.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
  - .name: unmerged_mask
    .symbol: unmerged_mask.kd
    .kernarg_segment_size: 0
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 8
    .vgpr_count: 8
    .max_flat_workgroup_size: 64
...
.end_amdgpu_metadata
