/*
 * main.c: the kiln command-line tool: dispatches to its commands.
 */
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
               "  archive path|ls|verify  the pipeline archive of the chosen device\n"
               "  help                 this text\n"
               "\n"
               "'kiln <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "info"))
        return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "demo"))
        return cmd_demo(argc - 1, argv + 1);
    if (!strcmp(cmd, "archive"))
        return cmd_archive(argc - 1, argv + 1);
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "kiln: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
