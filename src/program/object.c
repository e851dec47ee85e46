/*
 * object.c: the program object: compile, then the backend layout and
 * pipeline. A failure anywhere after the desc was accepted leaves the
 * program FAILED with the reason in its log, so the caller reads one story.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"

static void fail_with(struct prog *p, const char *what)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s: error: %s: %s\n", p->src.name, what, kiln_last_error());
    free(p->out.log);
    p->out.log = str_dup(buf);
    p->state = KILN_PROGRAM_FAILED;
}

kiln_result prog_create(struct kb_device *dev, const kiln_program_desc *desc, struct prog **out)
{
    struct prog *p = calloc(1, sizeof *p);
    if (!p)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory");
    kiln_result r = prog_source_init(&p->src, desc);
    if (r < 0) {
        free(p);
        return r;
    }
    p->state = KILN_PROGRAM_PENDING;
    r = prog_compile(&p->src, &p->out);
    if (r == KILN_ERR_NO_MEMORY && !p->out.log) {
        prog_destroy(dev, p);
        return r;
    }
    const kiln_caps *caps = &dev->caps;
    const uint32_t *wg = p->out.iface.workgroup_size;
    if (r == KILN_OK) {
        static const char axis[] = "xyz";
        for (int i = 0; i < 3 && r == KILN_OK; i++)
            if (wg[i] > caps->max_workgroup_size[i])
                r = KILN_RAISE(KILN_ERR_LIMIT, "local_size_%c = %u, the device allows at most %u", axis[i], wg[i],
                               caps->max_workgroup_size[i]);
        if (r == KILN_OK && (uint64_t)wg[0] * wg[1] * wg[2] > caps->max_workgroup_invocations)
            r = KILN_RAISE(KILN_ERR_LIMIT, "a workgroup of %ux%ux%u = %llu invocations, the device allows at most %u",
                           wg[0], wg[1], wg[2], (unsigned long long)wg[0] * wg[1] * wg[2],
                           caps->max_workgroup_invocations);
        if (r < 0)
            fail_with(p, "the device cannot run it");
    }
    if (p->state == KILN_PROGRAM_FAILED) {
        /* said above */
    } else if (r < 0) {
        p->state = KILN_PROGRAM_FAILED;
        log_info("program %s failed to compile", p->src.name);
    } else if (kb_layout_create(dev, &p->out.iface, &p->layout) < 0) {
        fail_with(p, "the device refused its pipeline layout");
    } else if (kb_pipeline_create(dev, p->layout, p->out.spirv, p->out.words, &p->pipeline) < 0) {
        fail_with(p, "the device refused its pipeline");
    } else {
        p->state = KILN_PROGRAM_READY;
    }
    err_clear();
    *out = p;
    return KILN_OK;
}

void prog_destroy(struct kb_device *dev, struct prog *p)
{
    if (p->pipeline)
        kb_pipeline_destroy(dev, p->pipeline);
    if (p->layout)
        kb_layout_destroy(dev, p->layout);
    prog_output_finish(&p->out);
    prog_source_finish(&p->src);
    free(p);
}
