/*
 * compile: the compile service. Every distinct program is compiled once, off
 * the caller's thread, on a pool of workers.
 *
 * Jobs are nodes: a front-end node turns a program's provenance into SPIR-V
 * and its interface; when it ends, its continuation posts (or adopts) the
 * back-end node that turns SPIR-V plus layout into a pipeline for this
 * device. No worker ever waits on another job.
 *
 * Dedupe: every node has a canonical request (key.c) and its XXH3-128 hash.
 * A request equal to a node done or in flight adopts that node; the hash
 * only finds candidates, a full byte compare decides. A node is released by
 * adopter count: when the last adopter lets go of a node not yet started, it
 * is cancelled (never runs); one already running finishes and its result is
 * kept in a small cache of released results, adoptable again. A node whose
 * cancel was requested is never adopted while in flight.
 *
 * The board: a job some submit waits for is wanted and goes first; normal
 * work next; background work (later: precompile, speculative variants) last.
 * Giants (back-end jobs over giant_words SPIR-V words) are bounded to
 * max(1, min(giant_compiles, workers - 1)) in flight; a giant claimed at the
 * bound is deferred, not dropped, and deferred giants go first when a giant
 * ends; no giant starts while a wanted job is queued. A back-end failure
 * that happened while other giants were in flight is tried again alone (no
 * other giant in flight or starting) with a fresh pipeline cache, up to
 * alone_tries times.
 *
 * Locking: one mutex (struct csvc.lock) guards every node, queue and count.
 * Compiles run without it. Callers may hold their context's lock when they
 * call in (lock order: context lock, then csvc.lock); workers never take a
 * context lock.
 */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H

#include <pthread.h>

#include "archive/archive.h"
#include "backend/backend.h"
#include "base/base.h"
#include "program/program.h"

struct csvc;
struct cjob;

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

struct cont {
    void (*fn)(struct csvc *svc, struct cjob *job, void *ud);
    void *ud;
};

struct cjob {
    enum cjob_kind kind;
    enum cjob_state state;
    enum cprio prio;
    char name[64];               /* the program's name, for messages */
    uint8_t hash[16];            /* hash128 of key (also its archive lookup hash) */
    uint8_t *key;                /* the canonical request, owned */
    size_t key_len;
    uint32_t adopters;
    bool cancel_requested;       /* request: the last adopter let go (outcome: its state, CANCELLED if it never ran) */
    struct cont *conts;          /* fired once, when it ends, with the lock held */
    uint32_t cont_count, cont_cap;
    bool conts_fired;
    /* front: inputs and outputs */
    struct prog_source src;
    struct prog_output out;
    struct cjob *back;           /* adopted by this front node once posted */
    /* back: inputs (copies) and outputs */
    uint32_t *spirv;
    size_t words;
    kiln_program_interface iface;
    uint8_t origin[16];          /* the hash of the front node that posted it */
    bool giant, alone, deferred;
    bool via_worker_cache;       /* compiled through its worker's cache (merge due) */
    bool from_archive;           /* front end served by the archive */
    bool archived;               /* front end compiled and added to the run archive */
    bool qa_miss;                /* compiled although the archive could have held it */
    int archive_cause;           /* the lookup's outcome (enum arc_cause), -1 none */
    uint32_t alone_tries;
    uint32_t giants_seen;        /* other giants in flight while it ran */
    struct kb_layout *layout;
    struct kb_pipeline *pipeline;
    char *error;                 /* why the back end failed */
    /* A failure for want of host memory or past a device limit: its code
     * (KILN_ERR_NO_MEMORY or KILN_ERR_LIMIT, else 0) and what could not be
     * allocated, kept without allocating. */
    kiln_result fail_code;
    char fail_msg[512];
    /* timing */
    uint64_t start_ns;
    double seconds;
    bool slow_said;
    /* links */
    struct cjob *q_prev, *q_next;  /* its queue */
    struct cjob *h_next;           /* hash bucket */
    struct cjob *lru_prev, *lru_next;
    bool in_table, in_lru;
    int queue;                     /* which queue it is on, -1 none */
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

struct csvc_worker {
    struct csvc *svc;
    pthread_t thread;
    struct kb_cache *cache;      /* its own pipeline cache, merged into shared at a phase end */
    struct cjob *job;            /* running now, or NULL */
};

struct csvc {
    struct kb_device *dev;
    struct csvc_config cfg;
    struct csvc_hooks hooks;
    uint32_t giant_bound;
    pthread_mutex_t lock;        /* guards everything below */
    pthread_cond_t work;         /* a job became runnable, or stopping */
    pthread_cond_t ended;        /* a job ended */
    bool started, stopping;
    bool held;                   /* tests: workers start nothing while set (csvc_hold) */
    struct csvc_worker *workers;
    uint32_t worker_count;
    pthread_t watchdog;
    bool watchdog_started;
    struct kb_cache *shared;     /* the device's pipeline cache */
    bool caches_dirty;           /* worker caches hold pipelines not merged yet */
    struct cjob *q_head[3], *q_tail[3];   /* by enum cprio */
    struct cjob *deferred_head, *deferred_tail;
    struct cjob *alone_head, *alone_tail;
    struct cjob **table;         /* hash buckets */
    uint32_t table_cap, table_count;
    struct cjob *lru_head, *lru_tail;     /* released results, newest at head */
    uint32_t lru_count;
    uint32_t running, giants_running;
    bool alone_running;
    struct csvc_stats stats;
    struct arc_store *archive;   /* borrowed; NULL or disabled: no archive */
    struct csvc_slow *slow;
    uint32_t slow_count, slow_cap;
    struct cjob **pre;           /* front nodes precompile holds until destroy */
    uint32_t pre_count, pre_cap;
    struct csvc *next_live;      /* the process's live services (exit drain) */
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
 * csvc_release). */
KILN_NODISCARD kiln_result csvc_request(struct csvc *svc, const struct prog_source *src, enum cprio prio,
                                        struct cjob **out);
void csvc_release(struct csvc *svc, struct cjob *front);
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
    kiln_result code;                  /* failed: KILN_ERR_NO_MEMORY when host memory ran out, else KILN_ERR_COMPILE */
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
/* For tests: while held, workers start no job (queued ones stay queued). */
void csvc_hold(struct csvc *svc, bool hold);
/* Giant back ends compiling now (the archive's saver holds back meanwhile). */
uint32_t csvc_giants_in_flight(struct csvc *svc);
/* Copies up to cap slow entries; returns how many there are. */
uint32_t csvc_slow_list(struct csvc *svc, struct csvc_slow *out, uint32_t cap);
/* The close line's text. */
void csvc_summary(struct csvc *svc, char *buf, size_t cap);

/* key.c: canonical requests. */
/* The front-end request of src; *includes receives the included files as
 * read (free with prog_includes_free). */
KILN_NODISCARD kiln_result ckey_front(const struct prog_source *src, uint8_t **key, size_t *len,
                                      struct prog_include **includes, uint32_t *include_count);
KILN_NODISCARD kiln_result ckey_back(const struct kb_device *dev, const uint32_t *spirv, size_t words,
                                     const kiln_program_interface *iface, uint8_t **key, size_t *len);

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
                                  * device limit) or KILN_ERR_COMPILE */
    struct kb_layout *layout;
    struct kb_pipeline *pipeline;
};

/* Starts a program's compile; returns at once. */
KILN_NODISCARD kiln_result prog_create(struct csvc *svc, const kiln_program_desc *desc, enum cprio prio,
                                       struct prog **out);
void prog_destroy(struct prog *p);
/* Brings the program's state up to date with its compile. */
kiln_program_state prog_refresh(struct prog *p);
/* Waits for the compile to end (marking it wanted). */
kiln_program_state prog_wait(struct prog *p);

#endif
