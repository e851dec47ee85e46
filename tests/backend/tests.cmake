# SPDX-License-Identifier: MIT
# backend/: the Vulkan backend on the real device (device choice, forced
# staging, limits).
kiln_test(test_vk backend/test_vk.c)
# Every backend of the registry against one contract (no empty op slot;
# buffers, images, caches, pipelines, recordings, tickets; results where
# the backend executes).
kiln_test(test_backends backend/test_backends.c)
