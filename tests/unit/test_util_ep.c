/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint base (weft/util_ep.h) under an owner of its own: binding
 * checks, FI_ENABLE, the op-flag controls, progress run from the CQ and
 * the counters, and the completion and counter reporting helpers.
 */
#include <criterion/criterion.h>

#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "weft/util_cntr.h"
#include "weft/util_cq.h"
#include "weft/util_domain.h"
#include "weft/util_ep.h"

static struct util_domain domain;
static struct fi_domain_attr domain_attr;

struct owner {
	struct util_ep base;
	int progress_calls;
	int enable_calls;
	int enable_ret;
};

static int owner_progress(struct util_ep *ep)
{
	container_of(ep, struct owner, base)->progress_calls++;
	return 0;
}

static int owner_enable(struct util_ep *ep)
{
	struct owner *o = container_of(ep, struct owner, base);

	o->enable_calls++;
	return o->enable_ret ? o->enable_ret : util_ep_enable_check(ep);
}

static const struct util_ep_ops owner_ops = {
	.progress = owner_progress,
	.enable = owner_enable,
};

static struct owner ep;
static struct util_cq *cq, *cq2;
static struct fid_cntr *cntr;

static void setup(void)
{
	struct fi_info dinfo = { .domain_attr = &domain_attr };
	struct fi_tx_attr tx_attr = { .op_flags = FI_COMPLETION };
	struct fi_rx_attr rx_attr = { .op_flags = 0 };
	struct fi_info info = {
		.caps = FI_MSG | FI_SEND | FI_RECV | FI_RMA,
		.tx_attr = &tx_attr,
		.rx_attr = &rx_attr,
		.domain_attr = &domain_attr,
	};
	struct fi_cq_attr cq_attr = { .size = 4, .format = FI_CQ_FORMAT_DATA };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };

	memset(&domain_attr, 0, sizeof(domain_attr));
	domain_attr.threading = FI_THREAD_DOMAIN;
	domain_attr.data_progress = FI_PROGRESS_MANUAL;
	cr_assert_eq(util_domain_init(&domain, NULL, &dinfo, NULL), 0);
	memset(&ep, 0, sizeof(ep));
	cr_assert_eq(util_ep_init(&ep.base, &domain, &info, &owner_ops, &ep),
		     0);
	cr_assert_eq(util_cq_open(&domain, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(util_cq_open(&domain, &cq_attr, &cq2, NULL), 0);
	cr_assert_eq(util_cntr_open(&domain, &cntr_attr, &cntr, NULL), 0);
}

static void teardown(void)
{
	util_ep_close(&ep.base);
	util_ep_fini(&ep.base);
	cr_assert_eq(fi_close(&cq->cq_fid.fid), 0);
	cr_assert_eq(fi_close(&cq2->cq_fid.fid), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(util_domain_fini(&domain), 0, "everything was closed");
}

TestSuite(util_ep, .init = setup, .fini = teardown);

static int bind(struct fid *fid, uint64_t flags)
{
	return util_ep_bind(&ep.base, fid, flags);
}

Test(util_ep, one_load_to_the_endpoint)
{
	cr_assert_eq(util_ep_of(&ep.base.ep_fid), &ep.base);
	cr_assert_eq(ep.base.ep_fid.fid.fclass, FI_CLASS_EP);
	cr_assert_eq(ep.base.ep_fid.fid.context, &ep);
}

Test(util_ep, bind_checks)
{
	cr_assert_eq(bind(&cq->cq_fid.fid, FI_TRANSMIT | FI_TAGGED),
		     -FI_EBADFLAGS);
	cr_assert_eq(bind(&cq->cq_fid.fid, FI_TRANSMIT), 0);
	cr_assert_eq(bind(&cq2->cq_fid.fid, FI_TRANSMIT), -FI_EALREADY);
	cr_assert_eq(bind(&cq2->cq_fid.fid, FI_RECV | FI_SELECTIVE_COMPLETION),
		     0);
	cr_assert(!ep.base.tx_selective);
	cr_assert(ep.base.rx_selective);
	cr_assert_eq(bind(&cntr->fid, 0), -FI_EBADFLAGS);
	cr_assert_eq(bind(&cntr->fid, FI_TAGGED), -FI_EBADFLAGS);
	cr_assert_eq(bind(&cntr->fid, FI_SEND | FI_READ), 0);
	cr_assert_eq(bind(&cntr->fid, FI_READ), -FI_EALREADY);
	cr_assert_eq(bind(&cntr->fid, FI_WRITE), 0);
	/* One progress hook per counter, whatever it counts. */
	cr_assert_eq(ep.base.cntr_hook[0].cntr, util_cntr_of(cntr));
	cr_assert_null(ep.base.cntr_hook[1].cntr);
	cr_assert_eq(bind(&domain.domain_fid.fid, 0), -FI_EINVAL);
	cr_assert_eq(util_ep_bind(&ep.base, NULL, 0), -FI_EINVAL);
	cr_assert_eq(util_ep_control(&ep.base, FI_ENABLE, NULL), 0);
	cr_assert_eq(bind(&cntr->fid, FI_RECV), -FI_EOPBADSTATE);
}

Test(util_ep, enable_needs_what_the_caps_use)
{
	cr_assert_eq(util_ep_control(&ep.base, FI_ENABLE, NULL), -FI_ENOCQ);
	cr_assert(!ep.base.enabled);
	cr_assert_eq(bind(&cntr->fid, FI_SEND), 0);
	cr_assert_eq(util_ep_control(&ep.base, FI_ENABLE, NULL), -FI_ENOCQ,
		     "FI_RECV needs a receive CQ or counter");
	cr_assert_eq(bind(&cntr->fid, FI_RECV), 0);
	ep.enable_ret = -FI_ENOEQ;
	cr_assert_eq(util_ep_control(&ep.base, FI_ENABLE, NULL), -FI_ENOEQ,
		     "the owner's enable decides");
	ep.enable_ret = 0;
	cr_assert_eq(util_ep_control(&ep.base, FI_ENABLE, NULL), 0);
	cr_assert(ep.base.enabled);
	cr_assert_eq(ep.enable_calls, 4);
}

Test(util_ep, ops_flags)
{
	uint64_t flags = FI_TRANSMIT;

	cr_assert_eq(util_ep_control(&ep.base, FI_GETOPSFLAG, &flags), 0);
	cr_assert_eq(flags, FI_COMPLETION);
	flags = FI_RECV | FI_COMPLETION | FI_MULTI_RECV;
	cr_assert_eq(util_ep_control(&ep.base, FI_SETOPSFLAG, &flags), 0);
	flags = FI_RECV;
	cr_assert_eq(util_ep_control(&ep.base, FI_GETOPSFLAG, &flags), 0);
	cr_assert_eq(flags, FI_COMPLETION | FI_MULTI_RECV);
	flags = 0;
	cr_assert_eq(util_ep_control(&ep.base, FI_GETOPSFLAG, &flags),
		     -FI_EINVAL);
	cr_assert_eq(util_ep_control(&ep.base, FI_GETOPSFLAG, NULL),
		     -FI_EINVAL);
	cr_assert_eq(util_ep_control(&ep.base, FI_BACKLOG, &flags),
		     -FI_ENOSYS);
}

Test(util_ep, progress_runs_from_cq_and_counter_once_enabled)
{
	struct fi_cq_data_entry e;

	cr_assert_eq(bind(&cq->cq_fid.fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(bind(&cntr->fid, FI_SEND), 0);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), -FI_EAGAIN);
	cr_assert_eq(ep.progress_calls, 0, "not before fi_enable");
	cr_assert_eq(util_ep_control(&ep.base, FI_ENABLE, NULL), 0);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), -FI_EAGAIN);
	cr_assert_eq(ep.progress_calls, 1, "one hook for a CQ bound twice");
	fi_cntr_read(cntr);
	cr_assert_eq(ep.progress_calls, 2);
}

Test(util_ep, tx_reporting)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_err_entry fail = {
		.op_context = (void *)0x2,
		.flags = FI_SEND | FI_MSG,
		.err = FI_EIO,
	};
	int i;

	/* No CQ: nothing to reserve, the operation is only counted. */
	cr_assert_eq(util_ep_cq_reserve(ep.base.tx_cq), 0);
	util_ep_cq_unreserve(ep.base.tx_cq);
	cr_assert_eq(bind(&cq->cq_fid.fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(bind(&cntr->fid, FI_SEND | FI_WRITE), 0);
	cr_assert_eq(util_ep_tx_cntr(&ep.base, UTIL_EP_TX_READ), NULL);
	cr_assert_eq(util_ep_tx_cntr(&ep.base, UTIL_EP_TX_WRITE),
		     util_cntr_of(cntr));
	for (i = 0; i < 4; i++)
		cr_assert_eq(util_ep_cq_reserve(ep.base.tx_cq), 0);
	cr_assert_eq(util_ep_cq_reserve(ep.base.tx_cq), -FI_EAGAIN,
		     "a full CQ refuses the post");
	util_ep_cq_unreserve(ep.base.tx_cq);

	util_ep_tx_success(&ep.base, true, (void *)0x1, FI_SEND | FI_MSG,
			   util_ep_tx_cntr(&ep.base, UTIL_EP_TX_SEND));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), 1);
	cr_assert_eq(e.op_context, (void *)0x1);
	cr_assert_eq(e.flags, FI_SEND | FI_MSG);
	cr_assert_eq(fi_cntr_read(cntr), 1);

	/* Reserved: the slot goes back, the error entry is written. */
	util_ep_tx_error(&ep.base, true, false, &fail,
			 util_ep_tx_cntr(&ep.base, UTIL_EP_TX_SEND));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.op_context, (void *)0x2);
	cr_assert_eq(err.err, FI_EIO);
	cr_assert_eq(fi_cntr_readerr(cntr), 1);

	/* Nothing to report (an inject): only the counter knows. */
	util_ep_tx_error(&ep.base, false, false, &fail, util_cntr_of(cntr));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), -FI_EAGAIN);
	cr_assert_eq(fi_cntr_readerr(cntr), 2);
	util_ep_cq_unreserve(ep.base.tx_cq); /* the last one reserved */
}

Test(util_ep, rx_reporting)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_err_entry unknown = {
		.op_context = (void *)0x4,
		.flags = FI_RECV | FI_MSG,
		.err = FI_EADDRNOTAVAIL,
	};
	char buf[8];

	cr_assert_eq(bind(&cq->cq_fid.fid, FI_RECV), 0);
	cr_assert_eq(bind(&cntr->fid, FI_RECV), 0);
	/* Unreserved and not wanted: counted only. */
	util_ep_rx_success(&ep.base, false, false, (void *)0x3,
			   FI_RECV | FI_MSG, 8, buf, 0, 0, FI_ADDR_NOTAVAIL,
			   ep.base.recv_cntr);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), -FI_EAGAIN);
	cr_assert_eq(fi_cntr_read(cntr), 1);
	util_ep_rx_success(&ep.base, false, true, (void *)0x3,
			   FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, 8, buf, 7, 0,
			   FI_ADDR_NOTAVAIL, ep.base.recv_cntr);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), 1);
	cr_assert_eq(e.len, 8);
	cr_assert_eq(e.buf, buf);
	cr_assert_eq(e.data, 7);
	cr_assert_eq(fi_cntr_read(cntr), 2);
	/* An unknown sender under FI_SOURCE_ERR: the message arrived. */
	util_ep_rx_error(&ep.base, false, true, &unknown, ep.base.recv_cntr);
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.err, FI_EADDRNOTAVAIL);
	cr_assert_eq(fi_cntr_read(cntr), 3);
	cr_assert_eq(fi_cntr_readerr(cntr), 0);
}
