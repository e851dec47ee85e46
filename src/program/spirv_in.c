/* SPDX-License-Identifier: MIT */
/*
 * spirv_in.c: SPIR-V modules as programs, and what a device must have to
 * run a module.
 *
 * A module a host gives is taken as it is, after two steps: SPIRV-Tools'
 * validator, for the Vulkan version its SPIR-V version needs (the module's
 * header says which: 1.0-1.3 Vulkan 1.1, 1.4 Vulkan 1.1 with SPIR-V 1.4,
 * 1.5 Vulkan 1.2, 1.6 Vulkan 1.3), with the block layouts Vulkan 1.2's
 * features allow (relaxed, std430 uniforms, scalar); then its entry point:
 * the GLCompute entry named as the desc's entry is kept and named "main"
 * (every pipeline kiln makes enters "main"; a GLSL program's entry is
 * renamed alike by a macro), and every other entry point, with its
 * execution modes, is dropped, so reflection and the optimizer see the one
 * kiln runs. Nothing else of the module changes.
 *
 * Whether a device can run a module (any program's: GLSL compiles to
 * SPIR-V 1.5) is decided from the module alone, before any Vulkan call:
 * its SPIR-V version within what the device's Vulkan version takes, each
 * capability whose feature kiln knows present on the device, and each
 * SPIR-V extension one that Vulkan's core holds on that version (kiln
 * enables no device extension a shader could need). A capability kiln
 * does not list is the driver's to judge.
 */
#include "program_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define SPV_MAGIC 0x07230203u
#define OP_EXTENSION 10
#define OP_ENTRY_POINT 15
#define OP_EXECUTION_MODE 16
#define OP_CAPABILITY 17
#define OP_EXECUTION_MODE_ID 331
#define MODEL_GLCOMPUTE 5

static const char *model_name(uint32_t m)
{
    static const char *const names[] = {"Vertex",   "TessellationControl", "TessellationEvaluation", "Geometry",
                                        "Fragment", "GLCompute",           "Kernel"};
    return m < sizeof names / sizeof names[0] ? names[m] : "another stage";
}

/* A literal string at words w[0..n) as a C string into buf; false when it
 * has no NUL within them. */
static bool literal(const uint32_t *w, size_t n, char *buf, size_t cap)
{
    const char *s = (const char *)w;
    const char *nul = memchr(s, 0, n * 4);
    if (!nul)
        return false;
    snprintf(buf, cap, "%.*s", (int)(nul - s), s);
    return true;
}

kiln_result prog_refuse(char **log, const char *name, const char *text)
{
    size_t n = strlen(name) + strlen(text) + 16;
    *log = malloc(n);
    if (!*log)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the log of %s", name);
    snprintf(*log, n, "%s: error: %s\n", name, text);
    return KILN_RAISE(KILN_ERR_COMPILE, "%s failed to compile: %s", name, text);
}

/* Debug instructions a module may lose without changing what it computes:
 * OpSourceContinued, OpSource, OpSourceExtension, OpName, OpMemberName,
 * OpLine, OpNoLine, OpModuleProcessed (OpString stays: non-semantic debug
 * information may name it). */
static bool is_debug_op(uint32_t op)
{
    return op == 2 || op == 3 || op == 4 || op == 5 || op == 6 || op == 8 || op == 317 || op == 330;
}

/* w (words of it) in place: step 1 marks OpSource's language Unknown (a
 * number a SPIRV-Tools older than the module's compiler does not know,
 * Slang's 11 say); step 2 also drops every debug instruction. *words is
 * the new length. */
static void neutralize_debug(uint32_t *w, size_t *words, int step)
{
    size_t o = 5;
    for (size_t i = 5; i < *words;) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        if (!wc || wc > *words - i)
            return;
        if (op == 3 && wc >= 3) {
            w[i + 1] = 0;   /* SourceLanguage Unknown */
        }
        if (!(step == 2 && is_debug_op(op))) {
            memmove(&w[o], &w[i], wc * 4);
            o += wc;
        }
        i += wc;
    }
    *words = o;
}

/* Validates the module (w, *words), which a step may rewrite: what the
 * validator rejects only in debug information is a note (*note, malloc'd)
 * and the module runs without it. */
static kiln_result validate(const struct prog_source *src, uint32_t *w, size_t *words, char **log, char **note)
{
    char text[1536], why[1280], again[256];
    int env = prog_spirv_env(w[1]);
    if (env < 0) {
        snprintf(text, sizeof text, "its SPIR-V version is %u.%u (header word 0x%08x); kiln takes 1.0 to 1.6",
                 (w[1] >> 16) & 0xff, (w[1] >> 8) & 0xff, w[1]);
        return prog_refuse(log, src->name, text);
    }
    int r = prog_spirv_validate(w, *words, env, why, sizeof why);
    if (r < 0)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory validating %s", src->name);
    if (r == 0)
        return KILN_OK;
    uint32_t *copy = mem_alloc(*words * 4);
    if (!copy)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory validating %s", src->name);
    for (int step = 1; step <= 2 && r == 1; step++) {
        size_t n = *words;
        memcpy(copy, w, n * 4);
        neutralize_debug(copy, &n, step);
        r = prog_spirv_validate(copy, n, env, again, sizeof again);
        if (r == 0) {
            memcpy(w, copy, n * 4);
            *words = n;
            snprintf(text, sizeof text, "%s: note: the validator rejected only its debug information (%s); kiln runs "
                     "it %s\n", src->name, why, step == 1 ? "with its source language marked Unknown"
                                                          : "without its debug instructions");
            *note = str_dup(text);
            log_info("%.*s", (int)strcspn(text, "\n"), text);
        }
    }
    free(copy);
    if (r < 0)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory validating %s", src->name);
    if (r == 0)
        return KILN_OK;
    uint32_t minor = (w[1] >> 8) & 0xff;
    snprintf(text, sizeof text, "SPIR-V 1.%u module is not valid for Vulkan %s: %s", minor,
             minor <= 4 ? "1.1" : minor == 5 ? "1.2" : "1.3", why);
    return prog_refuse(log, src->name, text);
}

kiln_result prog_spirv_entry(const char *name, const char *entry, const uint32_t *w, size_t words, uint32_t **out,
                             size_t *out_words, char **log)
{
    *out = NULL;
    /* The entry points, and the one kept. */
    uint32_t keep = 0;
    bool found = false;
    char listed[512] = "";
    size_t ll = 0;
    for (size_t i = 5; i < words;) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        if (!wc || wc > words - i)
            return prog_refuse(log, name, "the module has a malformed instruction");
        if (op == OP_ENTRY_POINT && wc >= 4) {
            char ep[128];
            if (!literal(&w[i + 3], wc - 3, ep, sizeof ep))
                ep[0] = 0;
            if (w[i + 1] == MODEL_GLCOMPUTE && !strcmp(ep, entry) && !found) {
                keep = w[i + 2];
                found = true;
            }
            if (ll < sizeof listed)
                ll += (size_t)snprintf(listed + ll, sizeof listed - ll, "%s'%s' (%s)", ll ? ", " : "", ep,
                                       model_name(w[i + 1]));
        }
        i += wc;
    }
    if (!found) {
        char text[768];
        snprintf(text, sizeof text, "the module has no GLCompute entry point named '%s'; its entry points: %s",
                 entry, ll ? listed : "none");
        return prog_refuse(log, name, text);
    }
    /* The module again: the kept entry named "main", the others and their
     * execution modes gone. "main" takes no more words than any name. */
    uint32_t *o = mem_alloc(words * 4 + 16);
    if (!o)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the module of %s", name);
    memcpy(o, w, 20);
    size_t n = 5;
    bool emitted = false;
    for (size_t i = 5; i < words;) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        if (op == OP_ENTRY_POINT) {
            if (wc >= 4 && w[i + 2] == keep && w[i + 1] == MODEL_GLCOMPUTE && !emitted) {
                size_t name_words = 1;
                while (name_words < wc - 3 && memchr(&w[i + 3 + name_words - 1], 0, 4) == NULL)
                    name_words++;
                size_t iface = wc - 3 - name_words;
                o[n] = ((uint32_t)(3 + 2 + iface) << 16) | OP_ENTRY_POINT;
                o[n + 1] = w[i + 1];
                o[n + 2] = w[i + 2];
                memcpy(&o[n + 3], "main\0\0\0\0", 8);
                memcpy(&o[n + 5], &w[i + 3 + name_words], iface * 4);
                n += 5 + iface;
                emitted = true;
            }
        } else if (!((op == OP_EXECUTION_MODE || op == OP_EXECUTION_MODE_ID) && wc >= 2 && w[i + 1] != keep)) {
            memcpy(&o[n], &w[i], wc * 4);
            n += wc;
        }
        i += wc;
    }
    *out = o;
    *out_words = n;
    return KILN_OK;
}

kiln_result prog_spirv_take(const struct prog_source *src, uint32_t **out, size_t *out_words, char **log)
{
    *out = NULL;
    *log = NULL;
    size_t words = src->source_len / 4;
    uint32_t *w = mem_alloc(words * 4 + 4);   /* aligned words: source is bytes */
    if (!w)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the module of %s", src->name);
    memcpy(w, src->source, words * 4);
    char *note = NULL;
    kiln_result r = words >= 5 && w[0] == SPV_MAGIC ? validate(src, w, &words, log, &note)
                                                    : prog_refuse(log, src->name, "not a SPIR-V module");
    if (r == KILN_OK)
        r = prog_spirv_entry(src->name, src->entry, w, words, out, out_words, log);
    if (r == KILN_OK)
        *log = note;
    else
        free(note);
    free(w);
    return r;
}

/* ---- what a device must have --------------------------------------------------------- */

enum need { ALWAYS, FEATURE, EITHER, SUBGROUP, READ_NO_FORMAT, WRITE_NO_FORMAT, NEVER };

static const struct capability {
    uint32_t id;
    const char *name;
    enum need need;
    uint32_t bits;          /* kiln_shader_feature (or kiln_subgroup_ops) bits */
    const char *feature;    /* the feature's name, or why NEVER */
} capabilities[] = {
    {4, "Addresses", NEVER, 0, "an OpenCL addressing model, which Vulkan has not"},
    {5, "Linkage", NEVER, 0, "a module to link, which Vulkan cannot run"},
    {6, "Kernel", NEVER, 0, "an OpenCL kernel, which Vulkan cannot run"},
    {9, "Float16", FEATURE, KILN_FEATURE_FLOAT16, "shaderFloat16"},
    {10, "Float64", FEATURE, KILN_FEATURE_FLOAT64, "shaderFloat64"},
    {11, "Int64", FEATURE, KILN_FEATURE_INT64, "shaderInt64"},
    {12, "Int64Atomics", EITHER, KILN_FEATURE_INT64_ATOMICS | KILN_FEATURE_SHARED_INT64_ATOMICS,
     "shaderBufferInt64Atomics or shaderSharedInt64Atomics"},
    {22, "Int16", FEATURE, KILN_FEATURE_INT16, "shaderInt16"},
    {25, "ImageGatherExtended", FEATURE, KILN_FEATURE_IMAGE_GATHER_EXTENDED, "shaderImageGatherExtended"},
    {27, "StorageImageMultisample", FEATURE, KILN_FEATURE_STORAGE_IMAGE_MULTISAMPLE, "shaderStorageImageMultisample"},
    {39, "Int8", FEATURE, KILN_FEATURE_INT8, "shaderInt8"},
    {49, "StorageImageExtendedFormats", FEATURE, KILN_FEATURE_STORAGE_IMAGE_EXTENDED_FORMATS,
     "shaderStorageImageExtendedFormats"},
    {55, "StorageImageReadWithoutFormat", READ_NO_FORMAT, 0, "shaderStorageImageReadWithoutFormat"},
    {56, "StorageImageWriteWithoutFormat", WRITE_NO_FORMAT, 0, "shaderStorageImageWriteWithoutFormat"},
    {61, "GroupNonUniform", SUBGROUP, KILN_SUBGROUP_BASIC, "subgroup operations (basic)"},
    {62, "GroupNonUniformVote", SUBGROUP, KILN_SUBGROUP_VOTE, "subgroup operations (vote)"},
    {63, "GroupNonUniformArithmetic", SUBGROUP, KILN_SUBGROUP_ARITHMETIC, "subgroup operations (arithmetic)"},
    {64, "GroupNonUniformBallot", SUBGROUP, KILN_SUBGROUP_BALLOT, "subgroup operations (ballot)"},
    {65, "GroupNonUniformShuffle", SUBGROUP, KILN_SUBGROUP_SHUFFLE, "subgroup operations (shuffle)"},
    {66, "GroupNonUniformShuffleRelative", SUBGROUP, KILN_SUBGROUP_SHUFFLE_RELATIVE,
     "subgroup operations (shuffle relative)"},
    {67, "GroupNonUniformClustered", SUBGROUP, KILN_SUBGROUP_CLUSTERED, "subgroup operations (clustered)"},
    {68, "GroupNonUniformQuad", SUBGROUP, KILN_SUBGROUP_QUAD, "subgroup operations (quad)"},
    {4433, "StorageBuffer16BitAccess", FEATURE, KILN_FEATURE_STORAGE_16BIT, "storageBuffer16BitAccess"},
    {4434, "UniformAndStorageBuffer16BitAccess", FEATURE, KILN_FEATURE_UNIFORM_16BIT,
     "uniformAndStorageBuffer16BitAccess"},
    {4435, "StoragePushConstant16", FEATURE, KILN_FEATURE_PUSH_16BIT, "storagePushConstant16"},
    {4441, "VariablePointersStorageBuffer", FEATURE, KILN_FEATURE_VARIABLE_POINTERS_STORAGE,
     "variablePointersStorageBuffer"},
    {4442, "VariablePointers", FEATURE, KILN_FEATURE_VARIABLE_POINTERS, "variablePointers"},
    {4448, "StorageBuffer8BitAccess", FEATURE, KILN_FEATURE_STORAGE_8BIT, "storageBuffer8BitAccess"},
    {4449, "UniformAndStorageBuffer8BitAccess", FEATURE, KILN_FEATURE_UNIFORM_8BIT,
     "uniformAndStorageBuffer8BitAccess"},
    {4450, "StoragePushConstant8", FEATURE, KILN_FEATURE_PUSH_8BIT, "storagePushConstant8"},
    {5016, "Int64ImageEXT", FEATURE, KILN_FEATURE_IMAGE_INT64,
     "shaderImageInt64Atomics (VK_EXT_shader_image_atomic_int64: r64ui and r64i images)"},
    {5345, "VulkanMemoryModel", FEATURE, KILN_FEATURE_MEMORY_MODEL, "vulkanMemoryModel"},
    {5346, "VulkanMemoryModelDeviceScope", FEATURE, KILN_FEATURE_MEMORY_MODEL_DEVICE, "vulkanMemoryModelDeviceScope"},
    {5347, "PhysicalStorageBufferAddresses", FEATURE, KILN_FEATURE_DEVICE_ADDRESS, "bufferDeviceAddress"},
    {6016, "DotProductInputAll", FEATURE, KILN_FEATURE_INTEGER_DOT_PRODUCT, "shaderIntegerDotProduct"},
    {6017, "DotProductInput4x8Bit", FEATURE, KILN_FEATURE_INTEGER_DOT_PRODUCT, "shaderIntegerDotProduct"},
    {6018, "DotProductInput4x8BitPacked", FEATURE, KILN_FEATURE_INTEGER_DOT_PRODUCT, "shaderIntegerDotProduct"},
    {6019, "DotProduct", FEATURE, KILN_FEATURE_INTEGER_DOT_PRODUCT, "shaderIntegerDotProduct"},
};

/* SPIR-V extensions a device of Vulkan 1.<minor> takes with no device
 * extension enabled (those its core holds), and those a device extension
 * kiln enables where the device has it brings (feature: the
 * kiln_shader_feature bit that says the device has it; minor 0). */
static const struct extension {
    const char *name;
    uint32_t minor;
    uint32_t feature;
} extensions[] = {
    {"SPV_EXT_shader_image_int64", 0, KILN_FEATURE_IMAGE_INT64},
    {"SPV_KHR_storage_buffer_storage_class", 1, 0}, {"SPV_KHR_variable_pointers", 1, 0},
    {"SPV_KHR_16bit_storage", 1, 0},                {"SPV_KHR_device_group", 1, 0},
    {"SPV_KHR_multiview", 1, 0},                    {"SPV_KHR_shader_draw_parameters", 1, 0},
    {"SPV_KHR_8bit_storage", 2, 0},                 {"SPV_KHR_vulkan_memory_model", 2, 0},
    {"SPV_KHR_physical_storage_buffer", 2, 0},      {"SPV_KHR_float_controls", 2, 0},
    {"SPV_EXT_descriptor_indexing", 2, 0},
    {"SPV_KHR_non_semantic_info", 3, 0},            {"SPV_KHR_terminate_invocation", 3, 0},
    {"SPV_EXT_demote_to_helper_invocation", 3, 0},  {"SPV_KHR_integer_dot_product", 3, 0},
};

kiln_result prog_check_device(const char *name, const uint32_t *w, size_t words, const kiln_caps *caps)
{
    if (words < 5)
        return KILN_RAISE(KILN_ERR_INVALID, "%s: its SPIR-V is %zu words, shorter than a header", name, words);
    uint32_t minor_vk = (caps->api_version >> 12) & 0x3ff, major_vk = caps->api_version >> 22 & 0x7f;
    uint32_t spv_minor = (w[1] >> 8) & 0xff;
    uint32_t most = major_vk > 1 || minor_vk >= 3 ? 6 : minor_vk == 2 ? 5 : minor_vk == 1 ? 3 : 0;
    if (spv_minor > most)
        return KILN_RAISE(KILN_ERR_LIMIT, "%s is SPIR-V 1.%u, and this device's Vulkan %u.%u takes SPIR-V up to 1.%u",
                          name, spv_minor, major_vk, minor_vk, most);
    for (size_t i = 5; i + 1 < words;) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        if (!wc || wc > words - i)
            return KILN_RAISE(KILN_ERR_INVALID, "%s: its SPIR-V has a malformed instruction at word %zu", name, i);
        if (op == OP_CAPABILITY && wc >= 2) {
            for (size_t k = 0; k < sizeof capabilities / sizeof capabilities[0]; k++) {
                const struct capability *c = &capabilities[k];
                if (c->id != w[i + 1])
                    continue;
                bool ok = c->need == ALWAYS ||
                          (c->need == FEATURE && (caps->shader_features & c->bits) == c->bits) ||
                          (c->need == EITHER && (caps->shader_features & c->bits)) ||
                          (c->need == SUBGROUP && (caps->subgroup_ops & c->bits) == c->bits) ||
                          (c->need == READ_NO_FORMAT && caps->storage_image_read_without_format) ||
                          (c->need == WRITE_NO_FORMAT && caps->storage_image_write_without_format);
                if (ok)
                    break;
                if (c->need == NEVER)
                    return KILN_RAISE(KILN_ERR_LIMIT, "%s declares SPIR-V capability %s: %s", name, c->name,
                                      c->feature);
                return KILN_RAISE(KILN_ERR_LIMIT, "%s declares SPIR-V capability %s, which needs %s; the device (%s) "
                                  "lacks it", name, c->name, c->feature, caps->device_name);
            }
        } else if (op == OP_EXTENSION && wc >= 2) {
            char ext[128];
            if (!literal(&w[i + 1], wc - 1, ext, sizeof ext))
                return KILN_RAISE(KILN_ERR_INVALID, "%s: its SPIR-V names an extension without an end", name);
            uint32_t needs = UINT32_MAX;
            for (size_t k = 0; k < sizeof extensions / sizeof extensions[0]; k++)
                if (!strcmp(extensions[k].name, ext) &&
                    (caps->shader_features & extensions[k].feature) == extensions[k].feature)
                    needs = extensions[k].minor;
            if (major_vk == 1 && needs > minor_vk) {
                if (needs <= 3)
                    return KILN_RAISE(KILN_ERR_LIMIT, "%s uses SPIR-V extension %s, which is Vulkan 1.%u's; this "
                                      "device's Vulkan is %u.%u", name, ext, needs, major_vk, minor_vk);
                return KILN_RAISE(KILN_ERR_LIMIT, "%s uses SPIR-V extension %s, which needs a Vulkan device extension "
                                  "kiln does not enable", name, ext);
            }
        }
        i += wc;
    }
    return KILN_OK;
}
