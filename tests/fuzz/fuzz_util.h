/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the libFuzzer harnesses of tests/fuzz share: heap copies of an
 * exact size (so that AddressSanitizer sees a read past what the code
 * under test was given), and the writing of seed files by their
 * -DFUZZ_SEEDS builds.
 */
#ifndef WEFT_FUZZ_UTIL_H
#define WEFT_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
