# SPDX-License-Identifier: BSD-2-Clause
# prov/util: unit tests of the endpoint base.
if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_util_ep
tests_unit_test_util_ep_SOURCES = tests/unit/test_util_ep.c
tests_unit_test_util_ep_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_util_ep_LDADD = $(UNIT_LDADD)
endif
