/*
 * test_archive_vk.c: the archive at work on lavapipe. A second context, and
 * a second process, get every front end from the archive (no SPIR-V
 * compiled) and compute right; a corrupt file in the folder is a counted
 * miss; KILN_ARCHIVE=0 reads and writes nothing; an unusable folder is not
 * applied and kiln goes on.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define PROGRAMS 5

static char root[64];

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
    if (test_context(&ctx) != KILN_OK) {
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
                                                                .binding_count = 1, .groups = {1}, .params = {7}},
                                      &n));
        CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
        CHECK_OK(kiln_buffer_readback(ctx, b, 0, v, sizeof v));
        int bad = 0;
        for (int k = 0; k < 64; k++)
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

TEST(a_second_context_gets_every_front_end_from_the_archive)
{
    kiln_context_stats first = run_programs();
    CHECK_EQ(first.archive_hits, 0);
    CHECK_EQ(first.archive_added, PROGRAMS);
    CHECK_EQ(count_files(root, ".arc"), 1);   /* the first run's run archive */
    kiln_context_stats second = run_programs();
    CHECK_EQ(second.archive_hits, PROGRAMS);
    CHECK_EQ(second.archive_added, 0);
    CHECK(second.front_end_seconds == 0.0);   /* no SPIR-V compiled */
    /* Pipelines come from the archive only where the driver keeps compiled
     * code in its pipeline caches; lavapipe keeps none (said once). */
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    test_context_done(ctx);
    if (strstr(caps.driver_name, "llvmpipe")) {
        CHECK_EQ(second.archive_pipeline_hits, 0);
        CHECK_EQ(first.archive_pipelines_added, 0);
    } else {
        CHECK_EQ(second.archive_pipeline_hits, PROGRAMS);
    }
    CHECK_EQ(count_files(root, ".tmp"), 0);
}

TEST(a_second_process_gets_them_too)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        kiln_context_stats st = run_programs();
        _exit(test_failures_ == 0 && st.archive_hits == PROGRAMS ? 0 : 1);
    }
    int ws;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

/* Precompile: a new context makes every archived program first; creating
 * them afterwards compiles nothing, and they compute right. */
TEST(precompile_makes_the_archived_programs_first)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
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
    CHECK_EQ(empty.archive_qa_compiles, PROGRAMS);
    setenv("KILN_ARCHIVE_DIR", root, 1);
    unsetenv("KILN_ARCHIVE_QA");
}

/* Four processes add different programs to one folder at once; then every
 * entry is there exactly once, and a fifth process finds them all. */
static kiln_context_stats run_offset(int offset, int count)
{
    kiln_context_stats st = {0};
    kiln_context ctx;
    if (test_context(&ctx) != KILN_OK)
        return st;
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
    fflush(stdout);
    fflush(stderr);
    for (int k = 0; k < 4; k++) {
        pids[k] = fork();
        REQUIRE(pids[k] >= 0);
        if (pids[k] == 0) {
            kiln_context_stats st = run_offset(100 + 10 * k, 6);
            _exit(test_failures_ == 0 && st.archive_added == 6 ? 0 : 1);
        }
    }
    for (int k = 0; k < 4; k++) {
        int ws;
        REQUIRE(waitpid(pids[k], &ws, 0) == pids[k]);
        CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_archive_info info;
    CHECK_OK(kiln_archive_info_get(ctx, &info));
    CHECK_EQ(info.file_count, 4);
    kiln_archive_file files[8];
    uint32_t count = 0;
    CHECK_OK(kiln_archive_files(ctx, 0, files, 8, &count));
    uint64_t entries = 0;
    for (uint32_t i = 0; i < count && i < 8; i++) {
        entries += files[i].entries;
        CHECK_EQ(files[i].corrupt, 0);
    }
    test_context_done(ctx);
    CHECK(entries == 4 * 6 || entries == 2 * 4 * 6);   /* front ends, and pipelines where the driver keeps them */
    uint64_t hits = 0;
    for (int k = 0; k < 4; k++)
        hits += run_offset(100 + 10 * k, 6).archive_hits;
    CHECK_EQ(hits, 4 * 6);
    setenv("KILN_ARCHIVE_DIR", root, 1);
}

TEST(read_only_folders_serve_and_are_never_written)
{
    /* A shipped archive: a copy of what this test's runs saved so far. */
    char ro[96], rw[96], cmd[512];
    snprintf(ro, sizeof ro, "%s/shipped", root);
    snprintf(rw, sizeof rw, "%s/writable", root);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp -r %s/llvmpipe* %s/ 2>/dev/null || cp -r %s/*-*-* %s/", ro, root, ro,
             root, ro);
    REQUIRE(system(cmd) == 0);
    int shipped = count_files(ro, ".arc");
    CHECK(shipped >= 1);
    setenv("KILN_ARCHIVE_READONLY", ro, 1);
    setenv("KILN_ARCHIVE_DIR", rw, 1);
    kiln_context_stats st = run_programs();
    CHECK_EQ(st.archive_hits, PROGRAMS);   /* from the read-only folder */
    CHECK_EQ(st.archive_added, 0);
    CHECK_EQ(count_files(ro, ".arc"), shipped);   /* never written */
    CHECK_EQ(count_files(rw, ".arc"), 0);
    unsetenv("KILN_ARCHIVE_READONLY");
    setenv("KILN_ARCHIVE_DIR", root, 1);
}

TEST(a_corrupt_file_is_a_counted_miss)
{
    /* Every archive file in the folder loses a byte in its middle. */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "for f in $(find %s -name '*.arc'); do s=$(stat -c %%s $f); printf 'X' | dd of=$f bs=1 seek=$((s/2)) "
             "conv=notrunc status=none; done",
             root);
    REQUIRE(system(cmd) == 0);
    kiln_context_stats st = run_programs();   /* still right: compiled again */
    CHECK(st.archive_hits < PROGRAMS);
    CHECK(st.archive_misses > 0);
    CHECK_EQ(st.archive_hits + st.archive_added, PROGRAMS);
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
    CHECK_EQ(st.programs_compiled, PROGRAMS);
}

/* A variant (specialization) an earlier process compiled comes from the
 * archive too: the second context compiles no SPIR-V at all. */
static kiln_context_stats run_specialized(void)
{
    kiln_context_stats st = {0};
    kiln_context ctx;
    if (kiln_context_create(&(kiln_context_desc){.specialization = 1}, &ctx) != KILN_OK) {
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
                                                    .binding_count = 1, .groups = {1}, .params = {5}},
                                  &n));
    int spec = 0;
    for (int i = 0; i < 2000 && !spec; i++) {
        CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
        CHECK_OK(kiln_context_wait_idle(ctx));
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
    CHECK_EQ(second.archive_hits, 2);
    CHECK_EQ(second.archive_added, 0);
    CHECK(second.front_end_seconds == 0.0);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/kiln-archive-XXXXXX");
    if (!mkdtemp(root))
        return 1;
    setenv("KILN_ARCHIVE", "1", 1);
    setenv("KILN_ARCHIVE_DIR", root, 1);
    /* Counts here are of programs: variants (specialization) would add
     * entries of their own. */
    setenv("KILN_SPECIALIZATION", "0", 1);
    RUN(a_second_context_gets_every_front_end_from_the_archive);
    RUN(a_second_process_gets_them_too);
    RUN(precompile_makes_the_archived_programs_first);
    RUN(qa_mode_names_compiles_the_archive_lacked);
    RUN(four_processes_add_to_one_folder_at_once);
    RUN(read_only_folders_serve_and_are_never_written);
    RUN(a_corrupt_file_is_a_counted_miss);
    RUN(archive_off_reads_and_writes_nothing);
    RUN(an_unusable_folder_is_not_applied);
    RUN(variants_come_from_the_archive_too);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return TEST_SUMMARY();
}
