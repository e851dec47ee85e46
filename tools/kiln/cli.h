/* SPDX-License-Identifier: MIT */
/*
 * cli.h: the kiln command-line tool's commands and shared helpers. The tool
 * uses the public API (kiln.h), and one internal header that stands on
 * nothing else: base/parse.h, the number, size and word parsers the
 * library's environment switches use too, so both read text alike (the
 * commands include it where they parse).
 */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln.h"

int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* kiln run --spec ID=VALUE (spec_args.c): the arguments as given, read
 * by the constants' declared types once the shader's interface is known. */
struct cli_spec_arg {
    uint32_t id;
    const char *value;   /* VALUE; borrowed from argv */
    const char *arg;     /* ID=VALUE, for messages; borrowed from argv */
};
struct cli_spec_args {
    struct cli_spec_arg args[KILN_MAX_SPEC_CONSTANTS];
    uint32_t count;
};
/* Adds one --spec argument (its form checked: ID=VALUE, the id once);
 * false with why naming the argument. */
bool cli_spec_add(struct cli_spec_args *s, const char *v, char *why, size_t cap);
/* The {id, word} pairs of every --spec (out[i] for args[i]), each value
 * read as its constant's type; false with why naming the argument and the
 * constant (an id the shader does not declare, a value the type cannot
 * hold, a 64-bit constant). Unless quiet, a float given as a decimal
 * integer (read as the value: 2 is 2.0) gets a note on stderr naming the
 * bits used. */
bool cli_spec_words(const struct cli_spec_args *s, const kiln_program_interface *it, kiln_spec_constant *out,
                    bool quiet, char *why, size_t cap);
/* The pairs of every --spec with each value read without its type (a WORD,
 * as --param reads it; true and false as 1 and 0): false when a value is
 * no such word. */
bool cli_spec_guess(const struct cli_spec_args *s, kiln_spec_constant *out);
/* A constant's value (bits as kiln_spec_constant_info holds them) as its
 * type reads: "true", "-5", "0.5". */
void cli_spec_value_text(const kiln_spec_constant_info *c, uint64_t bits, char *buf, size_t cap);
/* One line per constant the program leaves at its default (and uses):
 * "note: SHADER: specialization constant 'NAME' (id N) left at its default
 * V; set it with --spec N=WORD". */
void cli_spec_notes(FILE *f, const char *shader, const kiln_program_interface *it);

/* Where a flag binds: `[S.]B[[E]]`: descriptor set S (0 when not
 * given), binding B, element E of an array binding (0 when not given). */
struct cli_site {
    uint32_t set, binding, element;
};
/* Splits "[S.]B[[E]]=REST" into a site and REST (borrowed). */
bool cli_site_split(const char *v, struct cli_site *at, const char **rest);
/* A site as the flags write it: "2", "1.2", "1.2[3]". */
const char *cli_site_text(struct cli_site at, char buf[48]);
/* Whether t is a decimal integer (an optional minus, then digits): a
 * number a float's notes say was read as an integer or as a value. */
bool cli_decimal_integer(const char *t);
bool cli_site_same(struct cli_site a, struct cli_site b);
/* The format a GLSL format qualifier names ("r32f"), 0 for none. */
kiln_format cli_format_named(const char *name);

/* Prints "kiln: <msg>" and the call's error to stderr; returns 1. The
 * line is also kept for cli_last_failure. */
int cli_fail(const char *what, kiln_result r);
/* Keeps a failure's message (printf-style) for cli_last_failure, which
 * --json reports as "error". */
void cli_note_failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last message kept by cli_fail or cli_note_failure; "" when none. */
const char *cli_last_failure(void);
/* qsort's comparison of doubles, ascending. */
int cli_cmp_double(const void *a, const void *b);
/* Median of ms[from, to); -1 when empty or out of memory. */
double cli_median(const double *ms, uint64_t from, uint64_t to);

/* An input file, opened and checked by cli_in_open before it is read by
 * cli_in_read against a bound that may be known only later. */
struct cli_in {
    int fd;          /* -1 once closed */
    bool stream;     /* not a regular file (a pipe, a device): its length shows only by reading */
    uint64_t size;   /* a regular file's size when opened */
};
/* Opens path for reading. A folder is refused ("is a directory"); so is
 * what cannot be opened. A FIFO is opened without waiting for a writer.
 * "-" is standard input (a file named - is ./-), which a run reads once:
 * a second "-" is refused. false with why[] filled (the reason only:
 * callers name the file). */
bool cli_in_open(struct cli_in *in, const char *path, char *why, size_t why_len);
/* Reads the whole input, at most max bytes: a regular file larger than
 * max is refused before anything is read; a stream is read up to max + 1
 * bytes and refused if it gives more. Returns a malloc'd, NUL-terminated
 * copy (the caller frees it) and *len, or NULL with why[] filled. Closes
 * the input either way. */
char *cli_in_read(struct cli_in *in, uint64_t max, size_t *len, char *why, size_t why_len);
void cli_in_close(struct cli_in *in);
/* cli_in_open and cli_in_read in one. */
char *cli_read_file(const char *path, uint64_t max, size_t *len, char *why, size_t why_len);

/* An output file, written safely (out_file.c): a regular file (or a new
 * one) is written to a temporary file beside it, fsync'd and renamed over
 * it, so a failure leaves the old content; kiln removes only its own
 * temporary file. A device or FIFO is written in place and never removed;
 * a folder is refused. Use: cli_out_open, cli_out_write as often as
 * needed, then cli_out_commit, or cli_out_abort to give up. Each returns
 * false on failure, with why[] saying what went wrong (the path is not in
 * it: callers name it) and errno set; after a failure only cli_out_commit
 * (which then fails) or cli_out_abort remain to call. "-" is standard
 * output, written in place (a file named - is ./-). */
struct cli_out {
    const char *path;   /* as named; borrowed */
    char *target;       /* the file the rename replaces (a link's target); owned */
    char *tmp;          /* kiln's temporary file; NULL when writing in place */
    int fd;
    bool in_place;      /* a device or FIFO: written where it is, never replaced or removed */
    bool failed;
    char why[320];
};
bool cli_out_open(struct cli_out *o, const char *path);
bool cli_out_write(struct cli_out *o, const void *data, size_t len);
bool cli_out_commit(struct cli_out *o);
void cli_out_abort(struct cli_out *o);
/* A whole file in one call; false with why[] filled. */
bool cli_write_file(const char *path, const void *data, size_t len, char *why, size_t why_len);

/* JSON for --json (json.c): one value at a time, written to f as given.
 * In an object every value takes a key; in an array key is NULL. Strings
 * are bytes: valid UTF-8 passes through, control characters are written
 * as \u00XX and bytes that are not valid UTF-8 as U+FFFD; a double that is
 * not finite is written as null. The outermost close ends the line. */
struct cli_json {
    FILE *f;          /* borrowed */
    uint32_t depth;
    bool more[16];    /* per open object or array: a value was written, so the next takes a comma */
};
void cli_json_init(struct cli_json *j, FILE *f);
/* Opens an object ('{') or array ('['), closed by the matching bracket. */
void cli_json_open(struct cli_json *j, const char *key, char bracket);
void cli_json_close(struct cli_json *j, char bracket);
void cli_json_str(struct cli_json *j, const char *key, const char *s);   /* s NULL: null */
void cli_json_uint(struct cli_json *j, const char *key, uint64_t v);
void cli_json_int(struct cli_json *j, const char *key, int64_t v);
void cli_json_double(struct cli_json *j, const char *key, double v);
void cli_json_bool(struct cli_json *j, const char *key, bool v);
void cli_json_null(struct cli_json *j, const char *key);
/* Writes s[0..n) as a JSON string, quotes included. */
void cli_json_escape(FILE *f, const char *s, size_t n);
/* For --json: a stream on the process's stdout, which from now on carries
 * only what is written to it; what the tool prints to stdout otherwise
 * goes to stderr. */
FILE *cli_json_stdout(void);
/* The object of a command that failed: {"ok": false, "exit_status":
 * status, "error": cli_last_failure() or null}. */
void cli_json_failure(FILE *f, int status);

/* kiln run's images and samplers (image_args.c): --image B=..., the
 * image made for it; --out-image B=FILE; --sampler B=FILTER[,ADDRESS]. */
struct cli_image_arg {
    struct cli_site at;
    char site[48];           /* `at` as the flags write it */
    const char *arg;         /* the argument's value as given; borrowed from argv */
    char *path;              /* a PNG or raw file (owned); NULL for size: */
    struct cli_in in;        /* path opened and checked, read once the device's bound is known */
    bool raw;                /* FILE:WxH[xD]:FORMAT */
    bool three;              /* a D was given: a 3D image */
    uint32_t width, height, depth;
    /* The image's shape, once the shader is known (cli_images_make): a
     * binding it declares arrayed takes WxHxL as L layers, a cube one six
     * faces, a 1D one Wx1 as a 1D image. */
    uint32_t layers, dims;
    bool cube;
    kiln_format format;      /* given, or (once the shader is known) its own, else rgba8 */
    const char *out;         /* --out-image FILE; borrowed from argv */
    bool out_png;            /* FILE ends in .png */
    kiln_image image;
};
struct cli_image_out {
    struct cli_site at;
    const char *file, *arg;
};
struct cli_sampler_arg {
    struct cli_site at;
    char site[48];
    const char *arg;
    kiln_sampler_desc desc;
};
struct cli_images {
    struct cli_image_arg images[KILN_MAX_DESCRIPTORS];
    uint32_t count;
    struct cli_image_out outs[KILN_MAX_DESCRIPTORS];
    uint32_t out_count;
    struct cli_sampler_arg samplers[KILN_MAX_DESCRIPTORS];
    uint32_t sampler_count;
};
/* Each takes one argument's value; false with why naming it. */
bool cli_image_add(struct cli_images *s, const char *v, char *why, size_t cap);
bool cli_image_out_add(struct cli_images *s, const char *v, char *why, size_t cap);
bool cli_sampler_add(struct cli_images *s, const char *v, char *why, size_t cap);
/* Once every argument is in: each --out-image names an --image. */
bool cli_images_check(struct cli_images *s, char *why, size_t cap);
/* Makes and fills every image, their formats decided by the interface:
 * 0; 2 with why naming a bad argument; 1 after printing kiln's error. */
int cli_images_make(kiln_context ctx, struct cli_images *s, const kiln_program_interface *it, const kiln_caps *caps,
                    char *why, size_t cap);
/* Appends the images' and samplers' bindings to out[count..cap);
 * returns the new count. */
uint32_t cli_images_bind(const struct cli_images *s, kiln_binding *out, uint32_t count, uint32_t cap);
/* Writes every --out-image: 0, or 1 after printing why. */
int cli_images_write(kiln_context ctx, const struct cli_images *s);
void cli_images_finish(struct cli_images *s);

/* A PNG's pixels as image texels and back (texels.c). The channels a PNG
 * fills in format f, 0 for a format it does not convert to (integer and
 * snorm ones). */
uint32_t cli_png_channels(kiln_format f);
/* How far a byte of channel c (0 red .. 3 alpha) may come back from a
 * round trip through f: 0 (exactly) but for r11f_g11f_b10f and
 * rgb10_a2's alpha. */
uint32_t cli_png_error(kiln_format f, uint32_t channel);
/* pixels rgba8 pixels as texels of f (cli_png_channels(f) != 0), and
 * back; malloc'd, NULL when out of memory. */
uint8_t *cli_texels_from_png(const uint8_t *rgba, uint64_t pixels, kiln_format f);
uint8_t *cli_texels_to_png(const uint8_t *texels, uint64_t pixels, kiln_format f);

/* Specialization events as the tools print them (spec_print.c). */
struct cli_spec {
    uint64_t warms, promotions, demotions, failed, pinned;
    bool promoted;
    bool explained;           /* the line saying what the events are was printed */
    uint64_t first_promote;   /* frame index (0-based) of the first promotion */
    uint64_t last_event;      /* frame index of the last event */
};
/* Prints the scheme's new events, one line each, to stderr as "TOOL: submit
 * N: promote node 'x' (prog): slot0=0x7"; frame is the current frame's
 * index; tty: each line first clears a progress line. Returns whether any
 * was printed. */
bool cli_spec_drain(kiln_context ctx, kiln_scheme scheme, const char *tool, uint64_t frame, bool tty,
                    struct cli_spec *st);
/* The summary lines: counts, and the median frame time before the first
 * promotion against after the last event. */
void cli_spec_summary(FILE *f, const char *label, const struct cli_spec *st, const double *ms, uint64_t frames);
/* An 8-bit RGBA image, rows top to bottom; rgba is malloc'd. */
struct cli_image {
    uint8_t *rgba;
    uint32_t width, height;
};
/* Decodes the PNG in data[0..len) into out (free out->rgba). Refuses, with
 * a message in err naming why, bytes that are not a PNG, a damaged one, and
 * one whose pixels would take more than max_bytes as RGBA. */
bool cli_read_png(const uint8_t *data, size_t len, uint64_t max_bytes, struct cli_image *out, char *err,
                  size_t err_cap);
/* Writes an 8-bit RGBA image as PNG, through cli_out; false with why[]
 * filled. */
bool cli_write_png(const char *path, const uint8_t *rgba, uint32_t w, uint32_t h, char *why, size_t why_len);

#endif
