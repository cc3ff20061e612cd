/* SPDX-License-Identifier: BSD-2-Clause */
/* What the tcp test programs share: failing loudly. */
#ifndef WEFT_TESTS_TCP_FIX_H
#define WEFT_TESTS_TCP_FIX_H

#include <stdio.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>

/* Say why on stderr and exit 1. */
#define FAIL(...)                                                              \
	do {                                                                   \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		exit(1);                                                       \
	} while (0)

/* A call that must return 0. */
#define CHECK(call)                                                            \
	do {                                                                   \
		int ret_ = (int)(call);                                        \
		if (ret_)                                                      \
			FAIL("%s: %d (%s)", #call, ret_, fi_strerror(-ret_));  \
	} while (0)

#endif /* WEFT_TESTS_TCP_FIX_H */
