# prov/util: wait objects, wait sets, poll sets and completion queues.
libweft_la_SOURCES += \
	prov/util/util_wait.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_wait
tests_unit_test_wait_SOURCES = tests/unit/test_wait.c
tests_unit_test_wait_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_wait_LDADD = $(UNIT_LDADD) -lpthread
endif
