/* SPDX-License-Identifier: BSD-2-Clause */
/* Flushing written ranges of persistent memory (weft/util_pmem.h). */
#include "weft/util_pmem.h"

#include <pthread.h>
#include <stdatomic.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define PMEM_X86 1
#endif

enum pmem_insn { PMEM_NONE, PMEM_CLFLUSH, PMEM_CLFLUSHOPT, PMEM_CLWB };

static const char *const pmem_names[] = { "none", "clflush", "clflushopt",
					   "clwb" };
static enum pmem_insn pmem_insn = PMEM_NONE;
static uintptr_t pmem_line = 64;
static _Atomic uint64_t pmem_bytes;

static void pmem_detect(void)
{
#ifdef PMEM_X86
	unsigned int a, b, c, d;

	if (__get_cpuid(1, &a, &b, &c, &d)) {
		if (d & (1u << 19)) { /* CLFSH */
			pmem_insn = PMEM_CLFLUSH;
			if ((b >> 8) & 0xff)
				pmem_line = ((b >> 8) & 0xff) * 8;
		}
	}
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		if (b & (1u << 24))
			pmem_insn = PMEM_CLWB;
		else if (b & (1u << 23))
			pmem_insn = PMEM_CLFLUSHOPT;
	}
#endif
}

static void pmem_init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, pmem_detect);
}

const char *util_pmem_insn(void)
{
	pmem_init();
	return pmem_names[pmem_insn];
}

uint64_t util_pmem_flushed(void)
{
	return atomic_load_explicit(&pmem_bytes, memory_order_relaxed);
}

#ifdef PMEM_X86
/* The encodings, so that no assembler support is needed:
 * clwb (%rdi) = 66 0f ae 37, clflushopt (%rdi) = 66 0f ae 3f,
 * clflush (%rdi) = 0f ae 3f. */
static inline void pmem_clwb(const char *p)
{
	__asm__ volatile(".byte 0x66, 0x0f, 0xae, 0x37" ::"D"(p) : "memory");
}

static inline void pmem_clflushopt(const char *p)
{
	__asm__ volatile(".byte 0x66, 0x0f, 0xae, 0x3f" ::"D"(p) : "memory");
}

static inline void pmem_clflush(const char *p)
{
	__asm__ volatile(".byte 0x0f, 0xae, 0x3f" ::"D"(p) : "memory");
}
#endif

static void pmem_range(const void *addr, size_t len)
{
#ifdef PMEM_X86
	const char *p = (const char *)((uintptr_t)addr & ~(pmem_line - 1));
	const char *end = (const char *)addr + len;

	switch (pmem_insn) {
	case PMEM_CLWB:
		for (; p < end; p += pmem_line)
			pmem_clwb(p);
		break;
	case PMEM_CLFLUSHOPT:
		for (; p < end; p += pmem_line)
			pmem_clflushopt(p);
		break;
	case PMEM_CLFLUSH:
		for (; p < end; p += pmem_line)
			pmem_clflush(p);
		break;
	default:
		break;
	}
#else
	(void)addr;
	(void)len;
#endif
}

void util_pmem_flush(const struct fi_provider *prov, const struct iovec *iov,
		     size_t count)
{
	size_t i, total = 0;

	pmem_init();
	for (i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		pmem_range(iov[i].iov_base, iov[i].iov_len);
		total += iov[i].iov_len;
	}
	/* clwb and clflushopt are ordered by a store fence alone. */
#ifdef PMEM_X86
	__asm__ volatile("sfence" ::: "memory");
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
	atomic_fetch_add_explicit(&pmem_bytes, total, memory_order_relaxed);
	if (prov)
		FI_LOG(prov, FI_LOG_DEBUG, FI_LOG_EP_DATA,
		       "commit: %zu bytes in %zu ranges flushed (%s)\n", total,
		       count, pmem_names[pmem_insn]);
}
