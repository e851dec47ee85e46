# SPDX-License-Identifier: MIT
# The client stub, the server and its applier (src/remote/*.c), compiled
# into libkiln: kiln_server_* and KILN_REMOTE need nothing beyond the
# transport and libc.
file(GLOB KILN_REMOTE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND KILN_SOURCES ${KILN_REMOTE_SOURCES})
