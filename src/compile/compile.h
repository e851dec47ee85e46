/* SPDX-License-Identifier: MIT */
/*
 * compile: the compile service. Every distinct program is compiled once, off
 * the caller's thread, on a pool of workers.
 *
 * Jobs are nodes: a front-end node turns a program's provenance into SPIR-V
 * and its interface; when it ends, its continuation posts (or adopts) the
 * back-end node that turns SPIR-V plus layout into a pipeline for this
 * device. No worker ever waits on another job.
 *
 * Specialization constants: one front end serves every set. A program
 * with constants is a set node over the front node of its source without
 * them (keyed by that request and the pairs); the set node compiles
 * nothing and sits on no queue: when its front end ends, a continuation
 * gives it the SPIR-V and the interface with the values applied
 * (prog_spec_apply), and its back end (keyed with the values: a pipeline
 * per set, in the archive too) is made with them. A front node held only
 * by set nodes posts no back end of its own.
 *
 * Dedupe: every node has a canonical request (key.c) and its XXH3-128 hash.
 * A request equal to a node done or in flight adopts that node; the hash
 * only finds candidates, a full byte compare decides. A node is released by
 * adopter count: when the last adopter lets go of a node not yet started, it
 * is cancelled (never runs); one already running finishes and its result is
 * kept in a small cache of released results, adoptable again. A node whose
 * cancel was requested is never adopted while in flight. A failure is not
 * kept: a failed node goes when its last adopter lets go, and a front node
 * nobody holds lets go of a back end that failed, so a program asked for
 * again compiles again.
 *
 * The board: a job some submit waits for is wanted and goes first; normal
 * work next; background work (precompile, speculative variants) last
 * (compile/board.h is the policy, testable alone).
 * Giants (back-end jobs over giant_words SPIR-V words) are bounded to
 * max(1, min(giant_compiles, workers - 1)) in flight; a giant claimed at the
 * bound is deferred, not dropped, and deferred giants go first when a giant
 * ends; no giant starts while a wanted job is queued. A back-end failure
 * that happened while other giants were in flight is tried again alone (no
 * other giant in flight or starting) with a fresh pipeline cache, up to
 * alone_tries times.
 *
 * Locking: one mutex (the service's lock) guards every node, queue and
 * count. Compiles run without it. Callers may hold their context's lock
 * when they call in (lock order: context lock, then the service's lock);
 * workers never take a context lock.
 *
 * This header is what other modules call: the service and its nodes are
 * opaque (src/compile/compile_private.h holds them, for compile/'s files
 * only). What a caller reads of a node goes through an accessor below, and
 * each accessor says how it is safe: it takes the service's lock, or the
 * field it reads is written only before the node is published, or every
 * writer holds a lock the caller must hold too (the context's).
 *
 * Files: compile.c (nodes, queues, workers), precompile.c (csvc_precompile),
 * key.c (canonical requests), program_obj.c (the program object).
 */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H

#include "archive/archive.h"
#include "backend/backend.h"
#include "base/base.h"
#include "program/program.h"

struct csvc;   /* the service (opaque) */
struct cjob;   /* a node: a front-end or back-end compile job (opaque) */

enum cjob_kind { CJOB_FRONT = 0, CJOB_BACK = 1 };
enum cjob_state { CJOB_QUEUED = 0, CJOB_RUNNING, CJOB_DONE, CJOB_FAILED, CJOB_CANCELLED };
enum cprio { CPRIO_BACKGROUND = 0, CPRIO_NORMAL = 1, CPRIO_WANTED = 2 };

struct csvc_config {
    uint32_t workers;          /* KILN_COMPILE_THREADS; default: the number of cores */
    uint64_t giant_words;      /* KILN_GIANT_WORDS (100000) */
    uint32_t giant_compiles;   /* KILN_GIANT_COMPILES (4) */
    uint32_t alone_tries;      /* KILN_ALONE_TRIES (2) */
    double slow_s;             /* KILN_SLOW_COMPILE_S (10) */
    int worker_caches;         /* KILN_WORKER_CACHES: 1 on, 0 off; default per device */
    size_t stack_bytes;        /* 16 MiB: glslang recurses deeply */
    /* One front end's bounds, in the helper process that compiles it
     * (front.c): KILN_COMPILE_TIMEOUT_S (60 s), KILN_COMPILE_MAX_BYTES
     * (2 GiB resident); KILN_COMPILE_HELPER=0 compiles in this process,
     * unbounded. */
    double compile_timeout_s;
    uint64_t compile_max_bytes;
    bool compile_in_process;
};

/* The defaults, then the environment's overrides. */
void csvc_config_default(struct csvc_config *c, const struct kb_device *dev);

/* Test hooks, run on the worker at the start of a job, before the real
 * compile. A hook may block (a test holds it until released) and may fail
 * the job by returning an error (its last-error text is the reason). */
struct csvc_hooks {
    kiln_result (*front)(void *ud, const struct prog_source *src);
    kiln_result (*back)(void *ud, const char *name, size_t words, bool alone, uint32_t giants_in_flight);
    void *ud;
};

struct csvc_stats {
    uint64_t requests;          /* programs asked for */
    uint64_t started;           /* jobs a worker ran (front and back) */
    uint64_t adopted;           /* requests that adopted a node in flight */
    uint64_t deduplicated;      /* requests that adopted a finished node */
    uint64_t hash_collisions;   /* equal hashes whose requests differed */
    uint64_t cancelled;         /* released before they ran */
    uint64_t giants_deferred;
    uint64_t retries_alone;
    uint64_t slow;
    uint64_t failed;
    uint64_t wanted;            /* jobs moved up because a submit waited */
    uint64_t cache_hits;        /* pipelines made from the shared cache without compiling */
    uint64_t cache_merges;
    double front_s, back_s;     /* seconds spent compiling */
    uint64_t archive_hits;      /* front ends served by the archive, not compiled */
    uint64_t archive_back_hits; /* pipelines made from archived cache data without compiling */
    uint64_t archive_back_added;
    uint64_t qa_compiles;       /* KILN_ARCHIVE_QA: compiles of what the archive lacked */
    uint64_t archive_added;     /* front ends compiled and added to the run archive */
    uint64_t archive_misses[ARC_CAUSE_COUNT];   /* lookups that found nothing usable, by cause */
};

struct csvc_slow {              /* a compile that ran past slow_s */
    char name[64];
    uint8_t hash[16];
    size_t words;
    enum cjob_kind kind;
    double seconds;
};

KILN_NODISCARD kiln_result csvc_create(struct kb_device *dev, const struct csvc_config *cfg,
                                       const struct csvc_hooks *hooks, struct csvc **out);
/* Front ends are looked up in (and, compiled, added to) this archive. Set
 * before the first request; the store outlives the service. */
void csvc_set_archive(struct csvc *svc, struct arc_store *archive);
/* Cancels what has not started, lets running compiles end, joins the
 * workers, frees every node. */
void csvc_destroy(struct csvc *svc);

/* Asks for a program: adopts an equal front node or posts a new one. The
 * source is copied. Returns the adopted front node (release it with
 * csvc_release): for a source with specialization constants, its set node
 * (see above), whose failure for constants the shader does not declare or
 * values their types cannot hold is KILN_ERR_INVALID. */
KILN_NODISCARD kiln_result csvc_request(struct csvc *svc, const struct prog_source *src, enum cprio prio,
                                        struct cjob **out);
/* A front node for a variant of `universal` (a front node the caller holds,
 * done, of a program with its own push_constant block) with the given
 * words of that block baked (prog_bake_variant: no GLSL compile). Keyed by
 * the universal's key hash and the words, deduplicated and archived like
 * any front node; the new node holds `universal` until it is freed. *out
 * is held, as csvc_request's. */
KILN_NODISCARD kiln_result csvc_request_baked(struct csvc *svc, struct cjob *universal,
                                              const struct prog_push_word *words, uint32_t count, enum cprio prio,
                                              struct cjob **out);
void csvc_release(struct csvc *svc, struct cjob *front);
/* Takes another hold of a front node the caller holds (release it with
 * csvc_release): a waiter's own, so the node outlives its first holder. */
void csvc_adopt(struct csvc *svc, struct cjob *front);
/* Releases the caller's hold and cancels the compile when it has not
 * started and nobody else holds it; false (nothing done) otherwise. */
bool csvc_cancel_unstarted(struct csvc *svc, struct cjob *front);

/* A program's compile as the caller sees it. Pointers stay valid while the
 * caller holds the front node. */
struct csvc_result {
    kiln_program_state state;
    const struct prog_output *front;   /* spirv, interface, log: once the front end is done */
    struct kb_layout *layout;
    struct kb_pipeline *pipeline;
    const char *error;                 /* why it failed (front log or back-end reason) */
    kiln_result code;                  /* failed: KILN_ERR_NO_MEMORY (host memory ran out), KILN_ERR_LIMIT (past
                                        * a device limit), KILN_ERR_INVALID (specialization constants the
                                        * shader cannot take), else KILN_ERR_COMPILE */
    const char *compiled_as;           /* the name the compile ran under (first requester's) */
};
kiln_program_state csvc_status(struct csvc *svc, struct cjob *front, struct csvc_result *out);
/* Marks the program wanted (it and its back end go first). */
void csvc_want(struct csvc *svc, struct cjob *front);
/* Waits until the program is ready or failed; want marks it wanted first. */
kiln_program_state csvc_wait(struct csvc *svc, struct cjob *front, bool want, struct csvc_result *out);

/* Adds a continuation to a node: fired once when it ends (done, failed or
 * cancelled), with the service lock held; it must not block. If the node
 * has ended already it fires now. */
KILN_NODISCARD kiln_result csvc_then(struct csvc *svc, struct cjob *job,
                                     void (*fn)(struct csvc *, struct cjob *, void *), void *ud);

/* ---- what a caller reads of a node ------------------------------------------- */

/* The front node's key hash (16 bytes: the XXH3-128 of its canonical
 * request; a program's identity). No lock: the hash is written when the node
 * is made, before it is published to any other thread, and never again.
 * Valid while the caller holds the node. */
const uint8_t *csvc_front_hash(const struct cjob *front);
/* The front node's source (provenance); source->source is NULL for a
 * program made from an archive entry alone (precompile) until a request
 * with the source adopts it. The caller holds the lock of the context
 * whose service this is, and may use the pointer only while it holds that
 * lock and the node. Why that suffices: a node made by csvc_request has its
 * source from the start and it never changes; a precompile's node (no
 * source) takes the source of the first equal request, written in
 * csvc_request under the service's lock, and every csvc_request on a
 * context's service is made with that context's lock held (api/ holds it
 * around every call, and specialize/'s variant requests run inside a
 * submit), so no writer runs while the caller holds it. */
const struct prog_source *csvc_front_source(const struct cjob *front);

struct csvc_stats csvc_stats_get(struct csvc *svc);
/* Jobs queued or running. */
uint32_t csvc_pending(struct csvc *svc);
/* Precompile: makes every program whose front end the archive holds, in
 * this order: the ones noted as used on this device first, then fewer
 * SPIR-V words first, the ones an earlier run found slow last. Each is a
 * front node made from its archive key (a request for the same program
 * adopts it) held until the service is destroyed. Returns when all ended,
 * or once nothing has finished for stall_s, leaving the rest to background
 * work (said in one line). */
struct csvc_precompile {
    uint32_t programs, noted, slow;
    uint32_t ready, failed, background;
    double seconds;
};
KILN_NODISCARD kiln_result csvc_precompile(struct csvc *svc, double stall_s, struct csvc_precompile *out);
/* Giant back ends compiling now (the archive's saver holds back meanwhile). */
uint32_t csvc_giants_in_flight(struct csvc *svc);
/* Copies up to cap slow entries; returns how many there are. */
uint32_t csvc_slow_list(struct csvc *svc, struct csvc_slow *out, uint32_t cap);
/* The close line's text. */
void csvc_summary(struct csvc *svc, char *buf, size_t cap);

/* ---- for tests (test builds only: KILN_TEST_HOOKS) ---------------------------- */
#ifdef KILN_TEST_HOOKS

/* While held, workers start no job (queued ones stay queued). */
void csvc_hold(struct csvc *svc, bool hold);
/* A node's state, read under the service's lock. */
enum cjob_state csvc_job_state(struct csvc *svc, struct cjob *job);
/* The same, in a continuation (which runs with the service's lock held). */
enum cjob_state csvc_job_state_locked(const struct cjob *job);
/* The name a node compiles under (the first requester's). No lock: written
 * before the node is published, never again. */
const char *csvc_job_name(const struct cjob *job);
/* The back-end node a front node posted or adopted, or NULL (lock taken).
 * Held by the front node: valid while the caller holds that. */
struct cjob *csvc_back_of(struct csvc *svc, struct cjob *front);
/* How many giants may compile at once (set when the workers start). */
uint32_t csvc_giant_bound(struct csvc *svc);
/* Runs fn with the service's lock held: a worker that ends a job meanwhile
 * waits to record how it ended. fn must not call into the service, except
 * the *_locked calls. */
void csvc_with_lock(struct csvc *svc, void (*fn)(struct csvc *svc, void *ud), void *ud);
/* With the lock held: the state of the node of this kind and name a worker
 * is running, or -1 when none is. */
int csvc_running_state_locked(struct csvc *svc, enum cjob_kind kind, const char *name);
/* What the service keeps for re-use once nothing holds a program: pipeline
 * caches (shared and per worker), the layouts and pipelines of the nodes in
 * its table, and the released results kept for re-adoption. */
struct csvc_kept {
    uint32_t caches, layouts, pipelines, released;
};
void csvc_kept(struct csvc *svc, struct csvc_kept *out);
/* Swaps the text of a front node's source (lock taken) and returns the old
 * one: NULL plays a program with no source to compile a variant from, as
 * precompile's nodes are. The caller puts the old text back before the node
 * is released; nothing else may request the program meanwhile. */
char *csvc_front_swap_source_text(struct csvc *svc, struct cjob *front, char *text);
#endif

/* ---- the program object ------------------------------------------------------ */

/*
 * A program as the runtime holds it: its name, the front node it holds in
 * the compile service, and, once the compile ended, what it produced. The
 * pipeline layout comes from the interface (the signature), so any variant
 * of the program can run under a node recorded for it.
 */
struct prog {
    uint64_t id;                 /* its handle, for messages */
    char *name;
    struct csvc *svc;
    struct cjob *front;          /* held */
    uint32_t node_refs;          /* nodes running it */
    /* Filled by prog_refresh once the compile ended: */
    kiln_program_state state;
    kiln_program_interface iface;
    const char *log;             /* front log, or the back end's reason, under this program's name */
    char *own_log;               /* owned copy when the log had to be renamed */
    kiln_result fail_code;       /* failed: KILN_ERR_NO_MEMORY (host memory ran out), KILN_ERR_LIMIT (past a
                                  * device limit), KILN_ERR_INVALID (constants) or KILN_ERR_COMPILE */
    struct kb_layout *layout;
    struct kb_pipeline *pipeline;
};

/* Starts a program's compile; returns at once. */
KILN_NODISCARD kiln_result prog_create(struct csvc *svc, const kiln_program_desc *desc, enum cprio prio,
                                       struct prog **out);
/* The same for a program whose included files came with it (a server's
 * client's): files (n of them, consumed whatever the result) are all its
 * #include lines can reach; nothing is read from disk, and its name is a
 * label. */
KILN_NODISCARD kiln_result prog_create_sealed(struct csvc *svc, const kiln_program_desc *desc,
                                              struct prog_include *files, uint32_t n, enum cprio prio,
                                              struct prog **out);
void prog_destroy(struct prog *p);
/* Brings the program's state up to date with its compile. */
kiln_program_state prog_refresh(struct prog *p);
/* Waits for the compile to end (marking it wanted). */
kiln_program_state prog_wait(struct prog *p);
/* Raises a failed program's error with the code its failure carries
 * (KILN_ERR_COMPILE, KILN_ERR_LIMIT, KILN_ERR_INVALID or KILN_ERR_NO_MEMORY), as "<where>
 * program <name> <what happened>: <its log's first error>". where may be
 * "" or end in ": ". */
KILN_NODISCARD kiln_result prog_raise_failed(const struct prog *p, const char *where);

#endif
