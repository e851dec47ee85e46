/* SPDX-License-Identifier: MIT */
/*
 * scheme_params.c: a scheme of three nodes over two buffers, submitted
 * frame after frame while one node's param word changes. kiln records the
 * scheme once and places the barriers (node 1 reads what node 0 wrote);
 * a param change re-records the words alone; words that stay put get
 * baked into a variant of the program in the background (see the events
 * printed at the end). Checks every frame against the CPU.
 */
#include <kiln.h>
#include <stdio.h>
#include <string.h>

#define N 1024

static const char *k_fill = "#version 450\n"
                            "layout(local_size_x = 64) in;\n"
                            "layout(std430, binding = 0) writeonly buffer A { uint a[]; };\n"
                            "void main() { uint i = gl_GlobalInvocationID.x; a[i] = i * kiln_param(0); }\n";
static const char *k_add = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                           "layout(std430, binding = 1) buffer B { uint b[]; };\n"
                           "void main() { uint i = gl_GlobalInvocationID.x; b[i] += a[i] + kiln_param(0); }\n";

#define TRY(call)                                                                                  \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK) {                                                                       \
            fprintf(stderr, "%s: %s: %s\n", #call, kiln_result_name(r_), kiln_last_error());      \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    kiln_context ctx;
    TRY(kiln_context_create(&(kiln_context_desc){0}, &ctx));
    kiln_program fill, add;
    TRY(kiln_program_create(ctx, &(kiln_program_desc){.source = k_fill, .name = "fill.comp"}, &fill));
    TRY(kiln_program_create(ctx, &(kiln_program_desc){.source = k_add, .name = "add.comp"}, &add));
    kiln_buffer a, b;
    TRY(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "a"}, &a));
    TRY(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "b"}, &b));
    kiln_scheme s;
    TRY(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "frames"}, &s));
    kiln_binding ab[2] = {{.binding = 0, .buffer = a}, {.binding = 1, .buffer = b}};
    kiln_node n_fill, n_add1, n_add2;
    TRY(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = fill, .bindings = ab, .binding_count = 1,
                                                       .groups = {N / 64}, .params = (uint32_t[]){3},
                                                       .param_count = 1, .label = "fill"}, &n_fill));
    TRY(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = add, .bindings = ab, .binding_count = 2,
                                                       .groups = {N / 64}, .params = (uint32_t[]){1},
                                                       .param_count = 1, .label = "add1"}, &n_add1));
    TRY(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = add, .bindings = ab, .binding_count = 2,
                                                       .groups = {N / 64}, .params = (uint32_t[]){0},
                                                       .param_count = 1, .label = "add2"}, &n_add2));
    static uint32_t want[N], got[N];
    for (uint32_t frame = 0; frame < 60; frame++) {
        uint32_t step = frame % 10;   /* node add2's word changes every frame; the others stay put */
        TRY(kiln_node_set_param(ctx, n_add2, 0, step));
        kiln_ticket t;
        TRY(kiln_scheme_submit(ctx, s, &t));
        TRY(kiln_ticket_wait(ctx, t, UINT64_MAX));
        for (uint32_t i = 0; i < N; i++)
            want[i] += 2 * (i * 3) + 1 + step;
        TRY(kiln_buffer_readback(ctx, b, 0, got, sizeof got));
        if (memcmp(got, want, sizeof got)) {
            fprintf(stderr, "scheme_params: frame %u differs from the CPU's\n", frame);
            return 1;
        }
    }
    kiln_scheme_stats st;
    TRY(kiln_scheme_stats_get(ctx, s, &st));
    printf("scheme_params: 60 frames right; %llu full records, %llu params-only, %llu replays, %llu barriers, "
           "%llu promotions to baked variants\n",
           (unsigned long long)st.records_full, (unsigned long long)st.records_params,
           (unsigned long long)st.replays, (unsigned long long)st.barriers, (unsigned long long)st.spec_promotions);
    kiln_context_destroy(ctx);
    return 0;
}
