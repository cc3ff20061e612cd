# SPDX-License-Identifier: BSD-2-Clause
# prov/util: the registration cache that notices freed memory.
libweft_la_SOURCES += prov/util/util_mr_cache.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_mr_cache
tests_unit_test_mr_cache_SOURCES = tests/unit/test_mr_cache.c
tests_unit_test_mr_cache_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mr_cache_LDADD = $(UNIT_LDADD)
endif
