/* SPDX-License-Identifier: MIT */
/*
 * scale.c: the README's example, whole: one program, one buffer, one node.
 * Multiplies 256 floats by a factor on the GPU (lavapipe where there is
 * none) and checks them on the CPU.
 */
#include <kiln.h>
#include <stdio.h>
#include <string.h>

static const char *k_scale =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer Data { float x[]; };\n"
    "void main() { x[gl_GlobalInvocationID.x] *= kiln_paramf(0); }\n";

int scale(float *values, uint32_t n /* a multiple of 64 */, float factor)
{
    kiln_context ctx;
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme scheme;
    kiln_node node;
    kiln_ticket ticket;
    uint32_t bits;
    memcpy(&bits, &factor, 4);

    if (kiln_context_create(&(kiln_context_desc){0}, &ctx) != KILN_OK)
        return fprintf(stderr, "%s\n", kiln_last_error()), 1;
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = k_scale, .name = "scale.comp"}, &prog);
    if (r == KILN_OK) r = kiln_program_wait(ctx, prog);          /* KILN_ERR_COMPILE names file:line */
    if (r == KILN_OK) r = kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = n * 4}, &buf);
    if (r == KILN_OK) r = kiln_buffer_upload(ctx, buf, 0, values, n * 4);
    if (r == KILN_OK) r = kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "scale"}, &scheme);
    if (r == KILN_OK)
        r = kiln_scheme_add_node(ctx, scheme, &(kiln_node_desc){
                .program = prog,
                .bindings = &(kiln_binding){.binding = 0, .buffer = buf},
                .binding_count = 1,
                .groups = {n / 64},
                .params = &bits,
                .param_count = 1,
            }, &node);
    if (r == KILN_OK) r = kiln_scheme_submit(ctx, scheme, &ticket);  /* records once, replays after */
    if (r == KILN_OK) r = kiln_ticket_wait(ctx, ticket, UINT64_MAX);
    if (r == KILN_OK) r = kiln_buffer_readback(ctx, buf, 0, values, n * 4);
    if (r != KILN_OK)
        fprintf(stderr, "%s: %s\n", kiln_result_name(r), kiln_last_error());
    kiln_context_destroy(ctx);                                     /* frees every object */
    return r != KILN_OK;
}

int main(void)
{
    float v[256];
    for (int i = 0; i < 256; i++)
        v[i] = (float)i - 100.0f;
    if (scale(v, 256, 1.5f))
        return 1;
    for (int i = 0; i < 256; i++)
        if (v[i] != ((float)i - 100.0f) * 1.5f) {
            fprintf(stderr, "scale: value %d is %g, not %g\n", i, v[i], ((float)i - 100.0f) * 1.5f);
            return 1;
        }
    printf("scale: 256 values scaled by 1.5 on %s\n", "the device");
    return 0;
}
