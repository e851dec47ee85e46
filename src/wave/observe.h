/* SPDX-License-Identifier: MIT */
/*
 * observe: what a run leaves, in one fixed shape that every level of the
 * wave recompiler reports, so that two levels are compared byte for byte.
 * Every lane is reported (not lane zero alone): a lane-crossing bug shows
 * in the lane it hurts.
 *
 * The binary layout, version 2 (little-endian, no padding but where said):
 *
 *   header, 32 bytes:
 *     u32 magic       0x424f574b ("KWOB")
 *     u32 version     2
 *     u32 waves       waves reported, in dispatch order (groups x fastest,
 *                     then each group's waves in order)
 *     u32 vgprs       VGPRs reported per wave (the kernel's allocation)
 *     u32 buffers     buffer arguments reported
 *     u32 reserved    0
 *     u64 instructions executed by the run, every wave counted
 *   per wave, 80 + 4 * 128 + 256 * vgprs bytes:
 *     u32 group[3], u32 wave (its index in the group)
 *     u64 lanes       the lanes that are work-items
 *     u32 scc, u32 blind   bit 0: the level cannot see scc
 *     u32 sgpr_blind[4]    bit s: the level cannot see scalar code s
 *     u32 vgpr_blind[8]    bit v: the level cannot see v<v> (any lane)
 *                     (a register a level cannot see reads 0 and is
 *                     never compared: a level fills in only what it
 *                     computed; version 1 had no masks)
 *     u32 sgpr[128]   scalar codes 0..127: s0..s101, flat_scratch (102,
 *                     103), xnack_mask (104, 105), vcc (106, 107), ttmp0..15
 *                     (108..123), m0 (124), 125, exec (126, 127)
 *     u32 vgpr[vgprs][64]  register-major: v0's 64 lanes, then v1's ...
 *   per buffer argument, in argument order:
 *     u32 argument    its index among the explicit arguments
 *     u32 ranges      the written byte ranges that follow
 *     u64 size        the buffer's bytes
 *     ranges x { u64 offset, u64 length }   bytes the run wrote, ascending,
 *                     adjacent ones merged
 *     size bytes      the buffer's content after the run, then zeros to a
 *                     multiple of 8
 *
 * The JSON form says the same for people (numbers in decimal, masks as
 * 0x hex strings, a buffer's content as hex when it is at most 64 KiB).
 */
#ifndef KILN_WAVE_OBSERVE_H
#define KILN_WAVE_OBSERVE_H

#include "base/bytes.h"
#include "wave/interp.h"

#define WAVE_OBSERVE_MAGIC 0x424f574bu
#define WAVE_OBSERVE_VERSION 2u
#define WAVE_OBSERVE_WAVE_BYTES(vgprs) (80u + 4u * 128u + 256ull * (vgprs))

/* Appends the observation of a run made with desc->observe set to out
 * (its oom flag says when memory ran out: KILN_ERR_NO_MEMORY). */
kiln_result wave_observe_encode(const struct wave_run_desc *desc, const struct wave_result *r, struct bytes *out)
    __attribute__((warn_unused_result));
/* The same as JSON text (not NUL-terminated). */
kiln_result wave_observe_json(const struct wave_run_desc *desc, const struct wave_result *r, struct bytes *out)
    __attribute__((warn_unused_result));

/* Compares two observations in the binary layout: KILN_OK with *same
 * true when every wave's registers and every buffer's content and written
 * ranges agree (the instruction counts, which levels may differ in, are
 * said in why but not judged), false with the first difference in
 * why[0..cap). KILN_ERR_INVALID when either is not a whole observation of
 * this version, naming which. */
kiln_result wave_observe_compare(const void *a, size_t a_size, const void *b, size_t b_size, bool *same, char *why,
                                 size_t cap) __attribute__((warn_unused_result));
/* The same, and *wave the index (dispatch order) of the wave whose
 * register differs first, or -1 when the first difference is elsewhere
 * (a buffer, the shapes). */
kiln_result wave_observe_compare_at(const void *a, size_t a_size, const void *b, size_t b_size, bool *same, char *why,
                                    size_t cap, int64_t *wave) __attribute__((warn_unused_result));

#endif
