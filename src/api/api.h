/* SPDX-License-Identifier: MIT */
/*
 * api.h: what kiln's own tests may reach behind the public API (test
 * builds only: KILN_TEST_HOOKS).
 */
#ifndef KILN_API_H
#define KILN_API_H

#include "context/context.h"

#ifdef KILN_TEST_HOOKS   /* test builds only */
/* The context behind a handle, or NULL; no lock is taken. */
struct kctx *api_context_peek(kiln_context h);
#endif

#endif
