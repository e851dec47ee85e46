/* SPDX-License-Identifier: MIT */
/*
 * cmd_info.c: `kiln info`: the Vulkan devices kiln sees and the capabilities
 * of the one a context picks.
 *
 * Two parts, both on stdout: the device list from kiln_devices() (index,
 * name, type, Vulkan version), then the kiln_caps of a context made the way
 * any program makes one, with a zero desc, so KILN_DEVICE and
 * KILN_VALIDATION choose as they would for the user's own code. The context
 * is the authority on what runs: a device listed but unfit for kiln shows up
 * here as a context error (which names every device seen), exit 1.
 *
 * Version words: API versions use Vulkan's VK_MAKE_API_VERSION packing.
 * Driver versions are vendor-defined; NVIDIA's packing (10.8.8.6 bits) is
 * decoded as NVIDIA does, every other vendor as a Vulkan version, and the raw
 * word is always printed beside the decoding.
 *
 * --json prints the same as one object on stdout instead: "devices" (as
 * kiln_device_info) and "device" (kiln_caps, field for field, versions as
 * their words and as text); {"ok": false, ...} when listing or the context
 * fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define VENDOR_NVIDIA 0x10DEu

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* kiln_shader_feature's bits, by the Vulkan feature each stands for. */
static const char *const feature_names[] = {
    "shaderFloat64", "shaderInt64", "shaderInt16", "shaderFloat16", "shaderInt8", "storageBuffer16BitAccess",
    "uniformAndStorageBuffer16BitAccess", "storagePushConstant16", "storageBuffer8BitAccess",
    "uniformAndStorageBuffer8BitAccess", "storagePushConstant8", "shaderBufferInt64Atomics", "vulkanMemoryModel",
    "vulkanMemoryModelDeviceScope", "bufferDeviceAddress", "variablePointersStorageBuffer", "variablePointers",
    "shaderImageGatherExtended", "shaderStorageImageExtendedFormats", "shaderStorageImageMultisample",
    "shaderSharedInt64Atomics", "shaderIntegerDotProduct", "shaderImageInt64Atomics",
};
#define FEATURE_COUNT (sizeof feature_names / sizeof feature_names[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: kiln info [--json]\n"
               "\n"
               "Lists the Vulkan devices kiln sees, then creates a context on the default\n"
               "device and prints its capabilities: driver, versions, subgroup size, limits,\n"
               "alignments, pipeline-cache UUID, memory model, validation.\n"
               "\n"
               "  --json    one JSON object on stdout: {\"ok\": true, \"devices\": [{\"index\", \"name\",\n"
               "            \"device_type\", \"api_version\", \"vendor_id\", \"device_id\"}], \"device\": {the\n"
               "            kiln_caps fields by their names (device_name, subgroup_size,\n"
               "            max_workgroup_count: [X,Y,Z], pipeline_cache_uuid: hex, ...)}};\n"
               "            on failure {\"ok\": false, \"exit_status\", \"error\"}\n"
               "\n"
               "environment:\n"
               "  KILN_DEVICE=SEL      pick a device by index (\"1\") or name substring (\"llvmpipe\")\n"
               "  KILN_VALIDATION=1    turn the Vulkan validation layer on\n"
               "  KILN_CHECK=1         check mode: out-of-bounds accesses reported (validation too)\n"
               "  KILN_ROBUST=1        robust access: out-of-bounds accesses made safe\n");
}

static const char *type_name(kiln_device_type t)
{
    switch (t) {
    case KILN_DEVICE_INTEGRATED_GPU: return "integrated GPU";
    case KILN_DEVICE_DISCRETE_GPU: return "discrete GPU";
    case KILN_DEVICE_VIRTUAL_GPU: return "virtual GPU";
    case KILN_DEVICE_CPU: return "CPU";
    default: return "other";
    }
}

/* Writes a VK_MAKE_API_VERSION word as "major.minor.patch". */
static void api_version_str(uint32_t v, char *buf, size_t cap)
{
    snprintf(buf, cap, "%u.%u.%u", (v >> 22) & 0x7Fu, (v >> 12) & 0x3FFu, v & 0xFFFu);
}

static void driver_version_str(uint32_t vendor, uint32_t v, char *buf, size_t cap)
{
    if (vendor == VENDOR_NVIDIA)
        snprintf(buf, cap, "%u.%u.%u.%u (0x%08" PRIx32 ")", (v >> 22) & 0x3FFu, (v >> 14) & 0xFFu, (v >> 6) & 0xFFu,
                 v & 0x3Fu, v);
    else
        snprintf(buf, cap, "%u.%u.%u (0x%08" PRIx32 ")", (v >> 22) & 0x7Fu, (v >> 12) & 0x3FFu, v & 0xFFFu, v);
}

/* The caps' numbers that print as text, for the table and the JSON alike. */
struct caps_text {
    char api[32], drv[48], uuid[33];
};

static struct caps_text caps_text(const kiln_caps *c)
{
    struct caps_text t;
    api_version_str(c->api_version, t.api, sizeof t.api);
    driver_version_str(c->vendor_id, c->driver_version, t.drv, sizeof t.drv);
    for (int i = 0; i < 16; i++)
        snprintf(t.uuid + 2 * i, 3, "%02x", c->pipeline_cache_uuid[i]);
    return t;
}

/* Prints every device kiln_devices() reports (j: as the "devices" array);
 * false when it failed. */
static bool print_devices(struct cli_json *j)
{
    uint32_t count = 0;
    kiln_result r = kiln_devices(NULL, 0, &count);
    if (r < 0) {
        cli_fail("listing Vulkan devices", r);
        return false;
    }
    kiln_device_info *devs = count ? calloc(count, sizeof *devs) : NULL;
    if (count && !devs) {
        fprintf(stderr, "kiln: out of host memory listing %u devices\n", count);
        return false;
    }
    uint32_t got = count;
    r = count ? kiln_devices(devs, count, &got) : KILN_OK;
    if (r < 0) {
        free(devs);
        cli_fail("listing Vulkan devices", r);
        return false;
    }
    if (got < count)
        count = got;   /* a device went away between the two calls */
    if (j) {
        cli_json_open(j, "devices", '[');
        for (uint32_t i = 0; i < count; i++) {
            char ver[32];
            api_version_str(devs[i].api_version, ver, sizeof ver);
            cli_json_open(j, NULL, '{');
            cli_json_uint(j, "index", i);
            cli_json_str(j, "name", devs[i].name);
            cli_json_str(j, "device_type", type_name(devs[i].type));
            cli_json_str(j, "api_version", ver);
            cli_json_uint(j, "vendor_id", devs[i].vendor_id);
            cli_json_uint(j, "device_id", devs[i].device_id);
            cli_json_close(j, '}');
        }
        cli_json_close(j, ']');
        free(devs);
        return true;
    }
    printf("devices: %u\n", count);
    for (uint32_t i = 0; i < count; i++) {
        char ver[32];
        api_version_str(devs[i].api_version, ver, sizeof ver);
        printf("  %u: %s (%s, Vulkan %s, vendor 0x%04" PRIx32 " device 0x%04" PRIx32 ")\n", i, devs[i].name,
               type_name(devs[i].type), ver, devs[i].vendor_id, devs[i].device_id);
    }
    free(devs);
    return true;
}

/* One "  label: value" line of the caps table, values in one column. */
static void field(const char *label, const char *fmt, ...) CLI_PRINTF(2, 3);
static void field(const char *label, const char *fmt, ...)
{
    printf("  %-38s", label);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static void print_caps(const kiln_caps *c)
{
    struct caps_text t = caps_text(c);
    const char *sel = getenv("KILN_DEVICE");
    printf("\ncontext device (%s%s):\n", sel && *sel ? "KILN_DEVICE=" : "default choice", sel && *sel ? sel : "");
    field("device name:", "%s", c->device_name);
    field("device type:", "%s (vendor 0x%04" PRIx32 ", device 0x%04" PRIx32 ")", type_name(c->device_type),
          c->vendor_id, c->device_id);
    field("driver name:", "%s", c->driver_name);
    field("driver info:", "%s", c->driver_info);
    field("api version:", "%s", t.api);
    field("driver version:", "%s", t.drv);
    field("subgroup size:", "%u", c->subgroup_size);
    {
        static const char *const names[] = {"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative",
                                            "clustered", "quad"};
        char ops[160] = "";
        size_t n = 0;
        for (unsigned b = 0; b < 8 && n < sizeof ops; b++)
            if (c->subgroup_ops & (1u << b))
                n += (size_t)snprintf(ops + n, sizeof ops - n, "%s%s", n ? " " : "", names[b]);
        field("subgroup operations:", "%s", n ? ops : "none");
    }
    {
        char feats[1024] = "";
        size_t n = 0;
        for (unsigned b = 0; b < FEATURE_COUNT && n < sizeof feats; b++)
            if (c->shader_features & (1u << b))
                n += (size_t)snprintf(feats + n, sizeof feats - n, "%s%s", n ? " " : "", feature_names[b]);
        field("shader features:", "%s", n ? feats : "none");
    }
    field("max workgroup count:", "%u x %u x %u", c->max_workgroup_count[0], c->max_workgroup_count[1],
          c->max_workgroup_count[2]);
    field("max workgroup size:", "%u x %u x %u", c->max_workgroup_size[0], c->max_workgroup_size[1],
          c->max_workgroup_size[2]);
    field("max workgroup invocations:", "%u", c->max_workgroup_invocations);
    field("max storage buffer range:", "%u bytes", c->max_storage_buffer_range);
    field("max uniform buffer range:", "%u bytes", c->max_uniform_buffer_range);
    field("max push constants:", "%u bytes", c->max_push_constants_size);
    field("min storage buffer offset alignment:", "%" PRIu64 " bytes", c->min_storage_buffer_offset_alignment);
    field("min uniform buffer offset alignment:", "%" PRIu64 " bytes", c->min_uniform_buffer_offset_alignment);
    field("max bound descriptor sets:", "%u", c->max_bound_descriptor_sets);
    field("max texel buffer elements:", "%u", c->max_texel_buffer_elements);
    field("min texel buffer offset alignment:", "%" PRIu64 " bytes", c->min_texel_buffer_offset_alignment);
    field("max image dimension 2D / 3D:", "%u / %u texels", c->max_image_dimension_2d, c->max_image_dimension_3d);
    field("storage images without format:", "%s", c->storage_image_read_without_format && c->storage_image_write_without_format
                                                     ? "read and write"
                                                 : c->storage_image_write_without_format ? "write only"
                                                 : c->storage_image_read_without_format  ? "read only"
                                                                                         : "no");
    field("max shared memory:", "%u bytes", c->max_shared_memory_size);
    field("pipeline cache uuid:", "%s", t.uuid);
    field("unified memory:", "%s", c->unified_memory ? "yes" : "no");
    field("pipeline caches keep code:", "%s", c->pipeline_cache_keeps_code ? "yes (the archive keeps pipelines)"
                                                                          : "no (the archive keeps front ends only)");
    field("validation:", "%s", c->validation ? "on" : "off");
    field("check mode:", "%s", c->check ? "on (GPU-assisted validation: out-of-bounds accesses reported)" : "off");
    field("robust access:", "%s", c->robust_access == 2 ? "on (robustBufferAccess2: out-of-bounds reads give zero)"
                                  : c->robust_access   ? "on (robustBufferAccess)"
                                                       : "off");
    if (c->loop_budget)
        field("loop budget:", "%u iterations in all per invocation (longer loops are stopped; kiln warns at compile "
              "time for each loop whose count is not a constant within it)", c->loop_budget);
    else
        field("loop budget:", "none known");
    field("backend:", "%s", kiln_backend_name(c->backend));
}

static void json_triple(struct cli_json *j, const char *key, const uint32_t v[3])
{
    cli_json_open(j, key, '[');
    for (int i = 0; i < 3; i++)
        cli_json_uint(j, NULL, v[i]);
    cli_json_close(j, ']');
}

/* The caps as the "device" object, fields named as kiln_caps names them. */
static void json_caps(struct cli_json *j, const kiln_caps *c)
{
    static const char *const op_names[] = {"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative",
                                           "clustered", "quad"};
    struct caps_text t = caps_text(c);
    const char *sel = getenv("KILN_DEVICE");
    cli_json_open(j, "device", '{');
    cli_json_str(j, "selected_by", sel && *sel ? sel : NULL);
    cli_json_str(j, "device_name", c->device_name);
    cli_json_str(j, "driver_name", c->driver_name);
    cli_json_str(j, "driver_info", c->driver_info);
    cli_json_str(j, "device_type", type_name(c->device_type));
    cli_json_uint(j, "vendor_id", c->vendor_id);
    cli_json_uint(j, "device_id", c->device_id);
    cli_json_uint(j, "api_version", c->api_version);
    cli_json_str(j, "api_version_text", t.api);
    cli_json_uint(j, "driver_version", c->driver_version);
    cli_json_str(j, "driver_version_text", t.drv);
    cli_json_uint(j, "subgroup_size", c->subgroup_size);
    cli_json_open(j, "subgroup_ops", '[');
    for (unsigned b = 0; b < 8; b++)
        if (c->subgroup_ops & (1u << b))
            cli_json_str(j, NULL, op_names[b]);
    cli_json_close(j, ']');
    cli_json_open(j, "shader_features", '[');
    for (unsigned b = 0; b < FEATURE_COUNT; b++)
        if (c->shader_features & (1u << b))
            cli_json_str(j, NULL, feature_names[b]);
    cli_json_close(j, ']');
    json_triple(j, "max_workgroup_count", c->max_workgroup_count);
    json_triple(j, "max_workgroup_size", c->max_workgroup_size);
    cli_json_uint(j, "max_workgroup_invocations", c->max_workgroup_invocations);
    cli_json_uint(j, "max_storage_buffer_range", c->max_storage_buffer_range);
    cli_json_uint(j, "max_uniform_buffer_range", c->max_uniform_buffer_range);
    cli_json_uint(j, "max_push_constants_size", c->max_push_constants_size);
    cli_json_uint(j, "min_storage_buffer_offset_alignment", c->min_storage_buffer_offset_alignment);
    cli_json_uint(j, "min_uniform_buffer_offset_alignment", c->min_uniform_buffer_offset_alignment);
    cli_json_str(j, "pipeline_cache_uuid", t.uuid);
    cli_json_bool(j, "unified_memory", c->unified_memory);
    cli_json_bool(j, "validation", c->validation);
    cli_json_bool(j, "check", c->check);
    cli_json_int(j, "robust_access", c->robust_access);
    cli_json_uint(j, "loop_budget", c->loop_budget);
    cli_json_str(j, "backend", kiln_backend_name(c->backend));
    cli_json_bool(j, "pipeline_cache_keeps_code", c->pipeline_cache_keeps_code);
    cli_json_uint(j, "max_shared_memory_size", c->max_shared_memory_size);
    cli_json_uint(j, "max_per_stage_storage_buffers", c->max_per_stage_storage_buffers);
    cli_json_uint(j, "max_per_stage_uniform_buffers", c->max_per_stage_uniform_buffers);
    cli_json_uint(j, "max_per_stage_resources", c->max_per_stage_resources);
    cli_json_uint(j, "max_buffer_size", c->max_buffer_size);
    cli_json_uint(j, "max_bound_descriptor_sets", c->max_bound_descriptor_sets);
    cli_json_uint(j, "max_per_stage_storage_images", c->max_per_stage_storage_images);
    cli_json_uint(j, "max_per_stage_sampled_images", c->max_per_stage_sampled_images);
    cli_json_uint(j, "max_texel_buffer_elements", c->max_texel_buffer_elements);
    cli_json_uint(j, "min_texel_buffer_offset_alignment", c->min_texel_buffer_offset_alignment);
    cli_json_uint(j, "max_image_dimension_2d", c->max_image_dimension_2d);
    cli_json_uint(j, "max_image_dimension_3d", c->max_image_dimension_3d);
    cli_json_bool(j, "storage_image_read_without_format", c->storage_image_read_without_format);
    cli_json_bool(j, "storage_image_write_without_format", c->storage_image_write_without_format);
    cli_json_close(j, '}');
}

/* The body of cmd_info: j NULL prints the text, else fills the object. */
static int info(struct cli_json *j)
{
    if (!print_devices(j))
        return 1;
    fflush(stdout);
    kiln_context ctx;
    kiln_result r = kiln_context_create(&(kiln_context_desc){0}, &ctx);
    if (r < 0)
        return cli_fail("creating a context on the default device", r);
    kiln_caps caps;
    r = kiln_context_caps(ctx, &caps);
    if (r < 0) {
        cli_fail("reading the context's capabilities", r);
        kiln_context_destroy(ctx);
        return 1;
    }
    if (j)
        json_caps(j, &caps);
    else
        print_caps(&caps);
    kiln_context_destroy(ctx);
    return 0;
}

/* Exit status: 0 printed everything, 1 no device or context, 2 bad usage. */
int cmd_info(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++)
        json |= !strcmp(argv[i], "--json");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--json"))
            continue;
        fprintf(stderr, "kiln info: unexpected argument '%s'\n", argv[i]);
        usage(stderr);
        cli_note_failure("unexpected argument '%s'", argv[i]);
        if (json)
            cli_json_failure(stdout, 2);
        return 2;
    }
    if (!json)
        return info(NULL);
    /* The object is written to a memory stream first: a failure halfway
     * replaces it whole. */
    FILE *jf = cli_json_stdout();
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    struct cli_json j;
    cli_json_init(&j, mem ? mem : jf);
    cli_json_open(&j, NULL, '{');
    cli_json_bool(&j, "ok", true);
    int rc = info(&j);
    cli_json_close(&j, '}');
    if (mem)
        fclose(mem);
    if (rc)
        cli_json_failure(jf, rc);
    else if (text)
        fwrite(text, 1, len, jf);
    free(text);
    if (jf != stdout)
        fclose(jf);
    return rc;
}
