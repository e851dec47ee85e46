/* SPDX-License-Identifier: MIT */
/*
 * main.c: the kiln command-line tool: dispatches to its commands.
 *
 * SIGXFSZ is ignored: a write past the file size limit (RLIMIT_FSIZE) then
 * fails with EFBIG like any other failed write, is reported, and the
 * output's temporary file is removed, instead of the signal killing the
 * process halfway.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: kiln <command> [options]\n"
               "\n"
               "commands:\n"
               "  info                 list Vulkan devices and the chosen device's capabilities\n"
               "  run SHADER.comp ...  compile a compute shader and run it on buffers from files\n"
               "  demo [options]       run kiln's built-in image-processing scheme\n"
               "  archive path|ls|verify|compact|gc  the pipeline archive of the chosen device\n"
               "  wave info|run CODE.o guest AMD GCN code objects: list, disassemble, interpret\n"
               "  serve [options]      serve kiln contexts to other processes over a unix socket\n"
               "  version              print kiln's version (also --version)\n"
               "  help [COMMAND]       this text, or a command's\n"
               "\n"
               "'kiln <command> --help' describes a command's options.\n");
}

int cmd_wave(int argc, char **argv);

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"info", cmd_info},
    {"run", cmd_run},
    {"demo", cmd_demo},
    {"archive", cmd_archive},
    {"wave", cmd_wave},   /* tools/kiln/cmd_wave.c */
    {"serve", cmd_serve},
};

int main(int argc, char **argv)
{
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        if (argc > 2) {
            fprintf(stderr, "kiln %s: unexpected argument '%s'\n", cmd, argv[2]);
            return 2;
        }
        printf("kiln %s\n", kiln_version());
        kiln_build_info bi;
        if (kiln_build_info_get(&bi) == KILN_OK)
            printf("  Vulkan loader %s (headers %s)\n"
                   "  shaderc %s, SPIRV-Tools %s (SPIR-V up to %s), SPIRV-Cross %s\n",
                   bi.vulkan_loader[0] ? bi.vulkan_loader : "none found", bi.vulkan_headers,
                   bi.shaderc[0] ? bi.shaderc : "(unknown)", bi.spirv_tools[0] ? bi.spirv_tools : "(unknown)",
                   bi.spirv, bi.spirv_cross[0] ? bi.spirv_cross : "(unknown)");
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        if (argc == 2) {
            usage(stdout);
            return 0;
        }
        if (argc > 3) {
            fprintf(stderr, "kiln help: unexpected argument '%s': one command at a time\n", argv[3]);
            return 2;
        }
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name)) {
                char help[] = "--help";
                char *help_argv[] = {argv[2], help, NULL};
                return commands[i].run(2, help_argv);
            }
        fprintf(stderr, "kiln help: no command '%s'\n", argv[2]);
        usage(stderr);
        return 2;
    }
    fprintf(stderr, "kiln: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
