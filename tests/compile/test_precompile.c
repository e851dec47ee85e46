/* SPDX-License-Identifier: MIT */
/*
 * test_precompile.c: csvc_precompile's order and its stall, on the mock
 * backend with one worker, so the order jobs start in is the order they
 * were posted in. A first service compiles four programs of different
 * sizes (one made slow by its hook) into an archive folder; a fifth
 * program's front end is placed in the folder with no note of use (as in
 * an archive shipped with an application). A second service precompiles:
 * noted programs first by SPIR-V words, then the un-noted one, the slow one
 * last. A third precompiles with its worker held: after the stall the rest
 * goes on in the background and finishes once let go.
 *
 * Beside precompile: a front end's shared-memory count, made once when it
 * ends, reaches its back end's device-limit check whether the front end
 * was compiled or read from the archive.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/mock/mock.h"
#include "compile/compile.h"
#include "archive/arc_files.h"
#include "test.h"

static char g_root[64];

/* The hooks: names of front ends in the order they start; "slow" ones
 * sleep; while held, every front end waits. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char order[16][64];
    uint32_t count;
    bool hold;
    bool slow_sleeps;
} g_hook = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static kiln_result hook_front(void *ud, const struct prog_source *src)
{
    (void)ud;
    pthread_mutex_lock(&g_hook.lock);
    while (g_hook.hold)
        pthread_cond_wait(&g_hook.cond, &g_hook.lock);
    if (g_hook.count < 16)
        snprintf(g_hook.order[g_hook.count++], 64, "%s", src->name ? src->name : "?");
    bool sleep_now = g_hook.slow_sleeps && src->name && strstr(src->name, "slow");
    pthread_mutex_unlock(&g_hook.lock);
    if (sleep_now)
        nanosleep(&(struct timespec){4, 500 * 1000 * 1000}, NULL);   /* past slow_s, with room */
    return KILN_OK;
}

static void hold(bool on)
{
    pthread_mutex_lock(&g_hook.lock);
    g_hook.hold = on;
    pthread_cond_broadcast(&g_hook.cond);
    pthread_mutex_unlock(&g_hook.lock);
}

struct rig {
    struct kb_device *dev;
    struct csvc *svc;
    struct arc_store store;
};

static kiln_result rig_init(struct rig *r)
{
    memset(r, 0, sizeof *r);
    KILN_TRY(mockb_create(&(struct kb_settings){0}, &r->dev));
    struct csvc_config cfg;
    csvc_config_default(&cfg, r->dev);
    cfg.workers = 1;
    cfg.slow_s = 4.0;   /* past any compile here, even under sanitizers on 2 loaded cores */
    KILN_TRY(csvc_create(r->dev, &cfg, &(struct csvc_hooks){hook_front, NULL, NULL}, &r->svc));
    struct arc_store_config acfg;
    arc_store_config_default(&acfg);
    acfg.tidy_delay_s = 3600;
    KILN_TRY(arc_store_open(&r->store, &r->dev->caps, &acfg));
    csvc_set_archive(r->svc, &r->store);
    return KILN_OK;
}

static void rig_done(struct rig *r)
{
    csvc_destroy(r->svc);
    arc_store_close(&r->store, NULL, 0);
    kb_destroy(r->dev);
}

/* A program of about `lines` statements. */
static void source_of(char *buf, size_t cap, int lines, int salt)
{
    int n = snprintf(buf, cap,
                     "#version 450\n"
                     "layout(local_size_x = 64) in;\n"
                     "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                     "void main() { uint i = gl_GlobalInvocationID.x; uint v = x[i] + %du;\n",
                     salt);
    for (int k = 0; k < lines && (size_t)n < cap - 128; k++)
        n += snprintf(buf + n, cap - (size_t)n, "    v = v * %du + (v >> %d);\n", 3 + 2 * k + salt, 1 + k % 7);
    snprintf(buf + n, cap - (size_t)n, "    x[i] = v; }\n");
}

static kiln_result compile_one(struct rig *r, const char *name, int lines, int salt)
{
    char src[8192];
    source_of(src, sizeof src, lines, salt);
    struct prog_source ps;
    KILN_TRY(prog_source_init(&ps, &(kiln_program_desc){.source = src, .name = name}));
    struct cjob *j;
    kiln_result res = csvc_request(r->svc, &ps, CPRIO_NORMAL, &j);
    prog_source_finish(&ps);
    KILN_TRY(res);
    struct csvc_result out;
    kiln_program_state st = csvc_wait(r->svc, j, false, &out);
    csvc_release(r->svc, j);
    return st == KILN_PROGRAM_READY ? KILN_OK : KILN_ERR_COMPILE;
}

/* Copies the front-end entries (only) of every .arc in `from` into one new
 * file in `to`: an archive that holds programs this device never noted. */
static void add_front_ends(void *ud, const char *path, const struct arc_file *f)
{
    (void)path;
    struct arc_writer *w = ud;
    for (uint32_t i = 0; i < f->ref_count; i++) {
        uint32_t kind;
        const uint8_t *key, *value;
        size_t klen, vlen;
        if (arc_file_entry(f, i, NULL, &kind, &key, &klen, &value, &vlen) == ARC_HIT && kind == ARC_FRONT)
            arc_writer_add(w, ARC_FRONT, key, klen, value, vlen);
    }
}

static void copy_front_ends(const char *from, const char *to, const struct arc_device *dev)
{
    struct arc_writer w;
    arc_writer_init(&w, dev);
    test_each_arc(from, dev, add_front_ends, &w);
    const uint8_t *data;
    size_t len;
    if (arc_writer_close(&w, &data, &len) != KILN_OK || arc_save(to, "shipped.arc", data, len) != KILN_OK)
        test_failures_++;
    arc_writer_finish(&w);
}

TEST(precompile_order_noted_then_words_slow_last)
{
    struct rig r;
    /* The un-noted program, compiled into a folder of its own. */
    char other[128];
    snprintf(other, sizeof other, "%s/other", g_root);
    setenv("KILN_ARCHIVE_DIR", other, 1);
    REQUIRE_OK(rig_init(&r));
    char other_dir[4096];
    snprintf(other_dir, sizeof other_dir, "%s", r.store.dir);
    struct arc_device dev = r.store.device;
    CHECK_OK(compile_one(&r, "unnoted.comp", 5, 50));
    rig_done(&r);

    setenv("KILN_ARCHIVE_DIR", g_root, 1);
    g_hook.slow_sleeps = true;
    REQUIRE_OK(rig_init(&r));
    CHECK_OK(compile_one(&r, "big.comp", 60, 1));
    CHECK_OK(compile_one(&r, "slow.comp", 2, 2));
    CHECK_OK(compile_one(&r, "small.comp", 1, 3));
    CHECK_OK(compile_one(&r, "medium.comp", 20, 4));
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", r.store.dir);
    rig_done(&r);
    g_hook.slow_sleeps = false;
    copy_front_ends(other_dir, dir, &dev);

    REQUIRE_OK(rig_init(&r));
    g_hook.count = 0;
    struct csvc_precompile pre;
    CHECK_OK(csvc_precompile(r.svc, 5.0, &pre));
    CHECK_EQ(pre.programs, 5);
    CHECK_EQ(pre.noted, 4);
    CHECK_EQ(pre.slow, 1);
    CHECK_EQ(pre.ready, 5);
    CHECK_EQ(pre.background, 0);
    static const char *const want[] = {"small.comp", "medium.comp", "big.comp", "archived program", "slow.comp"};
    CHECK_EQ(g_hook.count, 5);
    for (uint32_t i = 0; i < 5 && i < g_hook.count; i++)
        if (strcmp(g_hook.order[i], want[i])) {
            test_failures_++;
            fprintf(stderr, "precompile order: #%u was %s, expected %s\n", i, g_hook.order[i], want[i]);
        }
    /* Asking for a precompiled program adopts it: no compile starts. */
    uint64_t started = csvc_stats_get(r.svc).started;
    CHECK_OK(compile_one(&r, "again.comp", 60, 1));
    CHECK_EQ(csvc_stats_get(r.svc).started, started);
    rig_done(&r);

    /* The stall: the worker held, nothing finishes; after 0.2 s the rest is
     * background work, which finishes once the worker is let go. */
    REQUIRE_OK(rig_init(&r));
    hold(true);
    CHECK_OK(csvc_precompile(r.svc, 0.2, &pre));
    CHECK_EQ(pre.programs, 5);
    CHECK_EQ(pre.ready, 0);
    CHECK_EQ(pre.background, 5);
    hold(false);
    for (int t = 0; t < 500 && csvc_pending(r.svc); t++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    CHECK_EQ(csvc_pending(r.svc), 0);
    started = csvc_stats_get(r.svc).started;
    CHECK_OK(compile_one(&r, "again.comp", 1, 3));   /* small.comp's program: done in the background */
    CHECK_EQ(csvc_stats_get(r.svc).started, started);
    rig_done(&r);
}

/* Requests a program of `shared_uints` words of shared memory and waits:
 * its state, and its failure's code and reason. */
static kiln_program_state shared_program(struct rig *r, uint32_t shared_uints, kiln_result *code, char *why,
                                         size_t cap)
{
    char src[1024];
    snprintf(src, sizeof src,
             "#version 450\n"
             "layout(local_size_x = 64) in;\n"
             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
             "shared uint s[%u];\n"
             "void main() { uint i = gl_GlobalInvocationID.x; s[gl_LocalInvocationIndex] = x[i]; barrier();\n"
             "    x[i] = s[(gl_LocalInvocationIndex + 1u) %% 64u]; }\n",
             shared_uints);
    char name[64];
    snprintf(name, sizeof name, "shared%u.comp", shared_uints);
    struct prog_source ps;
    *code = KILN_OK;
    snprintf(why, cap, "%s", "");
    if (prog_source_init(&ps, &(kiln_program_desc){.source = src, .name = name}) != KILN_OK)
        return KILN_PROGRAM_FAILED;
    struct cjob *j;
    kiln_result res = csvc_request(r->svc, &ps, CPRIO_NORMAL, &j);
    prog_source_finish(&ps);
    if (res != KILN_OK) {
        *code = res;
        return KILN_PROGRAM_FAILED;
    }
    struct csvc_result out;
    kiln_program_state st = csvc_wait(r->svc, j, false, &out);
    if (st == KILN_PROGRAM_FAILED) {
        *code = out.code;
        snprintf(why, cap, "%s", out.error ? out.error : "");
    }
    csvc_release(r->svc, j);
    return st;
}

/* The mock device allows 32768 bytes of shared memory: 8192 words run,
 * 8193 fail with KILN_ERR_LIMIT naming the count, compiled or, in a later
 * service, read from the archive (where the back end has only the count
 * the front end made). */
TEST(the_shared_memory_limit_holds_for_front_ends_compiled_and_archived)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s/shared", g_root);
    setenv("KILN_ARCHIVE_DIR", dir, 1);
    static const char *const want = "uses 32772 bytes of shared memory; the device allows 32768";
    for (int pass = 0; pass < 2; pass++) {
        struct rig r;
        REQUIRE_OK(rig_init(&r));
        kiln_result code;
        char why[1024];
        CHECK_EQ(shared_program(&r, 8192, &code, why, sizeof why), KILN_PROGRAM_READY);
        CHECK_EQ(shared_program(&r, 8193, &code, why, sizeof why), KILN_PROGRAM_FAILED);
        CHECK_EQ(code, KILN_ERR_LIMIT);
        if (!strstr(why, want)) {
            test_failures_++;
            fprintf(stderr, "pass %d: the reason '%s' lacks '%s'\n", pass, why, want);
        }
        /* The second service reads both front ends from the archive. */
        CHECK_EQ(csvc_stats_get(r.svc).archive_hits, pass ? 2u : 0u);
        rig_done(&r);
    }
}

/* With no archive, precompile does nothing and says so. */
TEST(precompile_without_archive)
{
    setenv("KILN_ARCHIVE", "0", 1);
    struct rig r;
    REQUIRE_OK(rig_init(&r));
    struct csvc_precompile pre;
    CHECK_OK(csvc_precompile(r.svc, 1.0, &pre));
    CHECK_EQ(pre.programs, 0);
    rig_done(&r);
    setenv("KILN_ARCHIVE", "1", 1);
}

int main(void)
{
    snprintf(g_root, sizeof g_root, "/tmp/kiln-precompile-XXXXXX");
    if (!mkdtemp(g_root))
        return 1;
    setenv("KILN_ARCHIVE", "1", 1);
    RUN(precompile_order_noted_then_words_slow_last);
    RUN(the_shared_memory_limit_holds_for_front_ends_compiled_and_archived);
    RUN(precompile_without_archive);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_root);
    return TEST_SUMMARY();
}
