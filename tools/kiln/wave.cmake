# SPDX-License-Identifier: MIT
# kiln wave (tools/kiln/cmd_wave.c), on libkiln-wave's public calls.
target_sources(kiln-cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/kiln/cmd_wave.c)
target_link_libraries(kiln-cli PRIVATE kiln-wave)
