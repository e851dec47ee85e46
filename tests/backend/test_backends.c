/* SPDX-License-Identifier: MIT */
/*
 * test_backends.c: every backend of the registry against one contract.
 * For each row: no op slot is empty; its device says it is of its kind;
 * buffers and images round-trip their bytes and start zeroed; a cache
 * starts empty or from its own data, and refuses nothing it gave; a
 * recording of no steps and one of a dispatch and a barrier submit, their
 * tickets rising and done once waited on; a dispatch's result reads back
 * where the backend executes (the mock counts dispatches only); every
 * object is destroyed in any order its users allow. The registry itself:
 * kinds and names unique, kiln_backend_name and kb_backend_named agree,
 * the default first.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "backend/backend.h"
#include "program/program.h"
#include "test.h"

/* Every op slot of struct backend_ops; the assert below fails to build
 * when an op is added to the struct without its name here. */
#define KB_OPS(X)                                                                                  \
    X(destroy) X(buffer_create) X(buffer_destroy) X(buffer_address) X(buffer_write) X(buffer_read)  \
    X(image_create)                                                                                \
    X(image_destroy) X(image_write) X(image_read) X(image_usage) X(layout_create) X(layout_destroy) \
    X(pipeline_create) X(pipeline_destroy) X(cache_create) X(cache_data) X(cache_destroy)          \
    X(cache_merge) X(bindset_create) X(bindset_destroy) X(cmd_create) X(cmd_destroy) X(cmd_record) \
    X(submit) X(cmd_times) X(ticket_done) X(ticket_wait)
/* Ops a backend may leave NULL (the caller then does without). */
#define KB_OPTIONAL_OPS(X) X(host_import) X(host_release) X(buffer_write_host) X(buffer_read_host)
#define COUNT_OP(op) +1
_Static_assert(sizeof(struct backend_ops) == offsetof(struct backend_ops, destroy) +
                                                 (0 KB_OPS(COUNT_OP) KB_OPTIONAL_OPS(COUNT_OP)) * sizeof(void (*)(void)),
               "struct backend_ops has an op KB_OPS does not list");

static const char *const shader =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer X { uint x[]; };\n"
    "void main() { uint i = gl_GlobalInvocationID.x; x[i] = i * 3u + kiln_param(0); }\n";

TEST(the_registry_is_one_row_per_kind)
{
    CHECK(kb_backend_count >= 2);
    CHECK(kb_backend_of(KILN_BACKEND_DEFAULT) == &kb_backends[0]);
    CHECK(kb_backend_of(KILN_BACKEND_VULKAN)->kind == KILN_BACKEND_VULKAN);
    CHECK(kb_backend_of((kiln_backend_kind)99) == NULL);
    CHECK(!strcmp(kiln_backend_name((kiln_backend_kind)99), "unknown"));
    CHECK(!strcmp(kiln_backend_name(KILN_BACKEND_DEFAULT), "default"));
    for (uint32_t i = 0; i < kb_backend_count; i++) {
        const struct kb_backend *b = &kb_backends[i];
        CHECK(b->create != NULL);
        CHECK(b->name && b->title && b->name[0] && b->title[0]);
        CHECK(!strcmp(kiln_backend_name(b->kind), b->name));
        CHECK(kb_backend_named(b->name) == b);
        for (uint32_t j = 0; j < i; j++)
            CHECK(kb_backends[j].kind != b->kind && strcmp(kb_backends[j].name, b->name));
    }
    CHECK(kb_backend_named("nothing") == NULL);
}

/* The contract, on one backend's device. */
static void contract(const struct kb_backend *b)
{
    const char *v = getenv("KILN_VALIDATION");
    struct kb_device *dev;
    REQUIRE_OK(b->create(&(struct kb_settings){.validation = v && !strcmp(v, "1")}, &dev));
    CHECK_EQ(dev->caps.backend, b->kind);
    CHECK(dev->ops->name && dev->ops->name[0]);
#define SLOT_SET(op)                                                                               \
    if (!dev->ops->op) {                                                                           \
        test_failures_++;                                                                          \
        fprintf(stderr, "%s: backend %s: op %s is empty\n", test_name_, b->name, #op);             \
    }
    KB_OPS(SLOT_SET)
#undef SLOT_SET
    if (b->enumerate) {
        uint32_t n = 0;
        CHECK_OK(b->enumerate(NULL, 0, &n));
        CHECK(n >= 1);
    }

    /* host memory in place, where the device imports it: a device copy
     * from a page-aligned mapping lands right */
    {
        size_t n = 64 << 10;
        uint32_t *host = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        REQUIRE(host != MAP_FAILED);
        for (uint32_t i = 0; i < n / 4; i++)
            host[i] = i * 2654435761u;
        struct kb_host *h;
        kiln_result r = kb_host_import(dev, host, n, &h);
        fprintf(stderr, "  %s: host import %s\n", b->name, r == KILN_OK ? "works" : "not offered");
        if (r == KILN_OK) {
            CHECK(dev->ops->host_release && dev->ops->buffer_write_host && dev->ops->buffer_read_host);
            struct kb_buffer *dst;
            REQUIRE_OK(kb_buffer_create(dev, n, KILN_BUFFER_STORAGE, &dst));
            CHECK_OK(kb_buffer_write_host(dev, dst, 0, h, 4096, n - 4096, NULL));
            CHECK_RESULT(kb_buffer_write_host(dev, dst, 0, h, 4096, n, NULL), KILN_ERR_INVALID);   /* past its end */
            uint32_t *back = malloc(n - 4096);
            REQUIRE(back);
            CHECK_OK(kb_buffer_read(dev, dst, 0, back, n - 4096, NULL));
            CHECK(!memcmp(back, host + 1024, n - 4096));
            free(back);
            /* and back into the mapping: its first page, from the buffer's
             * second */
            CHECK_OK(kb_buffer_read_host(dev, dst, 4096, h, 0, 4096, NULL));
            CHECK_EQ(host[0], host[2048]);
            CHECK_EQ(host[1023], host[3071]);
            CHECK_RESULT(kb_buffer_read_host(dev, dst, 0, h, 4096, n, NULL), KILN_ERR_INVALID);   /* past its end */
            kb_buffer_destroy(dev, dst);
            kb_host_release(dev, h);
        }
        err_clear();
        munmap(host, n);
    }

    /* buffers: zeroed at first, then the bytes written, at an offset too */
    struct kb_buffer *buf;
    REQUIRE_OK(kb_buffer_create(dev, 256, KILN_BUFFER_STORAGE, &buf));
    CHECK_EQ(buf->size, 256);
    uint32_t words[64], back[64];
    CHECK_OK(kb_buffer_read(dev, buf, 0, back, sizeof back, NULL));
    int nonzero = 0;
    for (int i = 0; i < 64; i++)
        nonzero += back[i] != 0;
    CHECK_EQ(nonzero, 0);
    for (int i = 0; i < 64; i++)
        words[i] = 0x9e3779b9u * (uint32_t)(i + 1);
    CHECK_OK(kb_buffer_write(dev, buf, 0, words, sizeof words));
    CHECK_OK(kb_buffer_write(dev, buf, 8, words + 40, 8));
    CHECK_OK(kb_buffer_read(dev, buf, 0, back, sizeof back, NULL));
    words[2] = words[40], words[3] = words[41];
    CHECK(!memcmp(words, back, sizeof back));

    /* images: a format's uses; zeroed, then every texel */
    bool linear;
    uint32_t usage = kb_image_usage(dev, KILN_FORMAT_RGBA8, 2, &linear);
    CHECK(usage & KILN_IMAGE_STORAGE);
    struct kb_image want = {.width = 8, .height = 4, .depth = 1, .dims = 2, .layers = 1, .levels = 1, .format = KILN_FORMAT_RGBA8,
                            .usage = KILN_IMAGE_STORAGE, .bytes = 8 * 4 * 4};
    struct kb_image *img;
    REQUIRE_OK(kb_image_create(dev, &want, &img));
    uint8_t texels[128], tback[128];
    CHECK_OK(kb_image_read(dev, img, NULL, tback, NULL));
    nonzero = 0;
    for (int i = 0; i < 128; i++)
        nonzero += tback[i] != 0, texels[i] = (uint8_t)(i * 7 + 1);
    CHECK_EQ(nonzero, 0);
    CHECK_OK(kb_image_write(dev, img, NULL, texels));
    CHECK_OK(kb_image_read(dev, img, NULL, tback, NULL));
    CHECK(!memcmp(texels, tback, sizeof texels));

    /* a pipeline through a cache; the cache's data seeds another */
    struct prog_source src;
    struct prog_output po = {0};
    REQUIRE_OK(prog_source_init(&src, &(kiln_program_desc){.source = shader, .name = "conformance.comp"}));
    REQUIRE_OK(prog_compile(&src, &po));
    struct kb_layout *layout;
    struct kb_cache *cache, *seeded;
    struct kb_pipeline *pipe;
    REQUIRE_OK(kb_layout_create(dev, &po.iface, &layout));
    REQUIRE_OK(kb_cache_create(dev, NULL, 0, &cache));
    CHECK_OK(kb_pipeline_create(dev, layout, po.spirv, po.words, NULL, 0, cache, false, &pipe));
    void *data = NULL;
    size_t len = 0;
    CHECK_OK(kb_cache_data(dev, cache, &data, &len));
    CHECK_OK(kb_cache_create(dev, data, len, &seeded));
    free(data);
    CHECK_OK(kb_cache_merge(dev, seeded, &cache, 1));

    /* recordings: none, then a dispatch and a barrier; tickets rise */
    struct kb_binding bind = {.set = 0, .binding = 0, .kind = KILN_BINDING_STORAGE_BUFFER, .buffer = buf,
                              .offset = 0, .size = 256};
    struct kb_bindset *set;
    REQUIRE_OK(kb_bindset_create(dev, layout, &bind, 1, &set));
    struct kb_cmd *empty, *cmd;
    REQUIRE_OK(kb_cmd_create(dev, &empty));
    REQUIRE_OK(kb_cmd_create(dev, &cmd));
    CHECK_OK(kb_cmd_record(dev, empty, NULL, 0));
    struct kb_step steps[2] = {{.kind = KB_STEP_DISPATCH, .pipeline = pipe, .layout = layout, .bindset = set,
                                .params = {5}, .lens = {256}, .groups = {1, 1, 1}},
                               {.kind = KB_STEP_BARRIER}};
    CHECK_OK(kb_cmd_record(dev, cmd, steps, 2));
    uint64_t t1 = 0, t2 = 0;
    CHECK_OK(kb_submit(dev, empty, "an empty recording", &t1));
    CHECK_OK(kb_submit(dev, cmd, "a dispatch", &t2));
    CHECK(t2 > t1 && t1 > 0);
    CHECK_OK(kb_ticket_wait(dev, t2, UINT64_MAX));
    CHECK(kb_ticket_done(dev) >= t2);
    CHECK_OK(kb_ticket_wait(dev, t1, 0));   /* done: no wait needed */
    CHECK_OK(kb_buffer_read(dev, buf, 0, back, sizeof back, NULL));
    if (b->executes) {
        int bad = 0;
        for (uint32_t i = 0; i < 64; i++)
            bad += back[i] != i * 3u + 5u;
        CHECK_EQ(bad, 0);
    }

    /* every object destroyed: users before what they use */
    kb_cmd_destroy(dev, empty);
    kb_cmd_destroy(dev, cmd);
    kb_bindset_destroy(dev, set);
    kb_pipeline_destroy(dev, pipe);
    kb_cache_destroy(dev, seeded);
    kb_cache_destroy(dev, cache);
    kb_layout_destroy(dev, layout);
    kb_image_destroy(dev, img);
    kb_buffer_destroy(dev, buf);
    prog_output_finish(&po);
    prog_source_finish(&src);
    CHECK_EQ(atomic_load(&dev->validation_errors), 0);
    kb_destroy(dev);
}

int main(void)
{
    TEST_LOCAL_ONLY("it drives the backends below the context");
    RUN(the_registry_is_one_row_per_kind);
    for (uint32_t i = 0; i < kb_backend_count; i++) {
        char name[64];
        snprintf(name, sizeof name, "the_contract_holds_on_%s", kb_backends[i].name);
        test_name_ = name;
        int before = test_failures_;
        contract(&kb_backends[i]);
        if (test_failures_ == before)
            test_passed_++, printf("ok   %s\n", name);
        else
            test_failed_++, printf("FAIL %s\n", name);
    }
    return TEST_SUMMARY();
}
