# SPDX-License-Identifier: MIT
# The transport's sources (src/transport/*.c), compiled into libkiln with
# everything else. It needs nothing beyond libc (memfd_create is called
# through syscall() where libc lacks it).
file(GLOB KILN_TRANSPORT_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND KILN_SOURCES ${KILN_TRANSPORT_SOURCES})
