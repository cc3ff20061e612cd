# SPDX-License-Identifier: BSD-2-Clause
# util/fi_info: the fi_info and fi_strerror tools, their man pages and tests.
# Both tools link weft's own libfabric.la; at run time any libfabric.so.1
# on the library path serves them.
bin_PROGRAMS += util/fi_info util/fi_strerror

util_fi_info_SOURCES = util/fi_info.c
util_fi_info_LDADD = libfabric.la

util_fi_strerror_SOURCES = util/fi_strerror.c
util_fi_strerror_LDADD = libfabric.la

dist_man_MANS += man/fi_info.1 man/fi_strerror.1

FI_INFO_TESTS = \
	tests/util/fi_info_compare.sh \
	tests/util/fi_info_explain.sh \
	tests/util/fi_strerror.sh
TESTS += $(FI_INFO_TESTS)
EXTRA_DIST += $(FI_INFO_TESTS) tests/util/common.sh
