# SPDX-License-Identifier: MIT
# Server mode's tests: a list per part, each beside its sources.
include(${CMAKE_CURRENT_LIST_DIR}/remote.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/kill.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/pipe.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/threads.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/hostile.cmake OPTIONAL)
