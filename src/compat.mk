# SPDX-License-Identifier: BSD-2-Clause
# src/compat.c tests
if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_compat tests/abi/test_compat_dl
tests_unit_test_compat_SOURCES = tests/unit/test_compat.c
tests_unit_test_compat_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_compat_LDADD = $(UNIT_LDADD)

# Reaches the compat versions through the built libfabric.so.1 with
# dlvsym(), as an old program would; it must not link the core itself.
tests_abi_test_compat_dl_SOURCES = tests/abi/test_compat_dl.c
tests_abi_test_compat_dl_CFLAGS = $(UNIT_CFLAGS)
tests_abi_test_compat_dl_LDADD = $(CRITERION_LIBS)
EXTRA_tests_abi_test_compat_dl_DEPENDENCIES = libfabric.la
endif
