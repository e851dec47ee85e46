/* SPDX-License-Identifier: MIT */
/*
 * describe: a kernel as text for people (kiln wave info).
 */
#ifndef KILN_WAVE_DESCRIBE_H
#define KILN_WAVE_DESCRIBE_H

#include <stdint.h>

#include "base/bytes.h"
#include "wave/loader.h"

/* Appends to out what sections asks for (kiln_wave.h's
 * KILN_WAVE_DESCRIBE_* bits): k's initial register setup, each instruction
 * (offset, dwords, text), its instruction counts per encoding family. A
 * word that does not decode ends the code with a line saying so, and
 * KILN_ERR_INVALID naming it; out's oom flag says when memory ran out. */
kiln_result wave_describe(const struct wave_code *code, const struct wave_kernel *k, uint32_t sections,
                          struct bytes *out) __attribute__((warn_unused_result));

#endif
