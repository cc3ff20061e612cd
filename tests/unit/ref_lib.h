/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The reference libfabric.so.1 ($REF_LIBDIR, Debian's libfabric 1.17) for
 * tests that compare weft's output with it, loaded privately with
 * RTLD_DEEPBIND so that the reference's calls to its own fi_* functions do
 * not land in the weft linked into the test program.
 */
#ifndef WEFT_TESTS_REF_LIB_H
#define WEFT_TESTS_REF_LIB_H

#include <criterion/criterion.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define REF_LIB_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define REF_LIB_SANITIZED 1
#endif
#endif

/*
 * Open the reference library, or skip the calling test (with the reason in
 * the test report) when there is none or when this program is built with
 * AddressSanitizer or ThreadSanitizer, whose runtimes refuse RTLD_DEEPBIND:
 * those comparisons run in the plain build only.  Fails the test when the library is there
 * but does not load.  Returns the dlopen handle.
 */
static inline void *ref_lib_open(void)
{
	const char *dir = getenv("REF_LIBDIR");
	char path[PATH_MAX];
	void *dl;

#ifdef REF_LIB_SANITIZED
	cr_skip_test("needs RTLD_DEEPBIND, which the sanitizer runtimes "
		     "refuse: compared with the reference in the plain build "
		     "only");
#endif
	if (!dir || !*dir)
		cr_skip_test("REF_LIBDIR not set: no reference libfabric");
	snprintf(path, sizeof(path), "%s/libfabric.so.1", dir);
	if (access(path, R_OK))
		cr_skip_test("no reference library at %s", path);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	cr_assert_not_null(dl, "dlopen %s: %s", path, dlerror());
	return dl;
}

#endif /* WEFT_TESTS_REF_LIB_H */
