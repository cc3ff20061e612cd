# SPDX-License-Identifier: BSD-2-Clause
# prov/util: what RDMA providers share: the registration cache that
# notices freed memory; the machine's topology from hwloc, and NIC
# locality from it.
libweft_la_SOURCES += prov/util/util_mr_cache.c prov/util/util_nic.c \
	prov/util/util_topo.c

if HAVE_CRITERION
CRITERION_TESTS += tests/unit/test_mr_cache tests/unit/test_nic \
	tests/unit/test_topo
tests_unit_test_topo_SOURCES = tests/unit/test_topo.c
tests_unit_test_topo_CFLAGS = $(UNIT_CFLAGS) $(HWLOC_CFLAGS)
tests_unit_test_topo_LDADD = $(UNIT_LDADD)
tests_unit_test_nic_SOURCES = tests/unit/test_nic.c
tests_unit_test_nic_CFLAGS = $(UNIT_CFLAGS) $(HWLOC_CFLAGS)
tests_unit_test_nic_LDADD = $(UNIT_LDADD)
tests_unit_test_mr_cache_SOURCES = tests/unit/test_mr_cache.c
tests_unit_test_mr_cache_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mr_cache_LDADD = $(UNIT_LDADD)
endif
