/* SPDX-License-Identifier: MIT */
/*
 * kiln serve: a kiln server on a unix socket (kiln_server_*). Clients reach
 * it with KILN_REMOTE=unix:PATH or --remote PATH; SIGINT and SIGTERM end it
 * (every client's objects freed, the socket removed).
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "parse.h"

static kiln_server *serving;   /* for the signal handler */

static void on_signal(int sig)
{
    (void)sig;
    kiln_server_stop(serving);   /* async-signal-safe */
}

static void usage(FILE *f)
{
    fprintf(f, "usage: kiln serve [--socket PATH] [--allow-uid UID]... [--device SEL] [--backend NAME]\n"
               "                  [--max-objects N] [--max-bytes SIZE] [--max-compiles N]\n"
               "                  [--max-clients N] [--hello-timeout SECONDS]\n"
               "                  [--compile-timeout SECONDS] [--compile-max-bytes SIZE]\n"
               "\n"
               "Serves kiln contexts to other processes over a unix socket: one device, one compile\n"
               "service and one pipeline archive shared by every client, each client's objects its own\n"
               "and freed when it goes. Clients connect with KILN_REMOTE=unix:PATH (or kiln run/demo\n"
               "--remote PATH). Ends on SIGINT or SIGTERM.\n"
               "\n"
               "  --socket PATH      where to listen (default $XDG_RUNTIME_DIR/kiln/kiln.sock; made 0600)\n"
               "  --allow-uid UID    let this uid connect too (default: this process's uid only); needs\n"
               "                     --socket in a folder that uid can reach: the socket is then made 0666\n"
               "                     and the peer's credentials (SO_PEERCRED) admit only the uids named\n"
               "  --device SEL       the device, as KILN_DEVICE (an index or part of its name)\n"
               "  --backend NAME     vulkan (the default) or mock (for tests of kiln itself; --mock)\n"
               "  --max-objects N    objects one client may hold at once (default 65536)\n"
               "  --max-bytes SIZE   bytes of buffers and images one client may hold (default 16G)\n"
               "  --max-compiles N   programs one client may have compiling at once (default 256)\n"
               "  --max-clients N    clients served at once (default: from the descriptor limit, 4 a\n"
               "                     client after 64, at most 4096; %u here); one more is refused, told why\n"
               "  --hello-timeout S  seconds a connection may take to say hello and make its context\n"
               "                     (default 30); a client holding a context may idle\n"
               "  --compile-timeout S       one compile's time, for every client (KILN_COMPILE_TIMEOUT_S,\n"
               "                            default 60); past it the program fails with KILN_ERR_LIMIT\n"
               "  --compile-max-bytes SIZE  one compile's resident memory (KILN_COMPILE_MAX_BYTES,\n"
               "                            default 2G); a client's compiles stop when it goes\n"
               "\n"
               "Every limit is per client and refused before anything is allocated; a client past one gets\n"
               "KILN_ERR_LIMIT naming it, and the others never notice. docs/server.md has the threat model.\n",
            kiln_server_desc_defaults(NULL).max_clients);
}

static int bad(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "kiln serve: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    return 2;
}

int cmd_serve(int argc, char **argv)
{
    kiln_context_desc ctx = {0};
    kiln_server_desc d = {.context = &ctx};
    uint32_t uids[16];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--mock")) {
            ctx.backend = KILN_BACKEND_MOCK;
            continue;
        }
        if (i + 1 >= argc)
            return bad("%s needs a value%s", a, !strncmp(a, "--", 2) ? "" : " (unknown option)");
        const char *v = argv[++i];
        char why[PARSE_WHY_LEN];
        uint64_t n = 0;
        if (!strcmp(a, "--socket")) {
            d.socket_path = v;
        } else if (!strcmp(a, "--device")) {
            ctx.device = v;
        } else if (!strcmp(a, "--backend")) {
            ctx.backend = KILN_BACKEND_DEFAULT;
            for (int k = 1; k < 16 && ctx.backend == KILN_BACKEND_DEFAULT; k++)
                if (!strcmp(kiln_backend_name((kiln_backend_kind)k), v))
                    ctx.backend = (kiln_backend_kind)k;
            if (ctx.backend == KILN_BACKEND_DEFAULT) {
                char names[128] = "";
                for (int k = 1; k < 16; k++)
                    if (strcmp(kiln_backend_name((kiln_backend_kind)k), "unknown"))
                        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                                 kiln_backend_name((kiln_backend_kind)k));
                return bad("--backend '%s': kiln's backends are %s", v, names);
            }
        } else if (!strcmp(a, "--allow-uid")) {
            if (!parse_u64(v, &n, why) || n > UINT32_MAX)
                return bad("--allow-uid '%s': not a uid%s", v, "");
            if (d.allow_uid_count == sizeof uids / sizeof uids[0])
                return bad("--allow-uid: at most 16%s%s", "", "");
            uids[d.allow_uid_count++] = (uint32_t)n;
            d.allow_uids = uids;
        } else if (!strcmp(a, "--max-objects") || !strcmp(a, "--max-compiles") || !strcmp(a, "--max-clients")) {
            if (!parse_u64(v, &n, why) || !n || n > UINT32_MAX)
                return bad("%s '%s': want a count from 1", a, v);
            *(!strcmp(a, "--max-objects")    ? &d.max_objects
              : !strcmp(a, "--max-compiles") ? &d.max_compiles
                                             : &d.max_clients) = (uint32_t)n;
        } else if (!strcmp(a, "--compile-timeout")) {
            double sec;
            if (!parse_seconds(v, &sec, why) || sec <= 0)
                return bad("--compile-timeout '%s': want seconds above 0%s", v, "");
            setenv("KILN_COMPILE_TIMEOUT_S", v, 1);   /* read where the server's compile service is made */
        } else if (!strcmp(a, "--compile-max-bytes")) {
            if (!parse_size(v, &n, why) || !n)
                return bad("--compile-max-bytes '%s': want a size such as 2G%s", v, "");
            setenv("KILN_COMPILE_MAX_BYTES", v, 1);
        } else if (!strcmp(a, "--hello-timeout")) {
            double sec;
            if (!parse_seconds(v, &sec, why) || sec <= 0 || sec > 86400)
                return bad("--hello-timeout '%s': want seconds from 0.001 to 86400%s", v, "");
            d.hello_timeout_ms = (uint32_t)(sec * 1000 + 0.5) ? (uint32_t)(sec * 1000 + 0.5) : 1;
        } else if (!strcmp(a, "--max-bytes")) {
            if (!parse_size(v, &n, why) || !n)
                return bad("--max-bytes '%s': want a size such as 4G%s", v, "");
            d.max_bytes = n;
        } else {
            usage(stderr);
            return bad("unknown option '%s'%s", a, "");
        }
    }
    kiln_result r = kiln_server_create(&d, &serving);
    if (r != KILN_OK) {
        fprintf(stderr, "kiln serve: %s: %s\n", kiln_result_name(r), kiln_last_error());
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    printf("kiln serve: listening at unix:%s\n", kiln_server_socket_path(serving));
    fflush(stdout);
    r = kiln_server_run(serving);
    kiln_server_destroy(serving);
    if (r != KILN_OK) {
        fprintf(stderr, "kiln serve: %s: %s\n", kiln_result_name(r), kiln_last_error());
        return 1;
    }
    return 0;
}
