# SPDX-License-Identifier: BSD-2-Clause
# Clients built against newer OFI headers than weft's: one source, built
# as a program compiled against 1.20 (ABI_NODE 17: fi_getinfo@FABRIC_1.7),
# 2.0 (18: FABRIC_1.8, fi_fabric2) and 2.6 (19: FABRIC_1.9) headers, each
# run over shm and tcp by newer-clients.sh.
check_PROGRAMS += tests/abi/newer_client_17 tests/abi/newer_client_18 \
	tests/abi/newer_client_19
tests_abi_newer_client_17_SOURCES = tests/abi/newer_client.c
tests_abi_newer_client_17_CPPFLAGS = $(AM_CPPFLAGS) -DABI_NODE=17
tests_abi_newer_client_17_LDADD = libfabric.la
tests_abi_newer_client_17_LDFLAGS = -no-install
tests_abi_newer_client_18_SOURCES = tests/abi/newer_client.c
tests_abi_newer_client_18_CPPFLAGS = $(AM_CPPFLAGS) -DABI_NODE=18
tests_abi_newer_client_18_LDADD = libfabric.la
tests_abi_newer_client_18_LDFLAGS = -no-install
tests_abi_newer_client_19_SOURCES = tests/abi/newer_client.c
tests_abi_newer_client_19_CPPFLAGS = $(AM_CPPFLAGS) -DABI_NODE=19
tests_abi_newer_client_19_LDADD = libfabric.la
tests_abi_newer_client_19_LDFLAGS = -no-install
TESTS += tests/abi/newer-clients.sh
EXTRA_DIST += tests/abi/newer-clients.sh
