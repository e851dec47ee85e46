/* SPDX-License-Identifier: MIT */
/*
 * spec_print.c: the CLI's view of specialization. After each submit the
 * tools drain the scheme's events and print one line per event (the node,
 * its program, the baked slots); their summaries count the events and
 * compare the median frame time before the first promotion with the one
 * after the last event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *kind_name(kiln_spec_event_kind k)
{
    switch (k) {
    case KILN_SPEC_WARM: return "warm";
    case KILN_SPEC_PROMOTE: return "promote";
    case KILN_SPEC_DEMOTE: return "demote";
    case KILN_SPEC_FAILED: return "variant failed";
    case KILN_SPEC_PINNED: return "pinned";
    }
    return "?";
}

bool cli_spec_drain(kiln_context ctx, kiln_scheme scheme, const char *tool, uint64_t frame, bool tty,
                    struct cli_spec *st)
{
    kiln_spec_event ev[32];
    uint32_t n = 0;
    bool any = false;
    while (kiln_scheme_spec_events(ctx, scheme, ev, 32, &n) == KILN_OK && n) {
        for (uint32_t i = 0; i < n; i++) {
            const kiln_spec_event *e = &ev[i];
            if (!st->explained) {   /* the first event says what the lines are, once */
                fprintf(stderr, "%s%s: specialization: kiln runs the shader again with the words it keeps using "
                        "baked in as constants (warm: compiling such a variant; promote: running it; demote: back "
                        "to the shader as given); -q hides these lines\n", tty ? "\r\033[K" : "", tool);
                st->explained = true;
            }
            char slots[1024] = "";
            size_t k = 0;
            for (int b = 0; b < KILN_MAX_PARAM_WORDS && k < sizeof slots; b++)
                if (e->mask & ((uint64_t)1 << b))
                    k += (size_t)snprintf(slots + k, sizeof slots - k, " slot%d=0x%x", b, e->words[b]);
            fprintf(stderr, "%s%s: submit %llu: %-8s node '%s' (%s):%s\n", tty ? "\r\033[K" : "", tool, (unsigned long long)e->submit,
                    kind_name(e->kind), e->node_label, e->program, e->mask ? slots : " universal");
            switch (e->kind) {
            case KILN_SPEC_WARM: st->warms++; break;
            case KILN_SPEC_PROMOTE:
                st->promotions++;
                if (!st->promoted) {
                    st->promoted = true;
                    st->first_promote = frame;
                }
                break;
            case KILN_SPEC_DEMOTE: st->demotions++; break;
            case KILN_SPEC_FAILED: st->failed++; break;
            case KILN_SPEC_PINNED: st->pinned++; break;
            }
            st->last_event = frame;
            any = true;
        }
    }
    return any;
}

double cli_median(const double *ms, uint64_t from, uint64_t to)
{
    if (to <= from)
        return -1;
    uint64_t n = to - from;
    double *v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    memcpy(v, ms + from, n * sizeof *v);
    qsort(v, n, sizeof *v, cli_cmp_double);
    double m = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
    return m;
}

void cli_spec_summary(FILE *f, const char *label, const struct cli_spec *st, const double *ms, uint64_t frames)
{
    fprintf(f, "  %-18s %llu warms, %llu promotions, %llu demotions", label, (unsigned long long)st->warms,
            (unsigned long long)st->promotions, (unsigned long long)st->demotions);
    if (st->failed || st->pinned)
        fprintf(f, ", %llu failed variants, %llu pinned", (unsigned long long)st->failed,
                (unsigned long long)st->pinned);
    fprintf(f, "\n");
    if (!ms || !st->promoted)
        return;
    double before = cli_median(ms, 0, st->first_promote);
    double after = cli_median(ms, st->last_event + 1, frames);
    if (before >= 0 && after >= 0)
        fprintf(f, "  %-18s median %.2f ms before the first promotion (%llu frames), %.2f ms after the last event "
                   "(%llu frames): %.2fx\n",
                "frame time", before, (unsigned long long)st->first_promote, after,
                (unsigned long long)(frames - st->last_event - 1), after > 0 ? before / after : 0.0);
}
