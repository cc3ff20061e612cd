# SPDX-License-Identifier: BSD-2-Clause
# prov/util: receive matching (tagged and untagged queues, unexpected
# messages) and the buffer pool the RDM engine allocates its entries from.
libweft_la_SOURCES += \
	prov/util/util_match.c \
	prov/util/util_bufpool.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_match tests/unit/test_bufpool
tests_unit_test_match_SOURCES = tests/unit/test_match.c
tests_unit_test_match_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_match_LDADD = $(UNIT_LDADD)
tests_unit_test_bufpool_SOURCES = tests/unit/test_bufpool.c
tests_unit_test_bufpool_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_bufpool_LDADD = $(UNIT_LDADD)
endif
