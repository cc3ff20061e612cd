/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Making written memory durable (FI_RMA_PMEM, FI_COMMIT_COMPLETE).
 *
 * A target of an RMA write or atomic whose initiator asked for
 * FI_COMMIT_COMPLETE, into a registration made with FI_RMA_PMEM, flushes
 * the bytes it wrote from the CPU caches before it answers
 * (util_mr_map_commit, weft/util_mr.h).  The instruction is chosen once
 * per process by CPUID: clwb where the CPU has it (the line stays
 * cached), else clflushopt, else clflush; an sfence follows the flushes.
 * That is all a process can do for memory mapped from a DAX device or a
 * DAX file system.  A file mapped without DAX is the application's to
 * msync(2): the page cache, not the CPU cache, holds its data.
 */
#ifndef WEFT_UTIL_PMEM_H
#define WEFT_UTIL_PMEM_H

#include "weft/core.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * Flush count ranges from the CPU caches, then fence.  Any thread, never
 * blocks, no allocation.  prov (may be NULL) names the provider in the
 * debug log line that tells how many bytes were flushed and how.
 */
void util_pmem_flush(const struct fi_provider *prov, const struct iovec *iov,
		     size_t count);

/* The instruction util_pmem_flush uses: "clwb", "clflushopt", "clflush"
 * or, on a CPU without any, "none" (a fence only). */
const char *util_pmem_insn(void);

/* Bytes util_pmem_flush has flushed in this process. */
uint64_t util_pmem_flushed(void);

#endif /* WEFT_UTIL_PMEM_H */
