/* SPDX-License-Identifier: BSD-2-Clause */
/* Poll sets (prov/util/util_poll.c). */
#include <criterion/criterion.h>

#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_domain.h"
#include "weft/util_poll.h"

static struct util_domain domain;
static struct fi_domain_attr domain_attr;
static struct fi_info info;

static void setup(void)
{
	memset(&info, 0, sizeof(info));
	memset(&domain_attr, 0, sizeof(domain_attr));
	domain_attr.threading = FI_THREAD_SAFE;
	info.domain_attr = &domain_attr;
	cr_assert_eq(util_domain_init(&domain, NULL, &info, NULL), 0);
}

static void teardown(void)
{
	cr_assert_eq(util_domain_fini(&domain), 0, "everything was closed");
}

TestSuite(poll, .init = setup, .fini = teardown);

static struct util_cq *open_cq(void *context)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 8};
	struct util_cq *cq;

	cr_assert_eq(util_cq_open(&domain, &attr, &cq, context), 0);
	return cq;
}

struct fake_ep {
	struct util_progress progress;
	struct util_cq *cq;
	int pending;
};

static void fake_ep_progress(struct util_progress *p)
{
	struct fake_ep *ep = container_of(p, struct fake_ep, progress);

	for (; ep->pending; ep->pending--)
		util_cq_write(ep->cq, NULL, FI_SEND, 0, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
}

Test(poll, reports_cqs_with_events)
{
	int ctx_a, ctx_b;
	struct util_cq *a = open_cq(&ctx_a), *b = open_cq(&ctx_b);
	struct fid_poll *ps;
	struct fi_cq_entry e;
	void *ctx[4];

	cr_assert_eq(util_poll_open(&domain.domain_fid, NULL, &ps), 0);
	cr_assert_eq(fi_poll_add(ps, &a->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_poll_add(ps, &b->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_poll_add(ps, &a->cq_fid.fid, 0), -FI_EALREADY);
	cr_assert_eq(fi_poll_add(ps, &ps->fid, 0), -FI_EINVAL);
	cr_assert_eq(fi_poll(ps, ctx, 4), 0, "nothing yet");

	util_cq_write(b, NULL, 0, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_poll(ps, ctx, 4), 1);
	cr_assert_eq(ctx[0], &ctx_b);
	cr_assert_eq(fi_poll(ps, ctx, 4), 1, "still not empty");

	util_cq_write(a, NULL, 0, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_poll(ps, ctx, 4), 2);
	cr_assert_eq(ctx[0], &ctx_a);
	cr_assert_eq(ctx[1], &ctx_b);
	cr_assert_eq(fi_poll(ps, ctx, 1), 1, "limited by count");

	cr_assert_eq(fi_cq_read(&b->cq_fid, &e, 1), 1);
	cr_assert_eq(fi_poll(ps, ctx, 4), 1);
	cr_assert_eq(ctx[0], &ctx_a);

	cr_assert_eq(fi_close(&a->cq_fid.fid), -FI_EBUSY, "held by the set");
	cr_assert_eq(fi_close(&ps->fid), -FI_EBUSY, "set has members");
	cr_assert_eq(fi_poll_del(ps, &a->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_poll_del(ps, &a->cq_fid.fid, 0), -FI_ENOENT);
	cr_assert_eq(fi_poll(ps, ctx, 4), 0, "a is no longer polled");
	cr_assert_eq(fi_poll_del(ps, &b->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_close(&a->cq_fid.fid), 0);
	cr_assert_eq(fi_close(&b->cq_fid.fid), 0);
	cr_assert_eq(fi_close(&ps->fid), 0);
}

Test(poll, drives_progress)
{
	int ctx_a;
	struct util_cq *a = open_cq(&ctx_a);
	struct fake_ep ep = {.cq = a};
	struct fid_poll *ps;
	void *ctx[2];

	ep.progress.progress = fake_ep_progress;
	util_cq_bind(a, &ep.progress);
	cr_assert_eq(util_poll_open(&domain.domain_fid, NULL, &ps), 0);
	cr_assert_eq(fi_poll_add(ps, &a->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_poll(ps, ctx, 2), 0);
	ep.pending = 2;
	cr_assert_eq(fi_poll(ps, ctx, 2), 1, "fi_poll progressed the CQ");
	cr_assert_eq(ep.pending, 0);
	cr_assert_eq(ctx[0], &ctx_a);
	cr_assert_eq(fi_poll_del(ps, &a->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_close(&ps->fid), 0);
	util_cq_unbind(a, &ep.progress);
	cr_assert_eq(fi_close(&a->cq_fid.fid), 0);
}

/* Poll sets are gone from API 2.0: refused in a domain of a fabric
 * opened for 2.x. */
Test(poll, gone_from_api_2_0)
{
	struct fi_fabric_attr fattr = {.api_version = FI_VERSION(2, 6)};
	struct util_fabric fabric;
	struct util_domain dom2;
	struct fid_poll *ps;

	cr_assert_eq(util_fabric_init(&fabric, &weft_core_prov, &fattr, NULL),
		     0);
	cr_assert_eq(util_domain_init(&dom2, &fabric, &info, NULL), 0);
	cr_assert_eq(util_poll_open(&dom2.domain_fid, NULL, &ps), -FI_ENOSYS);
	cr_assert_eq(util_domain_fini(&dom2), 0);
	cr_assert_eq(util_fabric_fini(&fabric), 0);
}

Test(poll, open_checks)
{
	struct fi_poll_attr attr = {.flags = 1};
	struct fid_poll *ps;

	cr_assert_eq(util_poll_open(&domain.domain_fid, &attr, &ps),
		     -FI_EINVAL);
	attr.flags = 0;
	cr_assert_eq(util_poll_open(&domain.domain_fid, &attr, &ps), 0);
	cr_assert_eq(util_domain_fini(&domain), -FI_EBUSY,
		     "the set holds the domain");
	cr_assert_eq(fi_close(&ps->fid), 0);
}

Test(poll, counters_report_changes)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP};
	int ctx_c, ctx_q;
	struct util_cq *cq = open_cq(&ctx_q);
	struct fid_cntr *cntr;
	struct fid_poll *ps;
	void *ctx[4];

	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, &ctx_c), 0);
	cr_assert_eq(util_poll_open(&domain.domain_fid, NULL, &ps), 0);
	cr_assert_eq(fi_poll_add(ps, &cntr->fid, 0), 0);
	cr_assert_eq(fi_poll_add(ps, &cq->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_poll(ps, ctx, 4), 0);

	util_cntr_inc(util_cntr_of(cntr));
	cr_assert_eq(fi_poll(ps, ctx, 4), 1);
	cr_assert_eq(ctx[0], &ctx_c);
	cr_assert_eq(fi_poll(ps, ctx, 4), 0, "reported once per change");
	util_cntr_inc_err(util_cntr_of(cntr));
	util_cq_write(cq, NULL, 0, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_poll(ps, ctx, 4), 2);
	cr_assert_eq(ctx[0], &ctx_c);
	cr_assert_eq(ctx[1], &ctx_q);

	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY, "held by the set");
	cr_assert_eq(fi_poll_del(ps, &cntr->fid, 0), 0);
	cr_assert_eq(fi_poll_del(ps, &cq->cq_fid.fid, 0), 0);
	cr_assert_eq(fi_close(&ps->fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&cq->cq_fid.fid), 0);
}
