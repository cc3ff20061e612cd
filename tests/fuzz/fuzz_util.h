/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the libFuzzer harnesses of tests/fuzz share: heap copies of an
 * exact size (so that AddressSanitizer sees a read past what the code
 * under test was given), the writing of seed files by their
 * -DFUZZ_SEEDS builds, and the reading of a victim endpoint's CQ.
 */
#ifndef WEFT_FUZZ_UTIL_H
#define WEFT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

/* A heap copy of exactly n bytes of p; aborts when out of memory. */
static inline uint8_t *fuzz_exact(const void *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);

	if (!c)
		abort();
	if (n)
		memcpy(c, p, n);
	return c;
}

/*
 * One fi_cq_read of up to 4 completions of cq, each handed to done(arg,
 * its context, length, flags, error); an error entry must carry a
 * positive FI_E* below 65536, whatever a peer reported.  Aborts, naming
 * prog, on a broken promise.
 */
typedef void (*fuzz_done_fn)(void *arg, void *ctx, size_t len,
			     uint64_t flags, int err);
static inline void fuzz_cq_poll(const char *prog, struct fid_cq *cq,
				fuzz_done_fn done, void *arg)
{
	struct fi_cq_data_entry e[4];
	struct fi_cq_err_entry err;
	ssize_t n = fi_cq_read(cq, e, 4);
	int i;

	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(cq, &err, 0) != 1) {
			fprintf(stderr, "%s: error completion not readable\n",
				prog);
			abort();
		}
		if (err.err <= 0 || err.err >= 65536) {
			fprintf(stderr,
				"%s: error completion without a valid error "
				"(%d)\n", prog, err.err);
			abort();
		}
		done(arg, err.op_context, err.len, err.flags, err.err);
	} else if (n > 0) {
		for (i = 0; i < n; i++)
			done(arg, e[i].op_context, e[i].len, e[i].flags, 0);
	} else if (n != -FI_EAGAIN) {
		fprintf(stderr, "%s: fi_cq_read failed (%zd)\n", prog, n);
		abort();
	}
}

/* len bytes of buf as the file dir/name: 0, or 1 (said on stderr). */
static inline int fuzz_write_file(const char *dir, const char *name,
				  const void *buf, size_t len)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp || (len && fwrite(buf, 1, len, fp) != len) || fclose(fp)) {
		perror(path);
		return 1;
	}
	return 0;
}

#endif /* WEFT_FUZZ_UTIL_H */
