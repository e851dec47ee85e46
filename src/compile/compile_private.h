/* SPDX-License-Identifier: MIT */
/*
 * compile_private.h: the compile service's insides, shared by src/compile's
 * files only (compile.c, precompile.c, key.c); no other module includes
 * it, and program_obj.c needs only compile.h. Other modules see the service and its nodes through
 * compile.h: opaque structs and accessors.
 *
 * Locking: the service's `lock` guards every field of the service and of
 * its nodes, except where a field's comment says otherwise: a node's
 * identity (kind, name, hash, key) is written before the node is published
 * and only read after; a running job's inputs and outputs are the worker's
 * until it takes the lock again to record how the job ended.
 */
#ifndef KILN_COMPILE_PRIVATE_H
#define KILN_COMPILE_PRIVATE_H

#include <pthread.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/list.h"
#include "compile.h"

/* The queues: one per enum cprio, then deferred giants and retries alone. */
#define Q_DEFERRED 3
#define Q_ALONE 4
#define Q_COUNT 5

struct cont {
    void (*fn)(struct csvc *svc, struct cjob *job, void *ud);
    void *ud;
};

struct cjob {
    /* Identity: written before the node is published, never again. */
    enum cjob_kind kind;
    char name[64];               /* the program's name, for messages */
    uint8_t hash[16];            /* hash128 of key (also its archive lookup hash) */
    uint8_t *key;                /* the canonical request, owned */
    size_t key_len;

    enum cjob_state state;
    enum cprio prio;
    uint32_t adopters;
    bool cancel_requested;       /* request: the last adopter let go (outcome: its state, CANCELLED if it never ran) */
    bool stopped_unwanted;       /* its compile helper was killed as no longer wanted (worker, then under lock) */
    struct cont *conts;          /* fired once, when it ends, with the lock held */
    uint32_t cont_count, cont_cap;
    bool conts_fired;
    /* front: inputs and outputs. src is read by specialize/ without the
     * service's lock (csvc_front_source says why that is safe); only
     * find_front writes it once the node is published. */
    struct prog_source src;
    struct prog_output out;
    /* A baked variant's node (csvc_request_baked): the universal front
     * node it holds, set once published (so only lock holders free it),
     * and the words it bakes, owned. */
    struct cjob *bake_of;
    struct prog_push_word *bake_words;
    uint32_t bake_count;
    struct cjob *back;           /* adopted by this front node once posted */
    /* A set of specialization constants over a front end (csvc_request
     * of a source with constants): `base` is the front node of the source
     * without them, held from publication until this node goes; it
     * compiles nothing and is never queued, but takes base's SPIR-V and
     * interface with the constants applied when base ends (derive_set, a
     * continuation of base), then posts its back end like any front node.
     * set_holds counts the set nodes holding a front node: it posts a back
     * end of its own (the defaults') only while something else holds it. */
    struct cjob *base;
    uint32_t set_holds;
    /* Bytes of Workgroup memory the SPIR-V declares (prog_shared_bytes):
     * counted once, when the front end ends (count_shared); a back node
     * has the count of the front node that posted it (the same SPIR-V) and
     * checks the device's limit against it without parsing again. */
    uint64_t shared_bytes;
    /* back: inputs (copies) and outputs */
    uint32_t *spirv;
    size_t words;
    kiln_program_interface iface;
    uint8_t origin[16];          /* the hash of the front node that posted it */
    bool universal;              /* posted by a front node of the source itself (no baked variant's) */
    bool giant, alone, deferred;
    bool via_worker_cache;       /* compiled through its worker's cache (merge due) */
    bool from_archive;           /* served by the archive */
    bool archived;               /* compiled and added to the run archive */
    bool qa_miss;                /* compiled although the archive could have held it */
    int archive_cause;           /* the lookup's outcome (enum arc_cause), -1 none */
    uint32_t alone_tries;
    uint32_t giants_seen;        /* other giants in flight while it ran */
    struct kb_layout *layout;
    struct kb_pipeline *pipeline;
    /* Why it failed, kept without allocating (so a failure for want of
     * memory has its reason too), and fail_code: KILN_ERR_NO_MEMORY (host
     * memory ran out) or KILN_ERR_LIMIT (past a device limit), else 0. A
     * failed front end's compiler log, when it has one, is its out.log and
     * is what a caller reads instead (csvc_status_locked). */
    kiln_result fail_code;
    char fail_msg[1024];
    /* timing */
    uint64_t start_ns;
    double seconds;
    bool slow_said;
    /* links */
    struct list q_link;          /* on queue `queue`, or unlinked */
    int queue;                   /* which queue it is on, -1 none */
    struct cjob *h_next;         /* its hash bucket's chain */
    bool in_table;
    struct list lru_link;        /* in the cache of released results, or unlinked */
};

/* A worker's compile helper process (front.c). */
struct front_helper {
    pid_t pid;                   /* 0: not running */
    int to, from;                /* pipes to its input and from its output */
    int status;                  /* its wait status once it ended */
};

struct csvc_worker {
    struct csvc *svc;
    struct kthread thread;
    struct front_helper helper;  /* the process its front ends compile in (worker thread only) */
    struct kb_cache *cache;      /* its own pipeline cache, merged into shared at a phase end */
    struct cjob *job;            /* running now, or NULL */
};

struct csvc {
    struct kb_device *dev;
    struct csvc_config cfg;
    struct csvc_hooks hooks;
    uint32_t giant_bound;
    pthread_mutex_t lock;        /* guards everything below, and the nodes */
    pthread_cond_t work;         /* a job became runnable, or stopping */
    pthread_cond_t ended;        /* a job ended */
    bool started, stopping;
    bool held;                   /* tests: workers start nothing while set (csvc_hold) */
    struct csvc_worker *workers;
    uint32_t worker_count;
    struct kthread watchdog;
    struct kb_cache *shared;     /* the device's pipeline cache */
    bool caches_dirty;           /* worker caches hold pipelines not merged yet */
    struct list queues[Q_COUNT]; /* of cjob.q_link: by enum cprio, then Q_DEFERRED, Q_ALONE */
    /* The dedupe table: hash buckets of singly linked chains (cjob.h_next).
     * A chain is only ever walked from its head (to find, or to unlink while
     * walking), and at a load of at most one half it is short, so a back
     * link would cost a pointer per node and buy nothing. */
    struct cjob **table;
    uint32_t table_cap, table_count;
    struct list lru;             /* of cjob.lru_link: released results, newest first */
    uint32_t lru_count;
    uint32_t running, giants_running;
    bool alone_running;
    struct csvc_stats stats;
    struct arc_store *archive;   /* borrowed; NULL or disabled: no archive */
    struct csvc_slow *slow;
    uint32_t slow_count, slow_cap;
    struct cjob **pre;           /* front nodes precompile holds until destroy */
    uint32_t pre_count, pre_cap;
    struct kthread_drain drain;  /* stops its workers at process exit if never destroyed */
};

/* The archive values compile.c writes and precompile.c reads (front ends
 * and notes) are encoded and decoded by the archive's codecs alone
 * (archive.h: arc_front_*, arc_note_*, arc_back_decode). */

/* ---- compile.c, for precompile.c (the service's lock held) ------------------------ */

/* Starts the pool on the first compile. */
KILN_NODISCARD kiln_result csvc_start_workers(struct csvc *svc);
/* The node of this kind equal to a request that may be adopted, or NULL. */
struct cjob *csvc_find(struct csvc *svc, enum cjob_kind kind, const uint8_t hash[16], const uint8_t *key,
                       size_t len);
/* Adopts an existing front node for a request at prio; returns it. */
struct cjob *csvc_adopt_front(struct csvc *svc, struct cjob *front, enum cprio prio);
/* A new front node, seen by nobody yet (no lock needed): the request's key
 * (consumed: the node owns it, and it is freed when NULL is returned), its
 * hash, the name it compiles under and its priority; one adopter (the
 * caller); its one continuation posts its back end. The caller fills in its
 * source, then publishes it with csvc_post. NULL: out of host memory. */
struct cjob *csvc_front_new(uint8_t *key, size_t len, const uint8_t hash[16], const char *name, enum cprio prio);
/* Publishes a new node: into the table (where requests find it) and onto
 * its queue. */
void csvc_post(struct csvc *svc, struct cjob *job);
/* Moves a queued job to queue q. */
void csvc_requeue(struct csvc *svc, struct cjob *job, int q);
kiln_program_state csvc_status_locked(struct csvc *svc, struct cjob *front, struct csvc_result *out);

/* ---- front.c: front ends in a watched helper process ------------------------------------ */

/* One compile's bounds (0: none), and the question "still wanted?". */
enum { FRONT_WANTED, FRONT_UNWANTED, FRONT_STOP };
struct front_limits {
    uint64_t timeout_ns;         /* KILN_COMPILE_TIMEOUT_S (60 s) */
    uint64_t max_bytes;          /* KILN_COMPILE_MAX_BYTES (2 GiB), resident */
    bool in_process;             /* KILN_COMPILE_HELPER=0: prog_compile here, unbounded */
    /* Polled: FRONT_WANTED, FRONT_UNWANTED (the helper is killed once the
     * compile has run its grace, 2 s) or FRONT_STOP (killed now: the
     * service is closing). */
    int (*wanted)(void *ud);
    void *ud;
    bool stopped_unwanted;       /* out: the helper was killed as no longer wanted */
};
/* prog_compile in kiln-front (see front.c), the worker's helper h (started
 * when not running), bounded by lim: past a limit the helper is killed and
 * the compile fails with KILN_ERR_LIMIT naming the limit (out->log saying
 * so too); a helper that dies fails it with KILN_ERR_COMPILE. Without a
 * helper to be found (front_helper_path ""), with h NULL or with
 * lim->in_process, prog_compile runs here, unbounded. */
kiln_result front_compile(const struct prog_source *src, struct front_limits *lim, struct front_helper *h,
                          struct prog_output *out);
/* Ends a worker's helper (its input closed; it exits). */
void front_helper_finish(struct front_helper *h);
/* The helper the compile service starts, or "" when none was found (looked
 * for once a process). */
const char *front_helper_path(void);
/* The wire between the service and kiln-front (front_main.c). */
void front_request_encode(struct bytes *b, const struct prog_source *src);
bool front_request_decode(const uint8_t *p, size_t n, struct prog_source *src);
void front_reply_encode(struct bytes *b, kiln_result r, const char *error, const struct prog_output *out);

/* ---- key.c: canonical requests ------------------------------------------------------- */

/* The front-end request of src; *includes receives the included files as
 * read (free with prog_includes_free). */
KILN_NODISCARD kiln_result ckey_front(const struct prog_source *src, uint8_t **key, size_t *len,
                                      struct prog_include **includes, uint32_t *include_count);
/* The request of a set of specialization constants over the front end
 * whose request is front_key: see key.c. */
KILN_NODISCARD kiln_result ckey_set(const uint8_t *front_key, size_t front_len, const kiln_spec_constant *set,
                                    uint32_t n, uint8_t **key, size_t *len);
KILN_NODISCARD kiln_result ckey_back(const struct kb_device *dev, const uint32_t *spirv, size_t words,
                                     const kiln_program_interface *iface, uint8_t **key, size_t *len);

#define LRU_MAX 64          /* released results kept for re-adoption */

static inline const char *kind_name(enum cjob_kind k) { return k == CJOB_FRONT ? "front end" : "back end"; }

static inline void hash_hex(const uint8_t h[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* Shared by compile.c, compile_node.c and compile_worker.c (svc->lock held). */
void csvc_fire_conts(struct csvc *s, struct cjob *j);
void csvc_job_free(struct csvc *s, struct cjob *j);
struct cjob *csvc_q_first(struct csvc *s, int q);
uint32_t csvc_q_length(struct csvc *s, int q);
void csvc_q_remove(struct cjob *j);
void csvc_enqueue(struct csvc *s, struct cjob *j);
void csvc_fail_oom(struct cjob *j, const char *why);
void csvc_lru_add(struct csvc *s, struct cjob *j);
void csvc_lru_trim(struct csvc *s, uint32_t keep);
bool csvc_queued_any(struct csvc *s);
void csvc_table_remove(struct csvc *s, struct cjob *j);

#endif
