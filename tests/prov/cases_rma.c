// SPDX-License-Identifier: BSD-2-Clause
/*
 * Conformance cases for RMA over FI_EP_RDM: fi_write/fi_read at many sizes
 * and unaligned offsets, writedata with remote CQ data at the target,
 * inject writes, iovec forms, a bad key, and RMA counters.  Endpoint 0
 * initiates, endpoint 1 is the target; memory registration follows the
 * mr_mode the provider asked for (cf_mem_reg).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "conformance.h"

#define RMA_GUARD 64
#define RMA_OFF 3 /* unaligned offset into the target region */

static const size_t rma_sizes[] = {
    1, 8, 63, 64, 4095, 4096, 4097, 65537, 1 << 20, (4 << 20) - 5,
};

#define NRMA (sizeof(rma_sizes) / sizeof(rma_sizes[0]))
#define RMA_MAX (4 << 20)

static const uint64_t rma_local = FI_READ | FI_WRITE | FI_SEND | FI_RECV;
static const uint64_t rma_remote = FI_REMOTE_READ | FI_REMOTE_WRITE;

static void rma_open(struct cf_fix *f, const char *prov, uint64_t caps,
		     uint64_t cntr_mask)
{
	struct cf_opts o = {.caps = FI_RMA | caps, .cntr_mask = cntr_mask};

	cf_open(f, prov, &o);
}

static void check_bytes(const uint8_t *p, size_t len, uint8_t v,
			const char *what)
{
	size_t j;

	for (j = 0; j < len; j++)
		cf_assert(p[j] == v, "%s: byte %zu is 0x%02x, want 0x%02x",
			  what, j, p[j], v);
}

/* Progress until the target region holds cf_fill(seed) or time runs out. */
static void wait_target(struct cf_fix *f, const uint8_t *p, size_t len,
			unsigned int seed, const char *what)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	uint8_t *want = malloc(len);

	cf_fill(want, len, seed);
	while (memcmp(p, want, len)) {
		if (cf_now_ms() > end)
			cf_check_fill(p, len, seed, what);
		cf_progress(f);
	}
	free(want);
}

/*
 * Write then read back each size at an unaligned target offset.  The
 * default completion level promises only that the write left the initiator
 * (FI_TRANSMIT_COMPLETE), so the target memory is polled, with progress,
 * until the data shows.
 */
static int case_rma_sizes(const char *prov)
{
	struct fi_context2 ctx;
	struct cf_mem lm, tm;
	struct cf_comp c;
	struct cf_fix f;
	size_t i, len;
	char what[64];

	rma_open(&f, prov, 0, 0);
	/* Both regions have room for a guard after the largest transfer. */
	cf_mem_reg(&f, 0, &lm, RMA_MAX + RMA_GUARD, rma_local);
	cf_mem_reg(&f, 1, &tm, RMA_MAX + 2 * RMA_GUARD, rma_remote);
	for (i = 0; i < NRMA; i++) {
		len = rma_sizes[i];
		snprintf(what, sizeof(what), "fi_write of %zu bytes", len);
		memset(tm.p, 0xa5, RMA_MAX + 2 * RMA_GUARD);
		cf_fill(lm.p, len, 300 + i);
		cf_post(&f,
			fi_write(f.ep[0].ep, lm.p, len, lm.desc, f.ep[1].addr,
				 tm.raddr + RMA_OFF, tm.key, &ctx));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
			  fi_strerror(c.err));
		cf_check_flags(&c, FI_RMA | FI_WRITE, what);
		wait_target(&f, tm.p + RMA_OFF, len, 300 + i, what);
		check_bytes(tm.p, RMA_OFF, 0xa5, "bytes before the write");
		check_bytes(tm.p + RMA_OFF + len, RMA_GUARD, 0xa5,
			    "bytes after the write");

		snprintf(what, sizeof(what), "fi_read of %zu bytes", len);
		cf_fill(tm.p + RMA_OFF, len, 400 + i);
		memset(lm.p, 0, len + RMA_GUARD);
		cf_post(&f,
			fi_read(f.ep[0].ep, lm.p, len, lm.desc, f.ep[1].addr,
				tm.raddr + RMA_OFF, tm.key, &ctx));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
			  fi_strerror(c.err));
		cf_check_flags(&c, FI_RMA | FI_READ, what);
		cf_check_fill(lm.p, len, 400 + i, what);
		check_bytes(lm.p + len, RMA_GUARD, 0, "bytes after the read");
	}
	/* RMA without FI_RMA_EVENT completes nothing at the target. */
	cf_expect_none(&f, 1, 50);
	cf_expect_none(&f, 0, 0);
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	cf_close(&f);
	return 0;
}

/*
 * fi_writedata and fi_inject_writedata raise a completion at the target
 * with FI_REMOTE_WRITE|FI_RMA|FI_REMOTE_CQ_DATA and the data; fi_inject_write
 * completes nowhere yet the data arrives.
 */
static int case_rma_writedata(const char *prov)
{
	struct fi_context2 ctx;
	struct cf_mem lm, tm;
	uint64_t mask;
	size_t inj, cqd;
	struct cf_comp c;
	struct cf_fix f;

	rma_open(&f, prov, 0, 0);
	inj = f.info->tx_attr->inject_size;
	cqd = f.info->domain_attr->cq_data_size;
	if (!cqd)
		cf_skip("cq_data_size is 0: no remote CQ data");
	mask = cqd >= 8 ? ~0ULL : (1ULL << (8 * cqd)) - 1;
	cf_mem_reg(&f, 0, &lm, 70000, rma_local);
	cf_mem_reg(&f, 1, &tm, 70000, rma_remote);
	cf_fill(lm.p, 70000, 11);
	cf_post(&f,
		fi_writedata(f.ep[0].ep, lm.p, 70000, lm.desc, 0xc0ffee1234ULL,
			     f.ep[1].addr, tm.raddr, tm.key, &ctx));
	c = cf_wait_ctx(&f, 0, &ctx);
	cf_assert(!c.err, "fi_writedata: error %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_check_flags(&c, FI_RMA | FI_WRITE, "fi_writedata initiator");
	c = cf_wait(&f, 1);
	cf_assert(!c.err, "fi_writedata target: error %d", c.err);
	cf_check_flags(&c, FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		       "fi_writedata target");
	/* fi_cq(3): FI_RMA goes with FI_REMOTE_WRITE; upstream tcp omits it. */
	cf_expect(c.flags & FI_RMA, "fi_writedata target: no FI_RMA flag");
	cf_assert(c.data == (0xc0ffee1234ULL & mask),
		  "fi_writedata target data 0x%llx",
		  (unsigned long long)c.data);
	/* The data is in place by the time the target sees the completion. */
	cf_check_fill(tm.p, 70000, 11, "fi_writedata");

	if (!inj) {
		cf_note("inject_size 0: inject writes not tested");
		goto out;
	}
	cf_fill(lm.p, inj, 12);
	cf_post(&f, fi_inject_write(f.ep[0].ep, lm.p, inj, f.ep[1].addr,
				    tm.raddr + 100, tm.key));
	memset(lm.p, 0, inj);
	wait_target(&f, tm.p + 100, inj, 12, "fi_inject_write");
	cf_fill(lm.p, inj, 13);
	cf_post(&f, fi_inject_writedata(f.ep[0].ep, lm.p, inj, 0x5151,
					f.ep[1].addr, tm.raddr + 200, tm.key));
	memset(lm.p, 0, inj);
	c = cf_wait(&f, 1);
	cf_assert(!c.err, "fi_inject_writedata target: error %d", c.err);
	cf_check_flags(&c, FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		       "fi_inject_writedata target");
	cf_expect(c.flags & FI_RMA, "fi_inject_writedata target: no FI_RMA");
	cf_assert(c.data == (0x5151 & mask), "fi_inject_writedata data 0x%llx",
		  (unsigned long long)c.data);
	cf_check_fill(tm.p + 200, inj, 13, "fi_inject_writedata");
	/* Injects complete nowhere at the initiator. */
	cf_expect_none(&f, 0, 100);
out:
	cf_expect_none(&f, 1, 20);
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	cf_close(&f);
	return 0;
}

/* fi_writev/fi_readv with several local iovecs, fi_writemsg/fi_readmsg. */
static int case_rma_iov(const char *prov)
{
	static const size_t seg[3] = {7, 5000, 70001};
	struct fi_context2 ctx;
	struct cf_mem lm[3], tm;
	struct iovec iov[3];
	void *desc[3];
	size_t n, i, total = 0, off;
	uint8_t *whole;
	struct cf_comp c;
	struct cf_fix f;

	rma_open(&f, prov, 0, 0);
	n = f.info->tx_attr->iov_limit < 3 ? f.info->tx_attr->iov_limit : 3;
	if (n < 2)
		cf_skip("tx iov_limit %zu", f.info->tx_attr->iov_limit);
	for (i = 0; i < n; i++)
		total += seg[i];
	whole = malloc(total);
	cf_mem_reg(&f, 1, &tm, total + 2000, rma_remote);
	for (i = 0; i < n; i++) {
		cf_mem_reg(&f, 0, &lm[i], seg[i], rma_local);
		iov[i] = (struct iovec){lm[i].p, seg[i]};
		desc[i] = lm[i].desc;
	}
	/* writev gathers the local pieces into one remote range. */
	cf_fill(whole, total, 21);
	for (i = 0, off = 0; i < n; off += seg[i], i++)
		memcpy(lm[i].p, whole + off, seg[i]);
	cf_post(&f, fi_writev(f.ep[0].ep, iov, desc, n, f.ep[1].addr,
			      tm.raddr + 5, tm.key, &ctx));
	c = cf_wait_ctx(&f, 0, &ctx);
	cf_assert(!c.err, "fi_writev: error %d (%s)", c.err,
		  fi_strerror(c.err));
	wait_target(&f, tm.p + 5, total, 21, "fi_writev");

	/* readv scatters the remote range into the local pieces. */
	cf_fill(tm.p + 5, total, 22);
	cf_fill(whole, total, 22);
	for (i = 0; i < n; i++)
		memset(lm[i].p, 0, seg[i]);
	cf_post(&f, fi_readv(f.ep[0].ep, iov, desc, n, f.ep[1].addr,
			     tm.raddr + 5, tm.key, &ctx));
	c = cf_wait_ctx(&f, 0, &ctx);
	cf_assert(!c.err, "fi_readv: error %d (%s)", c.err, fi_strerror(c.err));
	for (i = 0, off = 0; i < n; off += seg[i], i++)
		cf_assert(!memcmp(lm[i].p, whole + off, seg[i]),
			  "fi_readv: local iovec %zu holds wrong data", i);

	/* writemsg/readmsg with two remote segments when the provider allows.
	 */
	if (f.info->tx_attr->rma_iov_limit >= 2) {
		struct fi_rma_iov riov[2] = {
		    {tm.raddr, 7 + 5000, tm.key},
		    {tm.raddr + 6000, total - 5007, tm.key},
		};
		struct fi_msg_rma msg = {
		    .msg_iov = iov,
		    .desc = desc,
		    .iov_count = n,
		    .addr = f.ep[1].addr,
		    .rma_iov = riov,
		    .rma_iov_count = 2,
		    .context = &ctx,
		};

		memset(tm.p, 0, total + 2000);
		cf_fill(whole, total, 23);
		for (i = 0, off = 0; i < n; off += seg[i], i++)
			memcpy(lm[i].p, whole + off, seg[i]);
		cf_post(&f, fi_writemsg(f.ep[0].ep, &msg, FI_COMPLETION));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "fi_writemsg: error %d", c.err);
		wait_target(&f, tm.p, 5007, 23, "fi_writemsg segment 0");
		cf_fill(whole, total, 23);
		{
			uint64_t end = cf_now_ms() + CF_WAIT_MS;

			while (
			    memcmp(tm.p + 6000, whole + 5007, total - 5007)) {
				cf_assert(cf_now_ms() < end,
					  "fi_writemsg: "
					  "second remote segment holds wrong "
					  "data");
				cf_progress(&f);
			}
		}
		for (i = 0; i < n; i++)
			memset(lm[i].p, 0, seg[i]);
		cf_post(&f, fi_readmsg(f.ep[0].ep, &msg, FI_COMPLETION));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "fi_readmsg: error %d", c.err);
		for (i = 0, off = 0; i < n; off += seg[i], i++)
			cf_assert(!memcmp(lm[i].p, whole + off, seg[i]),
				  "fi_readmsg: local iovec %zu holds wrong "
				  "data",
				  i);
	} else {
		cf_note("rma_iov_limit %zu: two-segment writemsg not tested",
			f.info->tx_attr->rma_iov_limit);
	}
	cf_expect_none(&f, 0, 20);
	for (i = 0; i < n; i++)
		cf_mem_free(&lm[i]);
	cf_mem_free(&tm);
	free(whole);
	cf_close(&f);
	return 0;
}

/*
 * Only a write that completes at FI_DELIVERY_COMPLETE must have heard of
 * the target's verdict; earlier levels may complete before it.  Upstream
 * 1.17 shm never completes such a write with a bad key.  Returns the
 * post's result: a refused post (an error return) is a failure too.
 */
static ssize_t bad_write(struct cf_fix *f, struct cf_mem *lm, size_t len,
		      uint64_t raddr, uint64_t key, void *ctx)
{
	struct iovec iov = {lm->p, len};
	struct fi_rma_iov riov = {raddr, len, key};
	struct fi_msg_rma msg = {
	    .msg_iov = &iov,
	    .desc = &lm->desc,
	    .iov_count = 1,
	    .addr = f->ep[1].addr,
	    .rma_iov = &riov,
	    .rma_iov_count = 1,
	    .context = ctx,
	};

	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	ssize_t ret;

	cf_mark("fi_writemsg");
	while ((ret = fi_writemsg(f->ep[0].ep, &msg,
				  FI_COMPLETION | FI_DELIVERY_COMPLETE)) ==
	       -FI_EAGAIN) {
		cf_progress(f);
		cf_assert(cf_now_ms() < end, "fi_writemsg: -FI_EAGAIN for %d ms",
			  CF_WAIT_MS);
	}
	return ret;
}

/*
 * A write or read naming a key that was closed or never issued, a range
 * past the region (by one byte too), a range that wraps around 2^64, or a
 * region without FI_REMOTE_WRITE, completes in error at the initiator and
 * leaves the target memory alone.  The region is the first half of a larger buffer,
 * so a write past its end lands in memory this case owns and checks.
 */
static int case_rma_bad_key(const char *prov)
{
	struct fi_context2 ctx;
	struct cf_mem lm, tm, gone;
	struct fid_mr *half, *ronly;
	uint64_t bad, key, raddr;
	void *desc;
	struct cf_comp c;
	struct cf_fix f;
	int k, bad_bytes = 0;

	rma_open(&f, prov, 0, 0);
	cf_mem_reg(&f, 0, &lm, 4096, rma_local);
	cf_mem_reg(&f, 1, &tm, 8192, rma_remote);
	/* A second, 4 KiB registration of the same buffer is the target. */
	cf_ok(fi_mr_reg(f.domain, tm.p, 4096, rma_remote, 0, tm.key + 1000, 0,
			&half, NULL));
	if (f.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		cf_ok(fi_mr_bind(half, &f.ep[1].ep->fid, 0));
		cf_ok(fi_mr_enable(half));
	}
	desc = fi_mr_desc(half);
	(void)desc;
	key = fi_mr_key(half);
	raddr = tm.raddr;
	cf_mem_reg(&f, 1, &gone, 4096, rma_remote);
	/* A key that was valid once and no longer is. */
	bad = gone.key;
	cf_mem_close(&gone);
	memset(tm.p, 0x5a, 8192);
	cf_fill(lm.p, 4096, 3);
	/* The same memory registered for remote reads only. */
	cf_ok(fi_mr_reg(f.domain, tm.p, 4096, FI_REMOTE_READ, 0,
			tm.key + 2000, 0, &ronly, NULL));
	if (f.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		cf_ok(fi_mr_bind(ronly, &f.ep[1].ep->fid, 0));
		cf_ok(fi_mr_enable(ronly));
	}
	for (k = 0; k < 7; k++) {
		ssize_t ret = 0;
		const char *what = k == 0   ? "write with a closed MR's key"
				   : k == 1 ? "read with a closed MR's key"
				   : k == 2 ? "write past the region's end"
				   : k == 3 ? "write with a never-issued key"
				   : k == 4 ? "write one byte past the end"
				   : k == 5 ? "write whose range wraps 2^64"
					    : "write to a read-only region";

		if (k == 4)
			ret = bad_write(&f, &lm, 64, raddr + 4096 - 63, key,
					&ctx);
		else if (k == 5)
			ret = bad_write(&f, &lm, 64, UINT64_MAX - 31, key, &ctx);
		else if (k == 6)
			ret = bad_write(&f, &lm, 64, raddr, fi_mr_key(ronly),
					&ctx);
		else if (k == 1)
			cf_post(&f, fi_read(f.ep[0].ep, lm.p, 64, lm.desc,
					    f.ep[1].addr, raddr, bad, &ctx));
		else if (k == 2)
			ret = bad_write(&f, &lm, 4096, raddr + 4096 - 64, key,
					&ctx);
		else
			ret = bad_write(&f, &lm, 64, raddr,
					k ? bad ^ 0x5a5a0000beefULL : bad,
					&ctx);
		if (ret) {
			cf_note("%s: post %zd (%s)", what, ret,
				fi_strerror((int)-ret));
			continue;
		}
		c = cf_wait_ctx(&f, 0, &ctx);
		/* Upstream 1.17 shm and tcp complete some of these fine. */
		cf_expect(c.err, "%s completed without error", what);
		if (c.err)
			cf_note("%s: err %d (%s)", what, c.err,
				fi_strerror(c.err));
	}
	cf_expect_none(&f, 1, 50);
	for (k = 0; k < 8192; k++)
		if (tm.p[k] != 0x5a && !bad_bytes++)
			cf_expect(0,
				  "target byte %d changed by a rejected "
				  "write",
				  k);
	cf_expect(!bad_bytes, "%d target bytes changed by rejected writes",
		  bad_bytes);
	/* Whether the path survives an access error is not promised. */
	cf_post(&f, fi_write(f.ep[0].ep, lm.p, 4096, lm.desc, f.ep[1].addr,
			     raddr, key, &ctx));
	c = cf_wait_ctx(&f, 0, &ctx);
	if (c.err)
		cf_note("a good write after the bad ones failed: err %d (%s)",
			c.err, fi_strerror(c.err));
	else
		wait_target(&f, tm.p, 4096, 3, "good write after bad ones");
	cf_ok(fi_close(&half->fid));
	cf_ok(fi_close(&ronly->fid));
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	free(gone.p);
	cf_close(&f);
	return 0;
}

/*
 * FI_SELECTIVE_COMPLETION on RMA: fi_write without FI_COMPLETION leaves no
 * CQ entry but still counts in the write counter; fi_writemsg with
 * FI_COMPLETION gets its entry.
 */
static int case_rma_selective(const char *prov)
{
	struct cf_opts o = {
	    .caps = FI_RMA,
	    .cq_bind_flags = FI_SELECTIVE_COMPLETION,
	    .cntr_mask = 1 << CF_CNTR_WRITE,
	};
	struct fi_context2 ctx[3];
	struct cf_mem lm, tm;
	struct iovec iov;
	struct fi_rma_iov riov;
	struct fi_msg_rma msg = {
	    .msg_iov = &iov,
	    .iov_count = 1,
	    .rma_iov = &riov,
	    .rma_iov_count = 1,
	    .context = &ctx[2],
	};
	struct cf_comp c;
	struct cf_fix f;
	int i;

	cf_open(&f, prov, &o);
	cf_mem_reg(&f, 0, &lm, 3 * 1000, rma_local);
	cf_mem_reg(&f, 1, &tm, 3 * 1000, rma_remote);
	cf_fill(lm.p, 3 * 1000, 61);
	for (i = 0; i < 2; i++)
		cf_post(&f, fi_write(f.ep[0].ep, lm.p + i * 1000, 1000, lm.desc,
				     f.ep[1].addr, tm.raddr + i * 1000, tm.key,
				     &ctx[i]));
	iov = (struct iovec){lm.p + 2000, 1000};
	riov = (struct fi_rma_iov){tm.raddr + 2000, 1000, tm.key};
	msg.desc = &lm.desc;
	msg.addr = f.ep[1].addr;
	cf_post(&f, fi_writemsg(f.ep[0].ep, &msg, FI_COMPLETION));
	c = cf_wait(&f, 0);
	cf_assert(c.ctx == &ctx[2],
		  "completion for %s, want only the "
		  "fi_writemsg(FI_COMPLETION)",
		  c.ctx == &ctx[0] || c.ctx == &ctx[1]
		      ? "an fi_write without FI_COMPLETION"
		      : "an unknown context");
	cf_assert(!c.err, "fi_writemsg: error %d", c.err);
	cf_wait_cntr(&f, 0, CF_CNTR_WRITE, 3);
	wait_target(&f, tm.p, 3 * 1000, 61, "selective writes");
	cf_expect_none(&f, 0, 100);
	cf_assert(
	    fi_cntr_read(f.ep[0].cntr[CF_CNTR_WRITE]) == 3,
	    "write counter %llu, want 3",
	    (unsigned long long)fi_cntr_read(f.ep[0].cntr[CF_CNTR_WRITE]));
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	cf_close(&f);
	return 0;
}

/*
 * Counters count RMA operations: write and read counters at the initiator,
 * remote-write and remote-read counters at the target with FI_RMA_EVENT.
 */
static int case_rma_cntr(const char *prov)
{
	uint64_t mask = (1 << CF_CNTR_WRITE) | (1 << CF_CNTR_READ) |
			(1 << CF_CNTR_RWRITE) | (1 << CF_CNTR_RREAD);
	struct cf_opts probe = {.caps = FI_RMA | FI_RMA_EVENT};
	struct fi_context2 ctx[5];
	struct fi_info *fi;
	struct cf_mem lm, tm;
	bool event;
	struct cf_comp c;
	struct cf_fix f;
	int i, ret;

	fi = cf_getinfo(prov, &probe, &ret);
	event = !ret;
	fi_freeinfo(fi);
	if (!event)
		cf_note("no FI_RMA_EVENT: remote counters not tested");
	rma_open(&f, prov, event ? FI_RMA_EVENT : 0,
		 event
		     ? mask
		     : mask & ~((1 << CF_CNTR_RWRITE) | (1 << CF_CNTR_RREAD)));
	cf_mem_reg(&f, 0, &lm, 8192, rma_local);
	cf_mem_reg(&f, 1, &tm, 8192, rma_remote);
	cf_fill(lm.p, 8192, 1);
	for (i = 0; i < 3; i++)
		cf_post(&f, fi_write(f.ep[0].ep, lm.p + i * 100, 100, lm.desc,
				     f.ep[1].addr, tm.raddr + i * 100, tm.key,
				     &ctx[i]));
	for (i = 3; i < 5; i++)
		cf_post(&f, fi_read(f.ep[0].ep, lm.p + 4096, 1000, lm.desc,
				    f.ep[1].addr, tm.raddr, tm.key, &ctx[i]));
	for (i = 0; i < 5; i++) {
		c = cf_wait_ctx(&f, 0, &ctx[i]);
		cf_assert(!c.err, "RMA %d: error %d", i, c.err);
	}
	cf_wait_cntr(&f, 0, CF_CNTR_WRITE, 3);
	cf_wait_cntr(&f, 0, CF_CNTR_READ, 2);
	if (event) {
		cf_wait_cntr(&f, 1, CF_CNTR_RWRITE, 3);
		cf_wait_cntr(&f, 1, CF_CNTR_RREAD, 2);
	}
	/* Nothing counted twice or in the wrong counter. */
	cf_expect_none(&f, 0, 50);
	cf_assert(
	    fi_cntr_read(f.ep[0].cntr[CF_CNTR_WRITE]) == 3,
	    "write counter %llu, want 3",
	    (unsigned long long)fi_cntr_read(f.ep[0].cntr[CF_CNTR_WRITE]));
	cf_assert(fi_cntr_read(f.ep[0].cntr[CF_CNTR_READ]) == 2,
		  "read counter %llu, want 2",
		  (unsigned long long)fi_cntr_read(f.ep[0].cntr[CF_CNTR_READ]));
	if (event) {
		cf_assert(fi_cntr_read(f.ep[1].cntr[CF_CNTR_RWRITE]) == 3,
			  "remote write counter %llu, want 3",
			  (unsigned long long)fi_cntr_read(
			      f.ep[1].cntr[CF_CNTR_RWRITE]));
		cf_assert(fi_cntr_read(f.ep[1].cntr[CF_CNTR_RREAD]) == 2,
			  "remote read counter %llu, want 2",
			  (unsigned long long)fi_cntr_read(
			      f.ep[1].cntr[CF_CNTR_RREAD]));
	}
	cf_assert(
	    !fi_cntr_readerr(f.ep[0].cntr[CF_CNTR_WRITE]),
	    "write error counter %llu",
	    (unsigned long long)fi_cntr_readerr(f.ep[0].cntr[CF_CNTR_WRITE]));
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	cf_close(&f);
	return 0;
}

/*
 * Bad RMA against a registered buffer that sits between guard zones.  The
 * target maps five pages: an inaccessible page, a guard page, the 4 KiB
 * buffer, a guard page, an inaccessible page; guards and buffer carry a
 * known fill and only the buffer is registered (four times: remote read
 * and write, remote read only, remote write only, local access only).
 * A fetching atomic is tried on both one-sided registrations.  Every
 * illegal fi_write,
 * fi_read, fi_atomic, fi_fetch_atomic and fi_compare_atomic must fail:
 * an error return from the post or an error completion at the initiator
 * (any error code passes; a success completion fails), nothing at the
 * target's CQ, and guards and buffer byte-identical afterwards.  A
 * zero-length access at the buffer's end is legal and changes nothing.
 */
#define BA_PAGE 4096
#define BA_LEN 4096 /* the registered buffer */
#define BA_RMA 64   /* bytes of one RMA */
#define BA_AMO 8    /* FI_UINT8 elements of one atomic */

enum ba_op { BA_WRITE, BA_READ, BA_ATOMIC, BA_FETCH, BA_CSWAP, BA_NOPS };
enum ba_bad {
	BA_NEVER_KEY,
	BA_CLOSED_KEY,
	BA_NO_ACCESS,
	BA_NO_ACCESS2,
	BA_PAST_END,
	BA_BEFORE_START,
	BA_WRAP,
	BA_WRAP_MAX,
	BA_ZERO_AT_END, /* legal; every illegal one comes before */
	BA_NBAD,
};

static const char *const ba_op_name[BA_NOPS] = {
    "fi_write", "fi_read", "fi_atomic", "fi_fetch_atomic",
    "fi_compare_atomic",
};
static const char *const ba_bad_name[BA_NBAD] = {
    "never-issued key", "closed MR's key", "MR without the access",
    "MR without the other access (or any remote access)",
    "one byte past the end", "one byte before the start",
    "addr + len wraps", "addr UINT64_MAX", "zero length at the end",
};
/* The same, short, for the note that lists what each one got. */
static const char *const ba_bad_short[BA_NBAD] = {
    "never", "closed", "access", "access2", "past", "before", "wrap", "max",
    "zero",
};

struct ba_target {
	uint8_t *map; /* BA_PAGE * 5 */
	uint8_t *area; /* guard page, buffer, guard page */
	uint8_t *buf;
	uint8_t snap[3 * BA_PAGE];
	/* remote read+write, remote read only, remote write only, local only */
	struct fid_mr *mr[4];
	uint64_t key[4];
	uint64_t closed_key, never_key;
	uint64_t base; /* the buffer's first byte as a peer names it */
};

static bool ba_virt(const struct cf_fix *f)
{
	uint64_t mode = f->info->domain_attr->mr_mode;

	return mode == FI_MR_BASIC || (mode & FI_MR_VIRT_ADDR);
}

static struct fid_mr *ba_reg(struct cf_fix *f, void *p, uint64_t access,
			     uint64_t want_key)
{
	struct fid_mr *mr;

	cf_ok(fi_mr_reg(f->domain, p, BA_LEN, access, 0, want_key, 0, &mr,
			NULL));
	if (f->info->domain_attr->mr_mode & FI_MR_ENDPOINT &&
	    f->info->domain_attr->mr_mode != FI_MR_BASIC) {
		cf_ok(fi_mr_bind(mr, &f->ep[1].ep->fid, 0));
		cf_ok(fi_mr_enable(mr));
	}
	/* the local-only one may have no key (libfabric 2.2 on): a peer that
	 * names FI_KEY_NOTAVAIL is refused as for any key it cannot use */
	cf_assert(fi_mr_key(mr) != FI_KEY_NOTAVAIL ||
			  !(access & (FI_REMOTE_READ | FI_REMOTE_WRITE)),
		  "fi_mr_key: FI_KEY_NOTAVAIL");
	return mr;
}

static void ba_target_open(struct cf_fix *f, struct ba_target *t)
{
	static const uint64_t access[4] = {FI_REMOTE_READ | FI_REMOTE_WRITE,
					   FI_REMOTE_READ, FI_REMOTE_WRITE,
					   FI_READ | FI_WRITE};
	struct fid_mr *gone;
	uint8_t *other;
	int i;

	t->map = mmap(NULL, 5 * BA_PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cf_assert(t->map != MAP_FAILED, "mmap of the target area failed");
	cf_assert(!mprotect(t->map, BA_PAGE, PROT_NONE) &&
		      !mprotect(t->map + 4 * BA_PAGE, BA_PAGE, PROT_NONE),
		  "mprotect of the outer pages failed");
	t->area = t->map + BA_PAGE;
	t->buf = t->area + BA_PAGE;
	cf_fill(t->area, 3 * BA_PAGE, 71);
	for (i = 0; i < 4; i++) {
		t->mr[i] = ba_reg(f, t->buf, access[i], 0xba00 + i);
		t->key[i] = fi_mr_key(t->mr[i]);
	}
	/* A key that was issued, then closed with its registration. */
	other = malloc(BA_LEN);
	cf_assert(other, "malloc");
	gone = ba_reg(f, other, access[0], 0xba10);
	t->closed_key = fi_mr_key(gone);
	cf_ok(fi_close(&gone->fid));
	free(other);
	t->never_key = 0x5eedbad0c0ffee11ULL;
	for (i = 0; i < 4; i++)
		if (t->never_key == t->key[i] || t->never_key == t->closed_key)
			t->never_key ^= 0x100000000ULL << i;
	t->base = ba_virt(f) ? (uint64_t)(uintptr_t)t->buf : 0;
}

static void ba_target_close(struct ba_target *t)
{
	int i;

	for (i = 0; i < 4; i++)
		cf_ok(fi_close(&t->mr[i]->fid));
	munmap(t->map, 5 * BA_PAGE);
}

/* Post one operation, retrying -FI_EAGAIN; returns the post's result. */
static ssize_t ba_post(struct cf_fix *f, struct cf_mem *lm, enum ba_op op,
		       uint64_t addr, size_t n, uint64_t key, void *ctx)
{
	struct fid_ep *ep = f->ep[0].ep;
	fi_addr_t dst = f->ep[1].addr;
	uint8_t *res = lm->p + BA_PAGE, *cmp = lm->p + 2 * BA_PAGE;
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	ssize_t ret;

	cf_mark(ba_op_name[op]);
	do {
		switch (op) {
		case BA_WRITE:
			ret = fi_write(ep, lm->p, n, lm->desc, dst, addr, key,
				       ctx);
			break;
		case BA_READ:
			ret = fi_read(ep, lm->p, n, lm->desc, dst, addr, key,
				      ctx);
			break;
		case BA_ATOMIC:
			ret = fi_atomic(ep, lm->p, n, lm->desc, dst, addr, key,
					FI_UINT8, FI_SUM, ctx);
			break;
		case BA_FETCH:
			ret = fi_fetch_atomic(ep, lm->p, n, lm->desc, res,
					      lm->desc, dst, addr, key,
					      FI_UINT8, FI_SUM, ctx);
			break;
		default:
			ret = fi_compare_atomic(ep, lm->p, n, lm->desc, cmp,
						lm->desc, res, lm->desc, dst,
						addr, key, FI_UINT8, FI_CSWAP,
						ctx);
			break;
		}
		if (ret == -FI_EAGAIN)
			cf_progress(f);
	} while (ret == -FI_EAGAIN && cf_now_ms() < end);
	return ret;
}

/* A short name for the error codes a rejected access is likely to get. */
static const char *ba_err_name(int err)
{
	static char num[16];

	switch (err) {
	case 0:
		return "ok";
	case FI_ENOKEY:
		return "ENOKEY";
	case FI_EKEYREJECTED:
		return "EKEYREJECTED";
	case FI_EACCES:
		return "EACCES";
	case FI_EINVAL:
		return "EINVAL";
	case FI_EFAULT:
		return "EFAULT";
	case FI_EIO:
		return "EIO";
	default:
		snprintf(num, sizeof(num), "%d", err);
		return num;
	}
}

/* Run one (op, bad) pair; the outcome goes into note, e.g. "EINVAL".
 * Returns the error of its completion, 0 if none or the post failed. */
static int ba_one(struct cf_fix *f, struct ba_target *t, struct cf_mem *lm,
		   enum ba_op op, enum ba_bad bad, char *note, size_t notelen)
{
	bool rma = op == BA_WRITE || op == BA_READ;
	bool writes = op != BA_READ;
	size_t n = rma ? BA_RMA : BA_AMO;
	uint64_t key = t->key[0], addr = t->base;
	struct fi_context2 ctx;
	struct cf_comp c = {0};
	ssize_t ret;
	size_t j;

	switch (bad) {
	case BA_NEVER_KEY:
		key = t->never_key;
		break;
	case BA_CLOSED_KEY:
		key = t->closed_key;
		break;
	case BA_NO_ACCESS:
		/* A fetching atomic needs both; the read-only MR lacks one. */
		key = writes ? t->key[1] : t->key[2];
		break;
	case BA_NO_ACCESS2:
		/* ... and the write-only one the other; else no remote access */
		key = writes && op != BA_WRITE && op != BA_ATOMIC ? t->key[2]
								  : t->key[3];
		break;
	case BA_PAST_END:
		addr = t->base + BA_LEN - n + 1;
		break;
	case BA_BEFORE_START:
		addr = t->base - 1;
		break;
	case BA_WRAP:
		addr = UINT64_MAX - n / 2;
		break;
	case BA_WRAP_MAX:
		addr = UINT64_MAX;
		break;
	default:
		addr = t->base + BA_LEN;
		n = 0;
		break;
	}
	ret = ba_post(f, lm, op, addr, n, key, &ctx);
	if (bad == BA_ZERO_AT_END && !rma && ret) {
		/* fi_atomic(3) does not say whether count 0 is valid. */
		snprintf(note, notelen, "post -%s", ba_err_name((int)-ret));
	} else if (bad == BA_ZERO_AT_END) {
		cf_expect(!ret, "%s, %s: post returned %zd (%s)",
			  ba_op_name[op], ba_bad_name[bad], ret,
			  fi_strerror((int)-ret));
		if (!ret) {
			c = cf_wait_ctx(f, 0, &ctx);
			if (rma)
				cf_expect(!c.err, "%s, %s: err %d (%s)",
					  ba_op_name[op], ba_bad_name[bad],
					  c.err, fi_strerror(c.err));
			snprintf(note, notelen, "%s", ba_err_name(c.err));
		}
	} else if (ret) {
		cf_expect(ret != -FI_EAGAIN, "%s, %s: -FI_EAGAIN for %d ms",
			  ba_op_name[op], ba_bad_name[bad], CF_WAIT_MS);
		snprintf(note, notelen, "post -%s", ba_err_name((int)-ret));
		/* A refused post completes nothing. */
		cf_expect_none(f, 0, 10);
	} else {
		c = cf_wait_ctx(f, 0, &ctx);
		/* siw answers a read of a registration without
		 * FI_REMOTE_READ: the target's device does not check it.
		 * Noted; the target's memory is still checked below. */
		if (!c.err && op == BA_READ &&
		    (bad == BA_NO_ACCESS || bad == BA_NO_ACCESS2) &&
		    cf_iwarp(f))
			cf_note("%s, %s: completed successfully over iWARP",
				ba_op_name[op], ba_bad_name[bad]);
		else
			cf_expect(c.err, "%s, %s: completed successfully",
				  ba_op_name[op], ba_bad_name[bad]);
		snprintf(note, notelen, "%s",
			 c.err ? ba_err_name(c.err) : "SUCCESS");
	}
	/* No completion at the target, and not one byte changed there. */
	cf_expect_none(f, 1, 10);
	if (memcmp(t->area, t->snap, sizeof(t->snap))) {
		for (j = 0; j < sizeof(t->snap); j++)
			if (t->area[j] != t->snap[j])
				break;
		cf_expect(0, "%s, %s: target byte %ld (from the buffer's start) "
			     "changed",
			  ba_op_name[op], ba_bad_name[bad],
			  (long)j - BA_PAGE);
		memcpy(t->area, t->snap, sizeof(t->snap));
	}
	return c.err;
}

static void ba_run(const char *prov, uint64_t mr_mode, bool *virt_seen,
		   bool *offset_seen)
{
	struct cf_opts o = {.caps = FI_RMA | FI_ATOMIC, .mr_mode = mr_mode};
	struct fi_context2 ctx;
	struct ba_target t;
	struct cf_mem lm;
	struct cf_comp c;
	struct cf_fix f;
	struct fi_info *fi;
	char line[1024], note[BA_NOPS][BA_NBAD][48];
	size_t cnt;
	bool atomics = true;
	int op, bad, ret, len, nops;

	fi = cf_getinfo(prov, &o, &ret);
	if (ret) {
		o.caps = FI_RMA;
		atomics = false;
		fi = cf_getinfo(prov, &o, &ret);
	}
	if (ret) {
		if (!mr_mode)
			cf_skip("fi_getinfo %d for FI_RMA", ret);
		cf_note("mr_mode 0x%llx refused (%d): that addressing not "
			"tested",
			(unsigned long long)mr_mode, ret);
		return;
	}
	fi_freeinfo(fi);
	cf_open(&f, prov, &o);
	if (ba_virt(&f) ? *virt_seen : *offset_seen) {
		cf_close(&f);
		return;
	}
	*(ba_virt(&f) ? virt_seen : offset_seen) = true;
	if (atomics &&
	    (fi_atomicvalid(f.ep[0].ep, FI_UINT8, FI_SUM, &cnt) ||
	     fi_fetch_atomicvalid(f.ep[0].ep, FI_UINT8, FI_SUM, &cnt) ||
	     fi_compare_atomicvalid(f.ep[0].ep, FI_UINT8, FI_CSWAP, &cnt)))
		atomics = false;
	if (!atomics)
		cf_note("no FI_UINT8 FI_SUM/FI_CSWAP atomics: RMA only");
	cf_mem_reg(&f, 0, &lm, 3 * BA_PAGE, FI_READ | FI_WRITE);
	ba_target_open(&f, &t);
	cf_fill(lm.p, 3 * BA_PAGE, 72);

	/* The target is reachable: a good write lands where it should. */
	cf_post(&f, fi_write(f.ep[0].ep, lm.p, BA_RMA, lm.desc, f.ep[1].addr,
			     t.base + 100, t.key[0], &ctx));
	c = cf_wait_ctx(&f, 0, &ctx);
	cf_assert(!c.err, "a good write: err %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_fill(t.snap, sizeof(t.snap), 71);
	memcpy(t.snap + BA_PAGE + 100, lm.p, BA_RMA);
	wait_target(&f, t.area + BA_PAGE + 100, BA_RMA, 72, "a good write");
	cf_assert(!memcmp(t.area, t.snap, sizeof(t.snap)),
		  "a good write changed bytes outside its range");

	/*
	 * The legal zero-length accesses first: a provider may take its
	 * path to the target down after an access error (a verbs QP does).
	 */
	nops = atomics ? BA_NOPS : BA_ATOMIC;
	for (op = 0; op < nops; op++)
		ba_one(&f, &t, &lm, op, BA_ZERO_AT_END, note[op][BA_ZERO_AT_END],
		       sizeof(note[op][BA_ZERO_AT_END]));
	for (op = 0; op < nops; op++)
		for (bad = 0; bad < BA_ZERO_AT_END; bad++)
			ba_one(&f, &t, &lm, op, bad, note[op][bad],
			       sizeof(note[op][bad]));
	for (op = 0; op < nops; op++) {
		len = snprintf(line, sizeof(line), "%s %s:",
			       ba_virt(&f) ? "virtual addresses" : "offsets",
			       ba_op_name[op]);
		for (bad = 0; bad < BA_NBAD; bad++)
			len += snprintf(line + len, sizeof(line) - len,
					" %s=%s", ba_bad_short[bad],
					note[op][bad]);
		cf_note("%s", line);
	}
	/* Whether the path survives access errors is not promised. */
	cf_post(&f, fi_read(f.ep[0].ep, lm.p, BA_RMA, lm.desc, f.ep[1].addr,
			    t.base + 100, t.key[0], &ctx));
	c = cf_wait_ctx(&f, 0, &ctx);
	if (c.err)
		cf_note("a good read after the bad ones failed: err %d (%s)",
			c.err, fi_strerror(c.err));
	else
		cf_check_fill(lm.p, BA_RMA, 72, "a good read after bad ones");
	cf_expect_none(&f, 0, 10);
	cf_expect_none(&f, 1, 0);
	ba_target_close(&t);
	cf_mem_free(&lm);
	cf_close(&f);
}

/*
 * rma_bad_access over FI_EP_MSG endpoints, each access on a connection of
 * its own: an access error may end a connection (a verbs QP goes to the
 * error state; an iWARP target ends the stream), and a refused post on
 * it proves nothing of the next case.
 */
static void ba_msg_one(const char *prov, uint64_t caps, enum ba_op op,
		       enum ba_bad bad, char *note, size_t notelen)
{
	struct cf_fix *f = cf_msg_pair_open(prov, caps);
	struct ba_target t;
	struct cf_mem lm;
	size_t cnt;
	int err;

	if (op >= BA_ATOMIC &&
	    (fi_atomicvalid(f->ep[0].ep, FI_UINT8, FI_SUM, &cnt) ||
	     fi_fetch_atomicvalid(f->ep[0].ep, FI_UINT8, FI_SUM, &cnt) ||
	     fi_compare_atomicvalid(f->ep[0].ep, FI_UINT8, FI_CSWAP, &cnt))) {
		snprintf(note, notelen, "-");
		cf_msg_pair_close(f);
		return;
	}
	cf_mem_reg(f, 0, &lm, 3 * BA_PAGE, FI_READ | FI_WRITE);
	ba_target_open(f, &t);
	cf_fill(lm.p, 3 * BA_PAGE, 72);
	cf_fill(t.snap, sizeof(t.snap), 71);
	err = ba_one(f, &t, &lm, op, bad, note, notelen);
	/* The access's own error, not its connection's: on a connection of
	 * its own, nothing else could have broken it. */
	cf_expect(err != FI_ECONNRESET && err != FI_ECONNABORTED,
		  "%s, %s: error %d (%s): its connection ended", ba_op_name[op],
		  ba_bad_name[bad], err, fi_strerror(err));
	if (!strncmp(note, "post -", 6)) {
		/* A refused post did nothing: the connection still works. */
		struct fi_context2 ctx;
		struct cf_comp c;

		cf_post(f, fi_write(f->ep[0].ep, lm.p, BA_RMA, lm.desc, 0,
				    t.base, t.key[0], &ctx));
		c = cf_wait_ctx(f, 0, &ctx);
		cf_expect(!c.err,
			  "%s, %s refused at post; a good write then: "
			  "err %d (%s)",
			  ba_op_name[op], ba_bad_name[bad], c.err,
			  fi_strerror(c.err));
	}
	ba_target_close(&t);
	cf_mem_free(&lm);
	cf_msg_pair_close(f);
}

static int case_cm_rma_bad_access(const char *prov)
{
	struct cf_opts o = {.ep_type = FI_EP_MSG,
			    .caps = FI_MSG | FI_RMA | FI_ATOMIC};
	char line[1024], note[BA_NOPS][BA_NBAD][48];
	struct fi_info *fi;
	int op, bad, ret, len, nops = BA_NOPS;

	fi = cf_getinfo(prov, &o, &ret);
	if (ret) {
		o.caps = FI_MSG | FI_RMA;
		nops = BA_ATOMIC;
		fi = cf_getinfo(prov, &o, &ret);
	}
	if (ret)
		cf_skip("fi_getinfo %d for FI_EP_MSG with FI_RMA", ret);
	fi_freeinfo(fi);
	for (op = 0; op < nops; op++)
		for (bad = 0; bad < BA_NBAD; bad++)
			ba_msg_one(prov, o.caps, op, bad, note[op][bad],
				   sizeof(note[op][bad]));
	for (op = 0; op < nops; op++) {
		len = snprintf(line, sizeof(line), "%s:", ba_op_name[op]);
		for (bad = 0; bad < BA_NBAD; bad++)
			len += snprintf(line + len, sizeof(line) - len,
					" %s=%s", ba_bad_short[bad],
					note[op][bad]);
		cf_note("%s", line);
	}
	return 0;
}

/*
 * Both ways a peer names remote memory: offsets into the registration
 * (FI_MR_SCALABLE, mr_mode without FI_MR_VIRT_ADDR) and virtual addresses
 * (FI_MR_VIRT_ADDR, FI_MR_BASIC), whichever the provider offers.
 */
static int case_rma_bad_access(const char *prov)
{
	bool virt = false, offset = false;

	ba_run(prov, 0, &virt, &offset);
	ba_run(prov, FI_MR_BASIC, &virt, &offset);
	ba_run(prov, FI_MR_SCALABLE, &virt, &offset);
	if (!virt || !offset)
		cf_note("only %s addressing offered",
			virt ? "virtual-address" : "offset");
	return 0;
}

/*
 * The orders an endpoint claims for RMA and atomics (msg_order: RAW, WAR,
 * WAW, and 1.17's FI_ORDER_RMA_* / FI_ORDER_ATOMIC_*), as OpenSHMEM and MPI
 * one-sided rely on them: operations to one peer posted back to back,
 * with no wait between them, take effect in the order posted, up to the
 * max_order_*_size the endpoint reports.  A write then a read of the same
 * range reads what was written (RAW); a read then a write reads the old
 * data (WAR); two writes leave the second (WAW).  Atomics likewise on one
 * 64-bit word.
 */
static bool order_has(const struct cf_fix *f, uint64_t classic,
		      uint64_t specific)
{
	uint64_t o = f->info->tx_attr->msg_order;

	return (o & classic) || (o & specific);
}

static void order_rma(struct cf_fix *f, size_t len, bool raw, bool war,
		      bool waw)
{
	struct fi_context2 ctx[4];
	struct cf_mem a, b, r1, r2, tm;
	char what[80];
	int i;

	cf_mem_reg(f, 0, &a, len, rma_local);
	cf_mem_reg(f, 0, &b, len, rma_local);
	cf_mem_reg(f, 0, &r1, len, rma_local);
	cf_mem_reg(f, 0, &r2, len, rma_local);
	cf_mem_reg(f, 1, &tm, len, rma_remote);
	cf_fill(tm.p, len, 500);
	cf_fill(a.p, len, 501);
	cf_fill(b.p, len, 502);
	/* read old, write A, read, write B: all in flight at once */
	cf_post(f, fi_read(f->ep[0].ep, r1.p, len, r1.desc, f->ep[1].addr,
			   tm.raddr, tm.key, &ctx[0]));
	cf_post(f, fi_write(f->ep[0].ep, a.p, len, a.desc, f->ep[1].addr,
			    tm.raddr, tm.key, &ctx[1]));
	cf_post(f, fi_read(f->ep[0].ep, r2.p, len, r2.desc, f->ep[1].addr,
			   tm.raddr, tm.key, &ctx[2]));
	cf_post(f, fi_write(f->ep[0].ep, b.p, len, b.desc, f->ep[1].addr,
			    tm.raddr, tm.key, &ctx[3]));
	for (i = 0; i < 4; i++) {
		struct cf_comp c = cf_wait_ctx(f, 0, &ctx[i]);

		cf_assert(!c.err, "%zu B, op %d: error %d (%s)", len, i, c.err,
			  fi_strerror(c.err));
	}
	if (war) {
		snprintf(what, sizeof(what), "WAR, %zu B: first read", len);
		cf_check_fill(r1.p, len, 500, what);
	}
	if (raw) {
		snprintf(what, sizeof(what), "RAW, %zu B: read after write A",
			 len);
		cf_check_fill(r2.p, len, 501, what);
	}
	if (waw) {
		snprintf(what, sizeof(what), "WAW, %zu B: target after writes",
			 len);
		wait_target(f, tm.p, len, 502, what);
	}
	cf_mem_free(&a);
	cf_mem_free(&b);
	cf_mem_free(&r1);
	cf_mem_free(&r2);
	cf_mem_free(&tm);
}

static void order_atomic(struct cf_fix *f, bool raw, bool war, bool waw)
{
	enum { NADD = 16 };
	struct fi_context2 ctx[NADD + 4];
	struct cf_mem src, res, tm;
	uint64_t *one, *res64, *t;
	int i, n = 0;
	size_t count;

	if (fi_atomicvalid(f->ep[0].ep, FI_UINT64, FI_SUM, &count) ||
	    fi_fetch_atomicvalid(f->ep[0].ep, FI_UINT64, FI_ATOMIC_READ,
				 &count) ||
	    fi_atomicvalid(f->ep[0].ep, FI_UINT64, FI_ATOMIC_WRITE, &count)) {
		cf_note("64-bit sum, read or write is not offered: atomic "
			"order not tested");
		return;
	}
	cf_mem_reg(f, 0, &src, 2 * sizeof(uint64_t), rma_local);
	cf_mem_reg(f, 0, &res, 2 * sizeof(uint64_t), rma_local);
	cf_mem_reg(f, 1, &tm, sizeof(uint64_t), rma_remote);
	one = (uint64_t *)src.p;
	res64 = (uint64_t *)res.p;
	t = (uint64_t *)tm.p;
	one[0] = 1;
	one[1] = 1000;
	res64[0] = res64[1] = ~0ULL;
	*t = 0;
	for (i = 0; i < NADD; i++, n++)
		cf_post(f, fi_atomic(f->ep[0].ep, &one[0], 1, src.desc,
				     f->ep[1].addr, tm.raddr, tm.key,
				     FI_UINT64, FI_SUM, &ctx[n]));
	cf_post(f, fi_fetch_atomic(f->ep[0].ep, NULL, 1, NULL, &res64[0],
				   res.desc, f->ep[1].addr, tm.raddr, tm.key,
				   FI_UINT64, FI_ATOMIC_READ, &ctx[n++]));
	cf_post(f, fi_atomic(f->ep[0].ep, &one[1], 1, src.desc, f->ep[1].addr,
			     tm.raddr, tm.key, FI_UINT64, FI_ATOMIC_WRITE,
			     &ctx[n++]));
	cf_post(f, fi_fetch_atomic(f->ep[0].ep, NULL, 1, NULL, &res64[1],
				   res.desc, f->ep[1].addr, tm.raddr, tm.key,
				   FI_UINT64, FI_ATOMIC_READ, &ctx[n++]));
	for (i = 0; i < n; i++) {
		struct cf_comp c = cf_wait_ctx(f, 0, &ctx[i]);

		cf_assert(!c.err, "atomic %d: error %d (%s)", i, c.err,
			  fi_strerror(c.err));
	}
	/* The read after the sums sees all of them, and not the write
	 * posted after it. */
	if (raw)
		cf_assert(res64[0] == NADD,
			  "atomic RAW: read %llu after %d sums",
			  (unsigned long long)res64[0], NADD);
	if (war)
		cf_assert(res64[0] != 1000,
			  "atomic WAR: a read saw the write posted after it");
	if (raw || waw)
		cf_assert(res64[1] == 1000, "atomic RAW/WAW: read %llu after "
			  "the write of 1000",
			  (unsigned long long)res64[1]);
	cf_mem_free(&src);
	cf_mem_free(&res);
	cf_mem_free(&tm);
}

static int case_rma_order(const char *prov)
{
	static const size_t sizes[] = {8, 4096, 65537, 1 << 20};
	/* Orders are asked for, as MPICH asks: a provider may keep them
	 * only when asked (shm's RMA waits for earlier messages then). */
	static const uint64_t ask =
		FI_ORDER_RAW | FI_ORDER_WAR | FI_ORDER_WAW | FI_ORDER_RAR |
		FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAR | FI_ORDER_RMA_WAW |
		FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW;
	struct cf_opts o = {.caps = FI_RMA | FI_ATOMIC, .msg_order = ask};
	bool raw, war, waw, araw, awar, awaw;
	struct cf_fix f;
	size_t i, len;
	int ret;

	/* With atomics, then without; all orders, then what is claimed
	 * unasked. */
	for (i = 0; i < 4; i++) {
		o.caps = i & 1 ? FI_RMA : FI_RMA | FI_ATOMIC;
		o.msg_order = i & 2 ? 0 : ask;
		fi_freeinfo(cf_getinfo(prov, &o, &ret));
		if (!ret)
			break;
	}
	cf_open(&f, prov, &o);
	raw = order_has(&f, FI_ORDER_RAW, FI_ORDER_RMA_RAW);
	war = order_has(&f, FI_ORDER_WAR, FI_ORDER_RMA_WAR);
	waw = order_has(&f, FI_ORDER_WAW, FI_ORDER_RMA_WAW);
	araw = order_has(&f, FI_ORDER_RAW, FI_ORDER_ATOMIC_RAW);
	awar = order_has(&f, FI_ORDER_WAR, FI_ORDER_ATOMIC_WAR);
	awaw = order_has(&f, FI_ORDER_WAW, FI_ORDER_ATOMIC_WAW);
	if (!raw && !war && !waw && !araw && !awar && !awaw)
		cf_skip("no RMA or atomic order claimed");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		len = sizes[i];
		order_rma(&f, len,
			  raw && len <= f.info->ep_attr->max_order_raw_size,
			  war && len <= f.info->ep_attr->max_order_war_size,
			  waw && len <= f.info->ep_attr->max_order_waw_size);
	}
	if (f.info->caps & FI_ATOMIC)
		order_atomic(&f, araw && f.info->ep_attr->max_order_raw_size,
			     awar && f.info->ep_attr->max_order_war_size,
			     awaw && f.info->ep_attr->max_order_waw_size);
	cf_close(&f);
	return 0;
}

/* One write by fi_writemsg with flags, of len bytes at tm + off. */
static void pmem_write(struct cf_fix *f, struct cf_mem *lm, struct cf_mem *tm,
		       size_t off, size_t len, uint64_t flags,
		       unsigned int seed, const char *what)
{
	struct fi_context2 ctx;
	struct iovec iov = {lm->p, len};
	struct fi_rma_iov rma = {tm->raddr + off, len, tm->key};
	struct fi_msg_rma msg = {
	    .msg_iov = &iov,
	    .desc = &lm->desc,
	    .iov_count = 1,
	    .addr = f->ep[0].addr,
	    .rma_iov = &rma,
	    .rma_iov_count = 1,
	    .context = &ctx,
	};
	struct cf_comp c;

	cf_fill(lm->p, len, seed);
	cf_post(f, fi_writemsg(f->ep[0].ep, &msg, flags | FI_COMPLETION));
	if (flags & FI_INJECT)
		memset(lm->p, 0, len); /* the buffer is ours again */
	c = cf_wait_ctx(f, 0, &ctx);
	cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
		  fi_strerror(c.err));
	cf_check_flags(&c, FI_RMA | FI_WRITE, what);
	/* Committed (or delivered) when it completes: no waiting for it. */
	cf_check_fill(tm->p + off, len, seed, what);
	check_bytes(tm->p + off + len, 64, 0, what);
}

/*
 * FI_RMA_PMEM (fi_getinfo(3), fi_mr(3)): a registration made with the flag
 * takes writes and atomics with FI_COMMIT_COMPLETE (fi_cq(3)), which
 * complete once the target has made the result durable, so the data is
 * there when the initiator sees the completion; an inject write as well.
 * A region registered without the flag has nothing to make durable: the
 * same flag completes once the data is placed.  Without FI_RMA_PMEM in
 * the caps, FI_COMMIT_COMPLETE still completes, data placed.
 */
static int case_rma_pmem(const char *prov)
{
	struct cf_opts o = {.caps = FI_RMA | FI_ATOMIC | FI_RMA_PMEM};
	const size_t sizes[] = {1, 4096, 70001, 1 << 20};
	struct cf_fix f;
	struct cf_mem lm, tm, plain;
	struct fi_context2 ctx;
	struct cf_comp c;
	uint64_t *val, one = 5;
	char what[80];
	size_t i;

	cf_open(&f, prov, &o);
	cf_assert(f.info->caps & FI_RMA_PMEM, "caps without FI_RMA_PMEM");
	cf_mem_reg(&f, 0, &lm, 1 << 20, rma_local);
	cf_mem_reg_flags(&f, 1, &tm, (1 << 20) + 128, rma_remote,
			 FI_RMA_PMEM);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(tm.p, 0, tm.len);
		snprintf(what, sizeof(what),
			 "fi_writemsg FI_COMMIT_COMPLETE of %zu bytes to "
			 "FI_RMA_PMEM",
			 sizes[i]);
		pmem_write(&f, &lm, &tm, 3, sizes[i], FI_COMMIT_COMPLETE,
			   200 + (unsigned)i, what);
	}
	memset(tm.p, 0, tm.len);
	pmem_write(&f, &lm, &tm, 8, 64, FI_COMMIT_COMPLETE | FI_INJECT,
		   210, "inject write FI_COMMIT_COMPLETE to FI_RMA_PMEM");

	/* An atomic sum into the region, committed. */
	val = (uint64_t *)(void *)tm.p;
	*val = 37;
	{
		struct fi_ioc ioc = {&one, 1};
		struct fi_rma_ioc rioc = {tm.raddr, 1, tm.key};
		struct fi_msg_atomic am = {
		    .msg_iov = &ioc,
		    .desc = &lm.desc,
		    .iov_count = 1,
		    .addr = f.ep[0].addr,
		    .rma_iov = &rioc,
		    .rma_iov_count = 1,
		    .datatype = FI_UINT64,
		    .op = FI_SUM,
		    .context = &ctx,
		};

		cf_post(&f, fi_atomicmsg(f.ep[0].ep, &am,
					      FI_COMMIT_COMPLETE |
						      FI_COMPLETION));
		c = cf_wait_ctx(&f, 0, &ctx);
		cf_assert(!c.err, "atomic FI_COMMIT_COMPLETE: error %d (%s)",
			  c.err, fi_strerror(c.err));
		cf_assert(*val == 42,
			  "atomic FI_COMMIT_COMPLETE completed with the "
			  "target holding %llu, want 42",
			  (unsigned long long)*val);
	}

	/* A region without the flag: placed when it completes. */
	cf_mem_reg(&f, 1, &plain, 4096 + 128, rma_remote);
	pmem_write(&f, &lm, &plain, 0, 4096, FI_COMMIT_COMPLETE, 220,
		   "FI_COMMIT_COMPLETE to a region without FI_RMA_PMEM");
	cf_expect_none(&f, 1, 20);
	cf_mem_free(&plain);
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	cf_close(&f);

	/* No FI_RMA_PMEM asked: the flag still completes, data placed. */
	rma_open(&f, prov, 0, 0);
	cf_mem_reg(&f, 0, &lm, 70001, rma_local);
	cf_mem_reg(&f, 1, &tm, 70001 + 128, rma_remote);
	pmem_write(&f, &lm, &tm, 0, 70001, FI_COMMIT_COMPLETE, 230,
		   "FI_COMMIT_COMPLETE without FI_RMA_PMEM caps");
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	cf_close(&f);
	return 0;
}

const struct cf_case cf_cases_rma[] = {
    {"rma_pmem",
     "FI_RMA_PMEM registration; fi_writemsg (1 B to 1 MiB, inject) and "
     "fi_atomicmsg with FI_COMMIT_COMPLETE: data in place at completion; "
     "the flag without PMEM caps or registration",
     case_rma_pmem},
    {"rma_sizes",
     "fi_write/fi_read 1 B to 4 MiB at an unaligned offset, "
     "guard bytes",
     case_rma_sizes},
    {"rma_writedata",
     "fi_writedata and inject writes: remote CQ data at "
     "the target",
     case_rma_writedata},
    {"rma_iov",
     "fi_writev/fi_readv, fi_writemsg/fi_readmsg with two "
     "remote segments",
     case_rma_iov},
    {"rma_bad_key", "stale key and out-of-range RMA complete in error",
     case_rma_bad_key},
    {"rma_bad_access",
     "bad keys, access and ranges around guard zones: error, guards intact",
     case_rma_bad_access},
    {"cm_rma_bad_access",
     "FI_EP_MSG: rma_bad_access's illegal accesses, each on a new "
     "connection: error at the initiator, target memory unchanged",
     case_cm_rma_bad_access},
    {"rma_selective",
     "FI_SELECTIVE_COMPLETION on writes; the write counter counts all",
     case_rma_selective},
    {"rma_cntr",
     "write/read counters, remote counters with "
     "FI_RMA_EVENT",
     case_rma_cntr},
    {"rma_order",
     "RMA and atomics posted back to back take effect in order, as "
     "msg_order and max_order_*_size claim (RAW, WAR, WAW)",
     case_rma_order},
    {NULL},
};
