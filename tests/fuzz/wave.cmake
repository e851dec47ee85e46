# SPDX-License-Identifier: MIT
# The wave recompiler's fuzz targets: code objects through the loader,
# decoder and interpreter (fuzz_wave_load), and raw instruction streams
# through the decoder and interpreter (fuzz_wave_code).
kiln_fuzz_target(fuzz_wave_load fuzz_wave_load.c)
kiln_fuzz_target(fuzz_wave_code fuzz_wave_code.c)
