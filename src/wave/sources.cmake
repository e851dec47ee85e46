# SPDX-License-Identifier: MIT
# The wave recompiler's sources (src/wave/*.c), compiled into libkiln with
# everything else, and libelf, which reads guest code objects.
kiln_pkg(LIBELF libelf)
file(GLOB KILN_WAVE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND KILN_SOURCES ${KILN_WAVE_SOURCES})
list(APPEND KILN_DEPS PkgConfig::LIBELF)
