/* SPDX-License-Identifier: MIT */
/*
 * test_settings.c: logs an application takes, and settings as desc fields
 * under one rule (kiln.h: the desc wins, its 0 or NULL leaves the choice
 * to the environment variable, then kiln's default). Logs: a callback
 * receives kiln's lines (whole, with their level) instead of stderr, a
 * level set in code wins over KILN_LOG, and KILN_LOG_DEFAULT gives the
 * choice back. Settings, each against its variable set the other way: the
 * archive on or off, its folder and read-only roots, staging copies, the
 * slow-compile bound (seen through the log callback). A context's trace
 * file, written at destroy.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static char seen[1 << 16];
static size_t seen_len;
static int seen_levels[5];

static void capture(kiln_log_level level, const char *message, void *user)
{
    (void)user;
    pthread_mutex_lock(&seen_lock);
    if (level >= KILN_LOG_ERROR && level <= KILN_LOG_DEBUG)
        seen_levels[level]++;
    int n = snprintf(seen + seen_len, sizeof seen - seen_len, "%d %s\n", (int)level, message);
    if (n > 0 && (size_t)n < sizeof seen - seen_len)
        seen_len += (size_t)n;
    pthread_mutex_unlock(&seen_lock);
}

static void seen_clear(void)
{
    pthread_mutex_lock(&seen_lock);
    seen_len = 0;
    seen[0] = 0;
    memset(seen_levels, 0, sizeof seen_levels);
    pthread_mutex_unlock(&seen_lock);
}

static bool seen_has(const char *needle)
{
    pthread_mutex_lock(&seen_lock);
    bool has = strstr(seen, needle) != NULL;
    pthread_mutex_unlock(&seen_lock);
    return has;
}

TEST(a_log_callback_takes_the_lines_at_the_level_set)
{
    kiln_set_log_callback(capture, NULL);
    kiln_set_log_level(KILN_LOG_INFO);
    CHECK_EQ(kiln_get_log_level(), KILN_LOG_INFO);
    seen_clear();
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    kiln_context_destroy(ctx);
    CHECK(seen_has("3 context closed: "));   /* info, whole, without kiln's stderr prefix */
    CHECK(!seen_has("kiln: info:"));
    /* Errors only: the same run says nothing. */
    kiln_set_log_level(KILN_LOG_ERROR);
    seen_clear();
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    kiln_context_destroy(ctx);
    CHECK_EQ(seen_len, 0);
    /* Back to KILN_LOG (warn where it is unset, as in the tests). */
    kiln_set_log_level(KILN_LOG_DEFAULT);
    const char *env = getenv("KILN_LOG");
    if (!env || !*env)
        CHECK_EQ(kiln_get_log_level(), KILN_LOG_WARN);
    kiln_set_log_callback(NULL, NULL);
}

/* The slow-compile bound from the desc: every compile is slow past a
 * nanosecond, and the callback hears of it (a warning); KILN_SLOW_COMPILE_S
 * set far above does not win. */
TEST(compile_settings_from_the_desc_win_over_the_environment)
{
    setenv("KILN_SLOW_COMPILE_S", "1000", 1);
    kiln_set_log_callback(capture, NULL);
    seen_clear();
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.slow_compile_s = 1e-9, .compile_threads = 1}, &ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx,
                                   &(kiln_program_desc){.source = "#version 450\nlayout(local_size_x = 1) in;\n"
                                                                  "void main() {}\n",
                                                        .name = "slowish.comp"},
                                   &p));
    CHECK_OK(kiln_program_wait(ctx, p));
    kiln_context_destroy(ctx);
    CHECK(seen_has("compile: slow"));
    CHECK(seen_has("slowish.comp"));
    kiln_set_log_callback(NULL, NULL);
    unsetenv("KILN_SLOW_COMPILE_S");
}

static char *temp_dir(const char *tag)
{
    char *d = malloc(256);
    snprintf(d, 256, "%s/kiln-settings-%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tag);
    return mkdtemp(d) ? d : NULL;
}

TEST(archive_settings_from_the_desc_win_over_the_environment)
{
    char *env_dir = temp_dir("env"), *desc_dir = temp_dir("desc");
    REQUIRE(env_dir && desc_dir);
    setenv("KILN_ARCHIVE", "0", 1);
    setenv("KILN_ARCHIVE_DIR", env_dir, 1);
    kiln_context ctx;
    kiln_archive_info info;
    /* On by the desc, in the desc's folder, though the variables say off
     * and elsewhere. */
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.archive = 1, .archive_dir = desc_dir}, &ctx));
    REQUIRE_OK(kiln_archive_info_get(ctx, &info));
    CHECK_EQ(info.enabled, 1);
    CHECK(!strncmp(info.dir, desc_dir, strlen(desc_dir)));
    kiln_context_destroy(ctx);
    /* Left 0: the variables decide (off). */
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.archive_dir = desc_dir}, &ctx));
    REQUIRE_OK(kiln_archive_info_get(ctx, &info));
    CHECK_EQ(info.enabled, 0);
    kiln_context_destroy(ctx);
    /* Off by the desc though the variable says on; on by the variable in
     * its folder when the desc gives none. */
    setenv("KILN_ARCHIVE", "1", 1);
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.archive = -1}, &ctx));
    REQUIRE_OK(kiln_archive_info_get(ctx, &info));
    CHECK_EQ(info.enabled, 0);
    kiln_context_destroy(ctx);
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){0}, &ctx));
    REQUIRE_OK(kiln_archive_info_get(ctx, &info));
    CHECK(info.enabled == 1 && !strncmp(info.dir, env_dir, strlen(env_dir)));
    kiln_context_destroy(ctx);
    /* Read-only roots: "" in the desc means none, whatever the variable
     * names (a folder that does not exist would be logged and skipped). */
    setenv("KILN_ARCHIVE_READONLY", "/nonexistent/kiln-roots", 1);
    kiln_set_log_callback(capture, NULL);
    kiln_set_log_level(KILN_LOG_INFO);
    seen_clear();
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.archive_readonly = ""}, &ctx));
    kiln_context_destroy(ctx);
    CHECK(!seen_has("/nonexistent/kiln-roots"));
    kiln_set_log_level(KILN_LOG_DEFAULT);
    kiln_set_log_callback(NULL, NULL);
    unsetenv("KILN_ARCHIVE_READONLY");
    unsetenv("KILN_ARCHIVE_DIR");
    setenv("KILN_ARCHIVE", "0", 1);   /* as CTest runs every test */
    free(env_dir);
    free(desc_dir);
}

TEST(staging_from_the_desc)
{
    kiln_context ctx;
    kiln_caps caps;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){0}, &ctx));
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    int unified = caps.unified_memory;
    kiln_context_destroy(ctx);
    if (!unified)
        return;   /* a device with separate memory stages anyway */
    setenv("KILN_FORCE_STAGING", "0", 1);
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.force_staging = 1}, &ctx));
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    CHECK_EQ(caps.unified_memory, 0);
    /* And it still moves bytes right through the staging copies. */
    kiln_buffer b;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64}, &b));
    uint8_t in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = (uint8_t)(i * 7);
    CHECK_OK(kiln_buffer_upload(ctx, b, 0, in, 64));
    CHECK_OK(kiln_buffer_readback(ctx, b, 0, out, 64));
    CHECK(!memcmp(in, out, 64));
    test_context_done(ctx);
    unsetenv("KILN_FORCE_STAGING");
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 20];
    *len = fread(buf, 1, sizeof buf - 1, f);
    buf[*len] = 0;
    fclose(f);
    return buf;
}

/* A traced context: a program compiled on a worker's track, a submit, its
 * device span once waited for, a specialization event, all in one JSON
 * object whose brackets balance; strings with quotes in them escaped. */
TEST(a_trace_of_a_context_is_written_at_destroy)
{
    char *dir = temp_dir("trace");
    REQUIRE(dir);
    char path[512];
    snprintf(path, sizeof path, "%s/run.json", dir);
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.trace_path = path, .specialization = 1}, &ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx,
                                   &(kiln_program_desc){.source = "#version 450\nlayout(local_size_x = 64) in;\n"
                                                                  "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                                                                  "void main() { d[gl_GlobalInvocationID.x] += "
                                                                  "kiln_param(0); }\n",
                                                        .name = "say \"hi\".comp"},
                                   &p));
    kiln_buffer b;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &b));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "traced"}, &s));
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.buffer = b},
                                                      .binding_count = 1, .groups = {1},
                                                      .params = (const uint32_t[]){7}, .param_count = 1},
                                    &n));
    for (int f = 0; f < 12; f++) {
        kiln_ticket t;
        REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
        REQUIRE_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
        uint32_t pending = 1;
        for (int w = 0; w < 5000 && pending; w++) {   /* a variant's compile lands (at most 5 s) */
            CHECK_OK(kiln_compiles_pending(ctx, &pending));
            if (pending)
                usleep(1000);
        }
    }
    FILE *probe = fopen(path, "r");
    CHECK(probe == NULL);   /* written at destroy, not before */
    if (probe)
        fclose(probe);
    test_context_done(ctx);
    size_t len = 0;
    char *json = slurp(path, &len);
    REQUIRE(json);
    CHECK(!strncmp(json, "{\"traceEvents\":[", 16));
    CHECK(len > 2 && json[len - 2] == '}' && json[len - 1] == '\n');
    int depth = 0, worst = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = json[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            depth--;
        worst = depth < worst ? depth : worst;
    }
    CHECK(depth == 0 && worst == 0 && !in_string);
    CHECK(strstr(json, "\"cat\":\"compile\",\"name\":\"front end\""));
    CHECK(strstr(json, "\"cat\":\"compile\",\"name\":\"back end\""));
    CHECK(strstr(json, "say \\\"hi\\\".comp"));   /* escaped */
    CHECK(strstr(json, "\"cat\":\"submit\""));
    CHECK(strstr(json, "\"cat\":\"device\""));
    CHECK(strstr(json, "scheme 'traced'"));
    CHECK(strstr(json, "\"cat\":\"specialization\",\"name\":\"warm\""));
    CHECK(strstr(json, "\"thread_name\",\"args\":{\"name\":\"compile worker 0\"}"));
    unlink(path);
    rmdir(dir);
    free(dir);
}

int main(void)
{
    TEST_LOCAL_ONLY("it checks the local rules for a context's own device, archive, trace and log settings; a remote context's are the server's");
    RUN(a_log_callback_takes_the_lines_at_the_level_set);
    RUN(compile_settings_from_the_desc_win_over_the_environment);
    RUN(archive_settings_from_the_desc_win_over_the_environment);
    RUN(staging_from_the_desc);
    RUN(a_trace_of_a_context_is_written_at_destroy);
    return TEST_SUMMARY();
}
