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
 * 1.17 shm never completes such a write with a bad key.
 */
static void bad_write(struct cf_fix *f, struct cf_mem *lm, size_t len,
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

	cf_post(f, fi_writemsg(f->ep[0].ep, &msg,
			       FI_COMPLETION | FI_DELIVERY_COMPLETE));
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
		const char *what = k == 0   ? "write with a closed MR's key"
				   : k == 1 ? "read with a closed MR's key"
				   : k == 2 ? "write past the region's end"
				   : k == 3 ? "write with a never-issued key"
				   : k == 4 ? "write one byte past the end"
				   : k == 5 ? "write whose range wraps 2^64"
					    : "write to a read-only region";

		if (k == 4)
			bad_write(&f, &lm, 64, raddr + 4096 - 63, key, &ctx);
		else if (k == 5)
			bad_write(&f, &lm, 64, UINT64_MAX - 31, key, &ctx);
		else if (k == 6)
			bad_write(&f, &lm, 64, raddr, fi_mr_key(ronly), &ctx);
		else if (k == 1)
			cf_post(&f, fi_read(f.ep[0].ep, lm.p, 64, lm.desc,
					    f.ep[1].addr, raddr, bad, &ctx));
		else if (k == 2)
			bad_write(&f, &lm, 4096, raddr + 4096 - 64, key, &ctx);
		else
			bad_write(&f, &lm, 64, raddr,
				  k ? bad ^ 0x5a5a0000beefULL : bad, &ctx);
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

const struct cf_case cf_cases_rma[] = {
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
    {"rma_selective",
     "FI_SELECTIVE_COMPLETION on writes; the write counter counts all",
     case_rma_selective},
    {"rma_cntr",
     "write/read counters, remote counters with "
     "FI_RMA_EVENT",
     case_rma_cntr},
    {NULL},
};
