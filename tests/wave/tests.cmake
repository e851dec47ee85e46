# SPDX-License-Identifier: MIT
# The wave recompiler's tests: each part lists its own in tests/wave/*.cmake.
file(GLOB KILN_WAVE_TEST_LISTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.cmake)
list(REMOVE_ITEM KILN_WAVE_TEST_LISTS ${CMAKE_CURRENT_LIST_FILE})
foreach(list ${KILN_WAVE_TEST_LISTS})
  include(${list})
endforeach()
