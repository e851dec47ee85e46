# SPDX-License-Identifier: MIT
# Fixtures for kiln's Python tests: a context per test with the Vulkan
# validation layer on; a test fails if the layer reported an error
# (kiln_context_stats.validation_errors), read before the context closes.
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import kiln  # noqa: E402


@pytest.fixture
def ctx():
    c = kiln.Context(validation=1, compile_threads=2)
    yield c
    errors = c.stats["validation_errors"]
    c.close()
    assert errors == 0, "Vulkan validation errors: %d" % errors
