/* SPDX-License-Identifier: MIT */
/*
 * test_archive_vk.c: the archive at work. A second context, and a second
 * process, get every front end from the archive (no SPIR-V compiled) and
 * compute right; a corrupt entry is a counted miss; KILN_ARCHIVE=0 reads and
 * writes nothing; an unusable folder is not applied and kiln goes on.
 *
 * Drivers differ in what their pipeline caches keep, and with it what the
 * archive holds: a driver whose caches keep compiled code (NVIDIA's)
 * archives each program's pipeline (back end) beside its front end, and a
 * later start makes the pipeline from it; one whose caches keep only a
 * header (lavapipe's) archives front ends alone. Each test asks
 * caps.pipeline_cache_keeps_code and states what holds in either case.
 * The whole suite runs three times, each in a folder of its own: on the
 * Vulkan device, then on the mock backend as a driver of each kind (the
 * mock runs nothing, so computed values are checked on Vulkan only), so
 * both cases are tested on any machine.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "archive/archive.h"
#include "arc_files.h"
#include "backend/mock/mock.h"
#include "test.h"

#define PROGRAMS 5

static char root[64];
static kiln_backend_kind g_backend;   /* the configuration running */
static int g_keeps;                   /* its caps.pipeline_cache_keeps_code */

/* Entries the archive holds per program compiled: its front end, the note
 * of its use, and its pipeline where the driver keeps compiled code. */
#define ENTRIES_PER_PROGRAM (2u + (uint32_t)g_keeps)

static kiln_result make_context(kiln_context *ctx)
{
    return kiln_context_create(&(kiln_context_desc){.backend = g_backend}, ctx);
}

static void source_of(int i, char *buf, size_t cap)
{
    snprintf(buf, cap,
             "#version 450\n"
             "layout(local_size_x = 64) in;\n"
             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
             "void main() { uint i = gl_GlobalInvocationID.x; x[i] = x[i] * %du + kiln_param(0); }\n",
             i + 2);
}

/* Makes the programs, checks each computes right; returns stats. */
static kiln_context_stats run_programs(void)
{
    kiln_context_stats st = {0};
    kiln_context ctx;
    if (make_context(&ctx) != KILN_OK) {
        test_failures_++;
        fprintf(stderr, "%s: context: %s\n", test_name_, kiln_last_error());
        return st;
    }
    kiln_program p[PROGRAMS];
    for (int i = 0; i < PROGRAMS; i++) {
        char src[512], name[32];
        source_of(i, src, sizeof src);
        snprintf(name, sizeof name, "p%d.comp", i);
        CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = name}, &p[i]));
    }
    kiln_buffer b;
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64 * 4}, &b));
    for (int i = 0; i < PROGRAMS; i++) {
        CHECK_OK(kiln_program_wait(ctx, p[i]));
        uint32_t v[64];
        for (int k = 0; k < 64; k++)
            v[k] = (uint32_t)k;
        CHECK_OK(kiln_buffer_upload(ctx, b, 0, v, sizeof v));
        kiln_scheme s;
        kiln_node n;
        CHECK_OK(kiln_scheme_create(ctx, NULL, &s));
        CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p[i],
                                                                .bindings = &(kiln_binding){.binding = 0, .buffer = b},
                                                                .binding_count = 1, .groups = {1}, .params = (const uint32_t[KILN_PARAM_WORDS]){7}, .param_count = KILN_PARAM_WORDS},
                                      &n));
        CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
        CHECK_OK(kiln_buffer_readback(ctx, b, 0, v, sizeof v));
        int bad = 0;
        for (int k = 0; k < 64 && g_backend != KILN_BACKEND_MOCK; k++)
            bad += v[k] != (uint32_t)k * (uint32_t)(i + 2) + 7;
        CHECK_EQ(bad, 0);
        CHECK_OK(kiln_scheme_destroy(ctx, s));
    }
    CHECK_OK(kiln_context_stats_get(ctx, &st));
    test_context_done(ctx);
    return st;
}

static int count_files(const char *dir, const char *suffix)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "find %s -name '*%s' | wc -l", dir, suffix);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

/* What a new context finds in its archive folder: files, and entries that
 * check out (*corrupt: entries that do not). */
static uint64_t folder_entries(uint32_t *files, uint64_t *corrupt)
{
    uint64_t entries = 0;
    *files = 0;
    *corrupt = 0;
    kiln_context ctx;
    if (make_context(&ctx) != KILN_OK) {
        test_failures_++;
        return 0;
    }
    kiln_archive_file f[64];
    uint32_t count = 0;
    CHECK_OK(kiln_archive_files(ctx, 0, f, 64, &count));
    CHECK(count <= 64);
    for (uint32_t i = 0; i < count && i < 64; i++) {
        entries += f[i].entries;
        *corrupt += f[i].corrupt;
    }
    *files = count;
    test_context_done(ctx);
    return entries;
}

TEST(a_second_context_gets_every_front_end_from_the_archive)
{
    kiln_context_stats first = run_programs();
    CHECK_EQ(first.archive_hits, 0);
    CHECK_EQ(first.archive_added, PROGRAMS);
    CHECK_EQ(first.archive_pipeline_hits, 0);
    CHECK_EQ(first.archive_pipelines_added, g_keeps ? PROGRAMS : 0);
    /* The first run's run archive: one file, or more where adds from
     * several compile workers overlapped. */
    uint32_t files;
    uint64_t corrupt;
    CHECK_EQ(folder_entries(&files, &corrupt), PROGRAMS * ENTRIES_PER_PROGRAM);
    CHECK(files >= 1);
    CHECK_EQ(corrupt, 0);
    kiln_context_stats second = run_programs();
    CHECK_EQ(second.archive_hits, PROGRAMS);
    CHECK_EQ(second.archive_added, 0);
    CHECK(second.front_end_seconds == 0.0);   /* no SPIR-V compiled */
    /* Pipelines come from the archive only where the driver keeps compiled
     * code in its pipeline caches; elsewhere each is compiled, and each
     * such back end is a miss ("driver never hits"). */
    CHECK_EQ(second.archive_pipeline_hits, g_keeps ? PROGRAMS : 0);
    CHECK_EQ(second.archive_pipelines_added, 0);
    CHECK_EQ(second.archive_misses, g_keeps ? 0 : PROGRAMS);
    CHECK_EQ(count_files(root, ".tmp"), 0);
}

/* Another process is a new program image, as in life: the child execs
 * this test again (a forked copy of a process that has made a context must
 * not touch the GPU: kiln keeps the driver mapped once loaded, and drivers
 * do not survive fork). Its role and configuration travel in argv (see
 * child_main), the archive folder and switches in the environment. */
static kiln_context_stats run_offset(int offset, int count);

static void nap_ms(unsigned ms) { nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL); }

static pid_t spawn(const char *role, int k)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        char kb[16], backend[16], keeps[16];
        snprintf(kb, sizeof kb, "%d", k);
        snprintf(backend, sizeof backend, "%d", (int)g_backend);
        snprintf(keeps, sizeof keeps, "%d", g_keeps);
        execl("/proc/self/exe", "test_archive_vk", "--child", role, kb, backend, keeps, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The child's side of spawn: "second" makes the programs and takes every
 * one from the archive; "adder" k adds 6 programs of its own; "victim" k
 * adds programs of its own, 6 at a time, until it is killed. Exits 0 when
 * all held. */
static int child_main(char **argv)
{
    const char *role = argv[2];
    int k = atoi(argv[3]);
    g_backend = (kiln_backend_kind)atoi(argv[4]);
    g_keeps = atoi(argv[5]);
    if (g_backend == KILN_BACKEND_MOCK)
        mockb_keep_compiled_code(g_keeps != 0);
    test_name_ = role;
    if (!strcmp(role, "second")) {
        kiln_context_stats st = run_programs();
        return test_failures_ == 0 && st.archive_hits == PROGRAMS &&
                       st.archive_pipeline_hits == (g_keeps ? PROGRAMS : 0)
                   ? 0
                   : 1;
    }
    if (!strcmp(role, "victim")) {
        for (int round = 0; round < 200; round++)
            (void)run_offset(1000 + 1000 * k + 10 * round, 6);
        return 0;
    }
    kiln_context_stats st = run_offset(100 + 10 * k, 6);
    if (st.archive_added != 6 || st.archive_pipelines_added != (g_keeps ? 6u : 0u))
        fprintf(stderr, "adder: process %d added %llu front ends and %llu pipelines\n", k,
                (unsigned long long)st.archive_added, (unsigned long long)st.archive_pipelines_added);
    return test_failures_ == 0 && st.archive_added == 6 && st.archive_pipelines_added == (g_keeps ? 6u : 0u) ? 0
                                                                                                          : 1;
}

TEST(a_second_process_gets_them_too)
{
    pid_t pid = spawn("second", 0);
    REQUIRE(pid >= 0);
    int ws;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

/* Precompile: a new context makes every archived program first; creating
 * them afterwards compiles nothing, and they compute right. */
TEST(precompile_makes_the_archived_programs_first)
{
    kiln_context ctx;
    REQUIRE_OK(make_context(&ctx));
    kiln_precompile_result pre;
    CHECK_OK(kiln_context_precompile(ctx, NULL, &pre));
    CHECK_EQ(pre.programs, PROGRAMS);
    CHECK_EQ(pre.noted, PROGRAMS);   /* the earlier contexts used each on this device */
    CHECK_EQ(pre.ready, PROGRAMS);
    CHECK_EQ(pre.failed, 0);
    CHECK_EQ(pre.background, 0);
    kiln_context_stats before, after;
    CHECK_OK(kiln_context_stats_get(ctx, &before));
    CHECK_EQ(before.archive_hits, PROGRAMS);
    CHECK_EQ(before.archive_pipeline_hits, g_keeps ? PROGRAMS : 0);
    CHECK(before.front_end_seconds == 0.0);
    for (int i = 0; i < PROGRAMS; i++) {
        char src[512];
        source_of(i, src, sizeof src);
        kiln_program p;
        CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "again.comp"}, &p));
        kiln_program_state st = KILN_PROGRAM_PENDING;
        CHECK_OK(kiln_program_status(ctx, p, &st));
        CHECK_EQ(st, KILN_PROGRAM_READY);   /* at once: nothing left to compile */
    }
    CHECK_OK(kiln_context_stats_get(ctx, &after));
    CHECK_EQ(after.compiles_started, before.compiles_started);
    CHECK_EQ(after.compiles_deduplicated, before.compiles_deduplicated + PROGRAMS);
    test_context_done(ctx);
    /* And with the programs computing (run_programs checks every value). */
    kiln_context_stats st = run_programs();
    CHECK_EQ(st.archive_hits, PROGRAMS);
}

TEST(qa_mode_names_compiles_the_archive_lacked)
{
    setenv("KILN_ARCHIVE_QA", "1", 1);
    kiln_context_stats full = run_programs();   /* everything archived by now */
    CHECK_EQ(full.archive_qa_compiles, 0);
    char fresh[96];
    snprintf(fresh, sizeof fresh, "%s/qa-empty", root);
    setenv("KILN_ARCHIVE_DIR", fresh, 1);
    kiln_context_stats empty = run_programs();  /* a shipped archive lacking them all */
    /* Each front end compiled, and each pipeline where the archive would
     * have held it. */
    CHECK_EQ(empty.archive_qa_compiles, g_keeps ? 2 * PROGRAMS : PROGRAMS);
    setenv("KILN_ARCHIVE_DIR", root, 1);
    unsetenv("KILN_ARCHIVE_QA");
}

/* Four processes add different programs to one folder at once; then every
 * entry is there exactly once, and a fifth process finds them all. */
static kiln_context_stats run_offset(int offset, int count)
{
    kiln_context_stats st = {0};
    kiln_context ctx;
    if (make_context(&ctx) != KILN_OK) {
        test_failures_++;
        return st;
    }
    for (int i = 0; i < count; i++) {
        char src[512];
        source_of(offset + i, src, sizeof src);
        kiln_program p;
        if (kiln_program_create(ctx, &(kiln_program_desc){.source = src}, &p) == KILN_OK &&
            kiln_program_wait(ctx, p) != KILN_OK)
            test_failures_++;
    }
    if (kiln_context_stats_get(ctx, &st) != KILN_OK)
        test_failures_++;
    test_context_done(ctx);
    return st;
}

TEST(four_processes_add_to_one_folder_at_once)
{
    char dir[96];
    snprintf(dir, sizeof dir, "%s/four", root);
    setenv("KILN_ARCHIVE_DIR", dir, 1);
    pid_t pids[4];
    for (int k = 0; k < 4; k++) {
        pids[k] = spawn("adder", k);
        REQUIRE(pids[k] >= 0);
    }
    for (int k = 0; k < 4; k++) {
        int ws;
        REQUIRE(waitpid(pids[k], &ws, 0) == pids[k]);
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    /* Each process saved one run archive, or more where its adds
     * overlapped; every entry is there once. */
    uint32_t files;
    uint64_t corrupt;
    CHECK_EQ(folder_entries(&files, &corrupt), 4 * 6 * ENTRIES_PER_PROGRAM);
    CHECK(files >= 4);
    CHECK_EQ(corrupt, 0);
    uint64_t hits = 0, pipeline_hits = 0;
    for (int k = 0; k < 4; k++) {
        kiln_context_stats st = run_offset(100 + 10 * k, 6);
        hits += st.archive_hits;
        pipeline_hits += st.archive_pipeline_hits;
    }
    CHECK_EQ(hits, 4 * 6);
    CHECK_EQ(pipeline_hits, g_keeps ? 4 * 6 : 0);
    setenv("KILN_ARCHIVE_DIR", root, 1);
}

/* Writers killed (SIGKILL) at random points while others add to the same
 * folder: the folder holds every entry of the writers that lived, no
 * entry that fails its checks, and no save in progress once the next
 * context opened it (the dead writers' .tmp files are removed); the
 * survivors' programs come back from it. */
TEST(writers_killed_mid_save_lose_no_one_elses_entries)
{
    char dir[96];
    snprintf(dir, sizeof dir, "%s/killed", root);
    setenv("KILN_ARCHIVE_DIR", dir, 1);
    pid_t adders[4], victims[4];
    for (int k = 0; k < 4; k++) {
        victims[k] = spawn("victim", k);
        adders[k] = spawn("adder", k);
        REQUIRE(victims[k] >= 0 && adders[k] >= 0);
    }
    unsigned seed = (unsigned)getpid();
    for (int k = 0; k < 4; k++) {
        nap_ms(50 + (unsigned)rand_r(&seed) % 400);
        kill(victims[k], SIGKILL);
    }
    for (int k = 0; k < 4; k++) {
        int ws;
        REQUIRE(waitpid(adders[k], &ws, 0) == adders[k]);
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        REQUIRE(waitpid(victims[k], &ws, 0) == victims[k]);
    }
    uint32_t files;
    uint64_t corrupt;
    CHECK(folder_entries(&files, &corrupt) >= 4 * 6 * ENTRIES_PER_PROGRAM);
    CHECK_EQ(corrupt, 0);
    CHECK_EQ(count_files(dir, ".tmp"), 0);
    uint64_t hits = 0;
    for (int k = 0; k < 4; k++)
        hits += run_offset(100 + 10 * k, 6).archive_hits;
    CHECK_EQ(hits, 4 * 6);
    setenv("KILN_ARCHIVE_DIR", root, 1);
}

TEST(read_only_folders_serve_and_are_never_written)
{
    /* A shipped archive: a copy of what this test's runs saved so far (the
     * device pair's folder). */
    kiln_context ctx;
    REQUIRE_OK(make_context(&ctx));
    kiln_archive_info info;
    CHECK_OK(kiln_archive_info_get(ctx, &info));
    test_context_done(ctx);
    REQUIRE(info.enabled);
    char ro[96], rw[96], cmd[4400];
    snprintf(ro, sizeof ro, "%s/shipped", root);
    snprintf(rw, sizeof rw, "%s/writable", root);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp -r '%s' %s/", ro, info.dir, ro);
    REQUIRE(system(cmd) == 0);
    int shipped = count_files(ro, ".arc");
    CHECK(shipped >= 1);
    setenv("KILN_ARCHIVE_READONLY", ro, 1);
    setenv("KILN_ARCHIVE_DIR", rw, 1);
    kiln_context_stats st = run_programs();
    CHECK_EQ(st.archive_hits, PROGRAMS);   /* from the read-only folder */
    CHECK_EQ(st.archive_added, 0);
    CHECK_EQ(st.archive_pipeline_hits, g_keeps ? PROGRAMS : 0);
    CHECK_EQ(st.archive_pipelines_added, 0);
    CHECK_EQ(count_files(ro, ".arc"), shipped);   /* never written */
    CHECK_EQ(count_files(rw, ".arc"), 0);
    unsetenv("KILN_ARCHIVE_READONLY");
    setenv("KILN_ARCHIVE_DIR", root, 1);
}

/* Flips one byte in the middle of each entry of f (its value, or its key
 * when the value is empty), through the file at path; counts them. */
static void damage_file(void *ud, const char *path, const struct arc_file *f)
{
    uint64_t *damaged = ud;
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        test_failures_++;
        fprintf(stderr, "%s: cannot open %s\n", test_name_, path);
        return;
    }
    for (uint32_t i = 0; i < f->ref_count; i++) {
        uint32_t kind;
        const uint8_t *key, *value;
        size_t key_len, value_len;
        if (arc_file_entry(f, i, NULL, &kind, &key, &key_len, &value, &value_len) != ARC_HIT)
            continue;
        /* Entries do not overlap: a byte flipped here is never read again. */
        const uint8_t *at = value_len ? value + value_len / 2 : key + key_len / 2;
        uint8_t b = (uint8_t)(*at ^ 0xa5);
        CHECK(pwrite(fd, &b, 1, (off_t)(at - f->data)) == 1);
        (*damaged)++;
    }
    close(fd);
}

/* Damages every entry (front ends, pipelines and notes alike) of every
 * archive file of dir, for device pair dev; returns how many. */
static uint64_t damage_every_entry(const char *dir, const struct arc_device *dev)
{
    uint64_t damaged = 0;
    test_each_arc(dir, dev, damage_file, &damaged);
    return damaged;
}

TEST(a_corrupt_file_is_a_counted_miss)
{
    /* Every entry of every archive file of the device pair is damaged. */
    kiln_context ctx;
    REQUIRE_OK(make_context(&ctx));
    kiln_archive_info info;
    kiln_caps caps;
    CHECK_OK(kiln_archive_info_get(ctx, &info));
    CHECK_OK(kiln_context_caps(ctx, &caps));
    test_context_done(ctx);
    struct arc_device dev;
    arc_device_from_caps(&dev, &caps);
    CHECK(damage_every_entry(info.dir, &dev) >= PROGRAMS * ENTRIES_PER_PROGRAM);
    uint32_t files;
    uint64_t corrupt;
    CHECK_EQ(folder_entries(&files, &corrupt), 0);   /* verify sees every one damaged */
    CHECK(corrupt >= PROGRAMS * ENTRIES_PER_PROGRAM);
    kiln_context_stats st = run_programs();   /* still right: compiled again */
    CHECK_EQ(st.archive_hits, 0);
    CHECK_EQ(st.archive_added, PROGRAMS);
    CHECK_EQ(st.archive_pipeline_hits, 0);
    CHECK_EQ(st.archive_pipelines_added, g_keeps ? PROGRAMS : 0);
    /* A miss per front end (corrupt) and per back end (corrupt where the
     * driver keeps compiled code, "never hits" where it keeps none). */
    CHECK_EQ(st.archive_misses, 2 * PROGRAMS);
}

TEST(archive_off_reads_and_writes_nothing)
{
    int before = count_files(root, ".arc");
    setenv("KILN_ARCHIVE", "0", 1);
    kiln_context_stats st = run_programs();
    setenv("KILN_ARCHIVE", "1", 1);
    CHECK_EQ(st.archive_hits, 0);
    CHECK_EQ(st.archive_added, 0);
    CHECK_EQ(st.archive_misses, 0);
    CHECK_EQ(st.archive_pipeline_hits, 0);
    CHECK_EQ(st.archive_pipelines_added, 0);
    CHECK_EQ(count_files(root, ".arc"), before);
}

TEST(an_unusable_folder_is_not_applied)
{
    char file[128];
    snprintf(file, sizeof file, "%s/not-a-folder", root);
    FILE *f = fopen(file, "w");
    REQUIRE(f);
    fclose(f);
    setenv("KILN_ARCHIVE_DIR", file, 1);   /* a file where the folder should be */
    kiln_context_stats st = run_programs();
    setenv("KILN_ARCHIVE_DIR", root, 1);
    CHECK_EQ(st.archive_hits + st.archive_added, 0);
    CHECK_EQ(st.archive_pipeline_hits + st.archive_pipelines_added, 0);
    CHECK_EQ(st.programs_compiled, PROGRAMS);
}

/* A variant (specialization) an earlier process compiled comes from the
 * archive too: the second context compiles no SPIR-V at all. */
static kiln_context_stats run_specialized(void)
{
    kiln_context_stats st = {0};
    kiln_context ctx;
    if (kiln_context_create(&(kiln_context_desc){.backend = g_backend, .specialization = 1}, &ctx) != KILN_OK) {
        test_failures_++;
        return st;
    }
    char src[512];
    source_of(40, src, sizeof src);
    kiln_program p;
    kiln_buffer b;
    kiln_scheme s;
    kiln_node n;
    CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "spec.comp"}, &p));
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64 * 4}, &b));
    CHECK_OK(kiln_scheme_create(ctx, NULL, &s));
    CHECK_OK(kiln_scheme_add_node(ctx, s,
                                  &(kiln_node_desc){.program = p,
                                                    .bindings = &(kiln_binding){.binding = 0, .buffer = b},
                                                    .binding_count = 1, .groups = {1}, .params = (const uint32_t[KILN_PARAM_WORDS]){5}, .param_count = KILN_PARAM_WORDS},
                                  &n));
    /* Each submit's compiles are let finish before the next (the mock's
     * submits take no time at all). */
    int spec = 0;
    for (int i = 0; i < 2000 && !spec; i++) {
        CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
        CHECK_OK(kiln_context_wait_idle(ctx));
        uint32_t pending = 1;
        for (int t = 0; t < 20000 && pending && kiln_compiles_pending(ctx, &pending) == KILN_OK; t++)
            if (pending)
                usleep(500);
        CHECK_OK(kiln_node_is_specialized(ctx, n, &spec));
    }
    CHECK_EQ(spec, 1);
    CHECK_OK(kiln_context_stats_get(ctx, &st));
    test_context_done(ctx);
    return st;
}

TEST(variants_come_from_the_archive_too)
{
    unsetenv("KILN_SPECIALIZATION");
    kiln_context_stats first = run_specialized();
    kiln_context_stats second = run_specialized();
    setenv("KILN_SPECIALIZATION", "0", 1);
    CHECK_EQ(first.archive_added, 2);    /* the program and its variant */
    CHECK_EQ(first.archive_pipelines_added, g_keeps ? 2 : 0);
    CHECK_EQ(second.archive_hits, 2);
    CHECK_EQ(second.archive_added, 0);
    CHECK_EQ(second.archive_pipeline_hits, g_keeps ? 2 : 0);
    CHECK(second.front_end_seconds == 0.0);
}

/* The suite, in a fresh folder, on the configuration set in g_backend (and
 * for the mock, mockb_keep_compiled_code). */
static void suite(const char *what)
{
    snprintf(root, sizeof root, "/tmp/kiln-archive-XXXXXX");
    if (!mkdtemp(root)) {
        test_failures_++;
        return;
    }
    setenv("KILN_ARCHIVE", "1", 1);
    setenv("KILN_ARCHIVE_DIR", root, 1);
    unsetenv("KILN_ARCHIVE_READONLY");
    unsetenv("KILN_ARCHIVE_QA");
    /* Counts here are of programs: variants (specialization) would add
     * entries of their own. */
    setenv("KILN_SPECIALIZATION", "0", 1);
    kiln_context ctx;
    kiln_caps caps;
    test_name_ = what;
    if (make_context(&ctx) != KILN_OK || kiln_context_caps(ctx, &caps) != KILN_OK) {
        test_failures_++;
        printf("FAIL %s: no context: %s\n", what, kiln_last_error());
        return;
    }
    kiln_context_destroy(ctx);
    g_keeps = caps.pipeline_cache_keeps_code;
    printf("-- %s: %s (%s): pipeline caches keep %s\n", what, caps.device_name, caps.driver_name,
           g_keeps ? "compiled code" : "no compiled code");
    fflush(stdout);
    RUN(a_second_context_gets_every_front_end_from_the_archive);
    RUN(a_second_process_gets_them_too);
    RUN(precompile_makes_the_archived_programs_first);
    RUN(qa_mode_names_compiles_the_archive_lacked);
    RUN(four_processes_add_to_one_folder_at_once);
    RUN(writers_killed_mid_save_lose_no_one_elses_entries);
    RUN(read_only_folders_serve_and_are_never_written);
    RUN(a_corrupt_file_is_a_counted_miss);
    RUN(archive_off_reads_and_writes_nothing);
    RUN(an_unusable_folder_is_not_applied);
    RUN(variants_come_from_the_archive_too);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "--child"))
        return child_main(argv);
    g_backend = KILN_BACKEND_VULKAN;
    suite("vulkan");
    g_backend = KILN_BACKEND_MOCK;
    mockb_keep_compiled_code(false);
    suite("mock, pipeline caches keep a header only");
    mockb_keep_compiled_code(true);
    suite("mock, pipeline caches keep compiled code");
    return TEST_SUMMARY();
}
