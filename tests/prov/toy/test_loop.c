/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The "loop" provider (loop_prov.c, built into this program only) over the
 * public OFI API alone, as an application sees it: fi_getinfo by provider
 * name, fabric, domain, an AV holding two endpoints' names, tagged and
 * untagged messages with their data checked, FI_SOURCE, fi_cancel, a
 * truncated receive, FI_DELIVERY_COMPLETE, and senders held back by a full
 * inbound queue.  It proves that docs/ARCHITECTURE.md's recipe for adding a
 * provider makes one that works.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define VERSION FI_VERSION(1, 17)
#define CAPS (FI_MSG | FI_TAGGED | FI_SOURCE)
/* loop_prov.c: eager messages only, this large at most. */
#define LOOP_MAX_MSG 4096
/* Messages one inbound queue holds before senders wait. */
#define LOOP_QUEUE_MAX 64

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
/* ep[0] and ep[1] are in av as addr[0] and addr[1]. */
static struct fid_ep *ep[2];
static struct fid_cq *cq[2];
static fi_addr_t addr[2];

static struct fi_info *loop_hints(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	cr_assert_not_null(h);
	h->caps = caps;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("loop");
	cr_assert_not_null(h->fabric_attr->prov_name);
	return h;
}

static void ep_open(struct fid_av *on, struct fid_ep **e, struct fid_cq **c)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };

	cr_assert_eq(fi_endpoint(domain, info, e, NULL), 0);
	cr_assert_eq(fi_cq_open(domain, &cq_attr, c, NULL), 0);
	cr_assert_eq(fi_ep_bind(*e, &(*c)->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(*e, &on->fid, 0), 0);
	cr_assert_eq(fi_enable(*e), 0);
}

/* Insert e's name into `into`, as an application exchanging names does. */
static fi_addr_t av_add(struct fid_av *into, struct fid_ep *e)
{
	char name[64];
	size_t len = sizeof(name);
	fi_addr_t fa = FI_ADDR_NOTAVAIL;

	cr_assert_eq(fi_getname(&e->fid, name, &len), 0);
	/* FI_ADDR_STR: a string, its NUL counted. */
	cr_assert_eq(len, strlen(name) + 1);
	cr_assert_eq(strncmp(name, "fi_loop://", 10), 0, "%s", name);
	cr_assert_eq(fi_av_insert(into, name, 1, &fa, 0, NULL), 1);
	cr_assert_neq(fa, FI_ADDR_NOTAVAIL);
	return fa;
}

static void setup(void)
{
	struct fi_info *hints = loop_hints(CAPS);
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int i;

	cr_assert_eq(fi_getinfo(VERSION, NULL, NULL, 0, hints, &info), 0);
	fi_freeinfo(hints);
	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	cr_assert_eq(fi_av_open(domain, &av_attr, &av, NULL), 0);
	for (i = 0; i < 2; i++)
		ep_open(av, &ep[i], &cq[i]);
	for (i = 0; i < 2; i++)
		addr[i] = av_add(av, ep[i]);
}

static void teardown(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		cr_assert_eq(fi_close(&ep[i]->fid), 0);
		cr_assert_eq(fi_close(&cq[i]->fid), 0);
	}
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

TestSuite(loop, .init = setup, .fini = teardown);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One entry of c (reading it drives its endpoint), or what ended the wait:
 * -FI_EAVAIL for an error entry, -FI_EAGAIN after 5 s. */
static ssize_t wait_one(struct fid_cq *c, struct fi_cq_tagged_entry *e,
			fi_addr_t *src)
{
	double end = now() + 5;
	fi_addr_t ignored;
	ssize_t ret;

	do {
		ret = fi_cq_readfrom(c, e, 1, src ? src : &ignored);
	} while (ret == -FI_EAGAIN && now() < end);
	return ret;
}

static void wait_err(struct fid_cq *c, struct fi_cq_err_entry *err)
{
	struct fi_cq_tagged_entry e;

	cr_assert_eq(wait_one(c, &e, NULL), -FI_EAVAIL);
	memset(err, 0, sizeof(*err));
	cr_assert_eq(fi_cq_readerr(c, err, 0), 1);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

static void check(const uint8_t *buf, size_t len, unsigned seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		cr_assert_eq(buf[i], (uint8_t)(seed * 31 + i * 7 + 1),
			     "byte %zu of %zu", i, len);
}

/* ---- fi_getinfo -------------------------------------------------------- */

Test(loop, getinfo_by_name)
{
	struct fi_info *h = loop_hints(FI_MSG | FI_RMA), *got = NULL, *p;
	bool listed = false;

	cr_assert_str_eq(info->fabric_attr->prov_name, "loop");
	cr_assert_str_eq(info->fabric_attr->name, "loop");
	cr_assert_eq(info->ep_attr->type, FI_EP_RDM);
	cr_assert_neq(info->ep_attr->protocol, FI_PROTO_UNSPEC);
	cr_assert_eq(info->addr_format, FI_ADDR_STR);
	cr_assert_eq(info->ep_attr->max_msg_size, LOOP_MAX_MSG);
	cr_assert(info->caps & FI_SOURCE);

	/* What the candidate does not offer is refused. */
	cr_assert_eq(fi_getinfo(VERSION, NULL, NULL, 0, h, &got),
		     -FI_ENODATA);
	fi_freeinfo(h);

	/* WEFT_PROVIDER registered it: the core lists it by name. */
	cr_assert_eq(fi_getinfo(VERSION, NULL, NULL, FI_PROV_ATTR_ONLY, NULL,
				&got),
		     0);
	for (p = got; p; p = p->next)
		listed |= !strcmp(p->fabric_attr->prov_name, "loop");
	fi_freeinfo(got);
	cr_assert(listed);
}

/* fi_domain refuses what the provider's candidate does not name or offer. */
Test(loop, domain_refused)
{
	struct fi_info *other = fi_dupinfo(info);
	struct fid_domain *d = NULL;

	cr_assert_not_null(other);
	free(other->domain_attr->name);
	other->domain_attr->name = strdup("elsewhere");
	cr_assert_eq(fi_domain(fabric, other, &d, NULL), -FI_EINVAL);
	free(other->domain_attr->name);
	other->domain_attr->name = NULL;
	other->caps |= FI_RMA;
	cr_assert_eq(fi_domain(fabric, other, &d, NULL), -FI_ENODATA);
	fi_freeinfo(other);
}

/* ---- data ---------------------------------------------------------------- */

Test(loop, tagged_expected_and_unexpected)
{
	uint8_t sbuf[100], rbuf[100];
	struct fi_cq_tagged_entry e;
	int ctx, order;

	for (order = 0; order < 2; order++) {
		fill(sbuf, sizeof(sbuf), order);
		memset(rbuf, 0, sizeof(rbuf));
		/* order 0: the receive waits for the message; 1: the
		 * message waits, unexpected, for the receive. */
		if (order == 0)
			cr_assert_eq(fi_trecv(ep[1], rbuf, sizeof(rbuf), NULL,
					      addr[0], 0x1234, 0, &ctx),
				     0);
		cr_assert_eq(fi_tsend(ep[0], sbuf, 40, NULL, addr[1], 0x1234,
				      sbuf),
			     0);
		cr_assert_eq(wait_one(cq[0], &e, NULL), 1);
		cr_assert_eq(e.op_context, sbuf);
		cr_assert_eq(e.flags, FI_SEND | FI_TAGGED);
		if (order == 1) {
			/* Not this one: another tag. */
			cr_assert_eq(fi_trecv(ep[1], rbuf, sizeof(rbuf), NULL,
					      addr[0], 0x9999, 0, &order),
				     0);
			cr_assert_eq(fi_cq_read(cq[1], &e, 1), -FI_EAGAIN);
			cr_assert_eq(fi_trecv(ep[1], rbuf, sizeof(rbuf), NULL,
					      addr[0], 0x1234, 0, &ctx),
				     0);
		}
		cr_assert_eq(wait_one(cq[1], &e, NULL), 1);
		cr_assert_eq(e.op_context, &ctx);
		cr_assert_eq(e.flags, FI_RECV | FI_TAGGED);
		cr_assert_eq(e.len, 40);
		cr_assert_eq(e.tag, 0x1234);
		check(rbuf, 40, order);
		cr_assert_eq(rbuf[40], 0, "nothing past the message");
	}
	/* The receive of tag 0x9999 is still posted: end it. */
	cr_assert_eq(fi_cancel(&ep[1]->fid, &order), 0);
}

Test(loop, msg_source)
{
	static uint8_t sbuf[LOOP_MAX_MSG + 1], rbuf[LOOP_MAX_MSG];
	struct fi_cq_tagged_entry e;
	fi_addr_t src = 12345;
	int i;

	/* Both ways, up to the largest message. */
	for (i = 0; i < 2; i++) {
		fill(sbuf, LOOP_MAX_MSG, 10 + i);
		memset(rbuf, 0, sizeof(rbuf));
		cr_assert_eq(fi_recv(ep[1 - i], rbuf, sizeof(rbuf), NULL,
				     FI_ADDR_UNSPEC, rbuf),
			     0);
		cr_assert_eq(fi_send(ep[i], sbuf, LOOP_MAX_MSG, NULL,
				     addr[1 - i], sbuf),
			     0);
		cr_assert_eq(wait_one(cq[i], &e, NULL), 1);
		cr_assert_eq(e.flags, FI_SEND | FI_MSG);
		cr_assert_eq(wait_one(cq[1 - i], &e, &src), 1);
		cr_assert_eq(e.op_context, rbuf);
		cr_assert_eq(e.flags, FI_RECV | FI_MSG);
		cr_assert_eq(e.len, LOOP_MAX_MSG);
		cr_assert_eq(src, addr[i], "FI_SOURCE names the sender");
		check(rbuf, LOOP_MAX_MSG, 10 + i);
	}
	/* Past max_msg_size: refused at once (no rendezvous). */
	cr_assert_eq(fi_send(ep[0], sbuf, LOOP_MAX_MSG + 1, NULL, addr[1],
			     sbuf),
		     -FI_EMSGSIZE);
}

Test(loop, source_of_a_stranger)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_av *av2;
	struct fid_ep *stranger;
	struct fid_cq *scq;
	struct fi_cq_tagged_entry e;
	fi_addr_t to1, src = 0;
	char sbuf[8] = "hello", rbuf[8];

	/* An endpoint ep[1]'s AV does not hold. */
	cr_assert_eq(fi_av_open(domain, &av_attr, &av2, NULL), 0);
	ep_open(av2, &stranger, &scq);
	to1 = av_add(av2, ep[1]);
	cr_assert_eq(fi_recv(ep[1], rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     rbuf),
		     0);
	cr_assert_eq(fi_send(stranger, sbuf, sizeof(sbuf), NULL, to1, sbuf),
		     0);
	cr_assert_eq(wait_one(scq, &e, NULL), 1);
	cr_assert_eq(wait_one(cq[1], &e, &src), 1);
	cr_assert_eq(src, FI_ADDR_NOTAVAIL);
	cr_assert_str_eq(rbuf, "hello");
	cr_assert_eq(fi_close(&stranger->fid), 0);
	cr_assert_eq(fi_close(&scq->fid), 0);
	cr_assert_eq(fi_close(&av2->fid), 0);
}

/* ---- errors ------------------------------------------------------------- */

Test(loop, cancel)
{
	uint8_t sbuf[32], rbuf[32], rbuf2[32];
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	int ctx, ctx2, i;

	memset(rbuf, 0xee, sizeof(rbuf));
	cr_assert_eq(fi_recv(ep[1], rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     &ctx),
		     0);
	cr_assert_eq(fi_cancel(&ep[1]->fid, &ctx), 0);
	wait_err(cq[1], &err);
	cr_assert_eq(err.err, FI_ECANCELED);
	cr_assert_eq(err.op_context, &ctx);
	cr_assert(err.flags & FI_RECV);
	/* Canceling it again is harmless: no second entry. */
	i = (int)fi_cancel(&ep[1]->fid, &ctx);
	cr_assert(i == 0 || i == -FI_ENOENT, "second fi_cancel: %d", i);
	cr_assert_eq(fi_cq_read(cq[1], &e, 1), -FI_EAGAIN);

	/* The next message takes the next receive, not the canceled one. */
	fill(sbuf, sizeof(sbuf), 3);
	cr_assert_eq(fi_recv(ep[1], rbuf2, sizeof(rbuf2), NULL, FI_ADDR_UNSPEC,
			     &ctx2),
		     0);
	cr_assert_eq(fi_send(ep[0], sbuf, sizeof(sbuf), NULL, addr[1], sbuf),
		     0);
	cr_assert_eq(wait_one(cq[0], &e, NULL), 1);
	cr_assert_eq(wait_one(cq[1], &e, NULL), 1);
	cr_assert_eq(e.op_context, &ctx2);
	check(rbuf2, sizeof(rbuf2), 3);
	for (i = 0; i < (int)sizeof(rbuf); i++)
		cr_assert_eq(rbuf[i], 0xee, "canceled buffer untouched");
	cr_assert_eq(fi_cq_read(cq[1], &e, 1), -FI_EAGAIN);
}

Test(loop, truncation)
{
	uint8_t sbuf[100], rbuf[16 + 8];
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	int ctx, order;

	for (order = 0; order < 2; order++) {
		fill(sbuf, sizeof(sbuf), 20 + order);
		memset(rbuf, 0xee, sizeof(rbuf));
		if (order == 0)
			cr_assert_eq(fi_trecv(ep[1], rbuf, 16, NULL,
					      FI_ADDR_UNSPEC, 5, 0, &ctx),
				     0);
		cr_assert_eq(fi_tsend(ep[0], sbuf, sizeof(sbuf), NULL,
				      addr[1], 5, sbuf),
			     0);
		cr_assert_eq(wait_one(cq[0], &e, NULL), 1);
		if (order == 1)
			cr_assert_eq(fi_trecv(ep[1], rbuf, 16, NULL,
					      FI_ADDR_UNSPEC, 5, 0, &ctx),
				     0);
		wait_err(cq[1], &err);
		cr_assert_eq(err.err, FI_ETRUNC);
		cr_assert_eq(err.op_context, &ctx);
		cr_assert_eq(err.len, 16);
		cr_assert_eq(err.olen, sizeof(sbuf) - 16);
		cr_assert_eq(err.tag, 5);
		check(rbuf, 16, 20 + order);
		for (size_t i = 16; i < sizeof(rbuf); i++)
			cr_assert_eq(rbuf[i], 0xee, "byte %zu past the receive",
				     i);
	}
}

/* ---- the transport's other paths ---------------------------------------- */

/* FI_DELIVERY_COMPLETE: the send completes when the receiver's
 * acknowledgement comes back (the transport's ack op). */
Test(loop, delivery_complete)
{
	char sbuf[16] = "delivered", rbuf[16];
	struct iovec iov = { sbuf, sizeof(sbuf) };
	struct fi_msg msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.addr = addr[1],
		.context = sbuf,
	};
	struct fi_cq_tagged_entry e;
	int i;

	cr_assert_eq(fi_sendmsg(ep[0], &msg, FI_DELIVERY_COMPLETE |
						     FI_COMPLETION),
		     0);
	/* ep[1] has run nothing yet: no acknowledgement, no completion. */
	for (i = 0; i < 100; i++)
		cr_assert_eq(fi_cq_read(cq[0], &e, 1), -FI_EAGAIN);
	cr_assert_eq(fi_recv(ep[1], rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     rbuf),
		     0);
	cr_assert_eq(wait_one(cq[1], &e, NULL), 1);
	cr_assert_str_eq(rbuf, "delivered");
	cr_assert_eq(wait_one(cq[0], &e, NULL), 1);
	cr_assert_eq(e.op_context, sbuf);
}

/* More messages than the inbound queue holds: the engine keeps the rest
 * (the transport said -FI_EAGAIN) and hands them over, in order, as the
 * receiver makes room. */
Test(loop, queue_full)
{
	enum { N = LOOP_QUEUE_MAX + 36 };
	uint64_t sval[N], rval[N];
	struct fi_cq_tagged_entry e;
	int i, sent = 0, got = 0;
	double end;

	for (i = 0; i < N; i++) {
		sval[i] = 1000 + (uint64_t)i;
		cr_assert_eq(fi_tsend(ep[0], &sval[i], sizeof(sval[i]), NULL,
				      addr[1], 77, &sval[i]),
			     0, "send %d", i);
	}
	memset(rval, 0, sizeof(rval));
	for (i = 0; i < N; i++)
		cr_assert_eq(fi_trecv(ep[1], &rval[i], sizeof(rval[i]), NULL,
				      addr[0], 77, 0, &rval[i]),
			     0);
	end = now() + 5;
	while ((sent < N || got < N) && now() < end) {
		if (fi_cq_read(cq[0], &e, 1) == 1) {
			cr_assert_eq(e.op_context, &sval[sent]);
			sent++;
		}
		if (fi_cq_read(cq[1], &e, 1) == 1) {
			cr_assert_eq(e.op_context, &rval[got]);
			cr_assert_eq(rval[got], 1000 + (uint64_t)got,
				     "message %d in receive %d", got, got);
			got++;
		}
	}
	cr_assert_eq(sent, N);
	cr_assert_eq(got, N);
}
