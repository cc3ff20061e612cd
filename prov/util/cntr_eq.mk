# SPDX-License-Identifier: BSD-2-Clause
# prov/util: cntr_eq -- event queues and counters.
libweft_la_SOURCES += \
	prov/util/util_eq.c \
	prov/util/util_cntr.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_eq tests/unit/test_cntr
tests_unit_test_eq_SOURCES = tests/unit/test_eq.c
tests_unit_test_eq_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_eq_LDADD = $(UNIT_LDADD)
tests_unit_test_cntr_SOURCES = tests/unit/test_cntr.c
tests_unit_test_cntr_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cntr_LDADD = $(UNIT_LDADD)
endif
