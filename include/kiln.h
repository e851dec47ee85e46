/* SPDX-License-Identifier: MIT */
/*
 * kiln.h: the whole public API of kiln, a GPU compute runtime over Vulkan.
 *
 * Shape of the API:
 * - Every object is a small struct holding a 64-bit {slot, gen} id. A zero id
 *   is null. A stale, destroyed or foreign handle makes a call return
 *   KILN_ERR_HANDLE; it never crashes.
 * - Calls that make objects take a desc struct whose zero-initialized fields
 *   mean "the default". kiln_<x>_desc_defaults(&desc) returns the desc as
 *   the call sees it, every default filled in (NULL: a zero desc); it is the
 *   one place kiln applies them. A default the desc alone cannot decide (an
 *   environment variable, the device or the object's place in a scheme
 *   decides it) stays 0 there, "decided later", and the desc says what
 *   decides it and when. Every string and array a desc points to is copied
 *   during the call: the caller keeps ownership and may free it as soon as
 *   the call returns. Nothing kiln returns points into kiln's memory, so
 *   every call can travel as a plain record to a kiln server in another
 *   process.
 * - Calls return kiln_result: KILN_OK (0) or a negative error. The text of the
 *   last error on the calling thread is kiln_last_error().
 * - Threads. Calls on one context may come from any thread. A context runs
 *   them one at a time, except that a call never waits holding the
 *   context: while kiln_ticket_wait, kiln_context_wait_idle,
 *   kiln_program_wait, kiln_context_precompile, a submit waiting for a
 *   program (KILN_PENDING_WAIT), kiln_node_set_program waiting for a
 *   compile, a readback of bytes submitted work still writes, an upload
 *   over bytes submitted work still uses, or a destroy waits, other
 *   threads' calls on that context run. Each waits only for what it needs:
 *   a readback for the submits that may write its bytes, an upload for
 *   those that use them, a destroy for those that use the object. A
 *   destroy waits for the object's work (it is never refused for it); a
 *   call of another thread waiting on that object then fails with
 *   KILN_ERR_HANDLE naming it. Calls on different contexts never wait for
 *   each other. Remotely (KILN_REMOTE) the same holds, a wait letting
 *   other calls in every 2 ms at most.
 * - KILN_SYNC=1 (read at context create) makes every call that leaves work
 *   running (a submit, an upload, a create that fills memory) wait for it,
 *   so an error appears at the call that caused it (as
 *   CUDA_LAUNCH_BLOCKING does), in process and remotely; remotely it also
 *   turns run-ahead off.
 * - Run-ahead (remote contexts). kiln_scheme_submit, kiln_scheme_add_node
 *   of a program this context has seen ready (kiln_program_wait or
 *   kiln_program_interface_get said so), kiln_node_remove,
 *   kiln_scheme_destroy, kiln_node_set_param on a node whose param words
 *   are known that way, kiln_node_set_program to such a program, and
 *   kiln_buffer_upload and kiln_image_upload of bytes that travel in the
 *   call's record (up to half the command ring less 4 KiB, 508 KiB by
 *   default; the bytes are copied, so the caller may reuse its memory at
 *   once) into a buffer or image this context made, within its size,
 *   return without waiting for the server. The client mints scheme and node
 *   handles and numbers tickets itself (a remote context's tickets are 1,
 *   2, 3, ..., one per submit). What the client can check it checks at
 *   once, in the runtime's words: its own handles (a stale or foreign
 *   scheme or node, a ticket never issued), a param slot past the node's
 *   words; an upload it cannot check (another size, a buffer it does not
 *   know) waits for its answer. An error only the server can find (a binding's handle, a
 *   program that failed, a lost device) is returned by the context's next
 *   synchronization point: kiln_ticket_wait, kiln_context_wait_idle,
 *   kiln_program_wait, kiln_buffer_readback, kiln_image_readback or
 *   kiln_node_get_params, when that call itself succeeds (its own work
 *   done), naming the call that failed ("an earlier call failed:
 *   scheme_add_node (call 812, run ahead): ..."), once; a node whose add
 *   failed so is stale from then on, and a param word set after a swap the
 *   server refused is refused too (it was meant for the other program's
 *   words). None is lost: one never reported is logged when the context is
 *   destroyed. In process every call's error is its own; KILN_SYNC=1 makes
 *   it so remotely too.
 */
#ifndef KILN_H
#define KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_NODISCARD __attribute__((warn_unused_result))
#else
#define KILN_NODISCARD
#endif
/* Marks the library's exported calls: libkiln is built with hidden
 * visibility and exports kiln_* alone (the `exports` test checks it). */
#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/* kiln's version, MAJOR.MINOR.PATCH; kiln_version() is the library's own
 * (the one linked, which may differ from the header compiled against). */
#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 4
#define KILN_VERSION_PATCH 0

/* ---- results ------------------------------------------------------------ */

typedef enum kiln_result {
    KILN_OK = 0,
    KILN_ERR_INVALID = -1,     /* a bad argument or desc field; the message names it */
    KILN_ERR_HANDLE = -2,      /* null, stale, destroyed or foreign handle */
    KILN_ERR_NO_DEVICE = -3,   /* no Vulkan device fits; the message lists those seen */
    KILN_ERR_DEVICE = -4,      /* the Vulkan driver returned an error */
    KILN_ERR_NO_MEMORY = -5,   /* host or device memory exhausted */
    KILN_ERR_COMPILE = -6,     /* a program failed to compile (see kiln_program_log) */
    KILN_ERR_PENDING = -7,     /* a program is still compiling */
    KILN_ERR_LAYOUT = -8,      /* bindings do not match a program's interface */
    KILN_ERR_BUSY = -9,        /* the object is still used by another object */
    KILN_ERR_LIMIT = -10,      /* a device or kiln limit was exceeded; the message names it */
    KILN_ERR_TIMEOUT = -11,    /* a wait ran out of time */
    KILN_ERR_IO = -12,         /* a file could not be read or written */
    KILN_ERR_VERIFY = -13,     /* KILN_SPEC_VERIFY=1: a variant computed other values than its universal program */
    KILN_ERR_DEVICE_LOST = -14, /* the device was lost, or submitted work outlived device_timeout_ms;
                                   every later call on the context returns it; the message names
                                   what was running. Remotely also: the server died, stopped,
                                   hung or was replaced */
    KILN_ERR_PROTOCOL = -15,   /* remote: the connection to the server broke its protocol (a reply to
                                  no call, a broken ring, another protocol version); every later
                                  call on the context returns it; the message says what was seen */
} kiln_result;

/* A constant name for a result, such as "KILN_ERR_HANDLE". */
KILN_API const char *kiln_result_name(kiln_result r);

/* The library's version as "MAJOR.MINOR.PATCH", such as "0.3.0"; a constant string. */
KILN_API const char *kiln_version(void);

/* What kiln was built with and runs on (`kiln --version` prints it):
 * versions as "MAJOR.MINOR.PATCH" text, "" where not known. */
typedef struct kiln_build_info {
    char kiln[16];               /* kiln_version() */
    char vulkan_loader[16];      /* the Vulkan loader found now (vkEnumerateInstanceVersion); "" none */
    char vulkan_headers[16];     /* the Vulkan headers kiln was built with */
    char shaderc[32];            /* the GLSL compiler (shaderc with glslang), built in */
    char spirv_tools[32];        /* SPIRV-Tools (kiln's optimizer), built in */
    char spirv_cross[32];        /* SPIRV-Cross (reflection), as built against */
    char spirv[16];              /* the newest SPIR-V version shaderc emits ("1.6") */
} kiln_build_info;
KILN_API KILN_NODISCARD kiln_result kiln_build_info_get(kiln_build_info *out);

/* The message of the last call on this thread, if it failed ("" if it
 * succeeded: every call clears it when it starts). The text stays valid
 * until the next kiln call on the same thread. */
KILN_API const char *kiln_last_error(void);

/* ---- logs ------------------------------------------------------------------ */

typedef enum kiln_log_level {
    KILN_LOG_DEFAULT = 0,    /* kiln_set_log_level: back to KILN_LOG, else warn */
    KILN_LOG_ERROR = 1,
    KILN_LOG_WARN = 2,
    KILN_LOG_INFO = 3,
    KILN_LOG_DEBUG = 4,      /* also every error raised, with kiln's file:line */
} kiln_log_level;

/* Receives each log line kiln writes (without a trailing newline), from
 * whichever thread writes it (compile workers and the archive's saver
 * too), one at a time. It must not call kiln. */
typedef void (*kiln_log_fn)(kiln_log_level level, const char *message, void *user);

/* Where the process's kiln logs go: fn (with user), or stderr as
 * "kiln: <level>: <message>" when fn is NULL (the default). */
KILN_API void kiln_set_log_callback(kiln_log_fn fn, void *user);
/* The most verbose level written: a level set here wins over KILN_LOG;
 * KILN_LOG_DEFAULT gives the choice back to KILN_LOG (else warn). */
KILN_API void kiln_set_log_level(kiln_log_level level);
/* The level in force now. */
KILN_API kiln_log_level kiln_get_log_level(void);

/* ---- handles ------------------------------------------------------------ */

typedef struct kiln_context { uint64_t id; } kiln_context;
typedef struct kiln_buffer { uint64_t id; } kiln_buffer;
typedef struct kiln_image { uint64_t id; } kiln_image;
typedef struct kiln_program { uint64_t id; } kiln_program;
typedef struct kiln_scheme { uint64_t id; } kiln_scheme;
typedef struct kiln_node { uint64_t id; } kiln_node;
/* A submit's ticket: wait on it with kiln_ticket_wait. 0 is "nothing". */
typedef struct kiln_ticket { uint64_t value; } kiln_ticket;

/* ---- context and device --------------------------------------------------- */

typedef enum kiln_backend_kind {
    KILN_BACKEND_DEFAULT = 0, /* Vulkan */
    KILN_BACKEND_VULKAN = 1,
    KILN_BACKEND_MOCK = 2,    /* runs nothing; counts calls; for tests of kiln's own logic */
} kiln_backend_kind;
/* A backend's name: "vulkan", "mock"; "default" for KILN_BACKEND_DEFAULT,
 * "unknown" for a value kiln is not built with. Never NULL. */
KILN_API const char *kiln_backend_name(kiln_backend_kind kind);

typedef enum kiln_device_type {
    KILN_DEVICE_OTHER = 0,
    KILN_DEVICE_INTEGRATED_GPU = 1,
    KILN_DEVICE_DISCRETE_GPU = 2,
    KILN_DEVICE_VIRTUAL_GPU = 3,
    KILN_DEVICE_CPU = 4,
} kiln_device_type;

typedef enum kiln_pending_policy {
    KILN_PENDING_WAIT = 0,   /* wait for the compile (it goes first) */
    KILN_PENDING_SKIP = 1,   /* leave the node out of this submit and count it */
} kiln_pending_policy;

/*
 * Settings: every setting kiln has is a field of the context desc, and
 * most also an environment variable (README.md's table lists them). One
 * rule for all: a field the desc sets wins; a field left 0 (or NULL) is
 * decided by its environment variable, read when the context is made (or,
 * where the field says so, at every submit); without either, kiln's
 * default. Tri-state switches take 1 (on), -1 (off) and 0 (the variable
 * decides).
 */
typedef struct kiln_context_desc {
    kiln_backend_kind backend;
    /* Device choice, same syntax as KILN_DEVICE: an index into
     * kiln_devices() ("1") or a case-insensitive substring of the device
     * name ("llvmpipe"). NULL: KILN_DEVICE, else the first discrete or
     * integrated GPU, else a CPU device (lavapipe). Copied. */
    const char *device;
    /* Validation layer: 1 on, -1 off, 0 = KILN_VALIDATION decides (default off). */
    int validation;
    /* Check mode: 1 on, -1 off, 0 = KILN_CHECK decides (default off). The
     * validation layer with its GPU-assisted checks, robust access off, so
     * an access past the end of a bound buffer is reported: each one a
     * line in the log (level error) naming the node, the binding and the
     * byte, counted in kiln_context_stats.check_findings and as a
     * validation error. Debian's layer checks against the buffer's end
     * (from the binding's offset), not the end of a slice's range. Slow
     * (every submit is instrumented and waited for); it takes one
     * descriptor set of the device's (kiln_caps.max_bound_descriptor_sets
     * says one less). Refused together with robust. */
    int check;
    /* Robust access: 1 on, -1 off, 0 = KILN_ROBUST decides (default off).
     * robustBufferAccess (and robustBufferAccess2 and robustImageAccess2
     * where the device has VK_EXT_robustness2): an access past a binding's
     * range touches no other memory (a read gives zero with robustness2).
     * Costs speed on some devices. kiln_caps.robust_access says what is on. */
    int robust;
    /* What a submit does with a node whose program is still compiling. */
    kiln_pending_policy pending;
    /* Compile workers; 0 = KILN_COMPILE_THREADS, else the number of cores. */
    uint32_t compile_threads;
    /* Specialization prediction: 1 on, -1 off, 0 = KILN_SPECIALIZATION
     * decides (default on; read at every submit). For tests that count
     * records; applications need not touch it. */
    int specialization;
    /* Submitted work that has not finished this many milliseconds after it
     * could start (the later of its submit and the moment kiln last saw the
     * device finish earlier work: waiting in the queue is not charged)
     * counts as runaway. kiln notices when it waits (ticket wait, readback,
     * upload, wait_idle, destroy); the context is then lost: every later
     * call returns KILN_ERR_DEVICE_LOST naming what was running, and destroy
     * returns without waiting, leaving the device and what the running work
     * uses allocated (a driver cannot always stop a dispatch) and saying so
     * in the log. Other contexts carry on. 0 = KILN_DEVICE_TIMEOUT_S
     * (seconds, fractions allowed) decides; unset, there is no bound and
     * destroy waits for submitted work. */
    uint32_t device_timeout_ms;
    /* The pipeline archive: on (1) or off (-1; KILN_ARCHIVE, default on);
     * its folder (KILN_ARCHIVE_DIR, else $XDG_CACHE_HOME/kiln, else
     * ~/.cache/kiln; copied); read-only roots shipped with an application,
     * looked up first and never written, separated by ':' (""
     * none; NULL: KILN_ARCHIVE_READONLY; copied); the folder's bound in
     * bytes (KILN_ARCHIVE_MAX_SIZE, else 1 GiB); QA mode, every compile of
     * something the archive lacked named and counted (KILN_ARCHIVE_QA,
     * default off). */
    int archive;
    const char *archive_dir;
    const char *archive_readonly;
    uint64_t archive_max_size;
    int archive_qa;
    /* The compile service: a back-end compile of more SPIR-V words than
     * giant_words is a giant (KILN_GIANT_WORDS, else 100000); giants in
     * flight at once at most (KILN_GIANT_COMPILES, else 4); retries alone
     * of a giant that failed beside others (KILN_ALONE_TRIES, else 2); a
     * compile running longer than slow_compile_s seconds is named in the
     * log (KILN_SLOW_COMPILE_S, else 10); a pipeline cache per worker
     * (KILN_WORKER_CACHES, default off). */
    uint64_t giant_words;
    uint32_t giant_compiles;
    uint32_t alone_tries;
    double slow_compile_s;
    int worker_caches;
    /* Debugging aids: KILN_SPEC_VERIFY (read at every submit when 0; see
     * the README), naming each node skipped while its program compiles
     * (KILN_SKIP_LOG), staging copies on a unified-memory device
     * (KILN_FORCE_STAGING). */
    int spec_verify;
    int skip_log;
    int force_staging;
    /* A Chrome trace-event file (JSON; opens in Perfetto or
     * chrome://tracing) written when the context is destroyed: compiles on
     * their workers' tracks, submits and their device time, specialization
     * events, archive loads and saves. NULL: KILN_TRACE, else none.
     * Copied. */
    const char *trace_path;
    /* Where the context runs: NULL = KILN_REMOTE decides, else here; "" or
     * "local": in this process; "unix:PATH" (or an absolute PATH): in the
     * kiln server listening there (kiln serve; docs/server.md), with the
     * same calls and results; "inproc": in a server on a thread of this
     * process (for tests of the wire). A remote context's device, compile
     * service and archive are the server's: a backend, device or trace_path
     * other than the server's is refused by name; the other fields shaping
     * them are named in the log (level info) and the server's apply.
     * KILN_REMOTE never sends a mock-backend context away. Copied. */
    const char *remote;
} kiln_context_desc;

/* The context desc as kiln_context_create sees it (desc NULL: a zero desc).
 * Filled in: backend KILN_BACKEND_DEFAULT becomes KILN_BACKEND_VULKAN;
 * pending 0 is KILN_PENDING_WAIT already. Decided later, left as given
 * (0 or NULL): device (KILN_DEVICE, else the first discrete or integrated
 * GPU, else a CPU device; chosen at create), validation (KILN_VALIDATION,
 * read at create), compile_threads (KILN_COMPILE_THREADS, else the number
 * of cores; at create), specialization (KILN_SPECIALIZATION, read at every
 * submit), device_timeout_ms (KILN_DEVICE_TIMEOUT_S, read at create).
 * Pointers in the result are the caller's (borrowed). */
KILN_API kiln_context_desc kiln_context_desc_defaults(const kiln_context_desc *desc);

/* Subgroup operation classes (the bits of Vulkan's VkSubgroupFeatureFlags,
 * and the SPIR-V capabilities GroupNonUniform* that need them). */
typedef enum kiln_subgroup_ops {
    KILN_SUBGROUP_BASIC = 1u << 0,
    KILN_SUBGROUP_VOTE = 1u << 1,
    KILN_SUBGROUP_ARITHMETIC = 1u << 2,
    KILN_SUBGROUP_BALLOT = 1u << 3,
    KILN_SUBGROUP_SHUFFLE = 1u << 4,
    KILN_SUBGROUP_SHUFFLE_RELATIVE = 1u << 5,
    KILN_SUBGROUP_CLUSTERED = 1u << 6,
    KILN_SUBGROUP_QUAD = 1u << 7,
} kiln_subgroup_ops;

/* Shader features a device has (kiln enables every one it has): the bits
 * of kiln_caps.shader_features. A program whose SPIR-V declares a
 * capability that needs one the device lacks fails (KILN_ERR_LIMIT) naming
 * the capability and the feature, before any Vulkan call sees it. */
typedef enum kiln_shader_feature {
    KILN_FEATURE_FLOAT64 = 1u << 0,            /* shaderFloat64: double */
    KILN_FEATURE_INT64 = 1u << 1,              /* shaderInt64: int64_t */
    KILN_FEATURE_INT16 = 1u << 2,              /* shaderInt16: int16_t in arithmetic */
    KILN_FEATURE_FLOAT16 = 1u << 3,            /* shaderFloat16: float16_t in arithmetic */
    KILN_FEATURE_INT8 = 1u << 4,               /* shaderInt8: int8_t in arithmetic */
    KILN_FEATURE_STORAGE_16BIT = 1u << 5,      /* storageBuffer16BitAccess */
    KILN_FEATURE_UNIFORM_16BIT = 1u << 6,      /* uniformAndStorageBuffer16BitAccess */
    KILN_FEATURE_PUSH_16BIT = 1u << 7,         /* storagePushConstant16 */
    KILN_FEATURE_STORAGE_8BIT = 1u << 8,       /* storageBuffer8BitAccess */
    KILN_FEATURE_UNIFORM_8BIT = 1u << 9,       /* uniformAndStorageBuffer8BitAccess */
    KILN_FEATURE_PUSH_8BIT = 1u << 10,         /* storagePushConstant8 */
    KILN_FEATURE_INT64_ATOMICS = 1u << 11,     /* shaderBufferInt64Atomics */
    KILN_FEATURE_MEMORY_MODEL = 1u << 12,      /* vulkanMemoryModel */
    KILN_FEATURE_MEMORY_MODEL_DEVICE = 1u << 13, /* vulkanMemoryModelDeviceScope */
    KILN_FEATURE_DEVICE_ADDRESS = 1u << 14,    /* bufferDeviceAddress */
    KILN_FEATURE_VARIABLE_POINTERS_STORAGE = 1u << 15, /* variablePointersStorageBuffer */
    KILN_FEATURE_VARIABLE_POINTERS = 1u << 16, /* variablePointers */
    KILN_FEATURE_IMAGE_GATHER_EXTENDED = 1u << 17, /* shaderImageGatherExtended */
    KILN_FEATURE_STORAGE_IMAGE_EXTENDED_FORMATS = 1u << 18, /* shaderStorageImageExtendedFormats */
    KILN_FEATURE_STORAGE_IMAGE_MULTISAMPLE = 1u << 19, /* shaderStorageImageMultisample */
    KILN_FEATURE_SHARED_INT64_ATOMICS = 1u << 20, /* shaderSharedInt64Atomics */
    KILN_FEATURE_INTEGER_DOT_PRODUCT = 1u << 21, /* shaderIntegerDotProduct (Vulkan 1.3) */
    KILN_FEATURE_IMAGE_INT64 = 1u << 22,       /* shaderImageInt64Atomics (VK_EXT_shader_image_atomic_int64): r64ui, r64i images */
} kiln_shader_feature;

typedef struct kiln_caps {
    char device_name[256];
    char driver_name[256];
    char driver_info[256];
    kiln_device_type device_type;
    uint32_t vendor_id, device_id;
    uint32_t api_version;          /* VK_MAKE_API_VERSION form */
    uint32_t driver_version;
    uint32_t subgroup_size;
    uint32_t subgroup_ops;         /* kiln_subgroup_ops bits compute shaders may use (0: none) */
    uint32_t max_workgroup_count[3];
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_invocations;
    uint32_t max_storage_buffer_range;
    uint32_t max_uniform_buffer_range;
    uint32_t max_push_constants_size;
    uint64_t min_storage_buffer_offset_alignment;
    uint64_t min_uniform_buffer_offset_alignment;
    uint8_t pipeline_cache_uuid[16];
    int unified_memory;            /* 1: buffers are host-visible device memory */
    int validation;                /* 1: the validation layer is on */
    kiln_backend_kind backend;
    /* 1: the driver's pipeline caches keep compiled code (NVIDIA's do), so
     * the pipeline archive keeps pipelines as well as front ends and a later
     * start builds them without compiling; 0: they keep only a header
     * (lavapipe's), so the archive keeps front ends (SPIR-V and interface)
     * alone and every start compiles its pipelines. Found at context
     * creation by making one small pipeline through a fresh cache. */
    int pipeline_cache_keeps_code;
    /* Limits kiln checks before any Vulkan call (KILN_ERR_LIMIT names the
     * one exceeded): bytes of `shared` (Workgroup) memory a program may
     * declare (maxComputeSharedMemorySize); storage and uniform buffers and
     * all resources one program may bind (maxPerStageDescriptorStorageBuffers,
     * maxPerStageDescriptorUniformBuffers, maxPerStageResources); the largest
     * buffer kiln creates, in bytes (the least of maxMemoryAllocationSize,
     * maxBufferSize where Vulkan 1.3 has it, and the largest memory heap,
     * rounded down to a multiple of 4). */
    uint32_t max_shared_memory_size;
    uint32_t max_per_stage_storage_buffers;
    uint32_t max_per_stage_uniform_buffers;
    uint32_t max_per_stage_resources;
    uint64_t max_buffer_size;
    /* Bindings as shaders declare them (checked before any Vulkan call,
     * like the limits above): descriptor sets one program may use, 0..N-1
     * (maxBoundDescriptorSets; kiln takes at most KILN_MAX_SETS); storage
     * images and storage texel buffers, sampled images and uniform texel
     * buffers one program may bind (maxPerStageDescriptorStorageImages,
     * maxPerStageDescriptorSampledImages); a texel buffer's offset
     * alignment in bytes and its most texels (minTexelBufferOffsetAlignment,
     * maxTexelBufferElements). */
    uint32_t max_bound_descriptor_sets;
    uint32_t max_per_stage_storage_images;
    uint32_t max_per_stage_sampled_images;
    uint32_t max_texel_buffer_elements;
    uint64_t min_texel_buffer_offset_alignment;
    /* Images (checked before any Vulkan call): the largest 2D image's
     * width and height, the largest 3D image's sides
     * (maxImageDimension2D, maxImageDimension3D); 1 where the device lets
     * a shader read, or write, a storage image declared without a format
     * qualifier (shaderStorageImageReadWithoutFormat,
     * shaderStorageImageWriteWithoutFormat). */
    uint32_t max_image_dimension_2d;
    uint32_t max_image_dimension_3d;
    int storage_image_read_without_format;
    int storage_image_write_without_format;
    uint32_t shader_features;      /* kiln_shader_feature bits */
    /* Robust access on this context's device: 0 off, 1
     * robustBufferAccess, 2 robustBufferAccess2 as well (out-of-bounds
     * reads give zero); and 1 where check mode is on. */
    int robust_access;
    int check;
    /* Loop iterations a shader may run in all, per invocation, before the
     * device stops it and returns what it has (lavapipe: 65535, one budget
     * every loop shares); 0: no such bound known. Where it is set, kiln
     * warns when a program is compiled for each loop whose count is not a
     * constant within it. */
    uint32_t loop_budget;
    /* Images beyond 2D and 3D (checked before any Vulkan call): a 1D
     * image's width, a cube map's side, array layers
     * (maxImageDimension1D, maxImageDimensionCube, maxImageArrayLayers). */
    uint32_t max_image_dimension_1d;
    uint32_t max_image_dimension_cube;
    uint32_t max_image_array_layers;
} kiln_caps;

/* Creates a context on one device. On KILN_ERR_NO_DEVICE the message lists
 * every device seen. */
KILN_API KILN_NODISCARD kiln_result kiln_context_create(const kiln_context_desc *desc, kiln_context *out);
/* Waits for all submitted work, destroys every object of the context, logs
 * the context's summary line. On a lost context (KILN_ERR_DEVICE_LOST) it
 * does not wait: see kiln_context_desc.device_timeout_ms. */
KILN_API kiln_result kiln_context_destroy(kiln_context ctx);
KILN_API KILN_NODISCARD kiln_result kiln_context_caps(kiln_context ctx, kiln_caps *out);
/* Waits until every submit of the context has finished; KILN_ERR_DEVICE_LOST
 * if one never does (device_timeout_ms) or the driver lost the device. */
KILN_API KILN_NODISCARD kiln_result kiln_context_wait_idle(kiln_context ctx);

typedef struct kiln_context_stats {
    uint64_t buffers, programs, schemes, nodes;     /* live objects */
    uint64_t images;                                /* live images */
    uint64_t submits;                               /* all schemes */
    uint64_t programs_compiled, programs_failed;
    uint64_t pipelines_created;
    uint64_t validation_errors;                     /* messages of error severity */
    uint64_t validation_warnings;
    /* The compile service. */
    uint64_t compile_requests;      /* programs asked for */
    uint64_t compiles_started;      /* compile jobs run (front end and back end count apart) */
    uint64_t compiles_adopted;      /* requests that joined a compile in flight */
    uint64_t compiles_deduplicated; /* requests served by a finished compile */
    uint64_t compiles_failed;
    uint64_t compiles_pending;      /* queued or running now */
    uint64_t giants_deferred, retries_alone, slow_compiles;
    uint64_t skipped_nodes;         /* over every scheme */
    double front_end_seconds, back_end_seconds;
    /* The pipeline archive: front ends (SPIR-V and interface) and, where the
     * driver keeps compiled code in pipeline caches, pipelines. */
    uint64_t archive_hits;          /* front ends served by the archive, not compiled */
    uint64_t archive_added;         /* front ends compiled and added to this run's archive */
    uint64_t archive_misses;        /* lookups that found nothing usable (absent, corrupt, ...) */
    uint64_t archive_pipeline_hits; /* pipelines made from archived cache data without compiling */
    uint64_t archive_pipelines_added;
    uint64_t archive_qa_compiles;   /* KILN_ARCHIVE_QA=1: compiles of what the archive lacked (0 = PASS) */
    uint64_t archive_not_kept;      /* compiled but not kept: past a run archive bound */
    uint64_t archive_runs_saved;    /* run archives saved so far (each once) */
    uint64_t archive_saves_failed;  /* failed save attempts (each is tried once more, 5 s later) */
    uint64_t archive_entries_let_go;/* entries of run archives whose second save failed too */
    uint64_t check_findings;        /* check mode: accesses past a binding's range reported */
} kiln_context_stats;
KILN_API KILN_NODISCARD kiln_result kiln_context_stats_get(kiln_context ctx, kiln_context_stats *out);

/* Devices visible to kiln's Vulkan backend, in kiln_context_desc index order.
 * Fills up to cap entries; *count receives the number of devices. */
typedef struct kiln_device_info {
    char name[256];
    kiln_device_type type;
    uint32_t api_version;
    uint32_t vendor_id, device_id;
} kiln_device_info;
KILN_API KILN_NODISCARD kiln_result kiln_devices(kiln_device_info *out, uint32_t cap, uint32_t *count);

/* ---- buffers --------------------------------------------------------------- */

typedef enum kiln_buffer_usage {
    KILN_BUFFER_STORAGE = 1u << 0,  /* bindable as a storage buffer and a storage or uniform texel buffer (default) */
    KILN_BUFFER_UNIFORM = 1u << 1,  /* bindable as a uniform buffer and a uniform texel buffer */
    /* Has a device address (kiln_buffer_address) a shader reaches through
     * GL_EXT_buffer_reference; needs bufferDeviceAddress
     * (KILN_FEATURE_DEVICE_ADDRESS: refused by name without it). */
    KILN_BUFFER_ADDRESS = 1u << 2,
} kiln_buffer_usage;

/* A new buffer's bytes are all zero. */
typedef struct kiln_buffer_desc {
    uint64_t size;        /* bytes; required, > 0 */
    uint32_t usage;       /* kiln_buffer_usage bits; 0 = KILN_BUFFER_STORAGE */
    const char *label;    /* for messages; copied; NULL = "buffer" */
} kiln_buffer_desc;

/* The buffer desc as kiln_buffer_create sees it (desc NULL: a zero desc):
 * usage 0 becomes KILN_BUFFER_STORAGE, label NULL becomes "buffer" (a
 * constant string). size has no default (0 is refused). Other pointers in
 * the result are the caller's (borrowed). */
KILN_API kiln_buffer_desc kiln_buffer_desc_defaults(const kiln_buffer_desc *desc);

KILN_API KILN_NODISCARD kiln_result kiln_buffer_create(kiln_context ctx, const kiln_buffer_desc *desc, kiln_buffer *out);
/* KILN_ERR_BUSY while a scheme node binds it. Waits for the submits that
 * use it (other calls on the context go on meanwhile). */
KILN_API kiln_result kiln_buffer_destroy(kiln_context ctx, kiln_buffer buf);
/* Copies size bytes from data into the buffer at offset; data may be
 * reused once the call returns. Ordered after every earlier submit of the
 * context: it waits for those that use the buffer (mapped memory), or
 * leaves a transfer that waits on the device for those alone and runs
 * beside earlier dispatches that do not use the buffer (device memory;
 * later submits run after it). */
KILN_API KILN_NODISCARD kiln_result kiln_buffer_upload(kiln_context ctx, kiln_buffer buf, uint64_t offset,
                                                       const void *data, uint64_t size);
/* Copies size bytes at offset into data, once every earlier submit that may
 * write them finished (KILN_ERR_DEVICE_LOST if one never does: see
 * device_timeout_ms). */
KILN_API KILN_NODISCARD kiln_result kiln_buffer_readback(kiln_context ctx, kiln_buffer buf, uint64_t offset,
                                                         void *data, uint64_t size);
/* The buffer's device address, for a shader that reaches it through
 * GL_EXT_buffer_reference: put it in a param word pair (low word first)
 * or in a buffer the shader reads, and name the buffer in the node's
 * `reaches` so the scheme orders its accesses. The buffer must have been
 * made with KILN_BUFFER_ADDRESS. The address lives as long as the buffer. */
KILN_API KILN_NODISCARD kiln_result kiln_buffer_address(kiln_context ctx, kiln_buffer buf, uint64_t *out);

/* ---- programs -------------------------------------------------------------- */

/*
 * A program is one GLSL compute entry point. kiln injects a prelude after the
 * source's #version/#extension header: a push-constant block of
 * KILN_PUSH_BYTES (96) bytes, the 8 u32 param words and then the byte length
 * of the range bound at each binding number (see KILN_PUSH_BYTES), and for
 * each slot n (0..7) the macro KILN_SPEC_<ENTRY>_UWn, which
 * reads word n unless the source or a define already gives it a value. Read
 * params in shaders through the accessor:
 *
 *     uint radius = kiln_param(0);          // word 0, as a uint
 *     float gain  = uintBitsToFloat(kiln_param(1));
 *
 * Defining KILN_SPEC_<ENTRY>_UW0 to a literal ("10u") bakes the word: the
 * compiler sees a constant. All 8 words stay declared whatever is baked, so
 * a baked program binds exactly like the universal one. <ENTRY> is the entry
 * name in upper case. The entry names a `void NAME()` function of the source;
 * kiln compiles it as GLSL's main (by defining NAME to main), so a source
 * whose entry is not main must not also define main. Line numbers in
 * messages are the source's.
 *
 * A program that declares its own `layout(push_constant)` block gets no
 * block of kiln's: its block's words are the node's param words (word n is
 * bytes 4n..4n+3 of the block; kiln_node_desc.params, kiln_node_set_param
 * and kiln_node_get_params reach all of them), kiln_param(n) and
 * kiln_len(b) fail to compile with a message naming the way out (the
 * block's members; a buffer's .length()), and kiln_groups() reads
 * gl_NumWorkGroups. The interface says which (own_push_block, param_words).
 *
 * A baked program computes what the universal one computes for the same
 * words. For floating point, bit-identical results need `precise` on the
 * values involved: without it a driver may contract a*b+c into one fused
 * operation in one variant and not the other (a last-bit difference).
 */
#define KILN_PARAM_WORDS 8
/* A node's param words at most: a program's own push_constant block of up
 * to 256 bytes (the largest maxPushConstantsSize drivers report; the
 * device's own limit is checked when the program is made). */
#define KILN_MAX_PARAM_WORDS 64
#define KILN_MAX_BINDINGS 16
/* Descriptor sets a program may use: 0..KILN_MAX_SETS-1. */
#define KILN_MAX_SETS 8
/* Descriptors of one program in all (each binding counts its array
 * length), and so the most kiln_binding entries a node desc holds. */
#define KILN_MAX_DESCRIPTORS 64
#define KILN_MAX_REACHES 16      /* buffers one node reaches through device addresses (kiln_node_desc.reaches) */
/* kiln's push-constant block: the 8 param words, then the byte length of
 * the range bound at each binding number 0..15 of set 0 (read in GLSL
 * through kiln_len(b); an array binding's element 0; a binding in another
 * set has no kiln_len: use its .length() or imageSize()); 96 bytes. */
#define KILN_PUSH_BYTES (4 * (KILN_PARAM_WORDS + KILN_MAX_BINDINGS))
/* A program's defines and preamble together: their names, values and
 * text, at most this many bytes (1 MiB); the number of defines is bound
 * by this alone. */
#define KILN_MAX_PREAMBLE_BYTES (1u << 20)
#define KILN_MAX_INCLUDE_DIRS 8

/* A preprocessor define: `name` an identifier (`NAME`, `#define NAME
 * value`) or a function-like macro's head (`NAME(a, b)`, `#define NAME(a,
 * b) value`, its parameters identifiers). value is one line (no
 * line break; NULL = "1"). */
typedef struct kiln_define { const char *name; const char *value; /* NULL = "1" */ } kiln_define;

/* A define as a program copies it (define NULL: a zero define): value NULL
 * becomes "1" (a constant string); name is the caller's (borrowed). */
KILN_API kiln_define kiln_define_defaults(const kiln_define *define);

/*
 * Specialization constants (`layout(constant_id = N) const T name = v;`,
 * and `layout(local_size_x_id = N) in;` for the workgroup size) are set
 * per program: kiln_program_desc.constants gives {id, word} pairs, and
 * the program runs with them (they are set when its pipeline is made, as
 * Vulkan's VkSpecializationInfo). Programs that differ only in their
 * constants share one compile of the source (one SPIR-V); each set of
 * constants is its own pipeline. The word holds the value as its type
 * reads it: a bool 0 or 1; an int or uint its 32 bits (-5 is 0xfffffffb);
 * a float its IEEE-754 bits; an int16 or int8 its value as an int32 in
 * the type's range (-5 is 0xfffffffb), a uint16 or uint8 its value, a
 * float16 its 16 bits in the low half. A word its type cannot hold (a
 * bool of 2, a uint16 of 70000, an int8 of 200), a 64-bit constant (one
 * word cannot hold its value), an id the shader does not declare, or 0
 * for a constant that sizes the workgroup fails the program with
 * KILN_ERR_INVALID naming the constant (kiln_program_wait); the desc
 * itself is refused at create for an id given twice. A constant set by
 * local_size_x_id also sizes the workgroup the interface reports and kiln
 * checks against the device, and shared arrays sized by constants count
 * at their set size. Constants left at their defaults are named once in
 * the log (level info) when the program is ready. kiln's predictor makes
 * its variants of a program with the program's constants.
 */
typedef struct kiln_spec_constant {
    uint32_t id;      /* the constant_id */
    uint32_t word;    /* its value (see above) */
} kiln_spec_constant;
/* A program's declared specialization constants at most (a source that
 * declares more fails to compile, saying so). */
#define KILN_MAX_SPEC_CONSTANTS 32

/*
 * The language of a program's source. KILN_LANGUAGE_AUTO (0) is SPIR-V
 * when the desc gives `spirv`, or when `source`'s bytes start with
 * SPIR-V's magic number (0x07230203, as a little-endian word), and GLSL
 * otherwise; HLSL is never guessed.
 *
 * A SPIR-V module is a compute module for Vulkan (the entry point named
 * `entry`, execution model GLCompute; other entry points are dropped),
 * given as words in `spirv` (spirv_words of them) or as bytes in `source`
 * (source_len a multiple of 4, which source_len 0 cannot say: give it).
 * kiln validates it with SPIRV-Tools for the Vulkan version its SPIR-V
 * version needs, and refuses it by name when it needs a SPIR-V version or
 * a capability the device lacks. kiln's prelude (kiln_param, kiln_len)
 * does not apply: the module's own push_constant block, if it has one, is
 * its node's param words (baked by the predictor like a GLSL program's),
 * and its own specialization constants are set by `constants`. Defines
 * and include folders are GLSL's and refused with a module.
 */
typedef enum kiln_language {
    KILN_LANGUAGE_AUTO = 0,
    KILN_LANGUAGE_GLSL = 1,
    KILN_LANGUAGE_HLSL = 2,
    KILN_LANGUAGE_SPIRV = 3,
} kiln_language;

typedef struct kiln_program_desc {
    const char *source;           /* GLSL compute source (or a SPIR-V module's bytes); copied */
    size_t source_len;            /* 0 = strlen(source) */
    const char *name;             /* file name used in messages; NULL = "program.comp" ("program.spv") */
    const char *entry;            /* NULL = "main" */
    const kiln_define *defines;   /* with preamble, at most KILN_MAX_PREAMBLE_BYTES */
    uint32_t define_count;
    const char *const *include_dirs; /* searched for #include "x" after the including file's folder */
    uint32_t include_dir_count;
    int optimize;                 /* 1: optimize for speed (default), -1: none */
    /* Specialization constants to set, up to KILN_MAX_SPEC_CONSTANTS,
     * each id once, in any order; copied. None: every constant runs at
     * its default. */
    const kiln_spec_constant *constants;
    uint32_t constant_count;
    kiln_language language;       /* AUTO (0): see kiln_language */
    const uint32_t *spirv;        /* a SPIR-V module's words, in place of source; copied */
    size_t spirv_words;
    /* Text a host puts before the source, as ML runtimes and engines do
     * (macros, function-like ones too, #extension lines): GLSL's goes after
     * the source's #version and #extension lines, HLSL's first. NULL:
     * none; copied. Refused with a SPIR-V module. */
    const char *preamble;
    /* The workgroup size the host sets, axis by axis (0: the program's
     * own): the program's local size, whether a literal or specialization
     * constants (local_size_x_id, LocalSizeId: those constants are then
     * fixed, and `constants` may not set them), and gl_WorkGroupSize, for
     * every language. The device's limits apply to the result. Code that
     * read gl_WorkGroupSize (numthreads) from a literal size was folded
     * by its compiler and keeps the literal: a shader whose code reads its
     * size declares it with local_size_x_id, as hosts that set it do. */
    uint32_t workgroup_size[3];
} kiln_program_desc;

/* The program desc as kiln_program_create sees it (desc NULL: a zero desc):
 * source_len 0 becomes strlen(source) (source not NULL), language AUTO
 * becomes the language it stands for (see kiln_language), name NULL becomes
 * "program.comp" ("program.spv" for SPIR-V, "program.hlsl" for HLSL), entry
 * NULL becomes "main", optimize 0 becomes 1 (a program
 * keeps any positive value as 1, any negative one as -1). The defines array
 * is the caller's and is not rewritten: each define gets
 * kiln_define_defaults as the program copies it; the constants array is
 * the caller's too and has no defaults (the program keeps its pairs sorted
 * by id). source has no default (NULL is refused, unless spirv is given).
 * Pointers in the result are the caller's (borrowed), except the constant
 * strings named here. */
KILN_API kiln_program_desc kiln_program_desc_defaults(const kiln_program_desc *desc);

typedef enum kiln_program_state {
    KILN_PROGRAM_PENDING = 0,
    KILN_PROGRAM_READY = 1,
    KILN_PROGRAM_FAILED = 2,
} kiln_program_state;

/* Starts the program's compile on kiln's compile workers and returns its
 * handle at once (state PENDING). A program equal to one compiled or
 * compiling (same source, entry, defines, included files, options) shares
 * that compile. A compile error is not an error of this call: the program's
 * state becomes FAILED and its log holds the compiler's messages
 * (file:line: error: ...). */
KILN_API KILN_NODISCARD kiln_result kiln_program_create(kiln_context ctx, const kiln_program_desc *desc, kiln_program *out);
/* KILN_ERR_BUSY while a scheme node uses it. */
KILN_API kiln_result kiln_program_destroy(kiln_context ctx, kiln_program prog);
KILN_API KILN_NODISCARD kiln_result kiln_program_status(kiln_context ctx, kiln_program prog, kiln_program_state *out);
/* Waits until the program is READY (KILN_OK) or FAILED: KILN_ERR_COMPILE,
 * or KILN_ERR_LIMIT when it compiled but exceeds a limit of the device (its
 * workgroup size, shared memory, push-constant bytes or buffer counts per
 * stage, checked before any Vulkan call sees the program), naming the limit
 * and the value; a node running it is refused by its scheme's submit with
 * the same code. KILN_ERR_INVALID when its desc sets a specialization
 * constant the shader does not declare or a value the constant's type
 * cannot hold (the message names the constant, its id and the value).
 * KILN_ERR_NO_MEMORY when its compile ran out of host memory
 * (the message names what could not be allocated); the failure is not
 * kept: once every program sharing that compile is destroyed, creating the
 * program again compiles it again. */
KILN_API KILN_NODISCARD kiln_result kiln_program_wait(kiln_context ctx, kiln_program prog);
/* Copies the compile log (NUL-terminated, truncated to cap) into buf; *len
 * (optional) receives the full length without the NUL. */
KILN_API KILN_NODISCARD kiln_result kiln_program_log(kiln_context ctx, kiln_program prog, char *buf, size_t cap, size_t *len);

/*
 * Bindings as shaders declare them. A program's buffers may be in any
 * descriptor set below KILN_MAX_SETS (and the device's
 * max_bound_descriptor_sets); sets it leaves empty in between are fine.
 * Several blocks may share one (set, binding), such as a packed and an
 * unpacked view of the same data: one buffer is bound there and seen
 * through each of them; the interface lists the binding once, with the
 * union of the blocks' declared access, the largest of their fixed sizes,
 * and their names joined by '|' ("Packed|Full", in the module's order); the
 * blocks must agree on kind (a storage and a uniform block on one binding
 * are refused by name) and on array length. An array of blocks
 * (`buffer B { ... } b[4];`) is one binding of `count` descriptors, each
 * element bound by its own kiln_binding (kiln_binding.element); an array
 * of unknown length (`b[]`) is refused. Texel buffers (`imageBuffer`,
 * `uimageBuffer`, `iimageBuffer`: storage; `textureBuffer`,
 * `samplerBuffer`: uniform) are bound from a kiln buffer with a format:
 * the shader's format qualifier (`layout(r32f)`), else the binding's
 * kiln_binding.format; kiln makes the buffer view. Images (`image2D`,
 * `image3D`: storage; `texture2D`: sampled; `sampler2D`: combined) are
 * bound from a kiln_image (kiln_binding.image), samplers from a desc
 * (kiln_binding.sampler); multisampled images, cube arrays and buffer
 * device addresses are refused by name.
 */
typedef enum kiln_binding_kind {
    KILN_BINDING_STORAGE_BUFFER = 1,
    KILN_BINDING_UNIFORM_BUFFER = 2,
    KILN_BINDING_STORAGE_TEXEL_BUFFER = 3,   /* imageBuffer: imageLoad, imageStore, image atomics */
    KILN_BINDING_UNIFORM_TEXEL_BUFFER = 4,   /* textureBuffer, samplerBuffer: texelFetch */
    KILN_BINDING_STORAGE_IMAGE = 5,          /* image1D/2D/3D/Cube, arrays (and u/i): imageLoad, imageStore, atomics */
    KILN_BINDING_SAMPLED_IMAGE = 6,          /* texture1D/2D/3D/Cube, arrays: sampled through a separate sampler */
    KILN_BINDING_SAMPLER = 7,                /* sampler: a separate sampler */
    KILN_BINDING_COMBINED_IMAGE_SAMPLER = 8, /* sampler1D/2D/3D/Cube, arrays: an image and its sampler */
} kiln_binding_kind;

/* Formats of texels, named as GLSL's format qualifiers name them
 * (kiln_format_name). "unorm" and "snorm" formats read as floats in [0, 1]
 * and [-1, 1]; "ui" and "i" ones as unsigned and signed integers. */
typedef enum kiln_format {
    KILN_FORMAT_UNDEFINED = 0,   /* none given: decided by the shader's format qualifier */
    KILN_FORMAT_R32F = 1,
    KILN_FORMAT_R32UI = 2,
    KILN_FORMAT_R32I = 3,
    KILN_FORMAT_RG32F = 4,
    KILN_FORMAT_RG32UI = 5,
    KILN_FORMAT_RG32I = 6,
    KILN_FORMAT_RGBA32F = 7,
    KILN_FORMAT_RGBA32UI = 8,
    KILN_FORMAT_RGBA32I = 9,
    KILN_FORMAT_R16F = 10,
    KILN_FORMAT_RG16F = 11,
    KILN_FORMAT_RGBA16F = 12,
    KILN_FORMAT_RGBA16UI = 13,
    KILN_FORMAT_RGBA16I = 14,
    KILN_FORMAT_RGBA8 = 15,          /* 8-bit unsigned normalized ("rgba8") */
    KILN_FORMAT_RGBA8_SNORM = 16,
    KILN_FORMAT_RGBA8UI = 17,
    KILN_FORMAT_RGBA8I = 18,
    KILN_FORMAT_R8 = 19,             /* 8-bit unsigned normalized ("r8") */
    KILN_FORMAT_R8UI = 20,
    KILN_FORMAT_R8I = 21,
    KILN_FORMAT_R11F_G11F_B10F = 22, /* unsigned 11, 11 and 10-bit floats in 32 bits, red in the low bits */
    KILN_FORMAT_RGB10_A2 = 23,       /* 10, 10, 10 and 2-bit unsigned normalized in 32 bits, red low */
    KILN_FORMAT_RGBA16 = 24,         /* 16-bit unsigned normalized ("rgba16") */
    KILN_FORMAT_RG16 = 25,
    KILN_FORMAT_RG8 = 26,
    KILN_FORMAT_R16 = 27,
    KILN_FORMAT_RGBA16_SNORM = 28,
    KILN_FORMAT_RG16_SNORM = 29,
    KILN_FORMAT_RG8_SNORM = 30,
    KILN_FORMAT_R16_SNORM = 31,
    KILN_FORMAT_R8_SNORM = 32,
    KILN_FORMAT_RG16I = 33,
    KILN_FORMAT_RG8I = 34,
    KILN_FORMAT_R16I = 35,
    KILN_FORMAT_RGB10_A2UI = 36,     /* 10, 10, 10 and 2-bit unsigned integers in 32 bits, red low */
    KILN_FORMAT_RG16UI = 37,
    KILN_FORMAT_RG8UI = 38,
    KILN_FORMAT_R16UI = 39,
    KILN_FORMAT_R64UI = 40,          /* needs shaderImageInt64Atomics (KILN_FEATURE_IMAGE_INT64) */
    KILN_FORMAT_R64I = 41,
    KILN_FORMAT_COUNT = 42,          /* not a format: one past the last */
} kiln_format;

/* A format's name as a GLSL format qualifier spells it ("r32f", "rgba8",
 * "rgba8_snorm"); NULL for a value that is no format (and for
 * KILN_FORMAT_UNDEFINED). A constant string. */
KILN_API const char *kiln_format_name(kiln_format format);
/* Bytes of one texel of the format; 0 for a value that is no format. */
KILN_API uint32_t kiln_format_size(kiln_format format);

/* ---- images and samplers ------------------------------------------------------ */

/*
 * An image is a 1D, 2D or 3D grid of texels of one kiln_format, in one or
 * more array layers and mip levels (a cube map is 2D, six layers a cube),
 * bound to a program's storage images (image1D, image2D, image2DArray,
 * image3D, imageCube: imageLoad, imageStore, image atomics), sampled
 * images (texture2D, texture2DArray, ... with a separate sampler) and
 * combined image samplers (sampler1D, sampler2D, sampler2DArray,
 * sampler3D, samplerCube). A shader's arrayed declaration takes an image
 * of any layers; a plain one an image of one layer; a cube declaration a
 * cube map (which an arrayed 2D declaration takes too, as six layers a
 * cube). A storage image binding sees one mip level (kiln_binding.level),
 * a sampled one every level. Its texels are addressed as shaders address
 * them: x across a row, then rows (y), then slices (z); upload and
 * readback move every texel at once: level 0 first, each level's layers
 * one after another (layer 0 first), each layer's rows packed tightly
 * (width * texel bytes each; a level's sides are the image's halved per
 * level, at least 1), slices after one another. A new image's texels are
 * all zero. Schemes order a node reading an image after the node writing
 * it as they do buffers (barriers from the declared access; an image is
 * one range, every level and layer). Images stay in Vulkan's GENERAL
 * layout from creation on, which storage and sampled use both allow, so
 * no node ever waits on a layout change.
 */
typedef enum kiln_image_usage {
    KILN_IMAGE_STORAGE = 1u << 0,   /* bindable as a storage image */
    KILN_IMAGE_SAMPLED = 1u << 1,   /* bindable as a sampled image or a combined image sampler */
} kiln_image_usage;

typedef struct kiln_image_desc {
    uint32_t width, height;   /* texels; required, > 0 (a 1D image's height is 1) */
    uint32_t depth;           /* slices; 0 = 1 */
    uint32_t dims;            /* 1, 2 or 3; 0 = 3 when depth > 1, else 2 (a 3D image may have one slice) */
    kiln_format format;       /* required */
    /* kiln_image_usage bits; 0 = each use the device supports the format
     * for (at least one, else the image is refused naming the format). A
     * use asked for that the device does not support is refused by name. */
    uint32_t usage;
    const char *label;        /* for messages; copied; NULL = "image" */
    /* Array layers (1D and 2D images): 0 = 1, or 6 for a cube map; a cube
     * map's a multiple of 6 (more than 6: a cube array, refused for now). */
    uint32_t layers;
    /* Mip levels: 0 = 1; at most one more than log2 of the largest side
     * (each level's sides are the one before's halved, at least 1). */
    uint32_t levels;
    int cube;                 /* 1: a cube map: 2D, width == height, six layers (+X, -X, +Y, -Y, +Z, -Z) */
} kiln_image_desc;

/* The image desc as kiln_image_create sees it (desc NULL: a zero desc):
 * depth 0 becomes 1, dims 0 becomes 3 where depth > 1 and 2 otherwise,
 * label NULL becomes "image" (a constant string), layers 0 becomes 6 for
 * a cube map and 1 otherwise, levels 0 becomes 1. width, height and
 * format have no defaults (0 is refused). Decided later, left 0: usage
 * (the uses the device supports for the format, at create). */
KILN_API kiln_image_desc kiln_image_desc_defaults(const kiln_image_desc *desc);

KILN_API KILN_NODISCARD kiln_result kiln_image_create(kiln_context ctx, const kiln_image_desc *desc, kiln_image *out);
/* KILN_ERR_BUSY while a scheme node binds it. Waits for the submits that
 * use it. */
KILN_API kiln_result kiln_image_destroy(kiln_context ctx, kiln_image img);
/* Copies every texel from data (size must be the image's bytes: every
 * level's width * height * depth * layers * kiln_format_size(format), in
 * the order above); data may be reused once the call returns. Ordered
 * after every earlier submit of the context. */
KILN_API KILN_NODISCARD kiln_result kiln_image_upload(kiln_context ctx, kiln_image img, const void *data, uint64_t size);
/* Copies every texel into data (size as for upload), once every earlier
 * submit that may write the image finished. */
KILN_API KILN_NODISCARD kiln_result kiln_image_readback(kiln_context ctx, kiln_image img, void *data, uint64_t size);

/* Part of an image: layers [layer, layer + layers) of one mip level (a
 * cube map's faces are its layers). */
typedef struct kiln_image_part {
    uint32_t level;
    uint32_t layer;
    uint32_t layers;          /* 0 = 1 */
} kiln_image_part;

/* Upload and readback of a part alone: size is the part's bytes (the
 * level's width * height * depth * layers * texel bytes), its layers one
 * after another; otherwise as kiln_image_upload and kiln_image_readback. A
 * level or a layer the image lacks is refused naming its count. */
KILN_API KILN_NODISCARD kiln_result kiln_image_upload_part(kiln_context ctx, kiln_image img,
                                                           const kiln_image_part *part, const void *data,
                                                           uint64_t size);
KILN_API KILN_NODISCARD kiln_result kiln_image_readback_part(kiln_context ctx, kiln_image img,
                                                             const kiln_image_part *part, void *data, uint64_t size);

/* How a sampler reads an image (a kiln_binding's sampler, for a sampler
 * binding or a combined image sampler). A zero desc is linear filtering,
 * clamped to the edge, normalized coordinates. */
typedef enum kiln_filter {
    KILN_FILTER_DEFAULT = 0,   /* linear */
    KILN_FILTER_LINEAR = 1,
    KILN_FILTER_NEAREST = 2,
} kiln_filter;

typedef enum kiln_address_mode {
    KILN_ADDRESS_DEFAULT = 0,  /* clamp to the edge */
    KILN_ADDRESS_CLAMP = 1,    /* coordinates past an edge read the edge's texels */
    KILN_ADDRESS_REPEAT = 2,   /* the image tiles */
    KILN_ADDRESS_MIRROR = 3,   /* the image tiles, every other tile mirrored */
    KILN_ADDRESS_BORDER = 4,   /* coordinates past an edge read zero (transparent black) */
} kiln_address_mode;

typedef struct kiln_sampler_desc {
    kiln_filter filter;        /* magnification and minification */
    kiln_address_mode address; /* in every direction */
} kiln_sampler_desc;

/* The sampler desc as a node's binding sees it (desc NULL: a zero desc):
 * filter 0 becomes KILN_FILTER_LINEAR, address 0 KILN_ADDRESS_CLAMP. */
KILN_API kiln_sampler_desc kiln_sampler_desc_defaults(const kiln_sampler_desc *desc);

typedef enum kiln_access {
    KILN_ACCESS_READ = 1u << 0,
    KILN_ACCESS_WRITE = 1u << 1,
} kiln_access;

typedef struct kiln_binding_info {
    uint32_t set, binding;
    kiln_binding_kind kind;
    uint32_t access;              /* kiln_access bits, as the source declares them (the union of its blocks') */
    uint64_t min_size;            /* bytes of the block's fixed part (the largest of its blocks'); 0 for texel buffers */
    char name[64];                /* the block's name; several blocks' joined by '|' */
    uint32_t count;               /* descriptors: an array's length, else 1 */
    kiln_format format;           /* a storage texel buffer's or storage image's format qualifier; 0: none */
    uint32_t image_dims;          /* an image binding's dimensions, 1, 2 or 3 (a cube: 2); 0 for other kinds */
    uint32_t image_arrayed;       /* 1: an arrayed image (image2DArray, sampler1DArray, ...) */
    uint32_t image_cube;          /* 1: a cube image (samplerCube, imageCube) */
} kiln_binding_info;

/* A specialization constant's scalar type. */
typedef enum kiln_scalar_type {
    KILN_SCALAR_BOOL = 1,
    KILN_SCALAR_INT = 2,        /* 32-bit */
    KILN_SCALAR_UINT = 3,
    KILN_SCALAR_FLOAT = 4,
    KILN_SCALAR_INT8 = 5,
    KILN_SCALAR_UINT8 = 6,
    KILN_SCALAR_INT16 = 7,
    KILN_SCALAR_UINT16 = 8,
    KILN_SCALAR_FLOAT16 = 9,
    KILN_SCALAR_INT64 = 10,     /* listed; not settable (one word cannot hold them) */
    KILN_SCALAR_UINT64 = 11,
    KILN_SCALAR_DOUBLE = 12,
} kiln_scalar_type;

/* One declared specialization constant. Values are the type's bits,
 * zero-extended: a bool 0 or 1, an int -5 0xfffffffb, an int16 -5 0xfffb,
 * a float 0.5 0x3f000000, a double its 64 bits. */
typedef struct kiln_spec_constant_info {
    uint32_t id;                  /* its constant_id */
    kiln_scalar_type type;
    uint64_t default_value;       /* as the source declares it */
    uint64_t value;               /* what the program runs with: the value set, else the default */
    int set;                      /* 1: the program's desc sets it */
    int used;                     /* 0: the optimizer found no use of it (setting it changes nothing) */
    uint32_t workgroup_axis;      /* 1, 2, 3: it is local_size_x/y/z (local_size_x_id = id); 0: not */
    char name[64];                /* as declared; "local_size_x" (y, z) for a workgroup size */
} kiln_spec_constant_info;

typedef struct kiln_program_interface {
    uint32_t binding_count;
    kiln_binding_info bindings[KILN_MAX_BINDINGS];  /* sorted by (set, binding) */
    uint32_t push_constant_size;  /* bytes; kiln's prelude declares KILN_PUSH_BYTES (96) */
    uint32_t workgroup_size[3];
    uint32_t spirv_words;
    char entry[64];
    uint64_t params_read;         /* bit n: the code reads param word n (kiln_param(n), or its own block's) */
    uint32_t lens_read;           /* bit b: the code reads kiln_len(b), binding b's range length */
    int groups_read;              /* 1: the code reads the grid size (kiln_groups(), gl_NumWorkGroups) */
    int own_push_block;           /* 1: the program declares its own push_constant block (kiln adds none) */
    uint32_t param_words;         /* a node's param words: KILN_PARAM_WORDS, or its own block's size / 4 */
    uint32_t subgroup_ops;        /* kiln_subgroup_ops bits the code needs (checked against the device's) */
    /* Every specialization constant the source declares, by id (a
     * local_size_x_id constant and a constant_id constant of the same id
     * are two entries: one id sets both). workgroup_size above is the
     * size the program runs with: its local_size constants' values. */
    uint32_t constant_count;
    kiln_spec_constant_info constants[KILN_MAX_SPEC_CONSTANTS];
    /* Bit n: word n of the program's own push_constant block holds a
     * 32-bit float (a member, an element or a component), so a word given
     * as an integer is likely a value meant as a float (kiln run says so). */
    uint64_t push_float_words;
} kiln_program_interface;

/* The program's interface, read from its SPIR-V. KILN_ERR_PENDING while
 * compiling, KILN_ERR_COMPILE if it failed. */
KILN_API KILN_NODISCARD kiln_result kiln_program_interface_get(kiln_context ctx, kiln_program prog, kiln_program_interface *out);

/* ---- schemes ----------------------------------------------------------------- */

typedef struct kiln_scheme_desc {
    const char *label;    /* copied; NULL = "scheme" */
} kiln_scheme_desc;

/* The scheme desc as kiln_scheme_create sees it (desc NULL: a zero desc):
 * label NULL becomes "scheme" (a constant string); a label given is the
 * caller's (borrowed). */
KILN_API kiln_scheme_desc kiln_scheme_desc_defaults(const kiln_scheme_desc *desc);

/* What a node binds at one (set, binding, element) of its program: a
 * range of a buffer (buffers and texel buffers), an image (storage and
 * sampled images), an image and a sampler (combined image samplers), or a
 * sampler (sampler bindings). Every descriptor the program declares is
 * given exactly once: each element of an array binding has its own entry
 * (an element not given is refused naming the binding and the element).
 * What a binding's kind does not take (a buffer for an image, a sampler
 * for a storage image) is refused naming the binding. */
typedef struct kiln_binding {
    uint32_t binding;     /* binding number in `set` */
    kiln_buffer buffer;
    uint64_t offset;      /* bytes */
    uint64_t size;        /* bytes; 0 = to the end of the buffer */
    uint32_t set;         /* descriptor set; 0 by default */
    uint32_t element;     /* element of an array binding (`buffer B { ... } b[4];`: 0..3); 0 otherwise */
    /* A texel buffer's format (kiln makes the buffer view); 0: the
     * shader's format qualifier. A storage texel buffer whose shader
     * declares a format takes that one (another here is refused); a
     * uniform texel buffer (no qualifier in GLSL) needs one here. Given for
     * a binding that is no texel buffer, it is refused. */
    kiln_format format;
    kiln_image image;     /* an image binding's image (storage, sampled, combined image sampler) */
    uint32_t level;       /* a storage image binding's mip level; 0 for every other kind (sampled ones see all) */
    /* A sampler binding's or a combined image sampler's sampler (a zero
     * desc: linear, clamped to the edge); given for any other kind
     * (fields not zero), it is refused. */
    kiln_sampler_desc sampler;
} kiln_binding;

typedef struct kiln_node_desc {
    kiln_program program;
    const kiln_binding *bindings;  /* one per descriptor of the program (see kiln_binding); copied */
    uint32_t binding_count;        /* at most KILN_MAX_DESCRIPTORS */
    uint32_t groups[3];            /* workgroups; 0 in y or z means 1; x is required */
    /* The node's param words, copied: kiln's KILN_PARAM_WORDS words
     * (kiln_param(n)), or, for a program that declares its own
     * push_constant block, that block's words (word n is bytes 4n..4n+3 of
     * the block). At most the program's param_words (its interface); words
     * not given are 0. */
    const uint32_t *params;
    uint32_t param_count;
    const char *label;             /* copied; NULL or "" = "node<N>" */
    /* Buffers the node's program reaches through device addresses
     * (kiln_buffer_address), not bindings: the scheme orders them as read
     * and written whole, as it orders bindings (at most KILN_MAX_REACHES;
     * copied; each made with KILN_BUFFER_ADDRESS). A buffer reached and not
     * named here is ordered by nothing. */
    const kiln_buffer *reaches;
    uint32_t reach_count;
} kiln_node_desc;

/* The node desc as kiln_scheme_add_node sees it (desc NULL: a zero desc):
 * groups[1] and groups[2] 0 become 1. groups[0] has no default (0 is
 * refused). Decided later, at add_node, left as given: label NULL or ""
 * ("node<N>", N the node's index in its scheme when added) and each
 * binding's size 0 (to the end of its buffer: the buffer's size less the
 * offset). Pointers in the result are the caller's (borrowed). */
KILN_API kiln_node_desc kiln_node_desc_defaults(const kiln_node_desc *desc);

typedef struct kiln_scheme_stats {
    uint64_t submits;
    uint64_t records_full;         /* structural records: topology and barriers rebuilt */
    uint64_t records_params;       /* params-only records: same topology, new words or pipelines */
    uint64_t replays;              /* submits that reused the recorded commands as they were */
    uint64_t nodes;
    uint64_t barriers;             /* barriers in the current recording */
    uint64_t command_buffers;      /* retained command buffers */
    uint64_t skipped_nodes;        /* nodes left out of submits because their program was compiling */
    /* Specialization (see kiln_scheme_spec_events). */
    uint64_t spec_warms;           /* variant compiles started (a site joining one in flight adds none) */
    uint64_t spec_promotions;      /* nodes swapped to a variant */
    uint64_t spec_demotions;       /* nodes put back on their universal program */
    uint64_t spec_pinned;          /* sites pinned to their universal program after failed compiles */
    uint64_t spec_specialized;     /* nodes running a variant now */
    uint64_t spec_no_gain;         /* variants timed no faster than their universal program, demoted */
    /* Declines that are not events, each also logged: */
    uint64_t spec_samples_lost;    /* submits whose dispatch times were lost (waiting for or reading them failed) */
    uint64_t spec_lookups_missed;  /* a site wanted a variant and none could be had (no source, no memory, the
                                    * compile service refused): it stayed universal */
    uint64_t spec_wakes_dropped;   /* sites not woken for lack of host memory: each waits for its next change */
} kiln_scheme_stats;

KILN_API KILN_NODISCARD kiln_result kiln_scheme_create(kiln_context ctx, const kiln_scheme_desc *desc, kiln_scheme *out);
/* Waits for the scheme's submits; destroys its nodes. */
KILN_API kiln_result kiln_scheme_destroy(kiln_context ctx, kiln_scheme scheme);
/* Appends a node (structural change). Bindings are checked against the
 * program's interface now if the program is compiled, else at the first
 * submit after its compile ends (that submit then fails naming the node). */
KILN_API KILN_NODISCARD kiln_result kiln_scheme_add_node(kiln_context ctx, kiln_scheme scheme, const kiln_node_desc *desc,
                                                         kiln_node *out);
/* Removes a node (structural change). */
KILN_API kiln_result kiln_node_remove(kiln_context ctx, kiln_node node);
/* Sets param word `slot` of a node (below its program's param_words: 8 for
 * kiln's block, the block's words for a program with its own). Params-only
 * change. */
KILN_API KILN_NODISCARD kiln_result kiln_node_set_param(kiln_context ctx, kiln_node node, uint32_t slot, uint32_t word);
/* Replaces a node's program with one of the same interface (same bindings,
 * kinds and access); otherwise KILN_ERR_LAYOUT naming the difference.
 * Waits for either program's compile if it is still running. Params-only
 * change. */
KILN_API KILN_NODISCARD kiln_result kiln_node_set_program(kiln_context ctx, kiln_node node, kiln_program prog);
/* Copies up to cap of a node's param words into out; *count (optional)
 * receives how many it has (its program's param_words once the program is
 * compiled, else the words the desc gave, at least KILN_PARAM_WORDS). */
KILN_API KILN_NODISCARD kiln_result kiln_node_get_params(kiln_context ctx, kiln_node node, uint32_t *out, uint32_t cap,
                                                         uint32_t *count);
/* Records the scheme if it changed (else replays its recorded commands) and
 * submits it. Barriers between nodes follow the bindings' read/write sets.
 * *ticket (optional) is the submit's ticket. */
KILN_API KILN_NODISCARD kiln_result kiln_scheme_submit(kiln_context ctx, kiln_scheme scheme, kiln_ticket *ticket);
KILN_API KILN_NODISCARD kiln_result kiln_scheme_stats_get(kiln_context ctx, kiln_scheme scheme, kiln_scheme_stats *out);

/* Specialization. kiln compiles a node's program again with the param words
 * it keeps using baked in as constants, and swaps the variant in; a
 * set_param that disagrees with a baked word swaps the universal program
 * back in the same call. Nothing to opt in to; KILN_SPECIALIZATION=0 turns
 * it off. These calls show what it does. */
typedef enum kiln_spec_event_kind {
    KILN_SPEC_WARM = 1,      /* a variant's compile started (or was joined) */
    KILN_SPEC_PROMOTE = 2,   /* the node now runs the variant */
    KILN_SPEC_DEMOTE = 3,    /* the node is back on its universal program */
    KILN_SPEC_FAILED = 4,    /* a variant failed to compile */
    KILN_SPEC_PINNED = 5,    /* after repeated failures the node stays universal */
} kiln_spec_event_kind;

typedef struct kiln_spec_event {
    kiln_spec_event_kind kind;
    uint64_t submit;         /* the scheme's submit (1-based) it took effect at */
    kiln_node node;
    char node_label[64];
    char program[64];
    uint64_t mask;           /* bit n: param word n is baked */
    uint32_t words[KILN_MAX_PARAM_WORDS];   /* the baked words (0 where not baked) */
    uint32_t lens_mask;      /* bit b: binding b's range length is baked (kiln_len) */
    uint32_t lens[KILN_MAX_BINDINGS];   /* the baked lengths in bytes */
    int groups_baked;        /* 1: the grid size is baked (kiln_groups) */
    uint32_t groups[3];
} kiln_spec_event;

/* Takes up to cap of the scheme's specialization events, oldest first (the
 * scheme keeps the last 256). *count receives how many were taken. */
KILN_API KILN_NODISCARD kiln_result kiln_scheme_spec_events(kiln_context ctx, kiln_scheme scheme, kiln_spec_event *out,
                                                            uint32_t cap, uint32_t *count);
/* *out = 1 when the node runs a variant now. */
KILN_API KILN_NODISCARD kiln_result kiln_node_is_specialized(kiln_context ctx, kiln_node node, int *out);
/* Compiles queued or running in the context (programs and variants). A
 * benchmark of the steady state submits until this reaches 0. */
KILN_API KILN_NODISCARD kiln_result kiln_compiles_pending(kiln_context ctx, uint32_t *out);

/* Waits for a ticket. timeout_ns = UINT64_MAX waits as long as the device
 * lives; KILN_ERR_TIMEOUT when timeout_ns runs out first (the context stays
 * usable), KILN_ERR_DEVICE_LOST when the context's device_timeout_ms does. */
KILN_API KILN_NODISCARD kiln_result kiln_ticket_wait(kiln_context ctx, kiln_ticket ticket, uint64_t timeout_ns);

/* ---- the pipeline archive -------------------------------------------------------- */

typedef struct kiln_archive_info {
    int enabled;              /* 0: KILN_ARCHIVE=0, or the folder could not be used */
    char dir[4096];           /* the device pair's folder */
    uint32_t file_count;      /* archive files found there when the context was made */
    int readonly;             /* 1: the folder can be read, not written (a shipped archive, a read-only
                               * mount): its files are looked up, nothing is saved there or tidied */
} kiln_archive_info;

typedef enum kiln_archive_status {
    KILN_ARCHIVE_FILE_OK = 0,
    KILN_ARCHIVE_FILE_CORRUPT = 1,          /* bad header: serves nothing */
    KILN_ARCHIVE_FILE_DEVICE_MISMATCH = 2,  /* made for another device pair */
    KILN_ARCHIVE_FILE_VERSION = 3,          /* another format version */
} kiln_archive_status;

typedef struct kiln_archive_file {
    char name[256];
    uint64_t bytes;
    kiln_archive_status status;
    uint64_t entries;         /* entries that check out */
    uint64_t corrupt;         /* entries listed that do not check out (a cut tail loses its entries unlisted) */
    int salvaged;             /* 1: the index was unusable; entries were found by a scan */
} kiln_archive_file;

KILN_API KILN_NODISCARD kiln_result kiln_archive_info_get(kiln_context ctx, kiln_archive_info *out);
/* Checks every entry of the archive files found when the context was made;
 * fills up to cap of them from index `first`; *count receives how many
 * there are. */
KILN_API KILN_NODISCARD kiln_result kiln_archive_files(kiln_context ctx, uint32_t first, kiln_archive_file *out, uint32_t cap,
                                                       uint32_t *count);

/* Tidies the context's archive folder now (the archive's saver also does
 * this on its own, off the hot path). Read-only folders are never touched. */
typedef struct kiln_archive_tidy_desc {
    int compact;              /* 1: merge small run archives into one file */
    uint32_t compact_at;      /* merge when at least this many small ones (0 = 2) */
    uint64_t small_bytes;     /* "small": at most this size (0 = 8 MiB) */
    int gc;                   /* 1: remove least recently used files past max_size */
    uint64_t max_size;        /* 0 = KILN_ARCHIVE_MAX_SIZE, else 1 GiB */
} kiln_archive_tidy_desc;

/* The tidy desc as kiln_archive_tidy sees it (desc NULL: a zero desc, which
 * tidies nothing): compact_at 0 becomes 2, small_bytes 0 becomes 8 MiB.
 * Decided later, left 0: max_size (the context's archive bound,
 * KILN_ARCHIVE_MAX_SIZE as read when the context was made, else 1 GiB). */
KILN_API kiln_archive_tidy_desc kiln_archive_tidy_desc_defaults(const kiln_archive_tidy_desc *desc);

typedef struct kiln_archive_tidy_result {
    uint32_t files_before, files_after;
    uint64_t bytes_before, bytes_after;
    uint32_t merged;          /* small files merged into one */
    uint64_t entries_kept;    /* entries written to the merged file */
    uint64_t duplicates_dropped, bad_dropped;
    uint32_t removed;         /* files removed as least recently used */
    int busy;                 /* 1: another process was tidying: nothing done */
} kiln_archive_tidy_result;
KILN_API KILN_NODISCARD kiln_result kiln_archive_tidy(kiln_context ctx, const kiln_archive_tidy_desc *desc,
                                                      kiln_archive_tidy_result *out);

/* Precompile: makes, now, every program whose front end (SPIR-V) the
 * context's archives hold, so that later kiln_program_create calls for them
 * find them compiled. Order: programs noted as used on this device first,
 * then fewer SPIR-V words first, programs an earlier run found slow last.
 * Returns when all are ready or failed, or once none has finished for
 * stall_s seconds: the rest then go on as background compiles (said in one
 * log line). Other calls on the context go on meanwhile. With no archive
 * (KILN_ARCHIVE=0), returns at once with zero programs. */
typedef struct kiln_precompile_desc {
    double stall_s;           /* 0 = KILN_PRECOMPILE_STALL_S, else 5 */
} kiln_precompile_desc;

/* The precompile desc as kiln_context_precompile sees it (desc NULL: a zero
 * desc). Decided later: stall_s (KILN_PRECOMPILE_STALL_S, read at each
 * call, else 5 s); a value that is not a positive number of seconds (0,
 * negative, NaN) is that "decide later" and comes back as 0. */
KILN_API kiln_precompile_desc kiln_precompile_desc_defaults(const kiln_precompile_desc *desc);

typedef struct kiln_precompile_result {
    uint32_t programs;        /* front ends found in the archives */
    uint32_t noted;           /* of them, noted as used on this device */
    uint32_t slow;            /* of them, found slow by an earlier run */
    uint32_t ready, failed;   /* when the call returned */
    uint32_t background;      /* handed to background work at the stall */
    double seconds;
} kiln_precompile_result;
/* desc may be NULL (defaults); out may be NULL. */
KILN_API KILN_NODISCARD kiln_result kiln_context_precompile(kiln_context ctx, const kiln_precompile_desc *desc,
                                                            kiln_precompile_result *out);

/* ---- the server ----------------------------------------------------------------- */

/*
 * A kiln server owns one device, one compile service and one pipeline
 * archive, and serves contexts to other processes (kiln_context_desc.remote,
 * KILN_REMOTE) over a unix socket: each connection gets a context of its
 * own on the shared device, and programs two clients create alike compile
 * once. A client that exits or dies costs nothing: its objects are freed.
 * `kiln serve` is this; docs/server.md has the wire and the limits.
 */
typedef struct kiln_server kiln_server;

typedef struct kiln_server_desc {
    /* NULL: $XDG_RUNTIME_DIR/kiln/kiln.sock (its folder made 0700). The
     * socket is made 0600 (0666 with allow_uids, which need a socket_path
     * of their own: the peer's credentials, SO_PEERCRED, admit only the
     * server's uid and those listed); a stale one is replaced, a live one
     * refused. */
    const char *socket_path;
    /* The server's own context: device, validation, archive, compile
     * service (NULL: defaults; remote must be unset). */
    const kiln_context_desc *context;
    /* Peers of the server's own uid connect; these uids too (set
     * socket_path, in a folder they can reach). */
    const uint32_t *allow_uids;
    uint32_t allow_uid_count;
    /* Per client, at once: objects (buffers, images, programs, schemes,
     * nodes; 0 = 65536), bytes of buffers and images (0 = 16 GiB), programs
     * compiling (0 = 256). Past one: KILN_ERR_LIMIT for that client alone. */
    uint32_t max_objects;
    uint64_t max_bytes;
    uint32_t max_compiles;
    /* Connections served at once (0: sized from the descriptor limit,
     * RLIMIT_NOFILE: 4 descriptors a client after 64 for the server, at
     * most 4096). One past it is refused at once, the client told why
     * (KILN_ERR_LIMIT naming the cap). */
    uint32_t max_clients;
    /* How long a connection may take from connecting to a made context:
     * its hello and its context_create (0 = 30000 ms). A client that holds
     * a context may idle without bound. */
    uint32_t hello_timeout_ms;
} kiln_server_desc;

/* The server desc as kiln_server_create sees it (desc NULL: a zero desc):
 * max_objects 65536, max_bytes 16 GiB, max_compiles 256, hello_timeout_ms
 * 30000, max_clients from the descriptor limit now. */
KILN_API kiln_server_desc kiln_server_desc_defaults(const kiln_server_desc *desc);

/* Makes the server: its context, then its listening socket. */
KILN_API KILN_NODISCARD kiln_result kiln_server_create(const kiln_server_desc *desc, kiln_server **out);
/* Serves until kiln_server_stop. */
KILN_API KILN_NODISCARD kiln_result kiln_server_run(kiln_server *server);
/* Makes kiln_server_run return; async-signal-safe. */
KILN_API void kiln_server_stop(kiln_server *server);
/* Ends every connection (each client's objects freed; its later calls fail
 * with KILN_ERR_DEVICE_LOST naming the server), removes the socket, frees
 * the server. */
KILN_API void kiln_server_destroy(kiln_server *server);
/* The socket path served. */
KILN_API const char *kiln_server_socket_path(const kiln_server *server);

#ifdef __cplusplus
}
#endif
#endif
