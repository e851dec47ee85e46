/* SPDX-License-Identifier: MIT */
/*
 * defaults.c: the defaults of every desc kiln.h has, in one place.
 *
 * Each kiln_<x>_desc_defaults() returns the desc as kiln's calls see it:
 * a zero field that has a default the desc alone decides gets it here and
 * nowhere else. Every path that takes a desc (the local runtime in
 * src/context, the program module copying a program desc, a server later)
 * calls its function once, at the top, and reads only the filled-in copy,
 * so two sides of a call can never disagree on a default.
 *
 * A default the desc alone cannot decide (one an environment variable
 * read at create or at each submit, the device, or the object's place
 * decides) stays 0 here, "decided later", and the code that decides it
 * says so where it does. Each function is idempotent: filling a filled-in
 * desc changes nothing.
 *
 * It lives in base/ because the program module (below the runtime) copies
 * program descs itself, and the layering lets every module call base.
 * Pointers in a result are the caller's (borrowed), except the constant
 * strings supplied here.
 */
#include <string.h>
#include <sys/resource.h>

#include "base.h"

kiln_context_desc kiln_context_desc_defaults(const kiln_context_desc *desc)
{
    kiln_context_desc d = desc ? *desc : (kiln_context_desc){0};
    if (d.backend == KILN_BACKEND_DEFAULT)
        d.backend = KILN_BACKEND_VULKAN;
    /* Decided later: device (KILN_DEVICE or the device list, at create),
     * validation (KILN_VALIDATION, at create), compile_threads
     * (KILN_COMPILE_THREADS or the cores, at create), specialization
     * (KILN_SPECIALIZATION, at each submit), device_timeout_ms
     * (KILN_DEVICE_TIMEOUT_S, at create). pending's 0 is KILN_PENDING_WAIT. */
    return d;
}

kiln_buffer_desc kiln_buffer_desc_defaults(const kiln_buffer_desc *desc)
{
    kiln_buffer_desc d = desc ? *desc : (kiln_buffer_desc){0};
    if (!d.usage)
        d.usage = KILN_BUFFER_STORAGE;
    if (!d.label)
        d.label = "buffer";
    return d;
}

kiln_define kiln_define_defaults(const kiln_define *define)
{
    kiln_define d = define ? *define : (kiln_define){0};
    if (!d.value)
        d.value = "1";
    return d;
}

kiln_program_desc kiln_program_desc_defaults(const kiln_program_desc *desc)
{
    kiln_program_desc d = desc ? *desc : (kiln_program_desc){0};
    if (!d.source_len && d.source)
        d.source_len = strlen(d.source);
    if (d.language == KILN_LANGUAGE_AUTO) {
        /* SPIR-V's magic number as the first little-endian word. */
        const unsigned char *b = (const unsigned char *)d.source;
        bool magic = b && d.source_len >= 4 && b[0] == 0x03 && b[1] == 0x02 && b[2] == 0x23 && b[3] == 0x07;
        d.language = d.spirv || magic ? KILN_LANGUAGE_SPIRV : KILN_LANGUAGE_GLSL;
    }
    if (!d.name)
        d.name = d.language == KILN_LANGUAGE_SPIRV ? "program.spv"
                 : d.language == KILN_LANGUAGE_HLSL ? "program.hlsl" : "program.comp";
    if (!d.entry)
        d.entry = "main";
    if (!d.optimize)
        d.optimize = 1;
    /* The defines array is the caller's: each define's value default is
     * kiln_define_defaults', applied as the program copies it. The
     * specialization constants (constants, constant_count) have no
     * default: none given, every constant runs at its own. */
    return d;
}

kiln_scheme_desc kiln_scheme_desc_defaults(const kiln_scheme_desc *desc)
{
    kiln_scheme_desc d = desc ? *desc : (kiln_scheme_desc){0};
    if (!d.label)
        d.label = "scheme";
    return d;
}

kiln_node_desc kiln_node_desc_defaults(const kiln_node_desc *desc)
{
    kiln_node_desc d = desc ? *desc : (kiln_node_desc){0};
    for (int i = 1; i < 3; i++)
        if (!d.groups[i])
            d.groups[i] = 1;
    /* Decided later, at add_node: a NULL or empty label ("node<N>", N the
     * node's index in its scheme) and a binding's size 0 (to the end of its
     * buffer). groups[0] has no default: 0 is refused. */
    return d;
}

kiln_archive_tidy_desc kiln_archive_tidy_desc_defaults(const kiln_archive_tidy_desc *desc)
{
    kiln_archive_tidy_desc d = desc ? *desc : (kiln_archive_tidy_desc){0};
    if (!d.compact_at)
        d.compact_at = 2;
    if (!d.small_bytes)
        d.small_bytes = 8ull << 20;
    /* Decided later: max_size (the context's archive bound:
     * KILN_ARCHIVE_MAX_SIZE as read when the context was made, else 1 GiB). */
    return d;
}

kiln_precompile_desc kiln_precompile_desc_defaults(const kiln_precompile_desc *desc)
{
    kiln_precompile_desc d = desc ? *desc : (kiln_precompile_desc){0};
    /* Decided later: stall_s (KILN_PRECOMPILE_STALL_S, read at each call,
     * else 5 s). Any value that is not a positive number of seconds (0,
     * negative, NaN) is that "decide later", written as 0. */
    if (!(d.stall_s > 0))
        d.stall_s = 0;
    return d;
}

kiln_image_desc kiln_image_desc_defaults(const kiln_image_desc *desc)
{
    kiln_image_desc d = desc ? *desc : (kiln_image_desc){0};
    if (d.depth == 0)
        d.depth = 1;
    if (d.dims == 0)
        d.dims = d.depth > 1 ? 3 : 2;
    if (!d.label)
        d.label = "image";
    if (d.layers == 0)
        d.layers = d.cube ? 6 : 1;
    if (d.levels == 0)
        d.levels = 1;
    /* Decided later: usage 0 (each use the device supports for the
     * format, at create). */
    return d;
}

kiln_sampler_desc kiln_sampler_desc_defaults(const kiln_sampler_desc *desc)
{
    kiln_sampler_desc d = desc ? *desc : (kiln_sampler_desc){0};
    if (d.filter == KILN_FILTER_DEFAULT)
        d.filter = KILN_FILTER_LINEAR;
    if (d.address == KILN_ADDRESS_DEFAULT)
        d.address = KILN_ADDRESS_CLAMP;
    return d;
}

kiln_server_desc kiln_server_desc_defaults(const kiln_server_desc *desc)
{
    kiln_server_desc d = desc ? *desc : (kiln_server_desc){0};
    if (!d.max_objects)
        d.max_objects = 65536;
    if (!d.max_bytes)
        d.max_bytes = 16ull << 30;
    if (!d.max_compiles)
        d.max_compiles = 256;
    if (!d.max_clients) {
        /* From this process's descriptor limit, as it is now: each client
         * holds a stream socket, a datagram socket and a segment, and a
         * moment's descriptor for a new one (4); the server keeps 64 for
         * its own (device, archive files, log, listener, reserve). */
        struct rlimit rl;
        uint64_t soft = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 1024;
        uint64_t n = soft > 64 + 4 ? (soft - 64) / 4 : 1;
        d.max_clients = (uint32_t)(n < 4096 ? n : 4096);
    }
    if (!d.hello_timeout_ms)
        d.hello_timeout_ms = 30000;
    return d;
}
