# SPDX-License-Identifier: MIT
# The wave recompiler's fuzz targets: code objects through the loader,
# decoder and interpreter (fuzz_wave_load), and raw instruction streams
# through the decoder and interpreter (fuzz_wave_code).
kiln_fuzz_target(fuzz_wave_load fuzz_wave_load.c)
kiln_fuzz_target(fuzz_wave_code fuzz_wave_code.c)
foreach(t fuzz_wave_load fuzz_wave_code)
  target_link_libraries(${t}_replay PRIVATE kiln_wave_internal)
  if(KILN_FUZZ)
    target_link_libraries(${t} PRIVATE kiln_wave_internal)
  endif()
endforeach()
