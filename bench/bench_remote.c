/* SPDX-License-Identifier: MIT */
/*
 * bench_remote: what a call costs through a kiln server, side by side with
 * the same call in process, in one run (the machine is shared and noisy,
 * so each figure is a ratio of medians taken in alternating blocks):
 *
 *   1. kiln_scheme_submit of an N-node scheme (default 1000) and its ticket
 *      wait, remote against in process (goal: at most 1.05x);
 *   2. kiln_node_set_param on one node, then submit and wait, likewise
 *      (goal: at most 1.05x);
 *   3. kiln_node_set_param alone, a call that runs ahead remotely: per call,
 *      in blocks of 1000 (goal: at most 2 us remote);
 *   4. a 4 KiB upload alone, which runs ahead remotely (its bytes go
 *      inline in the record): per call, in blocks of 1000 (no goal of its
 *      own; it was a round trip before);
 *   5. an upload of M MiB (default 256) through the connection's memfd
 *      segment, against memcpy of as many bytes (the floor: one copy; goal
 *      at most 1.5x).
 *
 * The server is a child process (fork before any context exists) running
 * kiln_server_create and kiln_server_run on a socket in a fresh folder;
 * the remote context reaches it through kiln_context_desc.remote.
 *
 *   bench_remote [--nodes N] [--iters N] [--mib M] [--quick]
 */
#define _GNU_SOURCE
#define BENCH_NAME "bench_remote"
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define TARGET_SUBMIT 1.05
#define TARGET_PARAM_US 2.0
#define PARAM_BLOCK 1000
#define BLOCK 4   /* iterations of one side in a row */

static const char source[] = "#version 450\n"
                             "layout(local_size_x = 1) in;\n"
                             "layout(std430, binding = 0) buffer B { uint d[]; };\n"
                             "void main() { d[kiln_param(0)] += kiln_param(1); }\n";

struct side {
    const char *name;
    kiln_context ctx;
    kiln_program prog;
    kiln_buffer buf, spare;   /* spare: for uploads no node reads */
    kiln_scheme scheme;
    kiln_node *nodes;
    uint64_t stride;
};

static void side_init(struct side *s, const char *name, const char *remote, uint32_t nodes)
{
    s->name = name;
    /* Specialization off on both sides: its compiles would land at
     * different times in each and swap pipelines mid-measurement. */
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .specialization = -1, .remote = remote},
                               &s->ctx));
    kiln_caps caps;
    KCHECK(kiln_context_caps(s->ctx, &caps));
    uint64_t align = caps.min_storage_buffer_offset_alignment ? caps.min_storage_buffer_offset_alignment : 1;
    s->stride = (16 + align - 1) / align * align;
    KCHECK(kiln_program_create(s->ctx, &(kiln_program_desc){.source = source, .name = "bench.comp"}, &s->prog));
    KCHECK(kiln_program_wait(s->ctx, s->prog));
    KCHECK(kiln_buffer_create(s->ctx, &(kiln_buffer_desc){.size = s->stride * nodes, .label = "bench"}, &s->buf));
    KCHECK(kiln_buffer_create(s->ctx, &(kiln_buffer_desc){.size = 4096, .label = "spare"}, &s->spare));
    void *zero = calloc(nodes, s->stride);
    if (!zero)
        die("out of memory");
    KCHECK(kiln_buffer_upload(s->ctx, s->buf, 0, zero, s->stride * nodes));
    free(zero);
    KCHECK(kiln_scheme_create(s->ctx, &(kiln_scheme_desc){.label = "bench"}, &s->scheme));
    s->nodes = calloc(nodes, sizeof *s->nodes);
    if (!s->nodes)
        die("out of memory");
    for (uint32_t i = 0; i < nodes; i++) {
        uint32_t params[2] = {0, 1 + i % 7};
        kiln_binding b = {.binding = 0, .buffer = s->buf, .offset = s->stride * i, .size = s->stride};
        kiln_node_desc nd = {.program = s->prog, .bindings = &b, .binding_count = 1, .groups = {1, 1, 1},
                             .params = params, .param_count = 2};
        KCHECK(kiln_scheme_add_node(s->ctx, s->scheme, &nd, &s->nodes[i]));
    }
}

/* One submit and its wait; with set_param, node 0's addend changes first. */
static uint64_t once(struct side *s, bool set_param, uint32_t iter)
{
    uint64_t t0 = now_ns();
    if (set_param)
        KCHECK(kiln_node_set_param(s->ctx, s->nodes[0], 1, 1 + iter % 5));
    kiln_ticket t;
    KCHECK(kiln_scheme_submit(s->ctx, s->scheme, &t));
    KCHECK(kiln_ticket_wait(s->ctx, t, UINT64_MAX));
    return now_ns() - t0;
}

/* Alternating blocks of the two sides; returns remote/local of medians. */
static double compare(struct side *local, struct side *remote, bool set_param, uint32_t iters, const char *what)
{
    uint64_t *a = calloc(iters, sizeof *a), *b = calloc(iters, sizeof *b);
    if (!a || !b)
        die("out of memory");
    for (uint32_t w = 0; w < 2 * BLOCK; w++) {   /* warm: both sides recorded, caches hot */
        once(local, set_param, w);
        once(remote, set_param, w);
    }
    for (uint32_t i = 0; i < iters; i += BLOCK) {
        for (uint32_t k = i; k < i + BLOCK && k < iters; k++)
            a[k] = once(local, set_param, k);
        for (uint32_t k = i; k < i + BLOCK && k < iters; k++)
            b[k] = once(remote, set_param, k);
    }
    double l = bench_median(a, iters) / 1e3, r = bench_median(b, iters) / 1e3;
    printf("%-34s in process %9.1f us   remote %9.1f us   remote/in-process %.3fx\n", what, l, r, r / l);
    free(a);
    free(b);
    return r / l;
}

/* PARAM_BLOCK set_params on node 0 and the wait that settles them (its
 * time is not counted): ns per call. */
static uint64_t params_once(struct side *s, uint32_t iter)
{
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < PARAM_BLOCK; i++)
        KCHECK(kiln_node_set_param(s->ctx, s->nodes[0], 1, 1 + (iter + i) % 5));
    uint64_t t = now_ns() - t0;
    KCHECK(kiln_context_wait_idle(s->ctx));
    return t / PARAM_BLOCK;
}

/* Alternating blocks of set_param alone; returns the remote median, us. */
static double params_alone(struct side *local, struct side *remote, uint32_t rounds)
{
    uint64_t *a = calloc(rounds, sizeof *a), *b = calloc(rounds, sizeof *b);
    if (!a || !b)
        die("out of memory");
    params_once(local, 0);
    params_once(remote, 0);
    for (uint32_t i = 0; i < rounds; i++) {
        a[i] = params_once(local, i);
        b[i] = params_once(remote, i);
    }
    double l = bench_median(a, rounds) / 1e3, r = bench_median(b, rounds) / 1e3;
    printf("%-34s in process %9.3f us   remote %9.3f us   per call (goal remote at most %.1f us)\n",
           "set_param alone (runs ahead)", l, r, TARGET_PARAM_US);
    free(a);
    free(b);
    return r;
}

/* PARAM_BLOCK uploads of 4 KiB into the side's buffer and the wait that
 * settles them (its time is not counted): ns per call. */
static uint64_t uploads_once(struct side *s, uint32_t iter)
{
    static uint32_t words[1024];
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < PARAM_BLOCK; i++) {
        words[0] = iter + i;
        KCHECK(kiln_buffer_upload(s->ctx, s->spare, 0, words, sizeof words));
    }
    uint64_t t = now_ns() - t0;
    KCHECK(kiln_context_wait_idle(s->ctx));
    return t / PARAM_BLOCK;
}

static void uploads_alone(struct side *local, struct side *remote, uint32_t rounds)
{
    uint64_t *a = calloc(rounds, sizeof *a), *b = calloc(rounds, sizeof *b);
    if (!a || !b)
        die("out of memory");
    uploads_once(local, 0);
    uploads_once(remote, 0);
    for (uint32_t i = 0; i < rounds; i++) {
        a[i] = uploads_once(local, i);
        b[i] = uploads_once(remote, i);
    }
    double l = bench_median(a, rounds) / 1e3, r = bench_median(b, rounds) / 1e3;
    printf("%-34s in process %9.3f us   remote %9.3f us   per call\n", "4 KiB upload alone (runs ahead)", l, r);
    free(a);
    free(b);
}

/* The buffers hold what both sides computed alike. */
static void check_same(struct side *a, struct side *b, uint32_t nodes)
{
    size_t n = (size_t)a->stride * nodes;
    uint8_t *x = malloc(n), *y = malloc(n);
    if (!x || !y)
        die("out of memory");
    KCHECK(kiln_buffer_readback(a->ctx, a->buf, 0, x, n));
    KCHECK(kiln_buffer_readback(b->ctx, b->buf, 0, y, n));
    for (uint32_t i = 0; i < nodes; i++)
        if (memcmp(x + (size_t)a->stride * i, y + (size_t)b->stride * i, 4))
            die("node %u: in process and remote results differ", i);
    free(x);
    free(y);
}

static double upload_vs_memcpy(struct side *remote, uint64_t mib, uint32_t rounds)
{
    uint64_t bytes = mib << 20;
    uint8_t *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst)
        die("out of memory for %llu MiB twice", (unsigned long long)mib);
    for (uint64_t i = 0; i < bytes; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    memset(dst, 1, bytes);   /* touched: memcpy is not timed against first-touch page faults */
    kiln_buffer big;
    KCHECK(kiln_buffer_create(remote->ctx, &(kiln_buffer_desc){.size = bytes, .label = "upload"}, &big));
    KCHECK(kiln_buffer_upload(remote->ctx, big, 0, src, bytes));   /* warm: the segment made and mapped */
    uint64_t *up = calloc(rounds, sizeof *up), *cp = calloc(rounds, sizeof *cp);
    if (!up || !cp)
        die("out of memory");
    for (uint32_t i = 0; i < rounds; i++) {
        uint64_t t0 = now_ns();
        memcpy(dst, src, bytes);
        cp[i] = now_ns() - t0;
        t0 = now_ns();
        KCHECK(kiln_buffer_upload(remote->ctx, big, 0, src, bytes));
        up[i] = now_ns() - t0;
    }
    /* What arrived is what was sent. */
    KCHECK(kiln_buffer_readback(remote->ctx, big, 0, dst, bytes));
    if (memcmp(src, dst, bytes))
        die("the uploaded bytes read back differently");
    double u = bench_median(up, rounds) / 1e3, c = bench_median(cp, rounds) / 1e3;
    printf("upload %4llu MiB through the segment  memcpy %9.1f us   upload %9.1f us   upload/memcpy %.2fx "
           "(%.2f GB/s)\n", (unsigned long long)mib, c, u, u / c, bytes / (u * 1e3));
    KCHECK(kiln_buffer_destroy(remote->ctx, big));
    free(up);
    free(cp);
    free(src);
    free(dst);
    return u / c;
}

static void side_finish(struct side *s)
{
    KCHECK(kiln_scheme_destroy(s->ctx, s->scheme));
    KCHECK(kiln_context_destroy(s->ctx));
    free(s->nodes);
}

static kiln_server *serving;   /* the child's, for its SIGTERM handler */

static void on_term(int sig)
{
    (void)sig;
    kiln_server_stop(serving);
}

static pid_t start_server(char *remote, size_t cap, char *dir)
{
    if (!mkdtemp(dir))
        die("mkdtemp: %s", strerror(errno));
    snprintf(remote, cap, "unix:%s/kiln.sock", dir);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        kiln_context_desc cd = {.validation = -1};
        kiln_server_desc sd = {.socket_path = remote + 5, .context = &cd};
        if (kiln_server_create(&sd, &serving) != KILN_OK) {
            fprintf(stderr, BENCH_NAME ": server: %s\n", kiln_last_error());
            _exit(1);
        }
        struct sigaction sa = {.sa_handler = on_term};
        sigaction(SIGTERM, &sa, NULL);
        int rc = kiln_server_run(serving) == KILN_OK ? 0 : 1;
        kiln_server_destroy(serving);
        _exit(rc);
    }
    for (int i = 0; i < 3000; i++) {   /* the socket appears once the server's device is up */
        struct stat st;
        if (stat(remote + 5, &st) == 0)
            return pid;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            die("the server exited before it listened");
        usleep(10 * 1000);
    }
    die("the server did not listen within 30 s");
}

int main(int argc, char **argv)
{
    uint32_t nodes = 1000, iters = 200, rounds = 8;
    uint64_t mib = 256;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            nodes = (uint32_t)bench_parse_num("--nodes", argv[++i], 1, 100000);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = (uint32_t)bench_parse_num("--iters", argv[++i], BLOCK, 1000000);
        else if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = bench_parse_num("--mib", argv[++i], 2, 16384);
        else if (!strcmp(argv[i], "--quick")) {
            nodes = 50, iters = 8, rounds = 2, mib = 8;
        } else {
            fprintf(stderr, "usage: bench_remote [--nodes N] [--iters N] [--mib M] [--quick]\n");
            return 2;
        }
    }
    char remote[160], dir[] = "/tmp/kiln-bench-remote-XXXXXX";
    pid_t server = start_server(remote, sizeof remote, dir);
    struct side local, far;
    side_init(&local, "in process", "local", nodes);
    side_init(&far, "remote", remote, nodes);
    kiln_caps caps;
    KCHECK(kiln_context_caps(far.ctx, &caps));
    printf("bench_remote on %s: %u-node scheme, %u iterations a side, server pid %d at %s\n", caps.device_name,
           nodes, iters, (int)server, remote);
    double submit = compare(&local, &far, false, iters, "submit + wait");
    double param = compare(&local, &far, true, iters, "set_param + submit + wait");
    double alone = params_alone(&local, &far, rounds < 8 ? 8 : rounds);
    uploads_alone(&local, &far, rounds < 8 ? 8 : rounds);
    check_same(&local, &far, nodes);
    double up = upload_vs_memcpy(&far, mib, rounds);
    printf("goals: submit at most %.2fx: %s (%.3fx); set_param + submit at most %.2fx: %s (%.3fx); set_param alone "
           "at most %.1f us: %s (%.3f us); upload/memcpy at most 1.5x: %s (%.2fx)\n",
           TARGET_SUBMIT, submit <= TARGET_SUBMIT ? "met" : "missed", submit, TARGET_SUBMIT,
           param <= TARGET_SUBMIT ? "met" : "missed", param, TARGET_PARAM_US, alone <= TARGET_PARAM_US ? "met" : "missed",
           alone, up <= 1.5 ? "met" : "missed", up);
    side_finish(&far);
    side_finish(&local);
    kill(server, SIGTERM);
    int status = 0;
    waitpid(server, &status, 0);
    rmdir(dir);
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        die("the server did not end cleanly (status 0x%x)", status);
    return 0;
}
