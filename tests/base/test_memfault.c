/* SPDX-License-Identifier: MIT */
/*
 * test_memfault.c: kiln out of host memory. Every allocation kiln makes
 * itself goes through mem_alloc/mem_calloc/mem_realloc; mem_fault_arm(n)
 * makes the n-th one from now and every later one fail. A whole use of the
 * library (a context; a program and a twin sharing its compile; buffers and
 * an upload; a scheme and a node; submits until the predictor's variant is
 * made and promoted, a new word, a ticket wait, a readback; destroys) is
 * run for n = 1, 2, 3, ...
 * until a run meets no injected failure. At each n:
 *   - every call succeeds or returns KILN_ERR_NO_MEMORY, and then its
 *     message says "out of host memory <for/making/... what>";
 *   - a NO_MEMORY never comes without an injected failure (mem_fault_hits);
 *   - the run stops at the first failure and destroys everything it made,
 *     with memory still failing (destroy must not need memory);
 *   - a run whose calls all succeeded computed the right values (a failure
 *     on a compile worker, in speculative work, is a counted miss);
 *   - nothing crashes, hangs or leaks (the ASan build checks the leaks at
 *     exit); after disarming, a plain run works.
 * The compile service's workers allocate too, so the failing allocation may
 * be a worker's: a program whose compile could not allocate fails with
 * KILN_ERR_NO_MEMORY from kiln_program_wait.
 *
 * Four runs: the mock backend and lavapipe (validation on), each with the
 * archive off (every program compiled) and on, in a folder of its own (later
 * runs take the program from the archive an earlier run saved). Every n is
 * stepped: a whole use makes about 100 allocations of kiln's own (the
 * driver's and the compiler's do not count), so the four take about 15 s
 * under ASan. On lavapipe the validation layer is on at every 8th n. The mock half is also run alone (argument "mock") by the TSan
 * suite.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "test.h"

#define COUNT 256
#define SUBMITS 3
#define MAX_N 100000

/* The program includes a file (from an include folder) and reads a define:
 * b[i] = a[i] * word 0 + OFFSET. */
static const char *k_src = "#version 450\n"
                           "#extension GL_GOOGLE_include_directive : require\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                           "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                           "#include \"memfault.h\"\n"
                           "void main() { uint i = gl_GlobalInvocationID.x; b[i] = scale(a[i]); }\n";
static const char *k_header = "uint scale(uint v) { return v * kiln_param(0) + OFFSET; }\n";
static char inc_dir[64];

struct plan {
    const char *name;
    kiln_backend_kind backend;
    /* The validation layer (as KILN_VALIDATION says) at every k-th n, at
     * the first 16 (context creation, which looks the layer up) and in clean
     * runs, off in the others: the layer keeps bytes of its own for every
     * instance made (tests/lsan.supp), and hundreds of instances make the
     * leak check slow and its suppression fragile. 0: always. */
    uint64_t validate_every;
};

/* What one run did. */
struct outcome {
    const char *stopped_at;      /* the call that failed, NULL if none did */
    uint64_t hits;               /* allocations made to fail */
    int right;                   /* every call succeeded and the values read back are right */
};

static int oom_ok(const char *call, kiln_result r, uint64_t n)
{
    const char *msg = kiln_last_error();
    if (r != KILN_ERR_NO_MEMORY) {
        test_failures_++;
        fprintf(stderr, "n=%llu: %s: %s (%s), expected KILN_OK or KILN_ERR_NO_MEMORY\n", (unsigned long long)n, call,
                kiln_result_name(r), msg);
        return 0;
    }
    if (!mem_fault_hits()) {
        test_failures_++;
        fprintf(stderr, "n=%llu: %s: KILN_ERR_NO_MEMORY with no allocation failed (%s)\n", (unsigned long long)n,
                call, msg);
        return 0;
    }
    /* "out of host memory" and then what could not be allocated. */
    const char *at = strstr(msg, "out of host memory ");
    if (!at || strlen(at) < sizeof "out of host memory " + 3) {
        test_failures_++;
        fprintf(stderr, "n=%llu: %s: message does not name what could not be allocated: '%s'\n",
                (unsigned long long)n, call, msg);
        return 0;
    }
    return 1;
}

#define STEP(call)                                                                                 \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK) {                                                                       \
            oom_ok(#call, r_, n);                                                                  \
            o->stopped_at = #call;                                                                 \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* Polls until the context's compiles (variants too) are done, at most 20 s. */
static kiln_result compiles_done(kiln_context ctx)
{
    for (int i = 0; i < 20000; i++) {
        uint32_t pending;
        KILN_TRY(kiln_compiles_pending(ctx, &pending));
        if (!pending)
            return KILN_OK;
        usleep(1000);
    }
    return KILN_OK;
}

/* One whole use of kiln with the n-th allocation and every later one
 * failing (n = 0: none fails). */
static void run(const struct plan *pl, uint64_t n, struct outcome *o)
{
    *o = (struct outcome){0};
    uint32_t in[COUNT], out[COUNT];
    for (uint32_t i = 0; i < COUNT; i++) {
        in[i] = i * 3 + 1;
        out[i] = 0xdeadbeef;
    }
    kiln_context ctx = {0};
    kiln_program prog, twin = {0};
    const char *dirs[] = {inc_dir};
    kiln_define defs[] = {{"OFFSET", "1u"}};
    kiln_program_desc pd = {.source = k_src, .name = "memfault.comp", .defines = defs, .define_count = 1,
                            .include_dirs = dirs, .include_dir_count = 1};
    int archive = env_flag("KILN_ARCHIVE", 1);
    kiln_buffer a, b;
    kiln_scheme s = {0};
    kiln_node node;
    kiln_ticket t = {0};
    mem_fault_arm(n);
    int validate = n <= 16 || !pl->validate_every || n % pl->validate_every == 0;
    STEP(kiln_context_create(
        &(kiln_context_desc){.backend = pl->backend, .compile_threads = 2, .validation = validate ? 0 : -1}, &ctx));
    if (archive)   /* makes what earlier runs archived */
        STEP(kiln_context_precompile(ctx, &(kiln_precompile_desc){.stall_s = 20}, NULL));
    STEP(kiln_program_create(ctx, &pd, &prog));
    /* The same program under another name shares the compile. */
    pd.name = "twin.comp";
    STEP(kiln_program_create(ctx, &pd, &twin));
    STEP(kiln_program_wait(ctx, prog));
    STEP(kiln_program_wait(ctx, twin));
    STEP(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof in, .label = "in"}, &a));
    STEP(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof out, .label = "out"}, &b));
    STEP(kiln_buffer_upload(ctx, a, 0, in, sizeof in));
    STEP(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "memfault"}, &s));
    kiln_binding bind[2] = {{.binding = 0, .buffer = a}, {.binding = 1, .buffer = b}};
    STEP(kiln_scheme_add_node(ctx, s,
                              &(kiln_node_desc){.program = prog, .bindings = bind, .binding_count = 2,
                                                .groups = {COUNT / 64}, .params = (const uint32_t[KILN_PARAM_WORDS]){5}, .param_count = KILN_PARAM_WORDS},
                              &node));
    /* The same word at every submit: the predictor warms a variant (a
     * background compile) and, once it is made, promotes it; a new word
     * then demotes it. */
    for (int i = 0; i < SUBMITS; i++)
        STEP(kiln_scheme_submit(ctx, s, &t));
    STEP(compiles_done(ctx));
    for (int i = 0; i < 2; i++)
        STEP(kiln_scheme_submit(ctx, s, &t));
    STEP(kiln_node_set_param(ctx, node, 0, 7));
    STEP(kiln_scheme_submit(ctx, s, &t));
    STEP(kiln_node_set_program(ctx, node, twin));
    STEP(kiln_scheme_submit(ctx, s, &t));
    STEP(kiln_ticket_wait(ctx, t, 60ull * 1000 * 1000 * 1000));
    STEP(kiln_buffer_readback(ctx, b, 0, out, sizeof out));
    STEP(kiln_scheme_destroy(ctx, s));
    s.id = 0;
    STEP(kiln_program_destroy(ctx, twin));
    STEP(kiln_buffer_destroy(ctx, a));
    if (archive) {
        kiln_archive_tidy_result tr;
        STEP(kiln_archive_tidy(ctx, &(kiln_archive_tidy_desc){.compact = 1, .gc = 1}, &tr));
    }
    o->right = 1;
    if (pl->backend == KILN_BACKEND_VULKAN)
        for (uint32_t i = 0; i < COUNT; i++)
            o->right &= out[i] == in[i] * 7 + 1;
done:
    /* Destroys run with memory still failing; the context frees what the
     * run left (the program, a buffer, or more after a failure). */
    if (s.id)
        CHECK_OK(kiln_scheme_destroy(ctx, s));
    if (ctx.id) {
        if (o->right && validate)
            test_context_done(ctx);   /* no validation errors */
        else
            CHECK_OK(kiln_context_destroy(ctx));
    }
    o->hits = mem_fault_hits();
    mem_fault_arm(0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Steps n from 1 (every `stride` once past `full`) until a run meets no
 * injected failure, with a run with none injected after every
 * `clean_every`-th n (0: none); returns that n. */
static uint64_t step_all(const struct plan *pl, uint64_t full, uint64_t stride, uint64_t clean_every)
{
    double t0 = now_s();
    int failures_before = test_failures_;
    uint64_t n = 1, runs = 0, stops = 0;
    for (; n < MAX_N; n += n < full ? 1 : stride) {
        struct outcome o;
        run(pl, n, &o);
        runs++;
        if (getenv("KILN_MEMFAULT_VERBOSE"))
            fprintf(stderr, "%s n=%llu: %s, %llu failed\n", pl->name, (unsigned long long)n,
                    o.stopped_at ? o.stopped_at : "completed", (unsigned long long)o.hits);
        if (!o.stopped_at && !o.right) {
            test_failures_++;
            fprintf(stderr, "%s n=%llu: every call succeeded but the values read back are wrong\n", pl->name,
                    (unsigned long long)n);
        }
        stops += o.stopped_at != NULL;
        if (o.hits == 0) {
            if (o.stopped_at) {
                test_failures_++;
                fprintf(stderr, "%s n=%llu: %s failed with no allocation failed\n", pl->name,
                        (unsigned long long)n, o.stopped_at);
            }
            break;
        }
        if (clean_every && n % clean_every == 0) {
            run(pl, 0, &o);
            if (o.stopped_at || !o.right) {
                test_failures_++;
                fprintf(stderr, "%s: after n=%llu, a run with no failure injected failed at %s: %s\n", pl->name,
                        (unsigned long long)n, o.stopped_at ? o.stopped_at : "readback", kiln_last_error());
            }
        }
        if (test_failures_ - failures_before > 20)
            break;   /* enough said */
    }
    struct outcome o;
    run(pl, 0, &o);
    CHECK(o.stopped_at == NULL && o.right);
    printf("%s: n reached %llu (%llu runs, %llu stopped by a failed allocation), %.1f s\n", pl->name,
           (unsigned long long)n, (unsigned long long)runs, (unsigned long long)stops, now_s() - t0);
    CHECK(n < MAX_N);
    return n;
}

/* Runs step_all with the archive on, in a folder of its own: later runs
 * find the programs an earlier one archived (another path, also stepped). */
static uint64_t with_archive(const struct plan *pl, uint64_t full, uint64_t stride, uint64_t clean_every)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/kiln-memfault-XXXXXX");
    if (!mkdtemp(dir)) {
        test_failures_++;
        fprintf(stderr, "mkdtemp: cannot make a folder in /tmp\n");
        return 0;
    }
    setenv("KILN_ARCHIVE", "1", 1);
    setenv("KILN_ARCHIVE_DIR", dir, 1);
    uint64_t n = step_all(pl, full, stride, clean_every);
    setenv("KILN_ARCHIVE", "0", 1);
    unsetenv("KILN_ARCHIVE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return n;
}

/* The mock: every n, with a clean run after each. */
TEST(mock_compiling)
{
    step_all(&(struct plan){"mock", KILN_BACKEND_MOCK, 0}, MAX_N, 1, 1);
}

TEST(mock_with_archive)
{
    with_archive(&(struct plan){"mock+archive", KILN_BACKEND_MOCK, 0}, MAX_N, 1, 1);
}

/* lavapipe: every n (KILN_MEMFAULT_STRIDE=k: every k-th), with a clean run
 * after every 8th. */
TEST(vulkan_compiling)
{
    uint64_t stride = env_u64("KILN_MEMFAULT_STRIDE", 1);
    step_all(&(struct plan){"vulkan", KILN_BACKEND_VULKAN, 8}, 0, stride ? stride : 1, 8);
}

TEST(vulkan_with_archive)
{
    uint64_t stride = env_u64("KILN_MEMFAULT_STRIDE", 1);
    with_archive(&(struct plan){"vulkan+archive", KILN_BACKEND_VULKAN, 8}, 0, stride ? stride : 1, 0);
}

/* An argument (mock or vulkan) runs those tests alone. */
int main(int argc, char **argv)
{
    TEST_LOCAL_ONLY("it injects allocation failures into this process's runtime");
    /* Front ends compiled in this process, where the injected failures
     * reach them (in kiln-front, the helper, they would not). */
    setenv("KILN_COMPILE_HELPER", "0", 1);
    const char *only = argc > 1 ? argv[1] : "";
    snprintf(inc_dir, sizeof inc_dir, "/tmp/kiln-memfault-inc-XXXXXX");
    char header[128];
    snprintf(header, sizeof header, "%s/memfault.h", mkdtemp(inc_dir) ? inc_dir : "/nonexistent");
    FILE *f = fopen(header, "w");
    if (!f || fputs(k_header, f) < 0 || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", header);
        return 1;
    }
    if (!*only || !strcmp(only, "mock")) {
        RUN(mock_compiling);
        RUN(mock_with_archive);
    }
    if (!*only || !strcmp(only, "vulkan")) {
        RUN(vulkan_compiling);
        RUN(vulkan_with_archive);
    }
    remove(header);
    rmdir(inc_dir);
    return TEST_SUMMARY();
}
