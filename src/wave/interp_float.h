/* SPDX-License-Identifier: MIT */
/*
 * interp_float.h: the vector ALU's bits-and-floats helpers (interp_valu.c,
 * interp_lane.c): reinterpretation, halves, IEEE min and max, medians,
 * conversions with the hardware's clamping, class masks.
 */
#ifndef KILN_WAVE_INTERP_FLOAT_H
#define KILN_WAVE_INTERP_FLOAT_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/half.h"

static inline float f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline uint32_t b32(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}
static inline double f64(uint64_t b)
{
    double f;
    memcpy(&f, &b, 8);
    return f;
}
static inline uint64_t b64(double f)
{
    uint64_t b;
    memcpy(&b, &f, 8);
    return b;
}

static inline float h2f(uint32_t h) { return half_to_float((uint16_t)h); }
static inline uint32_t f2h(float f) { return half_from_float(f); }

/* MODE.FP_DENORM (MODE bits 7:4; the wave's mode word keeps them there):
 * bits 5:4 for single precision, 7:6 for double and half, each
 * 0 = flush input and output denormals, 1 = flush output only, 2 = flush
 * input only, 3 = flush none (LLVM's SIDefines.h FP_DENORM_*; its name for
 * 0, "preserve-sign", says a flushed denormal becomes a zero of its sign).
 * So bit 4 (6) allows denormal inputs and bit 5 (7) denormal results. */
#define DENORM_IN32 0x10u
#define DENORM_OUT32 0x20u
#define DENORM_IN64 0x40u    /* and half */
#define DENORM_OUT64 0x80u   /* and half */
static inline uint32_t flush32(uint32_t b) { return (b & 0x7f800000u) ? b : b & 0x80000000u; }
static inline uint64_t flush64(uint64_t b) { return (b & 0x7ff0000000000000ull) ? b : b & 0x8000000000000000ull; }
static inline uint32_t flush16(uint32_t h) { return (h & 0x7c00u) ? h : h & 0x8000u; }
static inline uint32_t flush_in32(uint32_t mode, uint32_t b) { return mode & DENORM_IN32 ? b : flush32(b); }
static inline uint64_t flush_in64(uint32_t mode, uint64_t b) { return mode & DENORM_IN64 ? b : flush64(b); }
static inline uint32_t flush_in16(uint32_t mode, uint32_t h) { return mode & DENORM_IN64 ? h : flush16(h); }

/* min and max: a NaN operand yields the other (IEEE 754's minNum and
 * maxNum). The vector ALU's own, with its IEEE mode bit: fmin_mode. */
static inline float fmin_ieee(float a, float b) { return isnan(a) ? b : isnan(b) ? a : (a < b || (a == b && signbit(a))) ? a : b; }
static inline float fmax_ieee(float a, float b) { return isnan(a) ? b : isnan(b) ? a : (a > b || (a == b && !signbit(a))) ? a : b; }
static inline double dmin_ieee(double a, double b) { return isnan(a) ? b : isnan(b) ? a : (a < b || (a == b && signbit(a))) ? a : b; }
static inline double dmax_ieee(double a, double b) { return isnan(a) ? b : isnan(b) ? a : (a > b || (a == b && !signbit(a))) ? a : b; }
/* Signalling NaNs: a NaN whose quiet bit (the mantissa's top) is clear. */
static inline bool snan32(float a)
{
    uint32_t b = b32(a);
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) && !(b & 0x400000u);
}
static inline bool snan64(double a)
{
    uint64_t b = b64(a);
    return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0xfffffffffffffull) &&
           !(b & 0x8000000000000ull);
}

/* V_MIN and V_MAX as the vector ALU computes them. In IEEE mode
 * (MODE.IEEE, on for compute kernels by default) a signalling NaN operand
 * yields itself quieted, the first one's where both are (IEEE 754-2008's
 * minNum: "if either operand is a signaling NaN ... the result is a quiet
 * NaN"); otherwise, and for quiet NaNs, a NaN operand yields the other. */
static inline float fmin_mode(float a, float b, bool ieee)
{
    if (ieee && (snan32(a) || snan32(b)))
        return f32(b32(snan32(a) ? a : b) | 0x400000u);
    return fmin_ieee(a, b);
}
static inline float fmax_mode(float a, float b, bool ieee)
{
    if (ieee && (snan32(a) || snan32(b)))
        return f32(b32(snan32(a) ? a : b) | 0x400000u);
    return fmax_ieee(a, b);
}
static inline double dmin_mode(double a, double b, bool ieee)
{
    if (ieee && (snan64(a) || snan64(b)))
        return f64(b64(snan64(a) ? a : b) | 0x8000000000000ull);
    return dmin_ieee(a, b);
}
static inline double dmax_mode(double a, double b, bool ieee)
{
    if (ieee && (snan64(a) || snan64(b)))
        return f64(b64(snan64(a) ? a : b) | 0x8000000000000ull);
    return dmax_ieee(a, b);
}

/* V_MED3: with a NaN operand, V_MIN3 of the three (so, in IEEE mode, a
 * signalling NaN is quieted by the first V_MIN and the quiet NaN then
 * yields the other operand of the second: med3(sNaN, 1, 2) is 2); else the
 * V_MAX of the two that are not the V_MAX3. */
static inline float fmed3(float a, float b, float c, bool ieee)
{
    if (isnan(a) || isnan(b) || isnan(c))
        return fmin_mode(fmin_mode(a, b, ieee), c, ieee);
    float mx = fmax_ieee(fmax_ieee(a, b), c);
    if (mx == a)
        return fmax_ieee(b, c);
    if (mx == b)
        return fmax_ieee(a, c);
    return fmax_ieee(a, b);
}
static inline int32_t imed3(int32_t a, int32_t b, int32_t c)
{
    int32_t lo = a < b ? a : b, hi = a < b ? b : a;
    return c < lo ? lo : c > hi ? hi : c;
}
static inline uint32_t umed3(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    return c < lo ? lo : c > hi ? hi : c;
}

/* Float to integer as the hardware converts: NaN to 0, out of range
 * saturated, truncated toward zero. */
static inline int32_t cvt_i32(double d)
{
    if (isnan(d))
        return 0;
    if (d >= 2147483647.0)
        return INT32_MAX;
    if (d <= -2147483648.0)
        return INT32_MIN;
    return (int32_t)d;
}
static inline uint32_t cvt_u32(double d)
{
    if (isnan(d) || d <= 0)
        return 0;
    if (d >= 4294967295.0)
        return UINT32_MAX;
    return (uint32_t)d;
}

/* V_CMP_CLASS's class bit of v, a source widened to double: is_snan and
 * is_denorm say what v was in its own precision (an f32 or f16 denormal
 * is a normal double). */
static inline uint32_t class_mask(double v, bool is_snan, bool is_denorm)
{
    if (isnan(v))
        return is_snan ? 1u : 2u;
    bool neg = signbit(v);
    if (isinf(v))
        return neg ? 1u << 2 : 1u << 9;
    if (v == 0)
        return neg ? 1u << 5 : 1u << 6;
    if (is_denorm)
        return neg ? 1u << 4 : 1u << 7;
    return neg ? 1u << 3 : 1u << 8;
}

static inline uint32_t sat_u16(int32_t v) { return v < 0 ? 0 : v > 65535 ? 65535 : (uint32_t)v; }

static inline uint32_t sat_i16(int32_t v) { return (uint32_t)(uint16_t)(int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }

static inline float frexp_mant(float x)
{
    if (isnan(x) || isinf(x))
        return x;
    int e;
    return frexpf(x, &e);
}

static inline int32_t frexp_exp(double x)
{
    if (isnan(x) || isinf(x) || x == 0)
        return 0;
    int e;
    frexp(x, &e);
    return e;
}

static inline double div_fixup(double q, double den, double num)
{
    if (isnan(den))
        return den;
    if (isnan(num))
        return num;
    bool sign = signbit(den) != signbit(num);
    if (den == 0 && num == 0)
        return NAN;
    if (isinf(den) && isinf(num))
        return NAN;
    if (den == 0 || isinf(num))
        return sign ? -INFINITY : INFINITY;
    if (isinf(den) || num == 0)
        return sign ? -0.0 : 0.0;
    (void)q;
    return num / den;
}

#endif
