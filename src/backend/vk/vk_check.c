/* SPDX-License-Identifier: MIT */
/*
 * vk_check.c: the Vulkan backend's check mode (kiln_context_desc.check):
 * the validation layer's GPU-assisted checks report an access past a
 * buffer binding's range, and this file says which node and binding made
 * it.
 *
 * The layer (Debian's, 1.3.239) checks an access against the end of the
 * bound buffer (from the binding's offset), not the end of the binding's
 * range: an access past a slice into the rest of its buffer goes unseen.
 * It names a command buffer, the size it checked against and the highest
 * byte reached, never the node or the binding (its "dispatch index" reads
 * 0 for every dispatch of a command buffer, and it reports one access a
 * command buffer). So a recording made in check mode is one command
 * buffer per dispatch (vk_cmd.c), and keeps, per dispatch, the node's
 * label and what it binds (set, binding, element, range size, bytes to
 * the buffer's end); the recordings are listed on the device, and the
 * layer's callback looks the report up there: the node by the command
 * buffer, the binding by the size (every binding of that size is named
 * where several have it). The lines
 * go to the log as errors, and the findings are counted
 * (kb_device.check_findings). A report this file cannot read (another
 * layer's wording) is left to the callback's usual line.
 *
 * Lock: check_lock guards the list and every recording's notes. The
 * callback takes it on whatever thread the layer calls from (a submit, a
 * wait); record and destroy take it under the context lock, and nothing
 * is called with it held.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_private.h"

void vk_check_note(struct vk_device *d, struct kb_cmd *c, const struct kb_step *steps, uint32_t n)
{
    uint32_t dispatches = 0;
    for (uint32_t i = 0; i < n; i++)
        dispatches += steps[i].kind == KB_STEP_DISPATCH;
    pthread_mutex_lock(&d->check_lock);
    if (!c->check_listed) {
        c->check_next = d->checked;
        d->checked = c;
        c->check_listed = true;
    }
    if (dispatches > c->note_cap) {
        struct vk_check_dispatch *grown = realloc(c->notes, dispatches * sizeof *grown);
        if (grown) {
            c->notes = grown;
            c->note_cap = dispatches;
        }
    }
    c->note_count = 0;
    for (uint32_t i = 0; i < n && c->note_count < c->note_cap; i++) {
        if (steps[i].kind != KB_STEP_DISPATCH)
            continue;
        struct vk_check_dispatch *nd = &c->notes[c->note_count];
        nd->cb = c->parts && c->note_count < c->part_count ? c->parts[c->note_count] : c->cb;
        c->note_count++;
        snprintf(nd->label, sizeof nd->label, "%s", steps[i].label ? steps[i].label : "?");
        nd->count = steps[i].bindset->info_count;
        memcpy(nd->b, steps[i].bindset->info, nd->count * sizeof nd->b[0]);
    }
    pthread_mutex_unlock(&d->check_lock);
}

void vk_check_forget(struct vk_device *d, struct kb_cmd *c)
{
    pthread_mutex_lock(&d->check_lock);
    for (struct kb_cmd **p = &d->checked; *p; p = &(*p)->check_next)
        if (*p == c) {
            *p = c->check_next;
            break;
        }
    c->check_listed = false;
    free(c->notes);
    c->notes = NULL;
    c->note_count = c->note_cap = 0;
    pthread_mutex_unlock(&d->check_lock);
}

/* The unsigned number after `key` in s; false if s has no key. */
static bool number_after(const char *s, const char *key, int base, uint64_t *out)
{
    const char *p = strstr(s, key);
    if (!p)
        return false;
    char *end;
    *out = strtoull(p + strlen(key), &end, base);
    return end != p + strlen(key);
}

bool vk_check_report(struct vk_device *d, const char *msg)
{
    uint64_t size, highest, cb;
    if (!strstr(msg, "access out of bounds") || !number_after(msg, "Descriptor size is ", 10, &size) ||
        !number_after(msg, "highest byte accessed was ", 10, &highest) || !number_after(msg, "Command buffer (0x", 16, &cb))
        return false;
    uint64_t inv[3] = {0, 0, 0};
    const char *g = strstr(msg, "Global invocation ID (x, y, z) = (");
    bool have_inv = g && sscanf(g + strlen("Global invocation ID (x, y, z) = ("), "%" SCNu64 ", %" SCNu64 ", %" SCNu64,
                                &inv[0], &inv[1], &inv[2]) == 3;
    char node[96] = "a node", bindings[256] = "";
    size_t len = 0;
    uint32_t matched = 0;
    pthread_mutex_lock(&d->check_lock);
    uint64_t index = 0;
    const struct vk_check_dispatch *nd = NULL;
    for (struct kb_cmd *c = d->checked; c && !nd; c = c->check_next)
        for (uint32_t k = 0; k < c->note_count && !nd; k++)
            if ((uint64_t)(uintptr_t)c->notes[k].cb == cb) {
                nd = &c->notes[k];
                index = k;
            }
    if (nd) {
        snprintf(node, sizeof node, "node '%s'", nd->label);
        /* By the buffer's end from the binding's offset (what the layer
         * checks), else by the range (what a newer layer may check). */
        bool by_reach = false;
        for (uint32_t k = 0; k < nd->count; k++)
            by_reach |= nd->b[k].reach == size;
        for (uint32_t k = 0; k < nd->count && len < sizeof bindings; k++) {
            const struct vk_check_binding *b = &nd->b[k];
            if ((by_reach ? b->reach : b->size) != size)
                continue;
            len += (size_t)snprintf(bindings + len, sizeof bindings - len, "%sbinding %" PRIu32 " of set %" PRIu32,
                                    matched++ ? " or " : "", b->binding, b->set);
            if (b->element && len < sizeof bindings)
                len += (size_t)snprintf(bindings + len, sizeof bindings - len, " (element %" PRIu32 ")", b->element);
        }
    }
    pthread_mutex_unlock(&d->check_lock);
    char who[64] = "";
    if (have_inv)
        snprintf(who, sizeof who, ", by invocation (%" PRIu64 ", %" PRIu64 ", %" PRIu64 ")", inv[0], inv[1], inv[2]);
    log_error("check: %s (dispatch %" PRIu64 " of its submit) accessed byte %" PRIu64 " of %s, past the %" PRIu64
              " bytes it reaches (0..%" PRIu64 ")%s", node, index, highest, matched ? bindings : "a buffer binding",
              size, size ? size - 1 : 0, who);
    log_info("validation: %s", msg);
    atomic_fetch_add(&d->base.check_findings, 1);
    atomic_fetch_add(&d->base.validation_errors, 1);
    return true;
}
