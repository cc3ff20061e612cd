# SPDX-License-Identifier: BSD-2-Clause
# src/tostr.c, src/strerror.c tests
if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_tostr tests/unit/test_strerror

# Compares weft's text with the reference library's, which it dlopens at
# $(REF_LIBDIR)/libfabric.so.1; without one those cases are skipped.
tests_unit_test_tostr_SOURCES = tests/unit/test_tostr.c tests/unit/ref_lib.h
tests_unit_test_tostr_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_tostr_LDADD = $(UNIT_LDADD) -ldl -lpthread

tests_unit_test_strerror_SOURCES = tests/unit/test_strerror.c tests/unit/ref_lib.h
tests_unit_test_strerror_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_strerror_LDADD = $(UNIT_LDADD) -ldl
endif
