# SPDX-License-Identifier: BSD-2-Clause
# prov/util: the atomic operations engine providers apply remote atomics with.
libweft_la_SOURCES += \
	prov/util/util_atomic.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_atomic
tests_unit_test_atomic_SOURCES = tests/unit/test_atomic.c
tests_unit_test_atomic_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_atomic_LDADD = $(UNIT_LDADD) -lm
endif
