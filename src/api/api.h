/*
 * api.h: what kiln's own tests and tools may reach behind the public API.
 */
#ifndef KILN_API_H
#define KILN_API_H

#include "context/context.h"

/* The context behind a handle, or NULL; no lock is taken. */
struct kctx *api_context_peek(kiln_context h);

#endif
