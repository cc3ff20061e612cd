# SPDX-License-Identifier: BSD-2-Clause
# prov/util: address vectors and the memory-registration key map.
libweft_la_SOURCES += \
	prov/util/util_av.c \
	prov/util/util_av_shm.c \
	prov/util/util_av_shm.h \
	prov/util/util_mr.c \
	prov/util/util_pmem.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_av tests/unit/test_mr
tests_unit_test_av_SOURCES = tests/unit/test_av.c
tests_unit_test_av_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_av_LDADD = $(UNIT_LDADD)
tests_unit_test_mr_SOURCES = tests/unit/test_mr.c
tests_unit_test_mr_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mr_LDADD = $(UNIT_LDADD)
endif

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_av_shared
tests_unit_test_av_shared_SOURCES = tests/unit/test_av_shared.c
tests_unit_test_av_shared_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_av_shared_LDADD = $(UNIT_LDADD)
endif
