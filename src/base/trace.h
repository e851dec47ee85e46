/* SPDX-License-Identifier: MIT */
/*
 * trace: a context's Chrome trace-event file (kiln_context_desc.trace_path,
 * KILN_TRACE), which Perfetto and chrome://tracing open. Events gather in
 * memory while the context lives (one lock; a trace is for looking at a
 * run, not for a hot path left on) and are written at trace_close, through
 * a temporary file renamed over the target, so a failed write leaves what
 * was there. Times are microseconds since the trace opened.
 *
 * Tracks (the format's tid, one process): TRACE_SUBMITS (each submit, as
 * kiln made it), TRACE_DEVICE (each submit from its making to when kiln saw
 * the device finish it), TRACE_SPEC (specialization events),
 * TRACE_ARCHIVE (archive loads and saves), and TRACE_WORKER + i for
 * compile worker i. Every call takes a NULL trace and does nothing: the
 * modules call it unconditionally.
 */
#ifndef KILN_TRACE_H
#define KILN_TRACE_H

#include <stdint.h>

#include "base.h"

enum {
    TRACE_SUBMITS = 1,
    TRACE_DEVICE = 2,
    TRACE_SPEC = 3,
    TRACE_ARCHIVE = 4,
    TRACE_WORKER = 16,
};

struct trace;

/* A trace written to path at close; *out NULL when path is NULL or "". */
KILN_NODISCARD kiln_result trace_open(const char *path, struct trace **out);
/* Names a track (shown beside its events). */
void trace_track(struct trace *t, uint32_t track, const char *name);
/* An event from start_ns to end_ns (time_now_ns's clock) on a track;
 * detail, when not NULL, is shown with it. */
void trace_span(struct trace *t, uint32_t track, const char *cat, const char *name, uint64_t start_ns,
                uint64_t end_ns, const char *detail);
/* An event at one moment. */
void trace_mark(struct trace *t, uint32_t track, const char *cat, const char *name, uint64_t at_ns,
                const char *detail);
/* Writes the file and frees the trace; logs (warn) when it cannot. */
void trace_close(struct trace *t);

#endif
