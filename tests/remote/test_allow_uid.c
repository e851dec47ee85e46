/* SPDX-License-Identifier: MIT */
/*
 * test_allow_uid.c: a second uid reaches a server only as --allow-uid
 * says. The server (mock backend, on a thread here) admits uid 65534 and
 * listens at a socket of its own in a folder others may pass through; a
 * client process running as 65534 makes a context and a buffer there; one
 * running as 65533 is refused, told its uid and the ones admitted; and a
 * server without the list refuses 65534 the same way. It needs root (to
 * run clients as other uids): without it, it exits 77 (skipped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "remote/server_harness.h"

/* The client: a context at remote, a buffer in it; prints the error and
 * exits 1 when refused. */
static int as_client(const char *remote)
{
    kiln_context c;
    kiln_result r = kiln_context_create(&(kiln_context_desc){.remote = remote}, &c);
    if (r != KILN_OK) {
        printf("%s: %s\n", kiln_result_name(r), kiln_last_error());
        return 1;
    }
    kiln_buffer b;
    r = kiln_buffer_create(c, &(kiln_buffer_desc){.size = 64}, &b);
    kiln_context_destroy(c);
    return r == KILN_OK ? 0 : 2;
}

/* Runs the client as uid, its output into out; its exit status. */
static int client_as(uid_t uid, const char *remote, char *out, size_t cap)
{
    int p[2];
    if (pipe(p))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0 || setgroups(0, NULL) || setgid(uid) || setuid(uid))
            _exit(9);
        self[n] = 0;
        if (remote)
            execl(self, self, "--as-client", remote, (char *)NULL);
        else
            execl(self, self, "--probe", (char *)NULL);
        _exit(8);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < cap && (n = read(p[0], out + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = 0;
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(only_the_uids_allowed_connect)
{
    struct server s;
    REQUIRE(folder_make_as(&s, "/tmp/kiln-allow"));
    REQUIRE(chmod(s.dir, 0711) == 0);   /* others may pass through, not list */
    uint32_t allowed[] = {65534};
    REQUIRE_OK(server_start(&s, &(kiln_server_desc){.allow_uids = allowed, .allow_uid_count = 1,
                                                    .context = &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}}));
    struct stat st;
    CHECK(stat(s.path, &st) == 0 && (st.st_mode & 0777) == 0666);
    char out[1024];
    CHECK_EQ(client_as(65534, s.remote, out, sizeof out), 0);
    if (out[0])
        fprintf(stderr, "uid 65534: %s", out);
    CHECK_EQ(client_as(65533, s.remote, out, sizeof out), 1);
    CHECK(strstr(out, "refused the connection: uid 65533 may not use this server") != NULL);
    CHECK(strstr(out, "the uids --allow-uid names") != NULL);
    server_stop(&s);
    /* Without the list, the socket is 0600 and other uids cannot reach it. */
    REQUIRE_OK(server_start(&s, &(kiln_server_desc){.context = &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}}));
    CHECK(stat(s.path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK_EQ(client_as(65534, s.remote, out, sizeof out), 1);
    CHECK(strstr(out, "Permission denied") != NULL || strstr(out, "may not use this server") != NULL);
    server_stop(&s);
    /* The list needs a socket of its own: the default one is private. */
    kiln_server *ks = NULL;
    CHECK_RESULT(kiln_server_create(&(kiln_server_desc){.allow_uids = allowed, .allow_uid_count = 1,
                                                         .context = &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}},
                                    &ks),
                 KILN_ERR_INVALID);
    CHECK_MSG("needs --socket PATH");
    unlink(s.path);
    rmdir(s.dir);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--as-client"))
        return as_client(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "--probe"))
        return 0;
    if (getuid() != 0) {
        printf("SKIP: running clients as other uids needs root\n");
        return 77;
    }
    if (getenv("KILN_REMOTE"))
        unsetenv("KILN_REMOTE");
    signal(SIGPIPE, SIG_IGN);
    /* Another uid must be able to run this binary (its folders passable). */
    char out[256];
    if (client_as(65534, NULL, out, sizeof out) != 0) {
        printf("SKIP: uid 65534 cannot run %s (its folders are not open to others)\n", argv[0]);
        return 77;
    }
    RUN(only_the_uids_allowed_connect);
    return TEST_SUMMARY();
}
