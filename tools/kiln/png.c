/* placeholder */
#include "cli.h"
bool cli_write_png(const char *path, const uint8_t *rgba, uint32_t w, uint32_t h) { (void)path; (void)rgba; (void)w; (void)h; return false; }
