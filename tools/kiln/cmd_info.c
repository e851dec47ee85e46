/* placeholder */
#include "cli.h"
int cmd_info(int argc, char **argv) { (void)argc; (void)argv; return 1; }
