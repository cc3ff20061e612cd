# SPDX-License-Identifier: BSD-2-Clause
# prov/util: wait objects, wait sets, poll sets and completion queues.
libweft_la_SOURCES += \
	prov/util/util_wait.c \
	prov/util/util_poll.c \
	prov/util/util_cq.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_wait tests/unit/test_cq tests/unit/test_poll
tests_unit_test_wait_SOURCES = tests/unit/test_wait.c
tests_unit_test_wait_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_wait_LDADD = $(UNIT_LDADD) -lpthread
tests_unit_test_cq_SOURCES = tests/unit/test_cq.c
tests_unit_test_cq_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cq_LDADD = $(UNIT_LDADD) -lpthread
tests_unit_test_poll_SOURCES = tests/unit/test_poll.c
tests_unit_test_poll_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_poll_LDADD = $(UNIT_LDADD) -lpthread
endif
