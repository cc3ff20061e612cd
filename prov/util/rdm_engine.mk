# SPDX-License-Identifier: BSD-2-Clause
# prov/util: unit tests of the RDM engine over an in-memory transport.
if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_rdm_engine
tests_unit_test_rdm_engine_SOURCES = tests/unit/test_rdm_engine.c
tests_unit_test_rdm_engine_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rdm_engine_LDADD = $(UNIT_LDADD)
endif
