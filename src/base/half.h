/* SPDX-License-Identifier: MIT */
/*
 * half.h: IEEE binary16 to and from binary32, the one copy every module
 * and the tool use (header-only: the tool compiles it in).
 *
 * half_to_float is exact for every half (a NaN keeps its sign and payload,
 * the payload in the top bits); half_from_float rounds to nearest even, a
 * value past the largest half (65504, rounding) becomes an infinity, one
 * below the smallest normal a subnormal, and a NaN stays a quiet NaN
 * keeping its sign and its payload's top bits.
 */
#ifndef KILN_BASE_HALF_H
#define KILN_BASE_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | mant << 13;
    } else if (e == 0) {
        float v = (float)mant * 0x1p-24f;   /* 0 and subnormals: exact */
        return sign ? -v : v;
    } else {
        bits = sign | (e + 112) << 23 | mant << 13;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, mant = x & 0x7fffff;
    if (e == 0xff)
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | mant >> 13 : 0));
    float a = fabsf(f);
    if (a >= 65520.0f)
        return (uint16_t)(sign | 0x7c00);
    if (a < 0x1p-14f)   /* a subnormal half: a multiple of 2^-24, rounded to nearest even */
        return (uint16_t)(sign | (uint32_t)nearbyintf(a * 0x1p24f));
    uint32_t r = x & 0x7fffffff;
    r += 0xfff + ((r >> 13) & 1);   /* round the 13 dropped bits to nearest even */
    return (uint16_t)(sign | (((r >> 23) - 112) << 10) | ((r >> 13) & 0x3ff));
}

#endif
