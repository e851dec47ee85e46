/* SPDX-License-Identifier: MIT */
/*
 * api.c: libkiln-wave's public calls (kiln_wave.h) over the loader, the
 * level table, the observation and its comparison.
 */
#include "kiln_wave.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/bytes.h"
#include "wave/describe.h"
#include "wave/interp.h"
#include "wave/level.h"
#include "wave/wavefront.h"
#include "wave/loader.h"
#include "wave/observe.h"

struct kiln_wave_code {
    struct wave_code c;
};

struct kiln_wave_result {
    const struct wave_level *level;
    char choice[2048];             /* level "auto": what it chose and why; "" otherwise */
    struct wave_run_desc desc;     /* as run; its args are args */
    struct wave_value *args;       /* owned copy; buffers' data borrowed */
    struct wave_result res;
};

const char *kiln_wave_last_error(void) { return err_last(); }

void kiln_wave_free(void *p) { free(p); }

kiln_result kiln_wave_code_load(const void *bytes, size_t size, kiln_wave_code **out)
{
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_code_load: out is NULL");
    *out = NULL;
    if (!bytes && size)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_code_load: bytes is NULL");
    kiln_wave_code *w = mem_calloc(1, sizeof *w);
    if (!w)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory for a code object");
    kiln_result r = wave_code_load(bytes, size, &w->c);
    if (r != KILN_OK) {
        free(w);
        return r;
    }
    *out = w;
    return KILN_OK;
}

void kiln_wave_code_destroy(kiln_wave_code *code)
{
    if (!code)
        return;
    wave_code_finish(&code->c);
    free(code);
}

kiln_result kiln_wave_code_info_get(const kiln_wave_code *code, kiln_wave_code_info *out)
{
    if (!code || !out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_code_info_get: %s is NULL", code ? "out" : "code");
    *out = (kiln_wave_code_info){.target = code->c.target,
                                 .code_object_version = code->c.code_object_version,
                                 .relocatable = code->c.relocatable,
                                 .kernel_count = code->c.kernel_count,
                                 .image_size = code->c.image_size};
    return KILN_OK;
}

static kiln_result kernel_of(const kiln_wave_code *code, uint32_t index, const char *call,
                             const struct wave_kernel **out)
{
    if (!code)
        return KILN_RAISE(KILN_ERR_INVALID, "%s: code is NULL", call);
    if (index >= code->c.kernel_count)
        return KILN_RAISE(KILN_ERR_INVALID, "%s: kernel %u of a code object with %u", call, index,
                          code->c.kernel_count);
    *out = &code->c.kernels[index];
    return KILN_OK;
}

kiln_result kiln_wave_kernel_get(const kiln_wave_code *code, uint32_t index, kiln_wave_kernel_info *out)
{
    const struct wave_kernel *k = NULL;
    kiln_result r = kernel_of(code, index, "kiln_wave_kernel_get", &k);
    if (r != KILN_OK)
        return r;
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_kernel_get: out is NULL");
    *out = (kiln_wave_kernel_info){
        .name = k->name,
        .code_addr = k->code_addr,
        .code_size = k->code_size,
        .descriptor_addr = k->kd_addr,
        .vgprs = k->vgprs,
        .sgprs = k->sgprs,
        .md_vgprs = k->md_vgpr_count,
        .md_sgprs = k->md_sgpr_count,
        .lds_bytes = k->group_segment_size,
        .scratch_bytes = k->private_segment_size,
        .kernarg_size = k->kernarg_size,
        .reqd_size = {k->reqd_size[0], k->reqd_size[1], k->reqd_size[2]},
        .max_flat_size = k->max_flat_size,
        .arg_count = k->arg_count,
        .explicit_count = k->explicit_count,
    };
    return KILN_OK;
}

kiln_result kiln_wave_kernel_find(const kiln_wave_code *code, const char *name, uint32_t *index)
{
    if (!code || !name || !index)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_kernel_find: %s is NULL",
                          !code ? "code" : !name ? "name" : "index");
    for (uint32_t i = 0; i < code->c.kernel_count; i++)
        if (!strcmp(code->c.kernels[i].name, name)) {
            *index = i;
            return KILN_OK;
        }
    char list[512] = "";
    for (uint32_t i = 0; i < code->c.kernel_count; i++) {
        size_t at = strlen(list);
        if (at + 8 >= sizeof list) {
            snprintf(list + at, sizeof list - at, " ...");
            break;
        }
        snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", code->c.kernels[i].name);
    }
    return KILN_RAISE(KILN_ERR_INVALID, "the code object has no kernel '%s'; it has %s", name,
                      code->c.kernel_count ? list : "none");
}

static kiln_wave_arg_kind public_kind(enum wave_arg_kind k)
{
    if (wave_arg_hidden(k))
        return KILN_WAVE_ARG_HIDDEN;
    switch (k) {
    case WAVE_ARG_BY_VALUE: return KILN_WAVE_ARG_BY_VALUE;
    case WAVE_ARG_GLOBAL_BUFFER: return KILN_WAVE_ARG_GLOBAL_BUFFER;
    case WAVE_ARG_DYNAMIC_SHARED_POINTER: return KILN_WAVE_ARG_LOCAL_POINTER;
    default: return KILN_WAVE_ARG_OTHER;
    }
}

kiln_result kiln_wave_arg_get(const kiln_wave_code *code, uint32_t kernel, uint32_t arg, kiln_wave_arg_info *out)
{
    const struct wave_kernel *k = NULL;
    kiln_result r = kernel_of(code, kernel, "kiln_wave_arg_get", &k);
    if (r != KILN_OK)
        return r;
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_arg_get: out is NULL");
    if (arg >= k->arg_count)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_arg_get: argument %u of kernel '%s', which has %u", arg,
                          k->name, k->arg_count);
    const struct wave_arg *g = &k->args[arg];
    *out = (kiln_wave_arg_info){.name = g->name,
                                .type_name = g->type_name,
                                .value_kind = wave_arg_kind_name(g->kind),
                                .kind = public_kind(g->kind),
                                .offset = g->offset,
                                .size = g->size};
    return KILN_OK;
}

kiln_result kiln_wave_kernel_describe(const kiln_wave_code *code, uint32_t kernel, uint32_t flags, char **text)
{
    const struct wave_kernel *k = NULL;
    kiln_result r = kernel_of(code, kernel, "kiln_wave_kernel_describe", &k);
    if (r != KILN_OK)
        return r;
    if (!text)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_kernel_describe: text is NULL");
    *text = NULL;
    const uint32_t known = KILN_WAVE_DESCRIBE_SETUP | KILN_WAVE_DESCRIBE_DISASM | KILN_WAVE_DESCRIBE_COUNTS;
    if (flags & ~known)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_kernel_describe: flags 0x%x holds unknown bits", flags);
    struct bytes b = {0};
    r = wave_describe(&code->c, k, flags, &b);
    bytes_put_u8(&b, 0);
    if (b.oom) {
        free(b.p);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory describing kernel '%s'", k->name);
    }
    *text = (char *)b.p;
    return r;
}

/* ---- levels ---------------------------------------------------------------------------- */

uint32_t kiln_wave_level_count(void) { return wave_level_count; }

kiln_result kiln_wave_level_get(uint32_t row, kiln_wave_level_info *out)
{
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_level_get: out is NULL");
    if (row >= wave_level_count)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_level_get: row %u of %u", row, wave_level_count);
    *out = (kiln_wave_level_info){.name = wave_levels[row].name,
                                  .summary = wave_levels[row].summary,
                                  .built = wave_levels[row].run != NULL};
    return KILN_OK;
}

kiln_result kiln_wave_level_check(const kiln_wave_code *code, uint32_t kernel, const char *level,
                                  const kiln_caps *caps)
{
    const struct wave_kernel *k = NULL;
    kiln_result r = kernel_of(code, kernel, "kiln_wave_level_check", &k);
    if (r != KILN_OK)
        return r;
    const struct wave_level *row;
    if (level && !strcmp(level, "auto")) {
        char why[2048];
        return wave_level_choose(&code->c, k, caps, &row, why, sizeof why);
    }
    r = wave_level_resolve(level, &row);
    if (r != KILN_OK)
        return r;
    return row->check(&code->c, k, caps);
}

/* auto's choice said for people: the level, the order, and each level
 * ruled out before it with its reason. */
static void choice_text(const struct wave_level *row, const kiln_caps *caps, const char *why, char *out, size_t cap)
{
    size_t at = (size_t)snprintf(out, cap, "auto chose %s, the cheapest level that runs the kernel here (%s, in "
                                 "order:",
                                 row->name, caps && caps->device_type == KILN_DEVICE_CPU ? "a CPU device" : "a GPU");
    const char *const *order = wave_auto_order(caps);
    for (uint32_t i = 0; i < WAVE_AUTO_LEVELS && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? ", " : " ", order[i]);
    if (at < cap)
        at += (size_t)snprintf(out + at, cap - at, ")%s", why[0] ? "; ruled out:\n" : "");
    for (const char *line = why; *line && at < cap;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        at += (size_t)snprintf(out + at, cap - at, "  %.*s%s", (int)n, line, end && end[1] ? "\n" : "");
        line += n + (end ? 1 : 0);
    }
}

/* The level named (NULL: the reference; "auto": chosen for k on the
 * context's device, the choice said in choice[0..cap) when not NULL). */
static kiln_result level_for(const char *name, const struct wave_code *code, const struct wave_kernel *k,
                             kiln_context ctx, const struct wave_level **out, char *choice, size_t cap)
{
    if (choice && cap)
        choice[0] = 0;
    if (!name || strcmp(name, "auto"))
        return wave_level_resolve(name, out);
    kiln_caps caps;
    bool have = ctx.id && kiln_context_caps(ctx, &caps) == KILN_OK;
    char why[2048];
    KILN_TRY(wave_level_choose(code, k, have ? &caps : NULL, out, why, sizeof why));
    if (choice)
        choice_text(*out, have ? &caps : NULL, why, choice, cap);
    return KILN_OK;
}

kiln_result kiln_wave_level_choose(const kiln_wave_code *code, uint32_t kernel, const kiln_caps *caps,
                                   const char **level, char *why, size_t cap)
{
    const struct wave_kernel *k = NULL;
    if (!level)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_level_choose: level is NULL");
    *level = NULL;
    KILN_TRY(kernel_of(code, kernel, "kiln_wave_level_choose", &k));
    const struct wave_level *row;
    char reasons[2048];
    KILN_TRY(wave_level_choose(&code->c, k, caps, &row, reasons, sizeof reasons));
    *level = row->name;
    if (why && cap)
        choice_text(row, caps, reasons, why, cap);
    return KILN_OK;
}

/* ---- runs ------------------------------------------------------------------------------ */

static kiln_result run_at(const kiln_wave_code *code, const kiln_wave_run_desc *desc, kiln_wave_result **out);

/* The desc's arguments checked against the kernel's and copied. */
static kiln_result take_args(const struct wave_kernel *k, const kiln_wave_run_desc *d, struct wave_value *out)
{
    if (d->arg_count != k->explicit_count)
        return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s' takes %u arguments; the run gives %u", k->name,
                          k->explicit_count, d->arg_count);
    if (d->arg_count && !d->args)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_run: args is NULL");
    for (uint32_t a = 0; a < d->arg_count; a++) {
        const struct wave_arg *g = &k->args[a];
        const kiln_wave_value *v = &d->args[a];
        const char *want = NULL;
        if (g->kind == WAVE_ARG_GLOBAL_BUFFER) {
            if (v->kind != KILN_WAVE_VALUE_BUFFER || (!v->data && v->size))
                want = "a buffer (KILN_WAVE_VALUE_BUFFER with its data)";
        } else if (g->kind == WAVE_ARG_DYNAMIC_SHARED_POINTER) {
            if (v->kind != KILN_WAVE_VALUE_LOCAL)
                want = "a size of dynamic LDS (KILN_WAVE_VALUE_LOCAL)";
        } else if (g->kind == WAVE_ARG_BY_VALUE) {
            if (v->kind != KILN_WAVE_VALUE_BYTES || v->size != g->size || g->size > sizeof v->bytes)
                want = "its bytes (KILN_WAVE_VALUE_BYTES of its size)";
        } else {
            return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': argument %u ('%s') is a %s, which kiln does not run",
                              k->name, a, g->name, wave_arg_kind_name(g->kind));
        }
        if (want)
            return KILN_RAISE(KILN_ERR_INVALID,
                              "kernel '%s': argument %u ('%s', %s %s, %u bytes) takes %s; the run gives kind %d of "
                              "%llu bytes",
                              k->name, a, g->name[0] ? g->name : "-", wave_arg_kind_name(g->kind),
                              g->type_name[0] ? g->type_name : "-", g->size, want, (int)v->kind,
                              (unsigned long long)v->size);
        out[a] = (struct wave_value){.kind = v->kind == KILN_WAVE_VALUE_BUFFER  ? WAVE_VALUE_BUFFER
                                             : v->kind == KILN_WAVE_VALUE_LOCAL ? WAVE_VALUE_LOCAL
                                                                                : WAVE_VALUE_BYTES,
                                     .data = v->data,
                                     .size = v->size};
        memcpy(out[a].bytes, v->bytes, sizeof out[a].bytes);
    }
    return KILN_OK;
}

/* desc taken apart for a level's run: its level, arguments (args, the
 * caller's to free) and the internal desc. */
static kiln_result run_desc(const kiln_wave_code *code, const kiln_wave_run_desc *desc, const char *call,
                            const struct wave_level **level, char *choice, size_t cap, struct wave_value **args,
                            struct wave_run_desc *out)
{
    *args = NULL;
    if (!desc)
        return KILN_RAISE(KILN_ERR_INVALID, "%s: desc is NULL", call);
    const struct wave_kernel *k = NULL;
    KILN_TRY(kernel_of(code, desc->kernel, call, &k));
    KILN_TRY(level_for(desc->level, &code->c, k, desc->context, level, choice, cap));
    struct wave_value *a = mem_calloc(desc->arg_count ? desc->arg_count : 1, sizeof *a);
    if (!a)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory for a run of kernel '%s'", k->name);
    kiln_result r = take_args(k, desc, a);
    if (r != KILN_OK) {
        free(a);
        return r;
    }
    uint32_t block[3] = {desc->block[0], desc->block[1], desc->block[2]};
    if (!block[0] && !block[1] && !block[2]) {
        block[0] = k->reqd_size[0] ? k->reqd_size[0] : 64;
        block[1] = k->reqd_size[0] ? k->reqd_size[1] : 1;
        block[2] = k->reqd_size[0] ? k->reqd_size[2] : 1;
    }
    *args = a;
    *out = (struct wave_run_desc){.code = &code->c,
                                  .kernel = k,
                                  .groups = {desc->groups[0], desc->groups[1], desc->groups[2]},
                                  .block = {block[0], block[1], block[2]},
                                  .args = a,
                                  .arg_count = desc->arg_count,
                                  .max_instructions = desc->max_instructions,
                                  .max_work = desc->max_work,
                                  .max_seconds = desc->max_seconds,
                                  .observe = desc->observe,
                                  .context = desc->context};
    return KILN_OK;
}

/* A run at auto with no context: the context the run would make, made
 * first, so that auto chooses for the device the run takes (*own set: the
 * caller destroys it). */
static kiln_result auto_context(const kiln_wave_run_desc *desc, const char *level_b, kiln_wave_run_desc *copy,
                                bool *own)
{
    *own = false;
    if (!desc)
        return KILN_OK;
    *copy = *desc;
    bool any = (desc->level && !strcmp(desc->level, "auto")) || (level_b && !strcmp(level_b, "auto"));
    if (!any || desc->context.id)
        return KILN_OK;
    kiln_result r = kiln_context_create(&(kiln_context_desc){.specialization = -1}, &copy->context);
    if (r != KILN_OK)
        return KILN_RAISE(r, "level auto: kiln_context_create failed (%s)", kiln_result_name(r));
    *own = true;
    return KILN_OK;
}

kiln_result kiln_wave_run(const kiln_wave_code *code, const kiln_wave_run_desc *desc, kiln_wave_result **out)
{
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_run: out is NULL");
    *out = NULL;
    kiln_wave_run_desc copy;
    bool own;
    KILN_TRY(auto_context(desc, NULL, &copy, &own));
    kiln_result r = run_at(code, desc ? &copy : NULL, out);
    if (own)
        (void)kiln_context_destroy(copy.context);
    return r;
}

/* auto's level ran out of the device's loop budget at run time (lavapipe's
 * 65,535 iterations an invocation, which no check can foresee): the next
 * level of the order that takes the kernel runs it from the caller's
 * buffers as they were (saved), and the choice says so. */
static kiln_result auto_next(kiln_wave_result *res, kiln_result failed, uint8_t **saved)
{
    struct wave_run_desc *d = &res->desc;
    kiln_caps caps;
    bool have = d->context.id && kiln_context_caps(d->context, &caps) == KILN_OK;
    const char *const *order = wave_auto_order(have ? &caps : NULL);
    kiln_result r = failed;
    bool past = false;
    for (uint32_t i = 0; saved && i < WAVE_AUTO_LEVELS && r == KILN_ERR_LIMIT; i++) {
        const struct wave_level *row;
        if (wave_level_resolve(order[i], &row) != KILN_OK)
            continue;
        if (!past) {
            past = row == res->level;
            continue;
        }
        if (row->check(d->code, d->kernel, have ? &caps : NULL) != KILN_OK)
            continue;
        size_t at = strlen(res->choice);
        snprintf(res->choice + at, sizeof res->choice - at, "\n  %s ran out of the device's loop iterations at run "
                 "time; auto took %s",
                 res->level->name, row->name);
        wave_result_finish(&res->res);
        wave_buffers_put(saved, d);
        res->level = row;
        r = row->run(d, &res->res);
        if (r == KILN_ERR_LIMIT && !wf_device_loops_ran_out())
            break;
    }
    return r;
}

static kiln_result run_at(const kiln_wave_code *code, const kiln_wave_run_desc *desc, kiln_wave_result **out)
{
    const struct wave_level *level;
    struct wave_value *args;
    struct wave_run_desc d;
    char choice[sizeof((kiln_wave_result *)0)->choice];
    KILN_TRY(run_desc(code, desc, "kiln_wave_run", &level, choice, sizeof choice, &args, &d));
    kiln_wave_result *res = mem_calloc(1, sizeof *res);
    if (!res) {
        free(args);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory for a run of kernel '%s'", d.kernel->name);
    }
    res->level = level;
    memcpy(res->choice, choice, sizeof choice);
    res->args = args;
    res->desc = d;
    bool is_auto = desc->level && !strcmp(desc->level, "auto");
    /* a device level may run out of the device's loops: the buffers kept for the next */
    uint8_t **saved = is_auto && level != &wave_levels[0] ? wave_buffers_keep(&res->desc) : NULL;
    kiln_result r = level->run(&res->desc, &res->res);
    if (r == KILN_ERR_LIMIT && saved && wf_device_loops_ran_out())
        r = auto_next(res, r, saved);
    wave_buffers_free(saved, &res->desc);
    res->desc.context = (kiln_context){0};   /* borrowed for the run alone */
    *out = res;
    return r;
}

kiln_result kiln_wave_diff(const kiln_wave_code *code, const kiln_wave_run_desc *desc, const char *level_b,
                           kiln_wave_diff_report *out)
{
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_diff: out is NULL");
    memset(out, 0, sizeof *out);
    const struct wave_level *a, *b;
    struct wave_value *args;
    struct wave_run_desc d;
    kiln_wave_run_desc copy;
    bool own;
    KILN_TRY(auto_context(desc, level_b, &copy, &own));
    kiln_result r = run_desc(code, desc ? &copy : NULL, "kiln_wave_diff", &a, NULL, 0, &args, &d);
    if (r == KILN_OK)
        r = level_for(level_b, &code->c, d.kernel, copy.context, &b, NULL, 0);
    if (r == KILN_OK)
        r = wave_diff(a, b, &d, out);
    free(args);   /* NULL where run_desc failed */
    if (own)
        (void)kiln_context_destroy(copy.context);
    return r;
}

void kiln_wave_result_destroy(kiln_wave_result *result)
{
    if (!result)
        return;
    wave_result_finish(&result->res);
    free(result->args);
    free(result);
}

kiln_result kiln_wave_run_stats_get(const kiln_wave_result *result, kiln_wave_run_stats *out)
{
    if (!result || !out)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_run_stats_get: %s is NULL", result ? "out" : "result");
    *out = (kiln_wave_run_stats){.level = result->level->name,
                                 .choice = result->choice[0] ? result->choice : NULL,
                                 .instructions = result->res.instructions,
                                 .bytes = result->res.bytes,
                                 .waves = result->res.waves};
    return KILN_OK;
}

kiln_result kiln_wave_observation(const kiln_wave_result *result, kiln_wave_form form, void **bytes, size_t *size)
{
    if (!result || !bytes || !size)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_observation: %s is NULL",
                          !result ? "result" : !bytes ? "bytes" : "size");
    *bytes = NULL;
    *size = 0;
    if (form != KILN_WAVE_FORM_BINARY && form != KILN_WAVE_FORM_JSON)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_observation: form %d is neither binary nor JSON", (int)form);
    if (!result->desc.observe)
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_observation: the run was made without observe");
    struct bytes b = {0};
    kiln_result r = form == KILN_WAVE_FORM_JSON ? wave_observe_json(&result->desc, &result->res, &b)
                                                : wave_observe_encode(&result->desc, &result->res, &b);
    if (r != KILN_OK) {
        free(b.p);
        return r;
    }
    *bytes = b.p;
    *size = b.len;
    return KILN_OK;
}

kiln_result kiln_wave_compare(const void *a, size_t a_size, const void *b, size_t b_size, bool *same, char *why,
                              size_t cap)
{
    if (!same || (!why && cap) || (!a && a_size) || (!b && b_size))
        return KILN_RAISE(KILN_ERR_INVALID, "kiln_wave_compare: a pointer is NULL");
    return wave_observe_compare(a, a_size, b, b_size, same, why, cap);
}
