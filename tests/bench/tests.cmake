# SPDX-License-Identifier: MIT
# The benchmarks (bench/), run briefly so they keep working; their figures
# come from full runs (README.md, docs/transport.md, docs/server.md).
if(TARGET bench_submit)
  add_test(NAME bench_submit_smoke COMMAND bench_submit --nodes 50 --iters 5 --rounds 1)
  add_test(NAME bench_compile_smoke COMMAND bench_compile --programs 20 --giants 1 --giant-lines 200 --serial held)
  add_test(NAME bench_archive_smoke COMMAND bench_archive --programs 10)
  add_test(NAME bench_spec_smoke COMMAND bench_spec --quick)
  add_test(NAME bench_image_smoke COMMAND bench_image --quick)
  add_test(NAME bench_remote_smoke COMMAND bench_remote --quick)
  add_test(NAME bench_transport_smoke COMMAND bench_transport --quick)
  add_test(NAME bench_overlap_smoke COMMAND bench_overlap --quick)
  if(TARGET bench_wave)
    add_test(NAME bench_wave_smoke COMMAND bench_wave --quick)
    set_tests_properties(bench_wave_smoke PROPERTIES LABELS bench TIMEOUT 300 SKIP_RETURN_CODE 77
                                                     ENVIRONMENT "KILN_ARCHIVE=0")
  endif()
  set_tests_properties(bench_submit_smoke bench_compile_smoke bench_spec_smoke bench_image_smoke bench_remote_smoke
                       bench_overlap_smoke
                       PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "KILN_ARCHIVE=0")
  set_tests_properties(bench_archive_smoke bench_transport_smoke PROPERTIES LABELS bench TIMEOUT 300)
endif()
