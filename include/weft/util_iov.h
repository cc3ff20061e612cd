/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iovec arithmetic shared by the engine and the transports: lengths,
 * sub-ranges, and copies to and from a byte range of an iovec array.
 * "skip" is a byte offset into the array as if it were one buffer.
 */
#ifndef WEFT_UTIL_IOV_H
#define WEFT_UTIL_IOV_H

#include <string.h>
#include <sys/uio.h>

#include "weft/core.h"

static inline size_t util_iov_len(const struct iovec *iov, size_t count)
{
	size_t len = 0, i;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * Copy an array of count iovecs into dst.  iov may be NULL when count is 0
 * (an empty message's iovec): memcpy may not be given NULL even for 0 bytes.
 */
static inline void util_iov_assign(struct iovec *dst, const struct iovec *iov,
				   size_t count)
{
	if (count)
		memcpy(dst, iov, count * sizeof(*iov));
}

/*
 * Describe [skip, skip+len) of iov as a new array in out (at most count
 * entries); returns how many it used.  A range past the end is cut short.
 */
static inline size_t util_iov_slice(const struct iovec *iov, size_t count,
				    size_t skip, size_t len,
				    struct iovec *out)
{
	size_t i, n = 0;

	for (i = 0; i < count && len; i++) {
		size_t take;

		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		take = WEFT_MIN(iov[i].iov_len - skip, len);
		out[n].iov_base = (char *)iov[i].iov_base + skip;
		out[n++].iov_len = take;
		len -= take;
		skip = 0;
	}
	return n;
}

/* Copy len bytes of src into iov from byte `skip` on; returns bytes copied. */
static inline size_t util_iov_copy_to(const struct iovec *iov, size_t count,
				      size_t skip, const void *src, size_t len)
{
	const char *s = src;
	size_t i, done = 0;

	for (i = 0; i < count && done < len; i++) {
		size_t n;

		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		n = WEFT_MIN(iov[i].iov_len - skip, len - done);
		memcpy((char *)iov[i].iov_base + skip, s + done, n);
		done += n;
		skip = 0;
	}
	return done;
}

/* Copy len bytes of iov, from byte `skip` on, into dst; returns bytes. */
static inline size_t util_iov_copy_from(void *dst, const struct iovec *iov,
					size_t count, size_t skip, size_t len)
{
	char *d = dst;
	size_t i, done = 0;

	for (i = 0; i < count && done < len; i++) {
		size_t n;

		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		n = WEFT_MIN(iov[i].iov_len - skip, len - done);
		memcpy(d + done, (const char *)iov[i].iov_base + skip, n);
		done += n;
		skip = 0;
	}
	return done;
}

/* Drop the first n bytes of iov in place (*count shrinks as entries
 * empty): what is left of a transfer that moved n bytes. */
static inline void util_iov_advance(struct iovec *iov, size_t *count,
				    size_t n)
{
	size_t i = 0, j;

	while (i < *count && n >= iov[i].iov_len) {
		n -= iov[i].iov_len;
		i++;
	}
	if (i < *count && n) {
		iov[i].iov_base = (char *)iov[i].iov_base + n;
		iov[i].iov_len -= n;
	}
	for (j = 0; i + j < *count; j++)
		iov[j] = iov[i + j];
	*count = j;
}

#endif /* WEFT_UTIL_IOV_H */
