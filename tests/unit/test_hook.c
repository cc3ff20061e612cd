/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hook layer (src/hook.c) over shm: what FI_HOOK wraps, what the
 * application holds, what reaches the provider, and the order of closes.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "weft/hook.h"

struct objs {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_eq *eq;
	struct fid_ep *ep;
	struct fid_mr *mr;
};

static char ctx_fabric, ctx_domain, ctx_av, ctx_cq, ctx_cntr, ctx_eq, ctx_ep,
	ctx_mr;
static char region[4096];

static struct fi_info *shm_info(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	cr_assert(hints);
	hints->fabric_attr->prov_name = strdup("shm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo over shm: %d", ret);
	return info;
}

/* Open one object of each kind an RDM endpoint uses. */
static void open_all(struct objs *o)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };

	memset(o, 0, sizeof(*o));
	o->info = shm_info();
	cr_assert_eq(fi_fabric(o->info->fabric_attr, &o->fabric, &ctx_fabric),
		     0);
	cr_assert_eq(fi_domain(o->fabric, o->info, &o->domain, &ctx_domain),
		     0);
	cr_assert_eq(fi_av_open(o->domain, &av_attr, &o->av, &ctx_av), 0);
	cr_assert_eq(fi_cq_open(o->domain, &cq_attr, &o->cq, &ctx_cq), 0);
	cr_assert_eq(fi_cntr_open(o->domain, &cntr_attr, &o->cntr, &ctx_cntr),
		     0);
	cr_assert_eq(fi_eq_open(o->fabric, &eq_attr, &o->eq, &ctx_eq), 0);
	cr_assert_eq(fi_endpoint(o->domain, o->info, &o->ep, &ctx_ep), 0);
	/* binds reach the provider with its own objects, or fail there */
	cr_assert_eq(fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(o->ep, &o->av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(o->ep, &o->cntr->fid, FI_SEND), 0);
	cr_assert_eq(fi_enable(o->ep), 0);
	cr_assert_eq(fi_mr_reg(o->domain, region, sizeof(region),
			       FI_SEND | FI_RECV, 0, 0, 0, &o->mr, &ctx_mr),
		     0);
}

static void close_all(struct objs *o)
{
	cr_assert_eq(fi_close(&o->mr->fid), 0);
	cr_assert_eq(fi_close(&o->ep->fid), 0);
	cr_assert_eq(fi_close(&o->eq->fid), 0);
	cr_assert_eq(fi_close(&o->cntr->fid), 0);
	cr_assert_eq(fi_close(&o->cq->fid), 0);
	cr_assert_eq(fi_close(&o->av->fid), 0);
	cr_assert_eq(fi_close(&o->domain->fid), 0);
	cr_assert_eq(fi_close(&o->fabric->fid), 0);
	fi_freeinfo(o->info);
}

static struct fid *all_fids(struct objs *o, size_t i)
{
	struct fid *f[] = { &o->fabric->fid, &o->domain->fid, &o->av->fid,
			    &o->cq->fid,     &o->cntr->fid,   &o->eq->fid,
			    &o->ep->fid,     &o->mr->fid };

	return i < sizeof(f) / sizeof(f[0]) ? f[i] : NULL;
}

Test(hook, unset_wraps_nothing)
{
	struct objs o;
	struct fid *f;
	size_t i;

	unsetenv("FI_HOOK");
	open_all(&o);
	for (i = 0; (f = all_fids(&o, i)); i++) {
		cr_assert(!weft_hook_is_wrapped(f), "object %zu wrapped", i);
		cr_assert_eq(weft_hook_inner(f), f);
	}
	close_all(&o);
}

Test(hook, unknown_name_wraps_nothing)
{
	struct objs o;

	setenv("FI_HOOK", "no_such_hook", 1);
	open_all(&o);
	cr_assert(!weft_hook_is_wrapped(&o.fabric->fid));
	cr_assert(!weft_hook_is_wrapped(&o.ep->fid));
	close_all(&o);
}

Test(hook, fids_are_the_hooks)
{
	void *ctxs[] = { &ctx_fabric, &ctx_domain, &ctx_av, &ctx_cq,
			 &ctx_cntr,   &ctx_eq,	   &ctx_ep, &ctx_mr };
	struct fid_mr *imr;
	struct objs o;
	struct fid *f;
	size_t i;

	setenv("FI_HOOK", "noop", 1);
	open_all(&o);
	for (i = 0; (f = all_fids(&o, i)); i++) {
		struct fid *in = weft_hook_inner(f);

		cr_assert(weft_hook_is_wrapped(f), "object %zu not wrapped", i);
		cr_assert_neq(in, f);
		cr_assert(!weft_hook_is_wrapped(in));
		cr_assert_eq(f->fclass, in->fclass);
		/* the application's context on both */
		cr_assert_eq(f->context, ctxs[i], "object %zu: context", i);
		cr_assert_eq(in->context, ctxs[i]);
	}
	cr_assert_eq(o.fabric->api_version,
		     ((struct fid_fabric *)(void *)weft_hook_inner(
			      &o.fabric->fid))
			     ->api_version);
	imr = (struct fid_mr *)(void *)weft_hook_inner(&o.mr->fid);
	cr_assert_eq(fi_mr_desc(o.mr), fi_mr_desc(imr));
	cr_assert_eq(fi_mr_key(o.mr), fi_mr_key(imr));
	close_all(&o);
}

Test(hook, ops_open_passes_through)
{
	struct objs o;
	void *ops = NULL;
	struct fid *in;
	int ret;

	setenv("FI_HOOK", "perf", 1);
	open_all(&o);
	in = weft_hook_inner(&o.domain->fid);
	ret = fi_open_ops(in, "weft_no_such_ops", 0, &ops, NULL);
	cr_assert_eq(fi_open_ops(&o.domain->fid, "weft_no_such_ops", 0, &ops,
				 NULL),
		     ret);
	in = weft_hook_inner(&o.ep->fid);
	ret = fi_open_ops(in, "weft_no_such_ops", 0, &ops, NULL);
	cr_assert_eq(fi_open_ops(&o.ep->fid, "weft_no_such_ops", 0, &ops,
				 NULL),
		     ret);
	close_all(&o);
}

/* An event naming the provider's endpoint is read naming the hook's. */
Test(hook, eq_reports_the_applications_fids)
{
	struct fi_eq_entry in = { 0 }, out = { 0 };
	struct objs o;
	uint32_t event;
	static struct fid stranger;

	setenv("FI_HOOK", "trace", 1);
	open_all(&o);
	in.fid = weft_hook_inner(&o.ep->fid);
	in.context = &ctx_ep;
	cr_assert_eq(fi_eq_write(o.eq, FI_NOTIFY, &in, sizeof(in), 0),
		     (ssize_t)sizeof(in));
	cr_assert_eq(fi_eq_read(o.eq, &event, &out, sizeof(out), 0),
		     (ssize_t)sizeof(out));
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_eq(out.fid, &o.ep->fid);
	cr_assert_eq(out.context, &ctx_ep);
	/* a fid the layer does not know stays as it was */
	in.fid = &stranger;
	cr_assert_eq(fi_eq_write(o.eq, FI_NOTIFY, &in, sizeof(in), 0),
		     (ssize_t)sizeof(in));
	cr_assert_eq(fi_eq_read(o.eq, &event, &out, sizeof(out), 0),
		     (ssize_t)sizeof(out));
	cr_assert_eq(out.fid, &stranger);
	close_all(&o);
}

/*
 * The provider refuses to close a domain under its endpoint: the hook's
 * domain stays whole and usable, and closes after the endpoint.  Closing
 * children after their parent (an MR after its domain would be refused
 * too) frees nothing early.
 */
Test(hook, close_order)
{
	struct fid *ep_in;
	char name[256];
	size_t len = sizeof(name);
	struct objs o;
	int ret;

	setenv("FI_HOOK", "perf,debug", 1);
	open_all(&o);
	ep_in = weft_hook_inner(&o.ep->fid);
	ret = fi_close(&o.domain->fid);
	cr_assert_eq(ret, -FI_EBUSY, "fi_close(domain) under an ep: %d", ret);
	cr_assert(weft_hook_is_wrapped(&o.domain->fid));
	ret = fi_close(&o.fabric->fid);
	cr_assert_eq(ret, -FI_EBUSY, "fi_close(fabric) under a domain: %d",
		     ret);
	cr_assert_eq(fi_getname(&o.ep->fid, name, &len), 0);
	cr_assert_eq(weft_hook_inner(&o.ep->fid), ep_in);
	close_all(&o);
}

/* Poll sets and fi_trywait get the provider's objects. */
Test(hook, poll_and_trywait_unwrap)
{
	struct fi_poll_attr pattr = { 0 };
	struct fi_cq_attr wattr = { .format = FI_CQ_FORMAT_CONTEXT,
				    .wait_obj = FI_WAIT_FD };
	struct fid_cq *wcq;
	struct fid_poll *poll;
	struct fid *fids[1];
	struct objs o;
	void *ctx[2];
	int ret;

	setenv("FI_HOOK", "noop", 1);
	open_all(&o);
	ret = fi_poll_open(o.domain, &pattr, &poll);
	if (ret == -FI_ENOSYS) {
		close_all(&o);
		cr_skip_test("no poll sets");
	}
	cr_assert_eq(ret, 0);
	cr_assert(weft_hook_is_wrapped(&poll->fid));
	cr_assert_eq(fi_poll_add(poll, &o.cq->fid, 0), 0);
	cr_assert_eq(fi_poll(poll, ctx, 2), 0);
	cr_assert_eq(fi_poll_del(poll, &o.cq->fid, 0), 0);
	cr_assert_eq(fi_close(&poll->fid), 0);
	/* a CQ with a wait object, which fi_trywait is about */
	ret = fi_cq_open(o.domain, &wattr, &wcq, NULL);
	if (ret) {
		close_all(&o);
		cr_skip_test("no FI_WAIT_FD CQ: %d", ret);
	}
	fids[0] = &wcq->fid;
	ret = fi_trywait(o.fabric, fids, 1);
	/* the provider's answer for its own CQ, not a refusal of a fid it
	 * does not know */
	cr_assert(ret == 0 || ret == -FI_EAGAIN, "fi_trywait: %d", ret);
	cr_assert_eq(fi_close(&wcq->fid), 0);
	close_all(&o);
}
