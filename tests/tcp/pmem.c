/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * That a commit flushes (FI_RMA_PMEM, FI_COMMIT_COMPLETE): two RDM
 * endpoints of one process, the second's memory registered twice, once
 * with FI_RMA_PMEM and once without.  In order:
 *
 *   1. fi_writemsg FI_COMMIT_COMPLETE, 70001 bytes into the PMEM region;
 *   2. fi_atomicmsg FI_COMMIT_COMPLETE, one uint64_t sum into it;
 *   3. fi_writemsg FI_COMMIT_COMPLETE, 4096 bytes into the plain region;
 *   4. fi_writemsg without it, 5000 bytes into the PMEM region.
 *
 * Each completes with its data in place.  pmem.sh runs this under
 * FI_LOG_LEVEL=debug and checks that the target flushed for 1 and 2
 * alone (its "commit: N bytes" lines), which no data check can see.
 * Usage: pmem [-p PROVIDER] (default tcp).  Exit 0 pass, 77 when the
 * provider offers no FI_RMA_PMEM, 1 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "tcp_fix.h"

#define LEN (1 << 17)

static struct fid_ep *ep[2];
static struct fid_cq *cq[2];
static fi_addr_t peer;
static uint64_t mr_mode;

static struct fid_mr *reg(struct fid_domain *d, void *p, size_t len,
			  uint64_t access, uint64_t flags, uint64_t key,
			  int owner, uint64_t *raddr)
{
	struct fid_mr *mr;

	CHECK(fi_mr_reg(d, p, len, access, 0, key, flags, &mr, NULL));
	if (mr_mode & FI_MR_ENDPOINT) {
		CHECK(fi_mr_bind(mr, &ep[owner]->fid, 0));
		CHECK(fi_mr_enable(mr));
	}
	*raddr = (mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)p : 0;
	return mr;
}

/* Until endpoint 0 completes ctx; endpoint 1's CQ is read for progress. */
static void wait_ctx(void *ctx, const char *what)
{
	time_t end = time(NULL) + 20;
	struct fi_cq_entry e;
	ssize_t n;

	while (time(NULL) < end) {
		(void)fi_cq_read(cq[1], &e, 1);
		n = fi_cq_read(cq[0], &e, 1);
		if (n == 1 && e.op_context == ctx)
			return;
		if (n == 1)
			FAIL("%s: a completion of another context", what);
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };

			fi_cq_readerr(cq[0], &ee, 0);
			FAIL("%s: error %d (%s)", what, ee.err,
			     fi_strerror(ee.err));
		}
	}
	FAIL("%s: no completion within 20 s", what);
}

static void write_one(void *src, void *desc, uint64_t raddr, uint64_t key,
		      size_t len, uint64_t flags, const char *what)
{
	struct fi_context2 ctx;
	struct iovec iov = { src, len };
	struct fi_rma_iov rma = { raddr, len, key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc,
				  .iov_count = 1, .addr = peer,
				  .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &ctx };

	fprintf(stderr, "step: %s\n", what);
	CHECK(fi_writemsg(ep[0], &msg, flags | FI_COMPLETION));
	wait_ctx(&ctx, what);
}

int main(int argc, char **argv)
{
	const char *prov = "tcp";
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_mr *lmr, *pmr, *qmr;
	uint64_t praddr, qraddr, lraddr, one = 5;
	uint8_t *src, *pm, *qm;
	struct fi_context2 ctx;
	char name[128];
	size_t namelen = sizeof(name), i;
	int opt, ret, k;

	while ((opt = getopt(argc, argv, "p:")) != -1)
		if (opt == 'p')
			prov = optarg;
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_RMA | FI_ATOMIC | FI_RMA_PMEM;
	hints->domain_attr->mr_mode =
		FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
		FI_MR_ENDPOINT | FI_MR_LOCAL;
	hints->fabric_attr->prov_name = strdup(prov);
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE,
			 hints, &info);
	if (ret == -FI_ENODATA) {
		fprintf(stderr, "%s: no RDM endpoint with FI_RMA_PMEM\n", prov);
		return 77;
	}
	CHECK(ret);
	mr_mode = info->domain_attr->mr_mode;
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	{
		struct fi_av_attr aa = { .type = FI_AV_TABLE };
		struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT };

		CHECK(fi_av_open(domain, &aa, &av, NULL));
		for (k = 0; k < 2; k++) {
			CHECK(fi_endpoint(domain, info, &ep[k], NULL));
			CHECK(fi_cq_open(domain, &ca, &cq[k], NULL));
			CHECK(fi_ep_bind(ep[k], &av->fid, 0));
			CHECK(fi_ep_bind(ep[k], &cq[k]->fid,
					 FI_TRANSMIT | FI_RECV));
			CHECK(fi_enable(ep[k]));
		}
	}
	CHECK(fi_getname(&ep[1]->fid, name, &namelen));
	if (fi_av_insert(av, name, 1, &peer, 0, NULL) != 1)
		FAIL("fi_av_insert");

	if (posix_memalign((void **)&src, 4096, LEN) ||
	    posix_memalign((void **)&pm, 4096, LEN) ||
	    posix_memalign((void **)&qm, 4096, LEN))
		FAIL("posix_memalign");
	memset(pm, 0, LEN);
	memset(qm, 0, LEN);
	lmr = reg(domain, src, LEN, FI_READ | FI_WRITE, 0, 1, 0, &lraddr);
	pmr = reg(domain, pm, LEN, FI_REMOTE_READ | FI_REMOTE_WRITE,
		  FI_RMA_PMEM, 2, 1, &praddr);
	qmr = reg(domain, qm, LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 3, 1,
		  &qraddr);

	for (i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 7 + 1);
	write_one(src, fi_mr_desc(lmr), praddr + 64, fi_mr_key(pmr), 70001,
		  FI_COMMIT_COMPLETE, "commit write 70001 to pmem");
	if (memcmp(pm + 64, src, 70001))
		FAIL("commit write: data differs at completion");

	fprintf(stderr, "step: commit atomic 8 to pmem\n");
	memcpy(pm, &(uint64_t){ 37 }, 8);
	{
		struct fi_ioc ioc = { &one, 1 };
		struct fi_rma_ioc rioc = { praddr, 1, fi_mr_key(pmr) };
		void *d = fi_mr_desc(lmr);
		struct fi_msg_atomic am = { .msg_iov = &ioc, .desc = &d,
					    .iov_count = 1, .addr = peer,
					    .rma_iov = &rioc,
					    .rma_iov_count = 1,
					    .datatype = FI_UINT64,
					    .op = FI_SUM, .context = &ctx };

		/* (the operand is not in registered memory: no FI_MR_LOCAL
		 * provider is asked for here) */
		CHECK(fi_atomicmsg(ep[0], &am,
				   FI_COMMIT_COMPLETE | FI_COMPLETION));
		wait_ctx(&ctx, "commit atomic");
	}
	if (*(uint64_t *)(void *)pm != 42)
		FAIL("commit atomic: target holds %llu, want 42",
		     (unsigned long long)*(uint64_t *)(void *)pm);

	write_one(src, fi_mr_desc(lmr), qraddr, fi_mr_key(qmr), 4096,
		  FI_COMMIT_COMPLETE, "commit write 4096 to plain");
	if (memcmp(qm, src, 4096))
		FAIL("commit write to plain memory: data differs");
	write_one(src, fi_mr_desc(lmr), praddr + 8192, fi_mr_key(pmr), 5000,
		  0, "plain write 5000 to pmem");
	fprintf(stderr, "step: end\n");

	CHECK(fi_close(&lmr->fid));
	CHECK(fi_close(&pmr->fid));
	CHECK(fi_close(&qmr->fid));
	for (k = 0; k < 2; k++) {
		CHECK(fi_close(&ep[k]->fid));
		CHECK(fi_close(&cq[k]->fid));
	}
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(src);
	free(pm);
	free(qm);
	return 0;
}
