/* SPDX-License-Identifier: MIT */
/*
 * precompile.c: an application's start with kiln's pipeline archive. The
 * first run compiles its programs (and the archive keeps them); every
 * later run makes them from the archive at start, before its first frame,
 * with kiln_context_precompile, so no frame waits for a compile. Run it
 * twice with the same KILN_ARCHIVE_DIR to see the second start find them.
 */
#include <kiln.h>
#include <stdio.h>

#define PROGRAMS 8

int main(void)
{
    kiln_context ctx;
    kiln_result r = kiln_context_create(&(kiln_context_desc){0}, &ctx);
    if (r != KILN_OK)
        return fprintf(stderr, "%s\n", kiln_last_error()), 1;
    kiln_precompile_result pre = {0};
    r = kiln_context_precompile(ctx, NULL, &pre);   /* what earlier runs left in the archive */
    if (r != KILN_OK)
        return fprintf(stderr, "precompile: %s\n", kiln_last_error()), 1;
    printf("precompile: %u programs in the archive, %u ready in %.2f s\n", pre.programs, pre.ready, pre.seconds);
    kiln_program progs[PROGRAMS];
    for (int i = 0; i < PROGRAMS; i++) {
        char src[256], name[32];
        snprintf(src, sizeof src,
                 "#version 450\nlayout(local_size_x = 64) in;\n"
                 "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                 "void main() { d[gl_GlobalInvocationID.x] += %du; }\n", i + 1);
        snprintf(name, sizeof name, "step%d.comp", i);
        r = kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = name}, &progs[i]);
        if (r == KILN_OK)
            r = kiln_program_wait(ctx, progs[i]);
        if (r != KILN_OK)
            return fprintf(stderr, "%s: %s\n", name, kiln_last_error()), 1;
    }
    kiln_context_stats st;
    if (kiln_context_stats_get(ctx, &st) == KILN_OK)
        printf("programs: %llu served by the archive, %llu compiled\n", (unsigned long long)st.archive_hits,
               (unsigned long long)st.archive_added);
    kiln_context_destroy(ctx);
    return 0;
}
