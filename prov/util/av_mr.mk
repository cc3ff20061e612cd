# prov/util: address vectors and the memory-registration key map.
libweft_la_SOURCES += \
	prov/util/util_mr.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_mr
tests_unit_test_mr_SOURCES = tests/unit/test_mr.c
tests_unit_test_mr_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mr_LDADD = $(UNIT_LDADD)
endif
