# SPDX-License-Identifier: MIT
# The call catalogue and its records (src/pipe/*.c), compiled into libkiln.
file(GLOB KILN_PIPE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND KILN_SOURCES ${KILN_PIPE_SOURCES})
