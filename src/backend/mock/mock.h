/* SPDX-License-Identifier: MIT */
/*
 * mock: a backend that runs nothing. It keeps buffers in host memory (so
 * uploads read back), counts every call, and completes work
 * deterministically: a submit's ticket is done at once, unless the test holds
 * completion (mockb_hold), in which case tickets stay in flight until
 * mockb_release or a wait on them. It can also simulate work that never
 * finishes (mockb_hang) and a driver that reports the device lost
 * (mockb_lose). Tests of kiln's own logic (recording,
 * scheduling, prediction) use it; it is no substitute for Vulkan.
 */
#ifndef KILN_MOCK_H
#define KILN_MOCK_H

#include "backend/backend.h"

struct mock_counts {
    uint64_t buffers_created, layouts_created, pipelines_created, bindsets_created;
    uint64_t pipelines_from_cache;   /* made from a pipeline cache without compiling (keeping mode) */
    uint64_t cmds_created, records, dispatches_recorded, barriers_recorded;
    uint64_t submits, waits;
    uint64_t cache_merges;
    uint64_t live_objects;   /* everything created and not destroyed */
};

#ifdef KILN_TEST_HOOKS   /* controls for tests (test builds only) */
/* Mock devices made from now on (in this process) have pipeline caches
 * that keep compiled code, like NVIDIA's driver (keeps), or only a 32-byte
 * header, like lavapipe (the default); caps.pipeline_cache_keeps_code says
 * which. Keeping devices serve another device pair (their pipeline cache
 * UUID differs), so their archives live apart. For tests of what differs
 * between such drivers. */
void mockb_keep_compiled_code(bool keeps);
struct mock_counts mockb_counts(struct kb_device *dev);
/* While held, tickets stay in flight until released (or waited on). */
void mockb_hold(struct kb_device *dev, bool hold);
/* Gives the mock timestamps: a timed dispatch of `pipe` "takes" cost(ud,
 * pipe) ns. NULL: no timestamps (the default). */
void mockb_set_cost(struct kb_device *dev, uint64_t (*cost)(void *ud, const struct kb_pipeline *pipe), void *ud);
/* While hanging, submits made from now on never finish: a wait on them
 * "runs" nothing, sleeps its whole bound (at most 5 s) and times out.
 * Turned off, the hung work finishes at once. */
void mockb_hang(struct kb_device *dev, bool hang);
/* From now on submits and waits report the device lost, as a driver
 * reports VK_ERROR_DEVICE_LOST; work in flight never finishes. */
void mockb_lose(struct kb_device *dev);
/* Completes every ticket submitted so far. */
void mockb_release(struct kb_device *dev);
/* While gated, submits made from now on stay in flight and a wait on one
 * blocks (up to its bound) until the gate opens, which finishes them: a
 * wait that lasts exactly as long as the test says, for tests of what
 * other threads may do meanwhile. */
void mockb_gate(struct kb_device *dev, bool closed);
/* Threads blocked at the gate now. */
uint32_t mockb_gated(struct kb_device *dev);
/* The specialization constants a pipeline was made with: copies up to cap
 * into out; returns how many there are. */
uint32_t mockb_pipeline_spec(const struct kb_pipeline *pipe, struct kb_spec *out, uint32_t cap);
/* The params of dispatch i of the last recording of the last submitted
 * command buffer, for checks of what would have run. */
bool mockb_last_dispatch(struct kb_device *dev, uint32_t i, struct kb_step *out);
#endif

#endif
