# SPDX-License-Identifier: BSD-2-Clause
# prov/util: unit tests of the RDM engine over an in-memory transport, and
# of the endpoint base it sits on.
if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_rdm_engine tests/unit/test_util_ep
tests_unit_test_rdm_engine_SOURCES = tests/unit/test_rdm_engine.c
tests_unit_test_rdm_engine_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rdm_engine_LDADD = $(UNIT_LDADD)
tests_unit_test_util_ep_SOURCES = tests/unit/test_util_ep.c
tests_unit_test_util_ep_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_util_ep_LDADD = $(UNIT_LDADD)
endif
