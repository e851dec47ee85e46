# SPDX-License-Identifier: MIT
# The transport's fuzz targets: the frame reader, the ring consumer (and the
# producer against a hostile consumer, and the event ring) over a control
# page and rings the input writes, and the sideband parser.
kiln_fuzz_target(fuzz_transport_frame fuzz_transport_frame.c)
kiln_fuzz_target(fuzz_transport_ring fuzz_transport_ring.c)
kiln_fuzz_target(fuzz_transport_sideband fuzz_transport_sideband.c)
