/* SPDX-License-Identifier: MIT */
/*
 * program_obj.c: the program object over the compile service. Creating one
 * posts (or adopts) its compile and returns at once; its state follows the
 * compile's, and once the compile ended the object keeps what it needs
 * (interface, log, layout, pipeline) so later calls need no service lock.
 * Those pointers stay valid while the object holds its front node.
 */
#include <stdlib.h>
#include <string.h>

#include "compile.h"

static kiln_result create(struct csvc *svc, struct prog_source *src, enum cprio prio, struct prog **out);

kiln_result prog_create(struct csvc *svc, const kiln_program_desc *desc, enum cprio prio, struct prog **out)
{
    struct prog_source src;
    KILN_TRY(prog_source_init(&src, desc));
    return create(svc, &src, prio, out);
}

kiln_result prog_create_sealed(struct csvc *svc, const kiln_program_desc *desc, struct prog_include *files,
                               uint32_t n, enum cprio prio, struct prog **out)
{
    struct prog_source src;
    kiln_result r = prog_source_init(&src, desc);
    if (r < 0) {
        prog_includes_free(files, n);
        return r;
    }
    src.includes = files;
    src.include_count = n;
    src.includes_sealed = true;
    return create(svc, &src, prio, out);
}

/* Makes the object over src (consumed). */
static kiln_result create(struct csvc *svc, struct prog_source *srcp, enum cprio prio, struct prog **out)
{
    struct prog_source src = *srcp;
    struct prog *p = mem_calloc(1, sizeof *p);
    if (!p || !(p->name = str_dup(src.name))) {
        free(p);
        kiln_result r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for program %s's object", src.name);
        prog_source_finish(&src);
        return r;
    }
    p->svc = svc;
    p->state = KILN_PROGRAM_PENDING;
    kiln_result r = csvc_request(svc, &src, prio, &p->front);
    prog_source_finish(&src);
    if (r < 0) {
        free(p->name);
        free(p);
        return r;
    }
    prog_refresh(p);
    *out = p;
    return KILN_OK;
}

/* The log as this program's own: a compile shared with a program of
 * another name speaks of "other.comp:3:"; this one reads "mine.comp:3:". */
static const char *own_log(struct prog *p, const char *log, const char *compiled_as)
{
    if (!log || !compiled_as || !strcmp(compiled_as, p->name))
        return log;
    size_t from = strlen(compiled_as), to = strlen(p->name), n = 0;
    for (const char *q = log; (q = strstr(q, compiled_as)); q += from)
        n++;
    if (!n)
        return log;
    char *out = mem_alloc(strlen(log) + n * to + 1);
    if (!out)
        return log;   /* the other name is still a true account */
    char *w = out;
    for (const char *q = log, *hit; (hit = strstr(q, compiled_as)); q = hit + from) {
        memcpy(w, q, (size_t)(hit - q));
        w += hit - q;
        memcpy(w, p->name, to);
        w += to;
        log = hit + from;
    }
    strcpy(w, log);
    free(p->own_log);
    p->own_log = out;
    return out;
}

static void take(struct prog *p, const struct csvc_result *res)
{
    if (res->state == KILN_PROGRAM_PENDING)
        return;
    p->state = res->state;
    p->fail_code = res->state == KILN_PROGRAM_FAILED ? res->code : KILN_OK;
    if (res->front)
        p->iface = res->front->iface;
    p->log = res->state == KILN_PROGRAM_FAILED ? res->error : (res->front && res->front->log ? res->front->log : "");
    p->log = own_log(p, p->log, res->compiled_as);
    p->layout = res->layout;
    p->pipeline = res->pipeline;
    /* Said once, when the program is ready: a shader run with constants at
     * their defaults may compute something its author did not mean (a
     * workgroup of 1, a loop bound of 1). */
    for (uint32_t i = 0; p->state == KILN_PROGRAM_READY && i < p->iface.constant_count; i++) {
        const kiln_spec_constant_info *c = &p->iface.constants[i];
        if (c->set || !c->used)
            continue;
        char v[64];
        prog_spec_value_text(c->type, c->default_value, v, sizeof v);
        log_info("program %s: specialization constant '%s' (id %u) left at its default %s", p->name, c->name, c->id,
                 v);
    }
}

kiln_program_state prog_refresh(struct prog *p)
{
    if (p->state == KILN_PROGRAM_PENDING) {
        struct csvc_result res;
        csvc_status(p->svc, p->front, &res);
        take(p, &res);
    }
    return p->state;
}

kiln_program_state prog_wait(struct prog *p)
{
    if (p->state == KILN_PROGRAM_PENDING) {
        struct csvc_result res;
        csvc_wait(p->svc, p->front, true, &res);
        take(p, &res);
    }
    return p->state;
}

kiln_result prog_raise_failed(const struct prog *p, const char *where)
{
    char first[512];
    prog_log_first_error(p->log, first, sizeof first);
    if (p->fail_code == KILN_ERR_NO_MEMORY)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "%sprogram %s could not be compiled: %s", where, p->name, first);
    if (p->fail_code == KILN_ERR_LIMIT)   /* a device's limit, or one of its compile's (time, memory) */
        return KILN_RAISE(KILN_ERR_LIMIT, "%sprogram %s is past a limit: %s", where, p->name, first);
    if (p->fail_code == KILN_ERR_INVALID)
        return KILN_RAISE(KILN_ERR_INVALID, "%sprogram %s cannot be made as its desc says: %s", where, p->name, first);
    return KILN_RAISE(KILN_ERR_COMPILE, "%sprogram %s failed to compile: %s", where, p->name, first);
}

void prog_destroy(struct prog *p)
{
    csvc_release(p->svc, p->front);
    free(p->own_log);
    free(p->name);
    free(p);
}
