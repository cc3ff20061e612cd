/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_strerror: every FI_E* code has a text, either sign works, errno codes
 * read as strerror words them, and unknown codes get a generic text.
 */
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/core.h"

#include "ref_lib.h"

static const int errno_codes[] = {
	FI_EPERM,	 FI_ENOENT,	 FI_EINTR,	  FI_EIO,
	FI_E2BIG,	 FI_EBADF,	 FI_EAGAIN,	  FI_ENOMEM,
	FI_EACCES,	 FI_EFAULT,	 FI_EBUSY,	  FI_ENODEV,
	FI_EINVAL,	 FI_EMFILE,	 FI_ENOSPC,	  FI_ENOSYS,
	FI_EWOULDBLOCK,	 FI_ENOMSG,	 FI_ENODATA,	  FI_EOVERFLOW,
	FI_EMSGSIZE,	 FI_ENOPROTOOPT, FI_EOPNOTSUPP,	  FI_EADDRINUSE,
	FI_EADDRNOTAVAIL, FI_ENETDOWN,	 FI_ENETUNREACH,  FI_ECONNABORTED,
	FI_ECONNRESET,	 FI_ENOBUFS,	 FI_EISCONN,	  FI_ENOTCONN,
	FI_ESHUTDOWN,	 FI_ETIMEDOUT,	 FI_ECONNREFUSED, FI_EHOSTDOWN,
	FI_EHOSTUNREACH, FI_EALREADY,	 FI_EINPROGRESS,  FI_EREMOTEIO,
	FI_ECANCELED,	 FI_EKEYREJECTED,
};

static const int fi_codes[] = {
	FI_EOTHER,   FI_ETOOSMALL, FI_EOPBADSTATE, FI_EAVAIL, FI_EBADFLAGS,
	FI_ENOEQ,    FI_EDOMAIN,   FI_ENOCQ,	   FI_ECRC,   FI_ETRUNC,
	FI_ENOKEY,   FI_ENOAV,	   FI_EOVERRUN,	   FI_ENORX,
	270 /* FI_ENOMR, 1.20 */, 271 /* FI_EFIREWALLADDR, 2.2 */,
};
/* One past the last code of the newest API weft implements (2.6). */
#define ERRNO_MAX_2_6 272

Test(strerror, errno_codes_read_as_strerror)
{
	char expect[256];
	size_t i;

	for (i = 0; i < sizeof(errno_codes) / sizeof(errno_codes[0]); i++) {
		int code = errno_codes[i];

		snprintf(expect, sizeof(expect), "%s", strerror(code));
		cr_assert_str_eq(fi_strerror(code), expect, "code %d", code);
		cr_assert_str_eq(fi_strerror(-code), expect, "code -%d", code);
	}
	cr_assert_str_eq(fi_strerror(FI_SUCCESS), strerror(0));
}

Test(strerror, fi_codes_have_own_text)
{
	size_t i, j, n = sizeof(fi_codes) / sizeof(fi_codes[0]);

	/* Every code from the offset up to the last one is listed above. */
	cr_assert_eq(n, ERRNO_MAX_2_6 - FI_ERRNO_OFFSET);
	for (i = 0; i < n; i++) {
		const char *s = fi_strerror(fi_codes[i]);

		cr_assert_not_null(s, "code %d", fi_codes[i]);
		cr_assert_gt(strlen(s), 5, "code %d: \"%s\"", fi_codes[i], s);
		cr_assert_null(strstr(s, "Unknown"), "code %d: \"%s\"",
			       fi_codes[i], s);
		cr_assert_str_eq(fi_strerror(-fi_codes[i]), s, "code %d",
				 fi_codes[i]);
		for (j = 0; j < i; j++)
			cr_assert_str_neq(s, fi_strerror(fi_codes[j]),
					  "codes %d and %d share a text",
					  fi_codes[i], fi_codes[j]);
	}
	cr_assert_not_null(strstr(fi_strerror(-FI_ETRUNC), "runcat"));
	cr_assert_not_null(strstr(fi_strerror(FI_EAVAIL), "rror"));
	cr_assert_not_null(strstr(fi_strerror(FI_EOVERRUN), "verrun"));
	cr_assert_not_null(strstr(fi_strerror(-270), "registrations"));
	cr_assert_not_null(strstr(fi_strerror(-271), "firewall"));
}

Test(strerror, unknown_codes)
{
	const int unknown[] = { ERRNO_MAX_2_6, ERRNO_MAX_2_6 + 1, 1000, 65536,
				INT_MAX, INT_MIN, -ERRNO_MAX_2_6, -1000,
				-INT_MAX };
	size_t i;

	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		const char *s = fi_strerror(unknown[i]);

		cr_assert_not_null(s, "code %d", unknown[i]);
		cr_assert_not_null(strstr(s, "Unknown error"),
				   "code %d: \"%s\"", unknown[i], s);
	}
	/* errno values no system call uses still get strerror's text. */
	cr_assert_not_null(fi_strerror(200));
	cr_assert_not_null(fi_strerror(-255));
}

/* The reference agrees wherever both texts come from strerror. */
Test(strerror, errno_texts_match_reference)
{
	typedef const char *(*strerror_fn)(int);
	strerror_fn ref_strerror;
	void *dl;
	char ref_text[256];
	int code;

	dl = ref_lib_open();
	ref_strerror = (strerror_fn)dlsym(dl, "fi_strerror");
	cr_assert_not_null(ref_strerror);
	cr_assert_neq((void *)ref_strerror, (void *)fi_strerror);

	for (code = 0; code < FI_ERRNO_OFFSET; code++) {
		snprintf(ref_text, sizeof(ref_text), "%s", ref_strerror(code));
		cr_assert_str_eq(fi_strerror(code), ref_text, "code %d", code);
		snprintf(ref_text, sizeof(ref_text), "%s",
			 ref_strerror(-code));
		cr_assert_str_eq(fi_strerror(-code), ref_text, "code -%d",
				 code);
	}
}
