# SPDX-License-Identifier: MIT
# archive/: the file format, entries, crash-safe saves, tidying, a
# context's store, and the archive at work on the device.
kiln_test(test_format archive/test_format.c)
kiln_test(test_entry archive/test_entry.c)
kiln_test(test_save archive/test_save.c)
kiln_test(test_archive_vk archive/test_archive_vk.c)
kiln_test(test_tidy archive/test_tidy.c)
kiln_test(test_store archive/test_store.c)
set_tests_properties(test_store PROPERTIES LABELS threads)
