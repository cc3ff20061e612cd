// SPDX-License-Identifier: BSD-2-Clause
/*
 * CF_DENY_CMA: run with cross-memory attach denied, as a container's
 * seccomp profile or a hardened kernel may deny it.  A seccomp filter
 * (written out here, no libseccomp) makes process_vm_readv and
 * process_vm_writev fail with EPERM in this process and every process it
 * starts; providers must then move the same bytes another way.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "conformance.h"

#if defined(__x86_64__)
#define CF_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CF_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* Whether both calls now fail with EPERM, reading our own memory. */
static bool cma_denied(void)
{
	char src[8] = "cma", dst[8] = {0};
	struct iovec l = {dst, sizeof(dst)}, r = {src, sizeof(src)};

	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) >= 0 ||
	    errno != EPERM)
		return false;
	return process_vm_writev(getpid(), &r, 1, &l, 1, 0) < 0 &&
	       errno == EPERM;
}

int cf_deny_cma(void)
{
#ifdef CF_AUDIT_ARCH
	struct sock_filter filter[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		     offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CF_AUDIT_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		     offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & 0xffff)),
	};
	struct sock_fprog prog = {
	    .len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
	    .filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "CF_DENY_CMA: seccomp filter: %s\n",
			strerror(errno));
		return -1;
	}
	if (!cma_denied()) {
		fprintf(stderr, "CF_DENY_CMA: process_vm_readv/writev still "
				"allowed under the filter\n");
		return -1;
	}
	return 0;
#else
	fprintf(stderr, "CF_DENY_CMA: no seccomp architecture known here\n");
	return -1;
#endif
}
