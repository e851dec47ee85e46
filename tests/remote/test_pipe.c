/* SPDX-License-Identifier: MIT */
/*
 * test_pipe.c: the wire as a hostile or broken client meets it. Requests
 * are built by hand from pipe.h's structs and fed to the applier of a
 * server on the mock backend (srv_client_open, srv_apply), as a worker
 * feeds them from a socket: a record naming another client's handle is
 * refused with KILN_ERR_HANDLE and leaves that client's object as it was;
 * an unknown call, a tail shorter than a string says, a call before the
 * context are refused with their reason and the connection goes on; a
 * broken head (a wrong record size, a short head) ends it, saying
 * "protocol mismatch". Also pins the catalogue's order (a row's position
 * is its opcode) and the counters' JSON names.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/pool.h"
#include "pipe/pipe.h"
#include "remote/remote.h"
#include "test.h"

/* One client of the server, and its last reply taken apart. */
struct conn {
    struct srv_client *cl;
    uint64_t seq;
    struct bytes rep;
    kiln_result result;
    char msg[4200];
    const uint8_t *out;
    size_t out_len;
    bool go_on;
};

static const char *k_src = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] += kiln_param(0); }\n";

static kiln_result server(struct srv **s)
{
    kiln_context_desc cd = {.backend = KILN_BACKEND_MOCK, .archive = -1, .specialization = -1};
    return srv_create(&(kiln_server_desc){.context = &cd}, s);
}

/* Sends frame (len bytes) and takes the reply apart. The reply must be
 * whole, and echo the request's op and seq when the request had a head:
 * a reply that is not fails the test and reads as KILN_ERR_UNKNOWN. */
static kiln_result send_frame(struct conn *c, const void *frame, size_t len)
{
    c->go_on = srv_apply(c->cl, frame, len, &c->rep);
    struct pipe_rep rep = {0};
    c->result = (kiln_result)-100;
    c->msg[0] = 0;
    c->out = NULL;
    c->out_len = 0;
    CHECK(c->rep.len >= sizeof rep);
    if (c->rep.len < sizeof rep)
        return c->result;
    memcpy(&rep, c->rep.p, sizeof rep);
    CHECK_EQ(sizeof rep + rep.msg_size + rep.out_size, c->rep.len);
    if (len >= sizeof(struct pipe_req)) {
        struct pipe_req req;
        memcpy(&req, frame, sizeof req);
        CHECK_EQ(rep.op, req.op);
        CHECK_EQ(rep.seq, req.seq);
    }
    if (sizeof rep + rep.msg_size + rep.out_size != c->rep.len || rep.msg_size >= sizeof c->msg)
        return c->result;
    memcpy(c->msg, c->rep.p + sizeof rep, rep.msg_size);
    c->msg[rep.msg_size] = 0;
    c->out = c->rep.p + sizeof rep + rep.msg_size;
    c->out_len = rep.out_size;
    c->result = (kiln_result)rep.result;
    return c->result;
}

/* A request of op with the record and tail given (rec_size as given, so
 * a broken request may lie about it). */
static kiln_result send_req(struct conn *c, uint32_t op, const void *rec, uint32_t rec_size, const void *tail,
                            size_t tail_size)
{
    struct pipe_req head = {.op = op, .rec_size = rec_size, .tail_size = (uint32_t)tail_size, .seq = ++c->seq};
    struct bytes f = {0};
    bytes_put(&f, &head, sizeof head);
    bytes_put(&f, rec, rec_size);
    bytes_put(&f, tail, tail_size);
    kiln_result r = f.oom ? (kiln_result)-100 : send_frame(c, f.p, f.len);
    CHECK(!f.oom);
    free(f.p);
    return r;
}

static kiln_result call(struct conn *c, uint32_t op, const void *rec, uint32_t rec_size, const struct bytes *tail)
{
    return send_req(c, op, rec, rec_size, tail ? tail->p : NULL, tail ? tail->len : 0);
}
#define CALL(c, op, rec, tail) call((c), PIPE_OP_##op, &(rec), sizeof(rec), (tail))

/* The message of the last reply mentions needle. */
#define CHECK_REPLY(c, needle)                                                                     \
    do {                                                                                           \
        if (!strstr((c)->msg, (needle))) {                                                         \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: reply '%s' lacks '%s'\n", __FILE__, __LINE__, test_name_,  \
                    (c)->msg, (needle));                                                           \
        }                                                                                          \
    } while (0)

static kiln_result open_conn(struct srv *s, struct conn *c)
{
    *c = (struct conn){0};
    return srv_client_open(s, NULL, NULL, &c->cl);
}

static void close_conn(struct conn *c)
{
    srv_client_close(c->cl);
    free(c->rep.p);
    *c = (struct conn){0};
}

static kiln_result context_create(struct conn *c)
{
    struct pipe_rec_context rec = {.specialization = -1, .version = PIPE_VERSION};
    struct bytes t = {0};
    for (int i = 0; i < 4; i++)
        pipe_put_str(&t, NULL, 0);
    kiln_result r = CALL(c, context_create, rec, &t);
    free(t.p);
    return r;
}

/* The id a create call answered with (0 when it answered otherwise). */
/* A made object's id: its answer (a node's, struct pipe_node_made, starts
 * with it). */
static uint64_t out_id(const struct conn *c)
{
    uint64_t id = 0;
    if (c->result == KILN_OK && (c->out_len == sizeof id || c->out_len == sizeof(struct pipe_node_made)))
        memcpy(&id, c->out, sizeof id);
    return id;
}

static uint64_t buffer_create(struct conn *c, uint64_t size)
{
    struct bytes t = {0};
    pipe_put_str(&t, "mine", SIZE_MAX);
    struct pipe_rec_buffer rec = {.size = size, .label_len = (uint32_t)t.len};
    CALL(c, buffer_create, rec, &t);
    free(t.p);
    return out_id(c);
}

static kiln_result upload(struct conn *c, uint64_t id, const void *data, uint64_t size)
{
    struct pipe_rec_range rec = {.id = id, .size = size};
    return send_req(c, PIPE_OP_buffer_upload, &rec, sizeof rec, data, size);
}

static kiln_result readback(struct conn *c, uint64_t id, void *data, uint64_t size)
{
    struct pipe_rec_range rec = {.id = id, .size = size};
    kiln_result r = CALL(c, buffer_readback, rec, NULL);
    if (r == KILN_OK && c->out_len == size)
        memcpy(data, c->out, size);
    else if (r == KILN_OK)
        r = (kiln_result)-100;
    return r;
}

/* A node of program prog in scheme, binding buffer at 0. */
static kiln_result add_node(struct conn *c, uint64_t scheme, uint64_t prog, uint64_t buffer)
{
    kiln_binding b = {.binding = 0, .buffer = {buffer}};
    uint32_t param = 1;
    struct bytes t = {0};
    bytes_put(&t, &b, sizeof b);
    bytes_put(&t, &param, sizeof param);
    pipe_put_str(&t, NULL, 0);
    struct pipe_rec_node rec = {.scheme = scheme, .program = prog, .groups = {1, 1, 1}, .binding_count = 1,
                                .param_count = 1};
    kiln_result r = CALL(c, scheme_add_node, rec, &t);
    free(t.p);
    return r;
}

/* A program and a scheme of c's, the program compiled. */
static kiln_result program_and_scheme(struct conn *c, uint64_t *prog, uint64_t *scheme)
{
    struct bytes t = {0};
    pipe_put_str(&t, k_src, SIZE_MAX);
    pipe_put_str(&t, "add.comp", SIZE_MAX);
    pipe_put_str(&t, NULL, 0);
    pipe_put_str(&t, NULL, 0);   /* no preamble */
    bytes_put_u32(&t, 0);   /* no included files */
    struct pipe_rec_program pr = {.source_len = (uint32_t)strlen(k_src), .name_len = 8};
    kiln_result r = CALL(c, program_create, pr, &t);
    *prog = out_id(c);
    t.len = 0;
    if (r == KILN_OK) {
        struct pipe_rec_handle w = {*prog};
        r = CALL(c, program_wait, w, NULL);
    }
    if (r == KILN_OK) {
        pipe_put_str(&t, "s", SIZE_MAX);
        struct pipe_rec_scheme sr = {.label_len = (uint32_t)t.len};
        r = CALL(c, scheme_create, sr, &t);
        *scheme = out_id(c);
    }
    free(t.p);
    return r;
}

TEST(foreign_handles_refused)
{
    struct srv *s;
    REQUIRE_OK(server(&s));
    struct conn a, b;
    REQUIRE_OK(open_conn(s, &a));
    REQUIRE_OK(open_conn(s, &b));
    REQUIRE_OK(context_create(&a));
    REQUIRE_OK(context_create(&b));
    uint8_t mine[64], theirs[64], got[64];
    for (int i = 0; i < 64; i++) {
        mine[i] = (uint8_t)(i * 3 + 1);
        theirs[i] = 0xee;
    }
    uint64_t abuf = buffer_create(&a, sizeof mine);
    REQUIRE(abuf != 0);
    REQUIRE_OK(upload(&a, abuf, mine, sizeof mine));
    uint64_t aprog = 0, ascheme = 0, bprog = 0, bscheme = 0;
    REQUIRE_OK(program_and_scheme(&a, &aprog, &ascheme));
    REQUIRE_OK(program_and_scheme(&b, &bprog, &bscheme));

    /* B names A's buffer, scheme and program: each refused, saying whose. */
    CHECK_EQ(upload(&b, abuf, theirs, sizeof theirs), KILN_ERR_HANDLE);
    CHECK_REPLY(&b, "another context");
    CHECK(b.go_on);
    CHECK_EQ(readback(&b, abuf, got, sizeof got), KILN_ERR_HANDLE);
    CHECK_REPLY(&b, "another context");
    CHECK_EQ(b.out_len, 0);
    CHECK_EQ(add_node(&b, ascheme, bprog, 0), KILN_ERR_HANDLE);
    CHECK_REPLY(&b, "scheme");
    CHECK_EQ(add_node(&b, bscheme, aprog, 0), KILN_ERR_HANDLE);
    CHECK_REPLY(&b, "program");
    CHECK_EQ(add_node(&b, bscheme, bprog, abuf), KILN_ERR_HANDLE);
    CHECK_REPLY(&b, "another context");
    struct pipe_rec_handle h = {abuf};
    CHECK_EQ(CALL(&b, buffer_destroy, h, NULL), KILN_ERR_HANDLE);
    CHECK_REPLY(&b, "another context");
    CHECK(b.go_on);

    /* B goes on with its own objects. */
    uint64_t bbuf = buffer_create(&b, 64);
    CHECK(bbuf != 0);
    CHECK_OK(add_node(&b, bscheme, bprog, bbuf));

    /* A's buffer is still there, its bytes untouched, and A's own calls
     * on it work. */
    memset(got, 0, sizeof got);
    CHECK_OK(readback(&a, abuf, got, sizeof got));
    CHECK(!memcmp(got, mine, sizeof mine));
    CHECK_OK(add_node(&a, ascheme, aprog, abuf));
    struct pipe_rec_handle node = {out_id(&a)};
    close_conn(&b);
    CHECK_OK(readback(&a, abuf, got, sizeof got));
    CHECK(!memcmp(got, mine, sizeof mine));
    CHECK_OK(CALL(&a, node_remove, node, NULL));
    CHECK_OK(CALL(&a, buffer_destroy, h, NULL));
    close_conn(&a);
    srv_destroy(s);
}

/* A node of prog in scheme, with the handle id the client minted, binding buffer at 0. */
static kiln_result add_minted(struct conn *c, uint64_t id, uint64_t scheme, uint64_t prog, uint64_t buffer)
{
    kiln_binding b = {.binding = 0, .buffer = {buffer}};
    struct bytes t = {0};
    bytes_put(&t, &b, sizeof b);
    pipe_put_str(&t, NULL, 0);
    struct pipe_rec_node rec = {.node = id, .scheme = scheme, .program = prog, .groups = {1, 1, 1},
                                .binding_count = 1};
    kiln_result r = CALL(c, scheme_add_node, rec, &t);
    free(t.p);
    return r;
}

/* A client mints its scheme and node handles and numbers its tickets: the
 * server takes each that its own pool could have made, and refuses, by
 * name and keeping the connection, every one that could let an old handle
 * live again or skip ahead; a make that fails leaves the two pools in step. */
TEST(minted_handles_and_ticket_numbers_are_checked)
{
    struct srv *s;
    REQUIRE_OK(server(&s));
    struct conn c;
    REQUIRE_OK(open_conn(s, &c));
    REQUIRE_OK(context_create(&c));
    struct pipe_context_made made;
    REQUIRE(c.out_len == sizeof made);
    memcpy(&made, c.out, sizeof made);
    struct pool schemes, nodes, foreign;
    pool_init_floor(&schemes, POOL_SCHEME, made.serial, made.floor);
    pool_init_floor(&nodes, POOL_NODE, made.serial, made.floor);
    pool_init_floor(&foreign, POOL_SCHEME, made.serial + 1, made.floor);
    uint64_t buf = buffer_create(&c, 256), prog = 0;
    REQUIRE(buf != 0);
    /* The program, made as program_and_scheme makes it; its scheme is
     * minted below instead. */
    struct bytes t = {0};
    pipe_put_str(&t, k_src, SIZE_MAX);
    pipe_put_str(&t, "add.comp", SIZE_MAX);
    pipe_put_str(&t, NULL, 0);
    pipe_put_str(&t, NULL, 0);   /* no preamble */
    bytes_put_u32(&t, 0);
    struct pipe_rec_program pr = {.source_len = (uint32_t)strlen(k_src), .name_len = 8};
    REQUIRE_OK(CALL(&c, program_create, pr, &t));
    prog = out_id(&c);
    struct pipe_rec_handle w = {prog};
    REQUIRE_OK(CALL(&c, program_wait, w, NULL));
    CHECK_EQ(c.out_len, sizeof(kiln_program_interface));   /* a ready program's answer: its interface */
    t.len = 0;
    pipe_put_str(&t, NULL, 0);
    int obj;
    struct pipe_rec_scheme sr = {.id = pool_add(&foreign, &obj), .label_len = (uint32_t)t.len};
    CHECK_EQ(CALL(&c, scheme_create, sr, &t), KILN_ERR_HANDLE);
    CHECK_REPLY(&c, "another context");
    sr.id = pool_add(&schemes, &obj);
    REQUIRE_OK(CALL(&c, scheme_create, sr, &t));
    CHECK_EQ(out_id(&c), sr.id);
    uint64_t scheme = sr.id;
    free(t.p);

    uint64_t n1 = pool_add(&nodes, &obj);
    CHECK_OK(add_minted(&c, n1, scheme, prog, buf));
    CHECK_EQ(out_id(&c), n1);
    CHECK_EQ(add_minted(&c, n1, scheme, prog, buf), KILN_ERR_HANDLE);   /* again */
    CHECK_REPLY(&c, "live object");
    uint64_t skip = (n1 & ~(uint64_t)POOL_MAX_SLOTS) | (pool_id_slot(n1) + 5);
    CHECK_EQ(add_minted(&c, skip, scheme, prog, buf), KILN_ERR_HANDLE);
    CHECK_REPLY(&c, "skips past");
    struct pipe_rec_handle h = {n1};
    CHECK_OK(CALL(&c, node_remove, h, NULL));
    pool_remove(&nodes, n1);
    CHECK_EQ(add_minted(&c, n1, scheme, prog, buf), KILN_ERR_HANDLE);   /* a removed node's handle */
    CHECK_REPLY(&c, "issued before");
    /* A make the server refuses (its binding's buffer is not one): the
     * client's pool drops the id, as the server's did, and the next id it
     * mints (that slot, one generation on) is taken. */
    uint64_t n2 = pool_add(&nodes, &obj);
    CHECK_EQ(add_minted(&c, n2, scheme, prog, buf ^ 0x100000000ull), KILN_ERR_HANDLE);
    pool_remove(&nodes, n2);
    uint64_t n3 = pool_add(&nodes, &obj);
    CHECK_EQ(pool_id_slot(n3), pool_id_slot(n2));
    CHECK_OK(add_minted(&c, n3, scheme, prog, buf));
    CHECK_EQ(out_id(&c), n3);

    /* Tickets: the client's own numbers, in order from 1. */
    struct pipe_rec_submit sub = {scheme, 2};
    CHECK_EQ(CALL(&c, scheme_submit, sub, NULL), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "next is 1");
    sub.ticket = 1;
    REQUIRE_OK(CALL(&c, scheme_submit, sub, NULL));
    CHECK_EQ(out_id(&c), 1);
    struct pipe_rec_wait wt = {5, UINT64_MAX};
    CHECK_EQ(CALL(&c, ticket_wait, wt, NULL), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "never issued");
    wt.ticket = 1;
    CHECK_OK(CALL(&c, ticket_wait, wt, NULL));
    sub.ticket = 0;   /* numbered by the server */
    REQUIRE_OK(CALL(&c, scheme_submit, sub, NULL));
    CHECK_EQ(out_id(&c), 2);
    CHECK(c.go_on);
    uint32_t got[64];
    CHECK_OK(readback(&c, buf, got, sizeof got));
    CHECK_EQ(got[0], 0);   /* the nodes' param is 0: the buffer stays zero, and is whole */
    pool_finish(&schemes);
    pool_finish(&nodes);
    pool_finish(&foreign);
    close_conn(&c);
    srv_destroy(s);
}

/* A thousand short connections, each minting handles of the top
 * generation (a scheme, answered; a node, run ahead) and closing, lock no
 * one out: each mint is refused as skipping ahead, no serial's floor
 * moves, and the next client is served with a floor as low as the first's. */
TEST(hostile_short_connections_retire_no_serial)
{
    struct srv *s;
    REQUIRE_OK(server(&s));
    struct pipe_context_made first = {0}, made = {0};
    unsigned refused = 0;
    for (int i = 0; i < 1000; i++) {
        struct conn c;
        REQUIRE_OK(open_conn(s, &c));
        REQUIRE_OK(context_create(&c));
        REQUIRE(c.out_len == sizeof made);
        memcpy(&made, c.out, sizeof made);
        if (!i)
            first = made;
        struct pool schemes;
        pool_init_floor(&schemes, POOL_SCHEME, made.serial, made.floor);
        int obj;
        uint64_t id = pool_add(&schemes, &obj), top = (uint64_t)UINT32_MAX << 32 | (id & 0xffffffffu);
        struct bytes t = {0};
        pipe_put_str(&t, NULL, 0);
        struct pipe_rec_scheme sr = {.id = top, .label_len = (uint32_t)t.len};
        refused += CALL(&c, scheme_create, sr, &t) == KILN_ERR_HANDLE && strstr(c.msg, "skips past") != NULL;
        /* A node of that generation, posted: a failed make voids its id. */
        sr.id = id;
        CHECK_OK(CALL(&c, scheme_create, sr, &t));
        free(t.p);
        struct pool nodes;
        pool_init_floor(&nodes, POOL_NODE, made.serial, made.floor);
        uint64_t n = pool_add(&nodes, &obj);
        (void)add_minted(&c, (uint64_t)UINT32_MAX << 32 | (n & 0xffffffffu), id, 0, 0);
        pool_finish(&schemes);
        pool_finish(&nodes);
        close_conn(&c);
    }
    CHECK_EQ(refused, 1000);
    struct conn c;
    REQUIRE_OK(open_conn(s, &c));
    CHECK_OK(context_create(&c));
    REQUIRE(c.out_len == sizeof made);
    memcpy(&made, c.out, sizeof made);
    /* One scheme made per connection: each round of the 255 serials
     * takes a serial's floor one generation up, no more. */
    CHECK(made.floor <= first.floor + 1000 / 255 + 1);
    CHECK_EQ(buffer_create(&c, 64) != 0, true);
    close_conn(&c);
    srv_destroy(s);
}

TEST(refusals_keep_the_connection)
{
    struct srv *s;
    REQUIRE_OK(server(&s));
    struct conn c;
    REQUIRE_OK(open_conn(s, &c));

    /* A call before context_create. */
    struct pipe_rec_none none = {0};
    CHECK_EQ(CALL(&c, context_caps, none, NULL), KILN_ERR_HANDLE);
    CHECK_REPLY(&c, "context_caps before the connection's context was made");
    CHECK(c.go_on);
    CHECK_EQ(buffer_create(&c, 64), 0);
    CHECK_EQ(c.result, KILN_ERR_HANDLE);
    CHECK(c.go_on);
    REQUIRE_OK(context_create(&c));
    CHECK_OK(CALL(&c, context_caps, none, NULL));
    CHECK_EQ(c.out_len, sizeof(kiln_caps));

    /* An unknown call. */
    CHECK_EQ(send_req(&c, PIPE_OPS, &none, sizeof none, NULL, 0), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "unknown call");
    CHECK(c.go_on);
    CHECK_EQ(send_req(&c, 0xffffffffu, NULL, 0, NULL, 0), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "unknown call 4294967295");
    CHECK(c.go_on);

    /* A tail shorter than a string says it is. */
    struct bytes t = {0};
    bytes_put_u32(&t, 100);
    bytes_put(&t, "abc", 3);
    struct pipe_rec_buffer br = {.size = 64, .label_len = (uint32_t)t.len};
    CHECK_EQ(CALL(&c, buffer_create, br, &t), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "label claims 100 bytes; the tail holds fewer");
    CHECK(c.go_on);
    /* ...a string holding a NUL, and bytes after the record where none
     * belong. */
    t.len = 0;
    pipe_put_str(&t, "a\0b", 3);
    struct pipe_rec_scheme sr = {.label_len = (uint32_t)t.len};
    CHECK_EQ(CALL(&c, scheme_create, sr, &t), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "label holds a NUL byte");
    CHECK_EQ(CALL(&c, context_caps, none, &t), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "after its record where none belong");
    CHECK(c.go_on);
    free(t.p);

    /* A second context_create. */
    CHECK_EQ(context_create(&c), KILN_ERR_INVALID);
    CHECK_REPLY(&c, "exists already");
    CHECK(c.go_on);

    /* After every refusal the connection works: nothing was made. */
    uint64_t id = buffer_create(&c, 64);
    CHECK(id != 0);
    kiln_context_stats st = {0};
    CHECK_OK(CALL(&c, context_stats_get, none, NULL));
    CHECK_EQ(c.out_len, sizeof st);
    struct pipe_rec_handle h = {id};
    CHECK_OK(CALL(&c, buffer_destroy, h, NULL));
    CHECK(c.go_on);

    /* context_destroy ends the connection, without an error. */
    CHECK_OK(CALL(&c, context_destroy, none, NULL));
    CHECK(!c.go_on);
    close_conn(&c);
    srv_destroy(s);
}

TEST(broken_heads_end_the_connection)
{
    struct srv *s;
    REQUIRE_OK(server(&s));
    struct conn c;

    /* A record of the wrong size: nothing after it can be trusted. */
    REQUIRE_OK(open_conn(s, &c));
    REQUIRE_OK(context_create(&c));
    struct pipe_rec_handle h = {1};
    CHECK_EQ(send_req(&c, PIPE_OP_buffer_destroy, &h, 4, NULL, 0), KILN_ERR_PROTOCOL);
    CHECK_REPLY(&c, "protocol mismatch: buffer_destroy's request says a 4-byte record");
    CHECK(!c.go_on);
    close_conn(&c);

    /* A tail size that is not what arrived. */
    REQUIRE_OK(open_conn(s, &c));
    REQUIRE_OK(context_create(&c));
    struct pipe_req head = {.op = PIPE_OP_buffer_destroy, .rec_size = sizeof h, .tail_size = 8, .seq = 9};
    uint8_t f[sizeof head + sizeof h];
    memcpy(f, &head, sizeof head);
    memcpy(f + sizeof head, &h, sizeof h);
    CHECK_EQ(send_frame(&c, f, sizeof f), KILN_ERR_PROTOCOL);
    CHECK_REPLY(&c, "protocol mismatch");
    CHECK(!c.go_on);
    close_conn(&c);

    /* Fewer bytes than a head. */
    REQUIRE_OK(open_conn(s, &c));
    CHECK_EQ(send_frame(&c, "short", 5), KILN_ERR_PROTOCOL);
    CHECK_REPLY(&c, "protocol mismatch: a request of 5 bytes");
    CHECK(!c.go_on);
    close_conn(&c);

    /* Another protocol version. */
    REQUIRE_OK(open_conn(s, &c));
    struct pipe_rec_context rec = {.version = PIPE_VERSION + 1};
    struct bytes t = {0};
    for (int i = 0; i < 4; i++)
        pipe_put_str(&t, NULL, 0);
    CHECK_EQ(CALL(&c, context_create, rec, &t), KILN_ERR_PROTOCOL);
    CHECK_REPLY(&c, "protocol mismatch");
    CHECK(!c.go_on);
    free(t.p);
    close_conn(&c);
    srv_destroy(s);
}

TEST(catalogue_order)
{
    /* A row's position is its opcode: these are the wire's, in order. */
    static const char *const names[] = {
        "context_create", "context_destroy", "context_caps", "context_wait_idle", "context_stats_get",
        "buffer_create", "buffer_destroy", "buffer_upload", "buffer_readback", "image_create", "image_destroy",
        "image_upload", "image_readback", "program_create", "program_destroy", "program_status", "program_wait",
        "program_log", "program_interface_get", "scheme_create", "scheme_destroy", "scheme_add_node",
        "scheme_submit", "scheme_stats_get", "node_remove", "node_set_param", "node_set_program",
        "node_get_params", "ticket_wait", "archive_info_get", "archive_files", "archive_tidy",
        "context_precompile", "scheme_spec_events", "node_is_specialized", "compiles_pending", "buffer_address",
        "image_upload_part", "image_readback_part",
    };
    uint32_t n = (uint32_t)(sizeof names / sizeof names[0]);
    CHECK_EQ(PIPE_OPS, n);
    for (uint32_t i = 0; i < n && i < PIPE_OPS; i++) {
        if (!pipe_op_name(i) || strcmp(pipe_op_name(i), names[i])) {
            test_failures_++;
            fprintf(stderr, "%s: row %u is '%s', expected '%s'\n", test_name_, i,
                    pipe_op_name(i) ? pipe_op_name(i) : "(null)", names[i]);
        }
    }
    CHECK(pipe_op_name(PIPE_OPS) == NULL);
    CHECK(pipe_op_name(UINT32_MAX) == NULL);
    CHECK_EQ(pipe_op_rec_size(PIPE_OPS), 0);
    CHECK_EQ(pipe_op_class(PIPE_OPS), PIPE_CLASSES);
    CHECK_EQ(pipe_op_rec_size(PIPE_OP_context_create), sizeof(struct pipe_rec_context));
    CHECK_EQ(pipe_op_rec_size(PIPE_OP_buffer_upload), sizeof(struct pipe_rec_range));
    CHECK_EQ(pipe_op_class(PIPE_OP_scheme_submit), PIPE_CLASS_SUBMIT);
    CHECK(pipe_op_flags(PIPE_OP_ticket_wait) & PIPE_F_WAITS);
    CHECK(!strcmp(pipe_class_name(PIPE_CLASS_ARCHIVE), "archive"));
    CHECK(!strcmp(pipe_class_name(PIPE_CLASSES), "?"));
}

TEST(stats_json_names)
{
    struct pipe_stats z = {0};
    char buf[2048];
    const char *want_zero =
        "{\"side\":\"client\",\"submits\":0,"
        "\"calls\":{\"object\":0,\"data\":0,\"query\":0,\"state\":0,\"submit\":0,\"wait\":0,\"archive\":0},"
        "\"bytes_sent\":{\"object\":0,\"data\":0,\"query\":0,\"state\":0,\"submit\":0,\"wait\":0,\"archive\":0},"
        "\"bytes_received\":{\"object\":0,\"data\":0,\"query\":0,\"state\":0,\"submit\":0,\"wait\":0,\"archive\":0},"
        "\"segment_bytes\":0,\"memo_hits\":0,\"memo_misses\":0,\"refused\":0,\"posted\":0,\"deferred\":0}";
    int n = pipe_stats_json(&z, PIPE_SIDE_CLIENT, NULL, buf, sizeof buf);
    CHECK_EQ(n, strlen(want_zero));
    if (strcmp(buf, want_zero))
        fprintf(stderr, "got  %s\nwant %s\n", buf, want_zero);
    CHECK(!strcmp(buf, want_zero));

    /* Every field its own value: each name carries its own number. */
    struct pipe_stats s = {.segment_bytes = 30, .memo_hits = 31, .memo_misses = 32, .refused = 33, .submits = 34,
                          .posted = 35, .deferred = 36};
    for (uint32_t i = 0; i < PIPE_CLASSES; i++) {
        s.calls[i] = i + 1;
        s.bytes_sent[i] = 10 + i;
        s.bytes_received[i] = 20 + i;
    }
    const char *want =
        "{\"side\":\"client\",\"submits\":34,"
        "\"calls\":{\"object\":1,\"data\":2,\"query\":3,\"state\":4,\"submit\":5,\"wait\":6,\"archive\":7},"
        "\"bytes_sent\":{\"object\":10,\"data\":11,\"query\":12,\"state\":13,\"submit\":14,\"wait\":15,\"archive\":16},"
        "\"bytes_received\":{\"object\":20,\"data\":21,\"query\":22,\"state\":23,\"submit\":24,\"wait\":25,"
        "\"archive\":26},\"segment_bytes\":30,\"memo_hits\":31,\"memo_misses\":32,\"refused\":33,\"posted\":35,\"deferred\":36}";
    n = pipe_stats_json(&s, PIPE_SIDE_CLIENT, NULL, buf, sizeof buf);
    CHECK_EQ(n, strlen(want));
    if (strcmp(buf, want))
        fprintf(stderr, "got  %s\nwant %s\n", buf, want);
    CHECK(!strcmp(buf, want));

    /* The server's counts for a client: its name, no memo, and what it
     * applied and how it stalled. */
    s.applied = 40, s.stalls = 41, s.stalled_ns = 42, s.imported_bytes = 43, s.paced = 44, s.paced_ns = 45;
    const char *want_server =
        "{\"side\":\"server\",\"client\":\"client 7\",\"submits\":34,"
        "\"calls\":{\"object\":1,\"data\":2,\"query\":3,\"state\":4,\"submit\":5,\"wait\":6,\"archive\":7},"
        "\"bytes_sent\":{\"object\":10,\"data\":11,\"query\":12,\"state\":13,\"submit\":14,\"wait\":15,\"archive\":16},"
        "\"bytes_received\":{\"object\":20,\"data\":21,\"query\":22,\"state\":23,\"submit\":24,\"wait\":25,"
        "\"archive\":26},\"segment_bytes\":30,\"refused\":33,\"posted\":35,\"deferred\":36,\"applied\":40,\"stalls\":41,\"stalled_ns\":42,\"imported_bytes\":43,"
        "\"paced\":44,\"paced_ns\":45}";
    n = pipe_stats_json(&s, PIPE_SIDE_SERVER, "client 7", buf, sizeof buf);
    CHECK_EQ(n, strlen(want_server));
    if (strcmp(buf, want_server))
        fprintf(stderr, "got  %s\nwant %s\n", buf, want_server);
    CHECK(!strcmp(buf, want_server));

    /* Too small a buffer: cut, NUL-terminated, the length it needed told. */
    char small[16];
    CHECK_EQ(pipe_stats_json(&s, PIPE_SIDE_CLIENT, NULL, small, sizeof small), strlen(want));
    CHECK_EQ(strlen(small), sizeof small - 1);
    CHECK(!strncmp(small, want, sizeof small - 1));
}

/* A program's includes are the client's: the server answers them from
 * the files that came with it, and reads none of its own. A client that
 * sends no files (as a hostile one would) and names a server file by its
 * absolute path, by a ../ path, through an include folder, and as the
 * program's own name (where relative includes start) gets "cannot open
 * include" for each, and no byte of the file reaches its log; the same
 * program with the file sent along compiles. */
TEST(a_program_reads_no_file_of_the_servers)
{
    char dir[] = "/tmp/kiln-pipe-secret-XXXXXX", secret[128];
    REQUIRE(mkdtemp(dir));
    snprintf(secret, sizeof secret, "%s/secret.h", dir);
    FILE *f = fopen(secret, "w");
    REQUIRE(f);
    fputs("uint SERVER_SECRET_TOKEN_9f3 = 1u; garbage(\n", f);
    fclose(f);
    struct srv *s;
    REQUIRE_OK(server(&s));
    struct conn c;
    REQUIRE_OK(open_conn(s, &c));
    REQUIRE_OK(context_create(&c));
    char inc_abs[256], inc_up[256];
    snprintf(inc_abs, sizeof inc_abs, "#include \"%s\"\n", secret);
    snprintf(inc_up, sizeof inc_up, "#include \"../%s/secret.h\"\n", strrchr(dir, '/') + 1);
    const char *lines[] = {inc_abs, inc_up, "#include <secret.h>\n", "#include \"secret.h\"\n"};
    for (int k = 0; k < 4; k++) {
        char src[512];
        snprintf(src, sizeof src, "#version 450\n%slayout(local_size_x = 1) in;\nvoid main() {}\n", lines[k]);
        struct bytes t = {0};
        pipe_put_str(&t, src, SIZE_MAX);
        pipe_put_str(&t, secret, SIZE_MAX);   /* the name: relative includes start beside it */
        pipe_put_str(&t, NULL, 0);
        pipe_put_str(&t, NULL, 0);           /* no preamble */
        pipe_put_str(&t, dir, SIZE_MAX);      /* an include folder */
        bytes_put_u32(&t, 0);                 /* and no files */
        struct pipe_rec_program pr = {.source_len = (uint32_t)strlen(src), .name_len = (uint32_t)strlen(secret),
                                      .include_dir_count = 1};
        CHECK_OK(CALL(&c, program_create, pr, &t));
        struct pipe_rec_handle w = {out_id(&c)};
        CHECK_EQ(CALL(&c, program_wait, w, NULL), KILN_ERR_COMPILE);
        struct pipe_rec_list l = {.id = w.id, .cap = 4000};
        (void)CALL(&c, program_log, l, NULL);
        char log[4200] = "";
        if (c.out && c.out_len > 8)   /* the log's full length (u64), then its bytes */
            memcpy(log, c.out + 8, KILN_MIN(c.out_len - 8, sizeof log - 1));
        CHECK(strstr(log, "cannot open include") != NULL);
        CHECK(strstr(log, "SERVER_SECRET_TOKEN") == NULL && strstr(c.msg, "SERVER_SECRET_TOKEN") == NULL);
        if (!strstr(log, "cannot open include"))
            fprintf(stderr, "include %d: log: %s / %s\n", k, log, c.msg);
        free(t.p);
    }
    /* Sent along, the file serves. */
    const char *src = "#version 450\n#include \"lib.h\"\nlayout(local_size_x = 1) in;\n"
                      "layout(std430, binding = 0) buffer O { uint o[]; };\nvoid main() { o[0] = lib(); }\n";
    struct bytes t = {0};
    pipe_put_str(&t, src, SIZE_MAX);
    pipe_put_str(&t, "m.comp", SIZE_MAX);
    pipe_put_str(&t, NULL, 0);
    pipe_put_str(&t, NULL, 0);   /* no preamble */
    bytes_put_u32(&t, 1);
    pipe_put_str(&t, "lib.h", SIZE_MAX);
    pipe_put_str(&t, "m.comp", SIZE_MAX);
    bytes_put_u32(&t, 1);
    pipe_put_str(&t, "lib.h", SIZE_MAX);
    pipe_put_str(&t, "uint lib() { return 7u; }\n", SIZE_MAX);
    pipe_put_str(&t, NULL, 0);
    struct pipe_rec_program pr = {.source_len = (uint32_t)strlen(src), .name_len = 6};
    CHECK_OK(CALL(&c, program_create, pr, &t));
    struct pipe_rec_handle w = {out_id(&c)};
    CHECK_OK(CALL(&c, program_wait, w, NULL));
    free(t.p);
    /* A count past the bound is refused before anything is read. */
    t = (struct bytes){0};
    pipe_put_str(&t, src, SIZE_MAX);
    pipe_put_str(&t, "m.comp", SIZE_MAX);
    pipe_put_str(&t, NULL, 0);
    pipe_put_str(&t, NULL, 0);   /* no preamble */
    bytes_put_u32(&t, 100000);
    CHECK_EQ(CALL(&c, program_create, pr, &t), KILN_ERR_LIMIT);
    CHECK_REPLY(&c, "at most 256 travel with a program");
    free(t.p);
    close_conn(&c);
    srv_destroy(s);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
}

int main(void)
{
    RUN(foreign_handles_refused);
    RUN(minted_handles_and_ticket_numbers_are_checked);
    RUN(hostile_short_connections_retire_no_serial);
    RUN(refusals_keep_the_connection);
    RUN(broken_heads_end_the_connection);
    RUN(catalogue_order);
    RUN(stats_json_names);
    RUN(a_program_reads_no_file_of_the_servers);
    return TEST_SUMMARY();
}
