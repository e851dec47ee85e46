/* SPDX-License-Identifier: MIT */
/*
 * bench_compile.c: kiln's compile service against a serial compile loop, cold.
 *
 * A seeded generator (bench_gen.h) writes D distinct compute programs
 * (default 200): most are small (20 to 60 lines of random op chains over one
 * storage buffer and kiln_param words), G of them (default 4) are giants,
 * long straight-line bodies of L lines. Each distinct program carries its
 * own constants, so no two compile to the same SPIR-V. The list to compile
 * is the distinct programs plus P% duplicates (copies of randomly chosen
 * distinct ones, same source and name), shuffled with the same seed.
 *
 * Ways to compile the list, each timed from the first compile to the last
 * pipeline:
 *   serial  one thread, for every program of the list in order: kiln's own
 *           front end (prog_source_init + prog_compile from
 *           src/program/program.h, exactly what kiln's workers run: prelude,
 *           shaderc, SPIRV-Tools performance passes, reflection), then
 *           vkCreateShaderModule + vkCreateComputePipelines with no pipeline
 *           cache, under a layout made from the interface as kiln makes it
 *           (one storage buffer, a 32-byte push-constant range), on a VkDevice
 *           of its own on kiln's physical device. It has no dedupe: a
 *           duplicate is compiled again. Its compiles: 2 per list entry.
 *           It runs two ways (--serial): "held" holds one shaderc compiler
 *           for the whole loop, as a plain shaderc loop reuses its compiler;
 *           "fresh" is prog_compile alone, which makes and releases a
 *           compiler per compile. The difference matters: glslang frees its
 *           built-in symbol tables when the process's last compiler object
 *           goes, so with none held each compile builds them again.
 *   kiln    for each --workers count (and worker-cache setting): a fresh
 *           context with .compile_threads = N, kiln_program_create for every
 *           program of the list (each returns at once), then
 *           kiln_program_wait on each in list order. Its compiles
 *           (kiln_context_stats.compiles_started, front and back ends apart)
 *           must be exactly 2 per distinct program; anything else is
 *           printed as a MISMATCH and fails the run after the table. No
 *           shaderc compiler is held by this program while kiln runs.
 * The ratios printed are a serial loop's wall time over a row's: above 1,
 * the row is faster. Every kiln program must end READY, and when a serial
 * loop ran, each kiln program's SPIR-V size must equal the serial loop's for
 * it (both compiled the same text).
 *
 * Cold: kiln has no on-disk archive yet, so every fresh context starts cold.
 * Drivers keep their own on-disk shader caches: main sets
 * MESA_SHADER_CACHE_DISABLE=true (Mesa, lavapipe included) and
 * __GL_SHADER_DISK_CACHE=0 (NVIDIA) before any Vulkan call. In-memory caches
 * live per VkDevice, and each side and each configuration has its own.
 * Note that lavapipe (Mesa 22.3) turns a compute pipeline into machine code
 * at its first dispatch, not in vkCreateComputePipelines: its back-end
 * times here are SPIR-V to NIR only, on both sides alike.
 *
 * Giants: kiln bounds giant back ends (SPIR-V over KILN_GIANT_WORDS words,
 * default 100000) in flight. Before timing, the longest small program and
 * one giant are compiled once (front end only) to measure their SPIR-V
 * sizes, and KILN_GIANT_WORDS is set halfway between unless the environment
 * sets it already. KILN_LOG is set to info when unset, so each kiln context
 * prints its compile line (pipeline cache hits, merges) on close.
 *
 * The phases run one after the other, not interleaved: each is long next
 * to the noise of a shared machine, and its time is printed.
 *
 * Exit status: 0 when every program compiled and the counts matched; 1 on
 * errors, a compile count mismatch or a SPIR-V size mismatch.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include "kiln.h"

#define BENCH_NAME "bench_compile"
#include "bench.h"
#include "bench_gen.h"
#include "program/program.h"

#define MAX_CONFIGS 64
#define DEFAULT_GIANT_LINES 3000

/* ---- time -------------------------------------------------------------------------- */

static double secs_since(uint64_t t0) { return (double)(now_ns() - t0) / 1e9; }

/* ---- sizing ------------------------------------------------------------------------ */

/* Front end only, as kiln's workers run it; returns the SPIR-V words. */
static size_t front_words(const struct program *p)
{
    kiln_program_desc d = desc_of(p);
    struct prog_source src;
    struct prog_output out;
    KCHECK(prog_source_init(&src, &d));
    if (prog_compile(&src, &out) != KILN_OK)
        die("%s failed to compile: %s", p->name, out.log ? out.log : kiln_last_error());
    size_t words = out.words;
    prog_output_finish(&out);
    prog_source_finish(&src);
    return words;
}

/* ---- the serial loop ------------------------------------------------------------- */

struct serial {
    bool held;                  /* one shaderc compiler held for the whole loop */
    double wall_s, front_s, back_s;
    double giant_front_s, giant_back_s;   /* the giants' part of front_s, back_s */
    uint32_t giants;            /* giant list entries compiled */
    uint64_t compiles;
    size_t *words;              /* per list entry */
};

static void serial_run(struct serial *r, const struct workload *w, const char *device_name)
{
    /* A plain shaderc loop reuses one compiler object. Holding one keeps
     * glslang's process state (its built-in symbol tables) alive between
     * prog_compile's own short-lived compiler objects. */
    shaderc_compiler_t held = NULL;
    if (r->held && !(held = shaderc_compiler_initialize()))
        die("shaderc_compiler_initialize failed");

    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "bench_compile",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance instance;
    VCHECK(vkCreateInstance(&ici, NULL, &instance));
    uint32_t family;
    VkPhysicalDevice phys = bench_find_device(instance, device_name, &family);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    /* No features: robustBufferAccess stays off, as kiln leaves it. */
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    VkDevice device;
    VCHECK(vkCreateDevice(phys, &dci, NULL, &device));

    VkPipeline *pipes = calloc(w->count, sizeof *pipes);
    VkPipelineLayout *layouts = calloc(w->count, sizeof *layouts);
    VkDescriptorSetLayout *sets = calloc(w->count, sizeof *sets);
    r->words = calloc(w->count, sizeof *r->words);
    if (!pipes || !layouts || !sets || !r->words)
        die("out of memory");

    uint64_t t0 = now_ns();
    for (uint32_t k = 0; k < w->count; k++) {
        const struct program *p = &w->progs[w->list[k]];
        /* Front end: kiln's, the same call its workers make. */
        uint64_t f0 = now_ns();
        kiln_program_desc d = desc_of(p);
        struct prog_source src;
        struct prog_output out;
        KCHECK(prog_source_init(&src, &d));
        if (prog_compile(&src, &out) != KILN_OK)
            die("serial: %s failed to compile: %s", p->name, out.log ? out.log : kiln_last_error());
        r->compiles++;
        uint64_t f1 = now_ns();
        r->front_s += (double)(f1 - f0) / 1e9;
        if (p->giant) {
            r->giant_front_s += (double)(f1 - f0) / 1e9;
            r->giants++;
        }
        r->words[k] = out.words;

        /* Back end: the layout from the interface, as vk_layout_create
         * makes it, then the pipeline with no cache. */
        VkDescriptorSetLayoutBinding b[KILN_MAX_BINDINGS];
        for (uint32_t i = 0; i < out.iface.binding_count; i++)
            b[i] = (VkDescriptorSetLayoutBinding){
                .binding = out.iface.bindings[i].binding,
                .descriptorType = out.iface.bindings[i].kind == KILN_BINDING_UNIFORM_BUFFER
                                      ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                      : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                .descriptorCount = 1,
                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
            };
        VkDescriptorSetLayoutCreateInfo dslci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                                 .bindingCount = out.iface.binding_count,
                                                 .pBindings = b};
        VCHECK(vkCreateDescriptorSetLayout(device, &dslci, NULL, &sets[k]));
        VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 4 * KILN_PARAM_WORDS};
        VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                           .setLayoutCount = 1,
                                           .pSetLayouts = &sets[k],
                                           .pushConstantRangeCount = 1,
                                           .pPushConstantRanges = &pcr};
        VCHECK(vkCreatePipelineLayout(device, &plci, NULL, &layouts[k]));
        VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                         .codeSize = out.words * 4,
                                         .pCode = out.spirv};
        VkShaderModule mod;
        VCHECK(vkCreateShaderModule(device, &smci, NULL, &mod));
        VkComputePipelineCreateInfo cpci = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = mod,
                      .pName = "main"},
            .layout = layouts[k],
        };
        VCHECK(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &cpci, NULL, &pipes[k]));
        vkDestroyShaderModule(device, mod, NULL);
        r->compiles++;
        double back = secs_since(f1);
        r->back_s += back;
        if (p->giant)
            r->giant_back_s += back;
        prog_output_finish(&out);
        prog_source_finish(&src);
    }
    r->wall_s = secs_since(t0);

    for (uint32_t k = 0; k < w->count; k++) {
        vkDestroyPipeline(device, pipes[k], NULL);
        vkDestroyPipelineLayout(device, layouts[k], NULL);
        vkDestroyDescriptorSetLayout(device, sets[k], NULL);
    }
    free(pipes);
    free(layouts);
    free(sets);
    vkDestroyDevice(device, NULL);
    vkDestroyInstance(instance, NULL);
    if (held)
        shaderc_compiler_release(held);
}

/* ---- the kiln side ------------------------------------------------------------- */

struct config {
    uint32_t workers;
    int caches;                 /* 1 on, 0 off */
};

struct kres {
    double wall_s, create_s, ctx_create_s, ctx_destroy_s;
    kiln_context_stats st;
    uint32_t words_mismatch;    /* programs whose SPIR-V size differs from the serial loop's */
    uint32_t first_mismatch;
};

static void kiln_run(struct kres *r, const struct workload *w, struct config c, const size_t *serial_words)
{
    if (setenv("KILN_WORKER_CACHES", c.caches ? "1" : "0", 1))
        die("setenv failed");
    uint64_t t = now_ns();
    kiln_context ctx;
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .compile_threads = c.workers}, &ctx));
    r->ctx_create_s = secs_since(t);
    kiln_program *progs = calloc(w->count, sizeof *progs);
    if (!progs)
        die("out of memory");

    uint64_t t0 = now_ns();
    for (uint32_t k = 0; k < w->count; k++) {
        kiln_program_desc d = desc_of(&w->progs[w->list[k]]);
        KCHECK(kiln_program_create(ctx, &d, &progs[k]));
    }
    r->create_s = secs_since(t0);
    for (uint32_t k = 0; k < w->count; k++) {
        kiln_result res = kiln_program_wait(ctx, progs[k]);
        if (res != KILN_OK) {
            char log[2048] = "";
            if (kiln_program_log(ctx, progs[k], log, sizeof log, NULL) != KILN_OK)
                snprintf(log, sizeof log, "(no log: %s)", kiln_last_error());
            die("kiln: %s (list entry %u) did not compile: %s: %s", w->progs[w->list[k]].name, k,
                kiln_result_name(res), log);
        }
    }
    r->wall_s = secs_since(t0);

    for (uint32_t k = 0; k < w->count; k++) {
        kiln_program_state st;
        KCHECK(kiln_program_status(ctx, progs[k], &st));
        if (st != KILN_PROGRAM_READY)
            die("kiln: %s (list entry %u) is not READY after its wait (state %d)", w->progs[w->list[k]].name, k,
                (int)st);
        if (serial_words) {
            kiln_program_interface iface;
            KCHECK(kiln_program_interface_get(ctx, progs[k], &iface));
            if (iface.spirv_words != serial_words[k] && !r->words_mismatch++)
                r->first_mismatch = k;
        }
    }
    KCHECK(kiln_context_stats_get(ctx, &r->st));
    free(progs);
    fflush(stdout);
    t = now_ns();
    (void)kiln_context_destroy(ctx);
    r->ctx_destroy_s = secs_since(t);
}

/* ---- main -------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_compile [options]\n"
            "  --workers LIST        kiln compile workers, one run each, e.g. 1,4,16 (default 2)\n"
            "  --worker-caches MODE  on, off or both: KILN_WORKER_CACHES for each kiln run (default on)\n"
            "  --programs N          distinct programs (default 200)\n"
            "  --dup-percent P       duplicates added, as a percentage of N (default 30)\n"
            "  --giants G            how many of the distinct programs are giants (default 4)\n"
            "  --giant-lines L       straight-line statements in a giant's body (default %u)\n"
            "  --seed S              the generator's seed (default 1)\n"
            "  --serial MODE         held, fresh or both: the serial loops to run (default both):\n"
            "                        held  holds one shaderc compiler for the loop, as a plain\n"
            "                              shaderc loop reuses its compiler;\n"
            "                        fresh kiln's front end alone, a shaderc compiler per compile\n"
            "  --skip-serial         no serial loop\n"
            "  --dump DIR            also write each distinct program's GLSL to DIR/<name>\n",
            DEFAULT_GIANT_LINES);
}

static const char *const serial_label[2] = {"serial fresh (compiler each)", "serial held (one compiler)"};

int main(int argc, char **argv)
{
    /* Cold drivers: before any Vulkan call. */
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    setenv("__GL_SHADER_DISK_CACHE", "0", 1);
    setenv("KILN_LOG", "info", 0);
    /* Cold kiln too, unless the caller asks for its archive (KILN_ARCHIVE=1
     * with a KILN_ARCHIVE_DIR: a second run is then a warm start). */
    setenv("KILN_ARCHIVE", "0", 0);

    struct workload w = {.distinct = 200, .giants = 4, .giant_lines = DEFAULT_GIANT_LINES};
    uint32_t dup_percent = 30, workers[MAX_CONFIGS] = {2}, worker_count = 1;
    uint64_t seed = 1;
    int caches_on = 1, caches_off = 0;
    bool run_serial[2] = {true, true};   /* [0] fresh, [1] held */
    const char *dump_dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--workers")) {
            if (!v)
                die("--workers wants a list such as 1,4,16");
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            worker_count = 0;
            for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (worker_count == MAX_CONFIGS / 2)
                    die("--workers: at most %d counts", MAX_CONFIGS / 2);
                workers[worker_count++] = (uint32_t)bench_parse_num("--workers", tok, 1, 256);
            }
            if (!worker_count)
                die("--workers wants a list such as 1,4,16");
            i++;
        } else if (!strcmp(a, "--worker-caches")) {
            if (v && !strcmp(v, "on"))
                caches_on = 1, caches_off = 0;
            else if (v && !strcmp(v, "off"))
                caches_on = 0, caches_off = 1;
            else if (v && !strcmp(v, "both"))
                caches_on = 1, caches_off = 1;
            else
                die("--worker-caches wants on, off or both, got '%s'", v ? v : "");
            i++;
        } else if (!strcmp(a, "--serial")) {
            if (v && !strcmp(v, "held"))
                run_serial[0] = false, run_serial[1] = true;
            else if (v && !strcmp(v, "fresh"))
                run_serial[0] = true, run_serial[1] = false;
            else if (v && !strcmp(v, "both"))
                run_serial[0] = true, run_serial[1] = true;
            else
                die("--serial wants held, fresh or both, got '%s'", v ? v : "");
            i++;
        } else if (!strcmp(a, "--skip-serial")) {
            run_serial[0] = run_serial[1] = false;
        } else if (!strcmp(a, "--programs")) {
            w.distinct = (uint32_t)bench_parse_num(a, v, 1, 100000);
            i++;
        } else if (!strcmp(a, "--dup-percent")) {
            dup_percent = (uint32_t)bench_parse_num(a, v, 0, 1000);
            i++;
        } else if (!strcmp(a, "--giants")) {
            w.giants = (uint32_t)bench_parse_num(a, v, 0, 100000);
            i++;
        } else if (!strcmp(a, "--giant-lines")) {
            w.giant_lines = (uint32_t)bench_parse_num(a, v, 1, 10000000);
            i++;
        } else if (!strcmp(a, "--seed")) {
            seed = bench_parse_num(a, v, 0, UINT64_MAX);
            i++;
        } else if (!strcmp(a, "--dump")) {
            if (!v)
                die("--dump wants a folder");
            dump_dir = v;
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            die("unknown argument '%s'", a);
        }
    }
    if (w.giants > w.distinct)
        die("--giants %u is more than --programs %u", w.giants, w.distinct);
    w.dups = (uint32_t)(((uint64_t)w.distinct * dup_percent + 50) / 100);

    struct config configs[MAX_CONFIGS];
    uint32_t config_count = 0;
    for (uint32_t i = 0; i < worker_count; i++) {
        if (caches_on)
            configs[config_count++] = (struct config){workers[i], 1};
        if (caches_off)
            configs[config_count++] = (struct config){workers[i], 0};
    }

    uint64_t t_all = now_ns(), t = now_ns();
    workload_make(&w, seed);
    size_t src_bytes = 0, small_longest = 0;
    uint32_t small_pick = UINT32_MAX, giant_pick = UINT32_MAX;
    for (uint32_t i = 0; i < w.distinct; i++) {
        size_t len = strlen(w.progs[i].source);
        src_bytes += len;
        if (w.progs[i].giant) {
            if (giant_pick == UINT32_MAX)
                giant_pick = i;
        } else if (len > small_longest) {
            small_longest = len;
            small_pick = i;
        }
    }
    double gen_s = secs_since(t);
    for (uint32_t i = 0; dump_dir && i < w.distinct; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dump_dir, w.progs[i].name);
        FILE *f = fopen(path, "w");
        if (!f || fputs(w.progs[i].source, f) < 0 || fclose(f))
            die("--dump: cannot write %s", path);
    }

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_compile: %u distinct programs (%u giants of %u statements, %u small of 20-60 lines) + %u "
           "duplicates (%u%%; %u of them copy a giant) = %u to compile, seed %" PRIu64 "\n",
           w.distinct, w.giants, w.giant_lines, w.distinct - w.giants, w.dups, dup_percent, w.giant_dups, w.count,
           seed);
    printf("machine: %ld cores\n", cores);

    /* The device, from a throwaway kiln context (no compile: no workers). */
    kiln_context probe;
    kiln_caps caps;
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .compile_threads = 1}, &probe));
    KCHECK(kiln_context_caps(probe, &caps));
    (void)kiln_context_destroy(probe);
    fflush(stderr);
    printf("device: %s (%s; %s)\n", caps.device_name, caps.driver_name, caps.driver_info);
    printf("cold: MESA_SHADER_CACHE_DISABLE=%s, __GL_SHADER_DISK_CACHE=%s (drivers' on-disk shader caches off); "
           "no pipeline cache in the serial loops; a fresh kiln context per run\n",
           getenv("MESA_SHADER_CACHE_DISABLE"), getenv("__GL_SHADER_DISK_CACHE"));
    printf("phase generate: %.2f s (%.1f MiB of GLSL)\n", gen_s, (double)src_bytes / (1 << 20));

    /* Sizing: SPIR-V of the longest small program and of one giant. */
    t = now_ns();
    size_t small_words = small_pick != UINT32_MAX ? front_words(&w.progs[small_pick]) : 0;
    double small_s = secs_since(t);
    t = now_ns();
    size_t giant_words = giant_pick != UINT32_MAX ? front_words(&w.progs[giant_pick]) : 0;
    double giant_s = secs_since(t);
    const char *env_giant = getenv("KILN_GIANT_WORDS");
    bool giant_from_env = env_giant && *env_giant;
    if (!giant_from_env && giant_words > small_words) {
        char buf[32];
        snprintf(buf, sizeof buf, "%zu", small_words + (giant_words - small_words) / 2);
        setenv("KILN_GIANT_WORDS", buf, 1);
    }
    env_giant = getenv("KILN_GIANT_WORDS");
    uint64_t threshold = env_giant && *env_giant ? strtoull(env_giant, NULL, 0) : 100000;
    printf("phase sizing (front end only, a compiler per compile): longest small %s: %zu SPIR-V words (%.3f s); "
           "giant %s: %zu words (%.3f s)\n",
           small_pick != UINT32_MAX ? w.progs[small_pick].name : "-", small_words, small_s,
           giant_pick != UINT32_MAX ? w.progs[giant_pick].name : "-", giant_words, giant_s);
    printf("KILN_GIANT_WORDS=%" PRIu64 " (%s)\n", threshold,
           giant_from_env ? "from the environment"
           : env_giant    ? "set halfway between the small and giant sizes"
                          : "kiln's default");
    if (giant_pick != UINT32_MAX && giant_words <= threshold)
        printf("note: giants (%zu words) are not over KILN_GIANT_WORDS; kiln treats them as ordinary programs\n",
               giant_words);
    fflush(stdout);

    /* The serial loops, fresh first: it leaves no glslang state behind. */
    struct serial ser[2] = {{.held = false}, {.held = true}};
    const size_t *ref_words = NULL;
    for (int m = 0; m < 2; m++) {
        if (!run_serial[m])
            continue;
        serial_run(&ser[m], &w, caps.device_name);
        const struct serial *r = &ser[m];
        uint32_t smalls = w.count - r->giants;
        printf("phase %s: %.2f s wall (front end %.2f s, back end %.2f s), %" PRIu64 " compiles\n"
               "  per small program: front %.1f ms, back %.1f ms; per giant: front %.3f s, back %.3f s "
               "(%u small, %u giant list entries)\n",
               serial_label[m], r->wall_s, r->front_s, r->back_s, r->compiles,
               smalls ? (r->front_s - r->giant_front_s) / smalls * 1e3 : 0.0,
               smalls ? (r->back_s - r->giant_back_s) / smalls * 1e3 : 0.0,
               r->giants ? r->giant_front_s / r->giants : 0.0, r->giants ? r->giant_back_s / r->giants : 0.0, smalls,
               r->giants);
        if (ref_words && memcmp(ref_words, ser[m].words, w.count * sizeof *ref_words))
            die("the two serial loops made SPIR-V of different sizes");
        ref_words = ser[m].words;
        fflush(stdout);
    }

    struct kres res[MAX_CONFIGS];
    int failed = 0;
    uint64_t expected = 2ull * w.distinct;
    for (uint32_t i = 0; i < config_count; i++) {
        struct kres *r = &res[i];
        *r = (struct kres){0};
        kiln_run(r, &w, configs[i], ref_words);
        fflush(stderr);
        const kiln_context_stats *st = &r->st;
        printf("phase kiln workers=%u caches=%s: %.2f s wall (creates returned after %.3f s; context create "
               "%.3f s, destroy %.3f s, not counted)\n",
               configs[i].workers, configs[i].caches ? "on" : "off", r->wall_s, r->create_s, r->ctx_create_s,
               r->ctx_destroy_s);
        printf("  %" PRIu64 " requests, %" PRIu64 " compiles started (expected %" PRIu64 " = 2 x %u distinct), %" PRIu64
               " adopted in flight + %" PRIu64 " deduplicated (expected %u duplicates), %" PRIu64
               " giants deferred, %" PRIu64 " failed; front end %.2f s, back end %.2f s summed over workers\n",
               st->compile_requests, st->compiles_started, expected, w.distinct, st->compiles_adopted,
               st->compiles_deduplicated, w.dups, st->giants_deferred, st->compiles_failed, st->front_end_seconds,
               st->back_end_seconds);
        if (st->compiles_started != expected) {
            printf("  !!! MISMATCH: kiln started %" PRIu64 " compiles, expected exactly %" PRIu64 " !!!\n",
                   st->compiles_started, expected);
            failed = 1;
        }
        if (st->compiles_adopted + st->compiles_deduplicated != w.dups || st->compile_requests != w.count) {
            printf("  !!! MISMATCH: %" PRIu64 " requests with %" PRIu64 " served by dedupe; expected %u with %u !!!\n",
                   st->compile_requests, st->compiles_adopted + st->compiles_deduplicated, w.count, w.dups);
            failed = 1;
        }
        if (r->words_mismatch) {
            uint32_t k = r->first_mismatch;
            printf("  !!! MISMATCH: %u programs' SPIR-V differs in size from the serial loop's (first: %s, "
                   "serial %zu words) !!!\n",
                   r->words_mismatch, w.progs[w.list[k]].name, ref_words[k]);
            failed = 1;
        }
        fflush(stdout);
    }

    /* The table. Ratios: a serial loop's wall time over this row's. */
    printf("\n%-30s %7s %6s %8s %8s %8s %8s %5s %9s %9s\n", "configuration", "workers", "caches", "wall s",
           "compiles", "front s", "back s", "busy", "held/row", "fresh/row");
    for (int m = 1; m >= 0; m--) {
        if (!run_serial[m])
            continue;
        const struct serial *r = &ser[m];
        char ratio[2][16] = {"-", "-"};
        for (int b = 0; b < 2; b++)
            if (run_serial[b])
                snprintf(ratio[b], sizeof ratio[b], "%.2fx", ser[b].wall_s / r->wall_s);
        printf("%-30s %7u %6s %8.2f %8" PRIu64 " %8.2f %8.2f %5.2f %9s %9s\n", serial_label[m], 1u, "-", r->wall_s,
               r->compiles, r->front_s, r->back_s, (r->front_s + r->back_s) / r->wall_s, ratio[1], ratio[0]);
    }
    for (uint32_t i = 0; i < config_count; i++) {
        const struct kres *r = &res[i];
        char ratio[2][16] = {"-", "-"};
        for (int b = 0; b < 2; b++)
            if (run_serial[b])
                snprintf(ratio[b], sizeof ratio[b], "%.2fx", ser[b].wall_s / r->wall_s);
        printf("%-30s %7u %6s %8.2f %8" PRIu64 " %8.2f %8.2f %5.2f %9s %9s\n", "kiln compile service",
               configs[i].workers, configs[i].caches ? "on" : "off", r->wall_s, r->st.compiles_started,
               r->st.front_end_seconds, r->st.back_end_seconds,
               (r->st.front_end_seconds + r->st.back_end_seconds) / r->wall_s, ratio[1], ratio[0]);
    }
    printf("held/row, fresh/row: that serial loop's wall time over the row's; above 1, the row is faster.\n"
           "  held: one shaderc compiler held through the loop (a plain shaderc loop); fresh: kiln's front end\n"
           "  as kiln's workers run it, a shaderc compiler per compile. Both compile through prog_compile.\n"
           "compiles: front and back ends counted apart; a serial loop compiles every list entry (%u), kiln\n"
           "  every distinct program (%u) once.\n"
           "busy: compile seconds (summed over workers) / wall; at most min(workers, %ld cores).\n",
           w.count, w.distinct, cores);
    if (ref_words)
        printf("SPIR-V sizes: %s\n", failed ? "see the mismatches above"
                                           : "every kiln program's equals the serial loop's for it");
    printf("total run: %.1f s\n", secs_since(t_all));
    for (int m = 0; m < 2; m++)
        free(ser[m].words);
    for (uint32_t i = 0; i < w.distinct; i++)
        free(w.progs[i].source);
    free(w.progs);
    free(w.list);
    if (failed) {
        fprintf(stderr, "bench_compile: error: kiln's compile counts or outputs did not match (see MISMATCH above)\n");
        return 1;
    }
    return 0;
}
