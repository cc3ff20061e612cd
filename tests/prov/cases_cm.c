/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Conformance cases for connected endpoints (FI_EP_MSG) and connection
 * management (fi_cm(3), fi_eq(3)): connect and accept with private data,
 * reject, a peer that shuts down or closes, a connection refused by a
 * closed port, a peer that never answers, and RMA over a connection.
 *
 * Both sides live in this process and talk over loopback: endpoint 0 of
 * the fixture connects, endpoint 1 is the one accepted from the passive
 * endpoint.  Each side has its own EQ and CQ.  Events of both EQs are
 * harvested together, as completions are, so neither side waits for a
 * step that needs the other side's progress; every wait is bounded.
 *
 * A provider without FI_EP_MSG skips every case here.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <signal.h>
#include <sys/wait.h>

#include "conformance.h"
#include "proc.h"

#define CM_CLIENT 0
#define CM_SERVER 1
/* One connection step on loopback: connect, accept, reject, refusal. */
#define CM_EVENT_MS 5000
/* fi_close or fi_shutdown of an endpoint, whatever state it is in. */
#define CM_CLOSE_MS 2000
/* How long a connection attempt nobody answers is left pending. */
#define CM_NO_ANSWER_MS 2000
/* Private data this suite sends with a request, an accept, a reject. */
#define CM_CONN_LEN 40
#define CM_ACCEPT_LEN 32
#define CM_REJECT_LEN 24
#define CM_DATA_MAX 256
#define CM_QLEN 8
#define GUARD 64
#define GUARD_BYTE 0xa5

/* One EQ event, or an error entry (ret -FI_EAVAIL) with its err_data. */
struct cm_ev {
	ssize_t ret;
	uint32_t event;
	uint64_t raw[(sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX) / 8 + 1];
	struct fi_eq_err_entry err;
	uint8_t err_data[CM_DATA_MAX];
};

struct cm_fix {
	struct cf_fix f; /* ep[0] connects, ep[1] is accepted */
	struct fid_eq *eq[2];
	struct fid_pep *pep;
	uint8_t pname[CF_MAX_NAME];
	size_t pnamelen;
	struct cm_ev q[2][CM_QLEN]; /* events read, not yet claimed */
	int nq[2];
};

static struct fi_eq_cm_entry *cm_entry(struct cm_ev *ev)
{
	return (struct fi_eq_cm_entry *)ev->raw;
}

/* Bytes of private data after the entry of an FI_CONNREQ or FI_CONNECTED. */
static size_t cm_data_len(const struct cm_ev *ev)
{
	return ev->ret > (ssize_t)sizeof(struct fi_eq_cm_entry)
		   ? (size_t)ev->ret - sizeof(struct fi_eq_cm_entry)
		   : 0;
}

static const char *cm_event_str(uint32_t event)
{
	static char s[64];

	snprintf(s, sizeof(s), "%s", fi_tostr(&event, FI_TYPE_EQ_EVENT));
	return s;
}

static void cm_open(struct cm_fix *cm, const char *prov, uint64_t caps,
		    uint64_t mode)
{
	struct cf_opts o = {
	    .ep_type = FI_EP_MSG,
	    .caps = caps ? caps : FI_MSG,
	    .mode = mode,
	    .cq_format = FI_CQ_FORMAT_DATA,
	};
	struct fi_eq_attr eq_attr = {.size = 64, .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.size = 256, .format = FI_CQ_FORMAT_DATA};
	struct cf_fix *f = &cm->f;
	int ret, i;

	memset(cm, 0, sizeof(*cm));
	f->o = o;
	f->nep = 2;
	f->info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA)
		cf_skip("fi_getinfo -61 for FI_EP_MSG with caps [%s]",
			fi_tostr(&o.caps, FI_TYPE_CAPS));
	cf_assert(!ret, "fi_getinfo: %d (%s)", ret, fi_strerror(-ret));
	cf_ok(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	cf_ok(fi_domain(f->fabric, f->info, &f->domain, NULL));
	for (i = 0; i < 2; i++) {
		cf_ok(fi_eq_open(f->fabric, &eq_attr, &cm->eq[i], NULL));
		/* CQs exist before their endpoints so progress can read both.
		 */
		cf_ok(fi_cq_open(f->domain, &cq_attr, &f->ep[i].cq, NULL));
		f->ep[i].addr = FI_ADDR_UNSPEC;
	}
}

/* Close endpoint i now, within CM_CLOSE_MS; returns how long it took. */
static uint64_t cm_ep_close(struct cm_fix *cm, int i)
{
	uint64_t t0 = cf_now_ms(), took;
	unsigned int prev;
	int ret;

	if (!cm->f.ep[i].ep)
		return 0;
	/* If fi_close hangs, the case's alarm names it. */
	prev = alarm(CM_CLOSE_MS / 1000 + 3);
	cf_mark(i == CM_CLIENT ? "fi_close of the connecting endpoint"
			       : "fi_close of the accepted endpoint");
	ret = fi_close(&cm->f.ep[i].ep->fid);
	took = cf_now_ms() - t0;
	alarm(prev > took / 1000 + 1 ? prev - (unsigned int)(took / 1000)
				     : (prev ? 1 : 0));
	cm->f.ep[i].ep = NULL;
	cf_assert(!ret, "fi_close of endpoint %d: %d (%s)", i, ret,
		  fi_strerror(-ret));
	cf_expect(took <= CM_CLOSE_MS, "fi_close of endpoint %d took %llu ms",
		  i, (unsigned long long)took);
	return took;
}

static void cm_close(struct cm_fix *cm)
{
	int i;

	for (i = 0; i < 2; i++)
		cm_ep_close(cm, i);
	if (cm->pep)
		cf_ok(fi_close(&cm->pep->fid));
	for (i = 0; i < 2; i++)
		if (cm->eq[i])
			cf_ok(fi_close(&cm->eq[i]->fid));
	cf_close(&cm->f);
}

/* Read every event both EQs have into their queues; progress the CQs. */
static void cm_pump(struct cm_fix *cm)
{
	int i;

	for (i = 0; i < 2; i++) {
		for (;;) {
			struct cm_ev *ev;
			ssize_t n;

			cf_assert(cm->nq[i] < CM_QLEN,
				  "EQ %d: %d events unclaimed", i, cm->nq[i]);
			ev = &cm->q[i][cm->nq[i]];
			memset(ev, 0, sizeof(*ev));
			n = fi_eq_read(cm->eq[i], &ev->event, ev->raw,
				       sizeof(ev->raw), 0);
			if (n == -FI_EAGAIN)
				break;
			if (n == -FI_EAVAIL) {
				ev->err.err_data = ev->err_data;
				ev->err.err_data_size = sizeof(ev->err_data);
				n = fi_eq_readerr(cm->eq[i], &ev->err, 0);
				cf_assert(n == sizeof(ev->err),
					  "fi_eq_readerr after -FI_EAVAIL: %zd",
					  n);
				/* err_data may point into the provider. */
				if (ev->err.err_data_size &&
				    ev->err.err_data != ev->err_data) {
					size_t m = ev->err.err_data_size;

					if (m > sizeof(ev->err_data))
						m = sizeof(ev->err_data);
					memcpy(ev->err_data, ev->err.err_data,
					       m);
					ev->err.err_data_size = m;
				}
				ev->err.err_data = ev->err_data;
				ev->ret = -FI_EAVAIL;
				cm->nq[i]++;
				continue;
			}
			cf_assert(n >= (ssize_t)sizeof(fid_t),
				  "fi_eq_read on EQ %d: %zd (%s)", i, n,
				  fi_strerror((int)-n));
			ev->ret = n;
			cm->nq[i]++;
		}
	}
	cf_progress(&cm->f);
}

/* The oldest event of side i within ms; false if none arrived. */
static bool cm_poll(struct cm_fix *cm, int i, struct cm_ev *ev, int ms)
{
	uint64_t end = cf_now_ms() + ms;

	for (;;) {
		if (cm->nq[i]) {
			*ev = cm->q[i][0];
			memmove(&cm->q[i][0], &cm->q[i][1],
				(size_t)(cm->nq[i] - 1) * sizeof(*ev));
			cm->nq[i]--;
			return true;
		}
		if (cf_now_ms() > end)
			return false;
		cm_pump(cm);
		if (!cm->nq[i])
			cf_sleep_ms(1);
	}
}

/*
 * The next event of side i must be `want` for fid within CM_EVENT_MS;
 * fills ev and returns the length of its private data.
 */
static size_t cm_expect_event_at(const char *file, int line, struct cm_fix *cm,
				 int i, uint32_t want, fid_t fid,
				 struct cm_ev *ev, const char *what)
{
	char buf[256];

	if (!cm_poll(cm, i, ev, CM_EVENT_MS))
		cf_fail_at(file, line, "%s: no %s on EQ %d within %d ms", what,
			   cm_event_str(want), i, CM_EVENT_MS);
	if (ev->ret == -FI_EAVAIL)
		cf_fail_at(file, line,
			   "%s: error entry instead of %s: err %d "
			   "(%s) prov_errno %d (%s)",
			   what, cm_event_str(want), ev->err.err,
			   fi_strerror(ev->err.err), ev->err.prov_errno,
			   fi_eq_strerror(cm->eq[i], ev->err.prov_errno, NULL,
					  buf, sizeof(buf)));
	if (ev->event != want)
		cf_fail_at(file, line, "%s: event %s, want %s", what,
			   cm_event_str(ev->event), cm_event_str(want));
	cf_assert(ev->ret >= (ssize_t)sizeof(struct fi_eq_cm_entry),
		  "%s: %s entry of %zd bytes", what, cm_event_str(want),
		  ev->ret);
	if (fid && cm_entry(ev)->fid != fid)
		cf_fail_at(file, line, "%s: %s names fid %p, want %p", what,
			   cm_event_str(want), (void *)cm_entry(ev)->fid,
			   (void *)fid);
	return cm_data_len(ev);
}

#define cm_expect_event(cm, i, want, fid, ev, what)                            \
	(cf_mark("waiting for " #want),                                        \
	 cm_expect_event_at(__FILE__, __LINE__, cm, i, want, fid, ev, what))

/* FI_OPT_CM_DATA_SIZE of an endpoint or passive endpoint; 0 if unknown. */
static size_t cm_data_size(fid_t fid, const char *what)
{
	size_t v = 0, len = sizeof(v);
	int ret;

	ret = fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len);
	/* fi_cm(3) points applications to this option; it should answer. */
	cf_expect(!ret, "fi_getopt(FI_OPT_CM_DATA_SIZE) of %s: %d (%s)", what,
		  ret, fi_strerror(-ret));
	return ret ? 0 : v;
}

static void cm_listen(struct cm_fix *cm)
{
	cf_ok(fi_passive_ep(cm->f.fabric, cm->f.info, &cm->pep, NULL));
	cf_ok(fi_pep_bind(cm->pep, &cm->eq[CM_SERVER]->fid, 0));
	cf_ok(fi_listen(cm->pep));
	cm->pnamelen = sizeof(cm->pname);
	cf_ok(fi_getname(&cm->pep->fid, cm->pname, &cm->pnamelen));
}

/* Endpoint i from info, bound to its EQ and CQ, enabled. */
static void cm_ep_open(struct cm_fix *cm, int i, struct fi_info *info)
{
	struct cf_ep *e = &cm->f.ep[i];

	cf_ok(fi_endpoint(cm->f.domain, info, &e->ep, NULL));
	cf_ok(fi_ep_bind(e->ep, &cm->eq[i]->fid, 0));
	cf_ok(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	cf_ok(fi_enable(e->ep));
}

/*
 * The passive endpoint's next FI_CONNREQ (what names the connect, for a
 * failure) accepted without private data as endpoint 1, which sees
 * FI_CONNECTED.
 */
static void cm_accept_next(struct cm_fix *cm, const char *what)
{
	struct cm_ev ev;
	struct fi_info *req;

	cm_expect_event(cm, CM_SERVER, FI_CONNREQ, &cm->pep->fid, &ev, what);
	req = cm_entry(&ev)->info;
	cf_assert(req && req->handle, "FI_CONNREQ without info or handle");
	cm_ep_open(cm, CM_SERVER, req);
	cf_ok(fi_accept(cm->f.ep[CM_SERVER].ep, NULL, 0));
	fi_freeinfo(req);
	cm_expect_event(cm, CM_SERVER, FI_CONNECTED,
			&cm->f.ep[CM_SERVER].ep->fid, &ev, "accept");
}

/*
 * Connect endpoint 0 to the passive endpoint and accept it as endpoint 1,
 * without private data; both sides see FI_CONNECTED.
 */
static void cm_connect_pair(struct cm_fix *cm)
{
	struct cm_ev ev;

	if (!cm->pep)
		cm_listen(cm);
	cm_ep_open(cm, CM_CLIENT, cm->f.info);
	cf_ok(fi_connect(cm->f.ep[CM_CLIENT].ep, cm->pname, NULL, 0));
	cm_accept_next(cm, "connect");
	cm_expect_event(cm, CM_CLIENT, FI_CONNECTED,
			&cm->f.ep[CM_CLIENT].ep->fid, &ev, "connect");
}

struct cf_fix *cf_msg_pair_open(const char *prov, uint64_t caps)
{
	struct cm_fix *cm = malloc(sizeof(*cm));

	cf_assert(cm, "out of memory");
	cm_open(cm, prov, caps, 0);
	cm_connect_pair(cm);
	return &cm->f;
}

void cf_msg_pair_close(struct cf_fix *f)
{
	struct cm_fix *cm = (struct cm_fix *)((char *)f -
					      offsetof(struct cm_fix, f));

	cm_close(cm);
	free(cm);
}

/* Fail unless the GUARD bytes after len are still GUARD_BYTE. */
static void check_guard(const uint8_t *p, size_t len, const char *what)
{
	size_t j;

	for (j = len; j < len + GUARD; j++)
		cf_assert(p[j] == GUARD_BYTE,
			  "%s: byte %zu past the %zu-byte message was written",
			  what, j - len, len);
}

/* One message from side s to side r, receive posted first, all checked. */
static void cm_msg(struct cm_fix *cm, int s, int r, size_t len,
		   unsigned int seed)
{
	struct cf_fix *f = &cm->f;
	struct fi_context2 sctx, rctx;
	struct cf_mem sm, rm;
	struct cf_comp c;
	char what[64];

	snprintf(what, sizeof(what), "%zu bytes ep%d->ep%d", len, s, r);
	cf_mem_reg(f, s, &sm, len, FI_SEND);
	cf_mem_reg(f, r, &rm, len + GUARD, FI_RECV);
	cf_fill(sm.p, len, seed);
	memset(rm.p, GUARD_BYTE, len + GUARD);
	cf_post(f, fi_recv(f->ep[r].ep, rm.p, len, rm.desc, 0, &rctx));
	cf_post(f, fi_send(f->ep[s].ep, sm.p, len, sm.desc, 0, &sctx));
	c = cf_wait_ctx(f, r, &rctx);
	cf_assert(!c.err, "%s: receive error %d (%s)", what, c.err,
		  fi_strerror(c.err));
	cf_assert(c.len == len, "%s: receive completion len %zu", what, c.len);
	cf_check_flags(&c, FI_RECV | FI_MSG, what);
	cf_check_fill(rm.p, len, seed, what);
	check_guard(rm.p, len, what);
	c = cf_wait_ctx(f, s, &sctx);
	cf_assert(!c.err, "%s: send error %d (%s)", what, c.err,
		  fi_strerror(c.err));
	cf_check_flags(&c, FI_SEND | FI_MSG, what);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
}

/* Two endpoint names are one address (sockaddr: family, port, host). */
static bool cm_same_addr(const void *a, size_t alen, const void *b, size_t blen)
{
	const struct sockaddr *sa = a, *sb = b;

	if (alen >= sizeof(struct sockaddr_in) &&
	    blen >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET &&
	    sb->sa_family == AF_INET) {
		const struct sockaddr_in *x = a, *y = b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (alen >= sizeof(struct sockaddr_in6) &&
	    blen >= sizeof(struct sockaddr_in6) && sa->sa_family == AF_INET6 &&
	    sb->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = a, *y = b;

		return x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr,
			       sizeof(x->sin6_addr));
	}
	return alen == blen && !memcmp(a, b, alen);
}

static const char *cm_addr_str(struct cm_fix *cm, const void *addr)
{
	static char s[2][128];
	static int k;
	size_t len = sizeof(s[0]);

	k ^= 1;
	if (!fi_av_straddr(NULL, addr, s[k], &len))
		snprintf(s[k], sizeof(s[k]), "?");
	(void)cm;
	return s[k];
}

/*
 * Connect with private data in fi_connect, read it from FI_CONNREQ, accept
 * with private data and read that from the client's FI_CONNECTED; then
 * messages both ways (the first into a receive posted before connecting)
 * and the names each side reports of itself and of its peer.
 */
static int case_cm_connect(const char *prov)
{
	static const size_t sizes[] = {1, 4096, 70001, 1 << 20};
	uint8_t cdata[CM_CONN_LEN], adata[CM_ACCEPT_LEN];
	uint8_t n0[CF_MAX_NAME], n1[CF_MAX_NAME], p0[CF_MAX_NAME],
	    p1[CF_MAX_NAME];
	size_t l0 = sizeof(n0), l1 = sizeof(n1), lp0 = sizeof(p0),
	       lp1 = sizeof(p1);
	size_t csz, clen, alen, n, i;
	struct fi_context2 rctx, sctx;
	struct cf_mem rm, sm;
	struct fi_info *req;
	struct cm_fix cm;
	struct cm_ev ev;
	struct cf_comp c;

	cm_open(&cm, prov, 0, 0);
	cm_listen(&cm);
	csz = cm_data_size(&cm.pep->fid, "the passive endpoint");
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	n = cm_data_size(&cm.f.ep[CM_CLIENT].ep->fid, "an active endpoint");
	if (n < csz)
		csz = n;
	if (!csz)
		cf_note("FI_OPT_CM_DATA_SIZE 0: no private data exchanged");
	else
		cf_note("FI_OPT_CM_DATA_SIZE %zu", csz);
	clen = csz < CM_CONN_LEN ? csz : CM_CONN_LEN;
	alen = csz < CM_ACCEPT_LEN ? csz : CM_ACCEPT_LEN;
	cf_fill(cdata, sizeof(cdata), 71);
	cf_fill(adata, sizeof(adata), 72);

	/* fi_cm(3): receives may be posted before the connection is up. */
	cf_mem_reg(&cm.f, CM_CLIENT, &rm, 13 + GUARD, FI_RECV);
	memset(rm.p, GUARD_BYTE, 13 + GUARD);
	cf_post(&cm.f,
		fi_recv(cm.f.ep[CM_CLIENT].ep, rm.p, 13, rm.desc, 0, &rctx));
	cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, cm.pname, clen ? cdata : NULL,
			 clen));

	n = cm_expect_event(&cm, CM_SERVER, FI_CONNREQ, &cm.pep->fid, &ev,
			    "fi_connect");
	req = cm_entry(&ev)->info;
	cf_assert(req, "FI_CONNREQ without info");
	cf_assert(req->handle, "FI_CONNREQ info without a handle");
	/* fi_eq(3): the data may come with protocol padding after it. */
	if (n != clen)
		cf_note("FI_CONNREQ carries %zu bytes for the %zu sent", n,
			clen);
	cf_expect(n >= clen,
		  "FI_CONNREQ carries %zu bytes of private data, "
		  "fi_connect sent %zu",
		  n, clen);
	if (n >= clen)
		cf_expect(!memcmp(cm_entry(&ev)->data, cdata, clen),
			  "FI_CONNREQ private data differs from fi_connect's");
	cm_ep_open(&cm, CM_SERVER, req);
	fi_freeinfo(req);
	cf_ok(fi_accept(cm.f.ep[CM_SERVER].ep, alen ? adata : NULL, alen));

	cm_expect_event(&cm, CM_SERVER, FI_CONNECTED,
			&cm.f.ep[CM_SERVER].ep->fid, &ev, "fi_accept");
	n = cm_expect_event(&cm, CM_CLIENT, FI_CONNECTED,
			    &cm.f.ep[CM_CLIENT].ep->fid, &ev, "fi_connect");
	cf_expect(n >= alen,
		  "client's FI_CONNECTED carries %zu bytes of "
		  "private data, fi_accept sent %zu",
		  n, alen);
	if (n >= alen)
		cf_expect(!memcmp(cm_entry(&ev)->data, adata, alen),
			  "FI_CONNECTED private data differs from "
			  "fi_accept's");

	/* The receive posted before fi_connect takes the first message. */
	cf_mem_reg(&cm.f, CM_SERVER, &sm, 13, FI_SEND);
	cf_fill(sm.p, 13, 73);
	cf_post(&cm.f,
		fi_send(cm.f.ep[CM_SERVER].ep, sm.p, 13, sm.desc, 0, &sctx));
	c = cf_wait_ctx(&cm.f, CM_CLIENT, &rctx);
	cf_assert(!c.err, "receive posted before fi_connect: error %d (%s)",
		  c.err, fi_strerror(c.err));
	cf_assert(c.len == 13, "receive posted before fi_connect: len %zu",
		  c.len);
	cf_check_fill(rm.p, 13, 73, "receive posted before fi_connect");
	check_guard(rm.p, 13, "receive posted before fi_connect");
	c = cf_wait_ctx(&cm.f, CM_SERVER, &sctx);
	cf_assert(!c.err, "first send: error %d", c.err);
	cf_mem_free(&rm);
	cf_mem_free(&sm);

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cm_msg(&cm, CM_CLIENT, CM_SERVER, sizes[i], 80 + (unsigned)i);
		cm_msg(&cm, CM_SERVER, CM_CLIENT, sizes[i], 90 + (unsigned)i);
	}

	/* Each side's peer is the other side's own name. */
	cf_ok(fi_getname(&cm.f.ep[CM_CLIENT].ep->fid, n0, &l0));
	cf_ok(fi_getname(&cm.f.ep[CM_SERVER].ep->fid, n1, &l1));
	cf_ok(fi_getpeer(cm.f.ep[CM_CLIENT].ep, p0, &lp0));
	cf_ok(fi_getpeer(cm.f.ep[CM_SERVER].ep, p1, &lp1));
	cf_expect(cm_same_addr(p0, lp0, n1, l1),
		  "client's fi_getpeer %s is not the accepted endpoint's "
		  "fi_getname %s",
		  cm_addr_str(&cm, p0), cm_addr_str(&cm, n1));
	cf_expect(cm_same_addr(p1, lp1, n0, l0),
		  "accepted endpoint's fi_getpeer %s is not the client's "
		  "fi_getname %s",
		  cm_addr_str(&cm, p1), cm_addr_str(&cm, n0));
	if (!cm_same_addr(p0, lp0, cm.pname, cm.pnamelen))
		cf_note("client's peer %s is not the address it connected to, "
			"%s",
			cm_addr_str(&cm, p0), cm_addr_str(&cm, cm.pname));

	cf_expect_none(&cm.f, CM_CLIENT, 20);
	cf_expect_none(&cm.f, CM_SERVER, 0);
	cf_assert(!cm_poll(&cm, CM_CLIENT, &ev, 0) &&
		      !cm_poll(&cm, CM_SERVER, &ev, 0),
		  "an EQ has an extra event");
	cm_close(&cm);
	return 0;
}

/*
 * FI_SOURCE and FI_DIRECTED_RECV on connected endpoints.  Without an AV
 * the one peer has no fi_addr_t: fi_cq_readfrom reports FI_ADDR_NOTAVAIL
 * (fi_cq(3)) and a receive's source is ignored (fi_endpoint(3):
 * connected endpoints ignore addresses), so a receive directed anywhere
 * takes the peer's message.  With an AV bound to the accepted endpoint
 * that holds the client's fi_getname, the peer is that fi_addr_t: sources
 * name it, and a receive directed to another entry of the AV takes
 * nothing of it.
 */
static int case_cm_source(const char *prov)
{
	const size_t len = 100;
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC};
	struct sockaddr_in other = {.sin_family = AF_INET,
				    .sin_port = htons(9),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct fi_context2 sctx, rctx, octx;
	uint8_t name[CF_MAX_NAME];
	size_t nlen = sizeof(name);
	fi_addr_t fa_other, fa_peer;
	struct fi_info *req;
	struct cf_mem sm, rm, om;
	struct cm_fix cm;
	struct cm_ev ev;
	struct cf_comp c;
	int k;

	cm_open(&cm, prov, FI_MSG | FI_SOURCE | FI_DIRECTED_RECV, 0);
	cm.f.o.readfrom = true;

	/* No AV: both ways, a directed receive takes the one peer's message
	 * and its source is FI_ADDR_NOTAVAIL. */
	cm_connect_pair(&cm);
	for (k = 0; k < 2; k++) {
		int s = k ? CM_SERVER : CM_CLIENT, r = 1 - s;

		cf_mem_reg(&cm.f, s, &sm, len, FI_SEND);
		cf_mem_reg(&cm.f, r, &rm, len, FI_RECV);
		cf_fill(sm.p, len, 130 + (unsigned)k);
		cf_post(&cm.f, fi_recv(cm.f.ep[r].ep, rm.p, len, rm.desc,
				       (fi_addr_t)77, &rctx));
		cf_post(&cm.f, fi_send(cm.f.ep[s].ep, sm.p, len, sm.desc, 0,
				       &sctx));
		c = cf_wait_ctx(&cm.f, r, &rctx);
		cf_assert(!c.err,
			  "ep%d: receive directed to 77 without an AV: "
			  "error %d (%s)",
			  r, c.err, fi_strerror(c.err));
		cf_check_fill(rm.p, len, 130 + (unsigned)k, "without an AV");
		cf_assert(c.src == FI_ADDR_NOTAVAIL,
			  "ep%d: source without an AV is 0x%llx, not "
			  "FI_ADDR_NOTAVAIL",
			  r, (unsigned long long)c.src);
		c = cf_wait_ctx(&cm.f, s, &sctx);
		cf_assert(!c.err, "send: error %d", c.err);
		cf_mem_free(&sm);
		cf_mem_free(&rm);
	}
	cm_close(&cm);

	/* An AV on the accepted endpoint: another address, then the
	 * client's own name (known once fi_connect has bound it). */
	cm_open(&cm, prov, FI_MSG | FI_SOURCE | FI_DIRECTED_RECV, 0);
	cm.f.o.readfrom = true;
	cm_listen(&cm);
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, cm.pname, NULL, 0));
	cm_expect_event(&cm, CM_SERVER, FI_CONNREQ, &cm.pep->fid, &ev,
			"connect");
	req = cm_entry(&ev)->info;
	cf_assert(req && req->handle, "FI_CONNREQ without info or handle");
	cf_ok(fi_getname(&cm.f.ep[CM_CLIENT].ep->fid, name, &nlen));
	cf_ok(fi_av_open(cm.f.domain, &av_attr, &cm.f.av, NULL));
	cf_assert(fi_av_insert(cm.f.av, &other, 1, &fa_other, 0, NULL) == 1,
		  "fi_av_insert of 127.0.0.1:9");
	cf_assert(fi_av_insert(cm.f.av, name, 1, &fa_peer, 0, NULL) == 1,
		  "fi_av_insert of the client's name %s",
		  cm_addr_str(&cm, name));
	cf_ok(fi_endpoint(cm.f.domain, req, &cm.f.ep[CM_SERVER].ep, NULL));
	fi_freeinfo(req);
	cf_ok(fi_ep_bind(cm.f.ep[CM_SERVER].ep, &cm.eq[CM_SERVER]->fid, 0));
	cf_ok(fi_ep_bind(cm.f.ep[CM_SERVER].ep, &cm.f.ep[CM_SERVER].cq->fid,
			 FI_TRANSMIT | FI_RECV));
	cf_ok(fi_ep_bind(cm.f.ep[CM_SERVER].ep, &cm.f.av->fid, 0));
	cf_ok(fi_enable(cm.f.ep[CM_SERVER].ep));
	cf_ok(fi_accept(cm.f.ep[CM_SERVER].ep, NULL, 0));
	cm_expect_event(&cm, CM_SERVER, FI_CONNECTED,
			&cm.f.ep[CM_SERVER].ep->fid, &ev, "accept");
	cm_expect_event(&cm, CM_CLIENT, FI_CONNECTED,
			&cm.f.ep[CM_CLIENT].ep->fid, &ev, "connect");

	/* Posted first, directed elsewhere: it must be passed over. */
	cf_mem_reg(&cm.f, CM_SERVER, &om, len, FI_RECV);
	cf_mem_reg(&cm.f, CM_SERVER, &rm, len, FI_RECV);
	cf_mem_reg(&cm.f, CM_CLIENT, &sm, len, FI_SEND);
	cf_post(&cm.f, fi_recv(cm.f.ep[CM_SERVER].ep, om.p, len, om.desc,
			       fa_other, &octx));
	cf_post(&cm.f, fi_recv(cm.f.ep[CM_SERVER].ep, rm.p, len, rm.desc,
			       fa_peer, &rctx));
	cf_fill(sm.p, len, 140);
	cf_post(&cm.f, fi_send(cm.f.ep[CM_CLIENT].ep, sm.p, len, sm.desc, 0,
			       &sctx));
	c = cf_wait(&cm.f, CM_SERVER);
	cf_assert(c.ctx == &rctx,
		  "the message went to context %p, not the receive directed "
		  "to the peer (%p; the one directed elsewhere is %p)",
		  c.ctx, (void *)&rctx, (void *)&octx);
	cf_assert(!c.err, "directed receive: error %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_check_fill(rm.p, len, 140, "directed receive");
	cf_assert(c.src == fa_peer,
		  "source 0x%llx, not the peer's fi_addr 0x%llx",
		  (unsigned long long)c.src, (unsigned long long)fa_peer);
	c = cf_wait_ctx(&cm.f, CM_CLIENT, &sctx);
	cf_assert(!c.err, "send: error %d", c.err);
	/* The other receive is still there: canceled, it says so. */
	cf_ok(fi_cancel(&cm.f.ep[CM_SERVER].ep->fid, &octx));
	c = cf_wait_ctx(&cm.f, CM_SERVER, &octx);
	cf_assert(c.err == FI_ECANCELED,
		  "the receive directed elsewhere: error %d, want "
		  "FI_ECANCELED", c.err);
	cf_expect_none(&cm.f, CM_SERVER, 20);
	cf_expect_none(&cm.f, CM_CLIENT, 0);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_mem_free(&om);
	cm_close(&cm);
	return 0;
}

/*
 * A port for fi_setname: one TCP just gave out on the listener's address
 * (bound to port 0, then closed); 0 if none could be had.  iWARP devices
 * bind their connection's TCP socket to the port rdma_cm is given.
 */
static uint16_t cm_free_port(const void *addr)
{
	struct sockaddr_storage ss;
	socklen_t len;
	uint16_t port = 0;
	int fd;

	memset(&ss, 0, sizeof(ss));
	len = ((const struct sockaddr *)addr)->sa_family == AF_INET6
		      ? sizeof(struct sockaddr_in6)
		      : sizeof(struct sockaddr_in);
	memcpy(&ss, addr, len);
	((struct sockaddr_in *)&ss)->sin_port = 0;
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;
	if (!bind(fd, (struct sockaddr *)&ss, len) &&
	    !getsockname(fd, (struct sockaddr *)&ss, &len))
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	close(fd);
	return port;
}

/*
 * fi_setname on an active endpoint before fi_connect (fi_cm(3)): the
 * connection comes from that address, port included: the endpoint's
 * fi_getname and the accepted endpoint's fi_getpeer both say so, and
 * messages flow.  Twice, so that a port given back at fi_close can be
 * given again.
 */
static int case_cm_setname(const char *prov)
{
	uint8_t n0[CF_MAX_NAME], p1[CF_MAX_NAME];
	struct sockaddr_storage src;
	struct cm_ev ev;
	struct cm_fix cm;
	size_t l0, lp1, len;
	uint16_t port;
	int round;

	cm_open(&cm, prov, 0, 0);
	if (!cf_is_sockaddr(cm.f.info->addr_format)) {
		cm_close(&cm);
		cf_skip("addr_format %u is not a socket address",
			cm.f.info->addr_format);
	}
	cm_listen(&cm);
	for (round = 0; round < 2; round++) {
		port = cm_free_port(cm.pname);
		cf_assert(port, "no free TCP port on %s",
			  cm_addr_str(&cm, cm.pname));
		len = cm.pnamelen <= sizeof(src) ? cm.pnamelen : sizeof(src);
		memset(&src, 0, sizeof(src));
		memcpy(&src, cm.pname, len);
		((struct sockaddr_in *)&src)->sin_port = htons(port);
		cm_ep_open(&cm, CM_CLIENT, cm.f.info);
		cf_ok(fi_setname(&cm.f.ep[CM_CLIENT].ep->fid, &src, len));
		cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, cm.pname, NULL, 0));
		cm_accept_next(&cm, "connect from a set name");
		cm_expect_event(&cm, CM_CLIENT, FI_CONNECTED,
				&cm.f.ep[CM_CLIENT].ep->fid, &ev, "connect");
		l0 = sizeof(n0);
		lp1 = sizeof(p1);
		cf_ok(fi_getname(&cm.f.ep[CM_CLIENT].ep->fid, n0, &l0));
		cf_ok(fi_getpeer(cm.f.ep[CM_SERVER].ep, p1, &lp1));
		cf_expect(cm_same_addr(n0, l0, &src, len),
			  "round %d: the client's fi_getname %s, not the "
			  "name it set, %s",
			  round, cm_addr_str(&cm, n0), cm_addr_str(&cm, &src));
		cf_expect(cm_same_addr(p1, lp1, &src, len),
			  "round %d: the accepted endpoint's peer is %s, not "
			  "the client's set name %s",
			  round, cm_addr_str(&cm, p1), cm_addr_str(&cm, &src));
		cm_msg(&cm, CM_CLIENT, CM_SERVER, 100, 31 + (unsigned)round);
		cm_msg(&cm, CM_SERVER, CM_CLIENT, 100, 41 + (unsigned)round);
		cm_ep_close(&cm, CM_CLIENT);
		cm_ep_close(&cm, CM_SERVER);
		/* The shutdown the close caused, if the EQ reports one. */
		while (cm_poll(&cm, CM_SERVER, &ev, 50) ||
		       cm_poll(&cm, CM_CLIENT, &ev, 0))
			;
	}
	cm_close(&cm);
	return 0;
}

/*
 * fi_reject with private data: the client's EQ gets an error entry for its
 * endpoint, FI_ECONNREFUSED, and (fi_cm(3), NOTES) the reject's data as
 * err_data.  The passive endpoint then still accepts a new connection.
 */
static int case_cm_reject(const char *prov)
{
	uint8_t cdata[CM_CONN_LEN], rdata[CM_REJECT_LEN];
	size_t csz, clen, rlen, n;
	struct fi_info *req;
	struct cm_fix cm;
	struct cm_ev ev;
	char buf[256];
	fid_t cfid;

	cm_open(&cm, prov, 0, 0);
	cm_listen(&cm);
	csz = cm_data_size(&cm.pep->fid, "the passive endpoint");
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	n = cm_data_size(&cm.f.ep[CM_CLIENT].ep->fid, "an active endpoint");
	if (n < csz)
		csz = n;
	clen = csz < CM_CONN_LEN ? csz : CM_CONN_LEN;
	rlen = csz < CM_REJECT_LEN ? csz : CM_REJECT_LEN;
	cf_fill(cdata, sizeof(cdata), 61);
	cf_fill(rdata, sizeof(rdata), 62);
	cfid = &cm.f.ep[CM_CLIENT].ep->fid;
	cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, cm.pname, clen ? cdata : NULL,
			 clen));
	n = cm_expect_event(&cm, CM_SERVER, FI_CONNREQ, &cm.pep->fid, &ev,
			    "fi_connect");
	req = cm_entry(&ev)->info;
	cf_assert(req && req->handle, "FI_CONNREQ without info or handle");
	cf_expect(n >= clen && !memcmp(cm_entry(&ev)->data, cdata, clen),
		  "FI_CONNREQ private data missing or different");
	cf_ok(fi_reject(cm.pep, req->handle, rlen ? rdata : NULL, rlen));
	fi_freeinfo(req);

	cf_mark("waiting for the rejection");
	cf_assert(cm_poll(&cm, CM_CLIENT, &ev, CM_EVENT_MS),
		  "rejected client: no event within %d ms", CM_EVENT_MS);
	cf_assert(ev.ret == -FI_EAVAIL,
		  "rejected client: event %s instead of an error entry",
		  cm_event_str(ev.event));
	cf_expect(ev.err.fid == cfid, "rejection names fid %p, want %p",
		  (void *)ev.err.fid, (void *)cfid);
	cf_expect(ev.err.err == FI_ECONNREFUSED,
		  "rejection: err %d (%s), want FI_ECONNREFUSED; prov_errno "
		  "%d (%s)",
		  ev.err.err, fi_strerror(ev.err.err), ev.err.prov_errno,
		  fi_eq_strerror(cm.eq[CM_CLIENT], ev.err.prov_errno, NULL, buf,
				 sizeof(buf)));
	/* fi_cm(3): a rejection's user data is available as err_data. */
	cf_expect(ev.err.err_data_size >= rlen,
		  "rejection: err_data_size %zu, fi_reject sent %zu bytes",
		  ev.err.err_data_size, rlen);
	if (ev.err.err_data_size >= rlen)
		cf_expect(!memcmp(ev.err_data, rdata, rlen),
			  "rejection: err_data differs from fi_reject's data");
	/* The server side has nothing more to say about it. */
	cf_expect(!cm_poll(&cm, CM_SERVER, &ev, 100),
		  "server EQ: event %s after fi_reject",
		  ev.ret == -FI_EAVAIL ? "(error)" : cm_event_str(ev.event));
	cf_expect(!cm_poll(&cm, CM_CLIENT, &ev, 0),
		  "client EQ: a second event after the rejection");
	cm_ep_close(&cm, CM_CLIENT);

	/* The listener goes on listening. */
	cm_connect_pair(&cm);
	cm_msg(&cm, CM_CLIENT, CM_SERVER, 100, 63);
	cm_msg(&cm, CM_SERVER, CM_CLIENT, 100, 64);
	cm_close(&cm);
	return 0;
}

/*
 * A passive endpoint's rules (fi_cm(3), fi_endpoint(3)) as a listener's
 * set-up meets them (the order fabtests' servers and rxm-style clients
 * use: fi_passive_ep, fi_pep_bind, fi_listen, fi_getname): fi_listen
 * needs an EQ; fi_getname says the size it needs; fi_setname is refused
 * once listening; fi_reject checks its handle and private data; the
 * FI_CONNREQ names the client's address; an RDM info opens none.
 */
static int case_cm_pep_api(const char *prov)
{
	struct sockaddr_storage name, cname, *dest;
	size_t len, csz;
	struct fi_info *req, *rdm;
	struct fid_pep *pep2;
	struct cm_fix cm;
	struct cm_ev ev;
	uint8_t big[1024];
	int ret;

	cm_open(&cm, prov, 0, 0);
	rdm = fi_dupinfo(cm.f.info);
	cf_assert(rdm, "fi_dupinfo");
	rdm->ep_attr->type = FI_EP_RDM;
	ret = fi_passive_ep(cm.f.fabric, rdm, &pep2, NULL);
	cf_expect(ret == -FI_EINVAL,
		  "fi_passive_ep with an FI_EP_RDM info: %d, want -FI_EINVAL",
		  ret);
	if (!ret)
		fi_close(&pep2->fid);
	fi_freeinfo(rdm);

	cf_ok(fi_passive_ep(cm.f.fabric, cm.f.info, &cm.pep, NULL));
	ret = fi_listen(cm.pep);
	cf_expect(ret == -FI_ENOEQ, "fi_listen without an EQ: %d, want "
		  "-FI_ENOEQ", ret);
	len = 1;
	ret = fi_getname(&cm.pep->fid, &name, &len);
	cf_expect(ret == -FI_ETOOSMALL && len >= sizeof(struct sockaddr_in),
		  "fi_getname into 1 byte: %d, size %zu; want -FI_ETOOSMALL "
		  "and the size", ret, len);
	ret = fi_setname(&cm.pep->fid, NULL, 0);
	cf_expect(ret == -FI_EINVAL, "fi_setname(NULL): %d, want -FI_EINVAL",
		  ret);
	cf_ok(fi_pep_bind(cm.pep, &cm.eq[CM_SERVER]->fid, 0));
	cf_ok(fi_listen(cm.pep));
	cf_ok(fi_listen(cm.pep)); /* again: it listens already */
	cm.pnamelen = sizeof(cm.pname);
	cf_ok(fi_getname(&cm.pep->fid, cm.pname, &cm.pnamelen));
	len = sizeof(name);
	cf_ok(fi_getname(&cm.pep->fid, &name, &len));
	ret = fi_setname(&cm.pep->fid, &name, len);
	cf_expect(ret == -FI_EOPBADSTATE,
		  "fi_setname while listening: %d, want -FI_EOPBADSTATE", ret);
	ret = fi_reject(cm.pep, NULL, NULL, 0);
	cf_expect(ret == -FI_EINVAL, "fi_reject(NULL handle): %d, want "
		  "-FI_EINVAL", ret);
	ret = fi_reject(cm.pep, &cm.pep->fid, NULL, 0);
	cf_expect(ret == -FI_EINVAL, "fi_reject of a passive endpoint's fid: "
		  "%d, want -FI_EINVAL", ret);

	csz = cm_data_size(&cm.pep->fid, "the passive endpoint");
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, cm.pname, NULL, 0));
	cm_expect_event(&cm, CM_SERVER, FI_CONNREQ, &cm.pep->fid, &ev,
			"fi_connect");
	req = cm_entry(&ev)->info;
	cf_assert(req && req->handle, "FI_CONNREQ without info or handle");
	cf_expect(req->handle->fclass == FI_CLASS_CONNREQ,
		  "FI_CONNREQ handle of class %zu, want FI_CLASS_CONNREQ",
		  req->handle->fclass);
	dest = req->dest_addr;
	cf_expect(dest && req->dest_addrlen >= sizeof(struct sockaddr_in) &&
			  dest->ss_family == name.ss_family,
		  "FI_CONNREQ: dest_addr missing or of another family");
	/* The client's address: the port it connected from (once it is
	 * connecting, fi_getname of an active endpoint names it). */
	len = sizeof(cname);
	if (dest && !fi_getname(&cm.f.ep[CM_CLIENT].ep->fid, &cname, &len) &&
	    cname.ss_family == AF_INET && dest->ss_family == AF_INET &&
	    ((struct sockaddr_in *)&cname)->sin_port)
		cf_expect(((struct sockaddr_in *)dest)->sin_port ==
				  ((struct sockaddr_in *)&cname)->sin_port,
			  "FI_CONNREQ: dest_addr port %u, the client's %u",
			  ntohs(((struct sockaddr_in *)dest)->sin_port),
			  ntohs(((struct sockaddr_in *)&cname)->sin_port));
	if (csz && csz < sizeof(big)) {
		memset(big, 1, sizeof(big));
		ret = fi_reject(cm.pep, req->handle, big, csz + 1);
		cf_expect(ret == -FI_EINVAL,
			  "fi_reject with %zu bytes of data (FI_OPT_CM_DATA_SIZE"
			  " %zu): %d, want -FI_EINVAL", csz + 1, csz, ret);
	}
	cf_ok(fi_reject(cm.pep, req->handle, NULL, 0));
	fi_freeinfo(req);
	cf_mark("waiting for the rejection");
	cf_assert(cm_poll(&cm, CM_CLIENT, &ev, CM_EVENT_MS),
		  "rejected client: no event within %d ms", CM_EVENT_MS);
	cf_expect(ev.ret == -FI_EAVAIL && ev.err.err == FI_ECONNREFUSED,
		  "rejected client: %s, want FI_ECONNREFUSED",
		  ev.ret == -FI_EAVAIL ? fi_strerror(ev.err.err) :
					 cm_event_str(ev.event));
	cm_ep_close(&cm, CM_CLIENT);
	cm_close(&cm);
	return 0;
}

/*
 * After a connected exchange the leaving side shuts down (fi_shutdown) or
 * closes its endpoint; the other side gets FI_SHUTDOWN for its endpoint on
 * its EQ, its posted receives do not complete successfully, and it closes
 * promptly.  With fi_shutdown, the leaver's own canceled receives are in
 * its CQ when fi_shutdown returns (or they are discarded).
 */
static int cm_peer_gone(const char *prov, int leaver, bool close_it)
{
	int stay = 1 - leaver, ret, k, ncancel = 0, nnone = 0;
	struct fi_context2 rctx[2], lctx;
	struct cf_mem rm, lm;
	uint64_t t0, took;
	struct cm_fix cm;
	struct cm_ev ev;
	struct cf_comp c;
	fid_t sfid;
	size_t j;

	cm_open(&cm, prov, 0, 0);
	cm_connect_pair(&cm);
	cm_msg(&cm, CM_CLIENT, CM_SERVER, 4096, 51);
	cm_msg(&cm, CM_SERVER, CM_CLIENT, 4096, 52);

	cf_mem_reg(&cm.f, stay, &rm, 2 * 4096, FI_RECV);
	cf_mem_reg(&cm.f, leaver, &lm, 4096, FI_RECV);
	for (k = 0; k < 2; k++)
		cf_post(&cm.f, fi_recv(cm.f.ep[stay].ep, rm.p + k * 4096, 4096,
				       rm.desc, 0, &rctx[k]));
	cf_post(&cm.f,
		fi_recv(cm.f.ep[leaver].ep, lm.p, 4096, lm.desc, 0, &lctx));
	cm_pump(&cm);
	sfid = &cm.f.ep[stay].ep->fid;

	if (close_it) {
		cf_mem_close(&lm);
		cm_ep_close(&cm, leaver);
	} else {
		t0 = cf_now_ms();
		cf_mark("fi_shutdown");
		ret = fi_shutdown(cm.f.ep[leaver].ep, 0);
		took = cf_now_ms() - t0;
		cf_assert(!ret, "fi_shutdown: %d (%s)", ret, fi_strerror(-ret));
		cf_expect(took <= CM_CLOSE_MS, "fi_shutdown took %llu ms",
			  (unsigned long long)took);
		/*
		 * fi_cm(3): canceled operations are in the CQ before
		 * fi_shutdown returns; the others are discarded silently.
		 */
		cf_progress(&cm.f);
		for (j = 0; j < cm.f.ep[leaver].q.n; j++) {
			if (cm.f.ep[leaver].q.v[j].ctx != &lctx)
				continue;
			cf_expect(cm.f.ep[leaver].q.v[j].err,
				  "leaver's receive completed successfully "
				  "at fi_shutdown");
			cf_note("the leaver's receive: %s at fi_shutdown",
				fi_strerror(cm.f.ep[leaver].q.v[j].err));
			break;
		}
		if (j == cm.f.ep[leaver].q.n)
			cf_note("the leaver's receive was discarded by "
				"fi_shutdown");
	}

	cm_expect_event(&cm, stay, FI_SHUTDOWN, sfid, &ev,
			close_it ? "peer's fi_close" : "peer's fi_shutdown");
	if (!close_it) {
		/*
		 * The leaver's own EQ reports FI_SHUTDOWN too, as 1.17 does:
		 * clients wait for it in fi_eq_sread after fi_shutdown
		 * (upstream's cm_data test).  Once: the survivor shutting
		 * down in turn adds nothing on either side.
		 */
		cm_expect_event(&cm, leaver, FI_SHUTDOWN,
				&cm.f.ep[leaver].ep->fid, &ev,
				"own fi_shutdown");
		cf_ok(fi_shutdown(cm.f.ep[stay].ep, 0));
		cf_expect(!cm_poll(&cm, leaver, &ev, 50),
			  "leaver EQ: a second event after FI_SHUTDOWN");
		cf_ok(fi_shutdown(cm.f.ep[leaver].ep, 0));
		cf_expect(!cm_poll(&cm, leaver, &ev, 50),
			  "leaver EQ: an event after a second fi_shutdown");
	}

	/* The survivor's receives: canceled in error, or never completed. */
	for (k = 0; k < 2; k++) {
		uint64_t end = cf_now_ms() + 1000;
		bool got = false;

		while (!got && cf_now_ms() < end) {
			cm_pump(&cm);
			for (j = 0; j < cm.f.ep[stay].q.n; j++)
				if (cm.f.ep[stay].q.v[j].ctx == &rctx[k])
					got = true;
		}
		if (!got) {
			nnone++;
			continue;
		}
		c = cf_wait_ctx(&cm.f, stay, &rctx[k]);
		cf_expect(c.err,
			  "receive %d after the peer left completed "
			  "successfully, len %zu",
			  k, c.len);
		if (c.err)
			ncancel++;
		if (c.err && c.err != FI_ECANCELED)
			cf_note("receive %d after the peer left: error %d (%s)",
				k, c.err, fi_strerror(c.err));
	}
	cf_note("after FI_SHUTDOWN: %d receive(s) completed in error, %d "
		"pending after 1 s",
		ncancel, nnone);
	cf_expect(!cm_poll(&cm, stay, &ev, 50),
		  "survivor EQ: a second event after FI_SHUTDOWN");
	cf_expect_none(&cm.f, stay, 0);

	/* Closing the survivor is prompt; so is the leaver after shutdown. */
	cf_mem_close(&rm);
	cm_ep_close(&cm, stay);
	if (!close_it) {
		cf_mem_close(&lm);
		cm_ep_close(&cm, leaver);
	}
	/* A late successful completion for the leaver's receive is wrong. */
	cf_progress(&cm.f);
	for (j = 0; j < cm.f.ep[leaver].q.n; j++)
		cf_expect(cm.f.ep[leaver].q.v[j].ctx != &lctx ||
			      cm.f.ep[leaver].q.v[j].err,
			  "leaver's receive completed successfully");
	cf_mem_free(&rm);
	cf_mem_free(&lm);
	cm_close(&cm);
	return 0;
}

static int case_cm_shutdown(const char *prov)
{
	return cm_peer_gone(prov, CM_CLIENT, false);
}

static int case_cm_peer_close(const char *prov)
{
	return cm_peer_gone(prov, CM_SERVER, true);
}

#define KILL_NRECV 8
#define KILL_NSEND 16
#define KILL_SEND_LEN (1 << 20)
#define KILL_MSG_BOUND_MS 2000

/*
 * The peer process of cm_peer_killed: connects to the passive endpoint
 * whose name it reads, says so, and then neither receives nor progresses
 * until it is killed, so that what is sent to it stays in flight.
 */
int cf_cm_victim_main(void)
{
	struct cm_fix cm;
	struct cm_ev ev;
	uint32_t len;
	char b = 'C';

	cm_open(&cm, cf_prov, 0, 0);
	cf_read_all(PEER_IN, &len, sizeof(len), CF_WAIT_MS);
	cf_assert(len && len <= sizeof(cm.pname), "name of %u bytes", len);
	cf_read_all(PEER_IN, cm.pname, len, CF_WAIT_MS);
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, cm.pname, NULL, 0));
	cm_expect_event(&cm, CM_CLIENT, FI_CONNECTED,
			&cm.f.ep[CM_CLIENT].ep->fid, &ev, "connect");
	cf_write_all(PEER_OUT, &b, 1);
	for (;;)
		pause();
	return 0;
}

/*
 * The connected peer's process is SIGKILLed while we have receives posted
 * and sends of 1 MiB under way that it never takes: within 2 s of waitpid
 * our EQ has FI_SHUTDOWN for the endpoint, every receive completes in
 * error (as many errors as receives posted), every send not yet done
 * completes in error (none successfully), once each; then the endpoint
 * closes within 2 s.
 */
static int case_cm_peer_killed(const char *prov)
{
	struct fi_context2 rctx[KILL_NRECV], sctx[KILL_NSEND];
	bool rdone[KILL_NRECV] = {0}, sdone[KILL_NSEND] = {0};
	int nrerr = 0, nserr = 0, nsok = 0, nbefore = 0, nrefused = 0, i;
	uint32_t len, delay;
	struct peer_link l;
	struct cf_mem rm, sm;
	struct cm_fix cm;
	struct cm_ev ev;
	struct cf_comp c;
	uint64_t t0;
	bool shut = false;
	int status;
	char b;

	cm_open(&cm, prov, 0, 0);
	cm_listen(&cm);
	cf_spawn_peer("cm_victim", &l);
	len = (uint32_t)cm.pnamelen;
	cf_write_all(l.wfd, &len, sizeof(len));
	cf_write_all(l.wfd, cm.pname, len);
	cm_accept_next(&cm, "the peer process's connect");
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);

	cf_mem_reg(&cm.f, CM_SERVER, &rm, KILL_NRECV * 4096, FI_RECV);
	cf_mem_reg(&cm.f, CM_SERVER, &sm, KILL_SEND_LEN, FI_SEND);
	cf_fill(sm.p, KILL_SEND_LEN, 9);
	for (i = 0; i < KILL_NRECV; i++)
		cf_post(&cm.f, fi_recv(cm.f.ep[CM_SERVER].ep, rm.p + i * 4096,
				       4096, rm.desc, 0, &rctx[i]));
	for (i = 0; i < KILL_NSEND; i++) {
		uint64_t end = cf_now_ms() + CF_WAIT_MS;
		ssize_t ret;

		while ((ret = fi_send(cm.f.ep[CM_SERVER].ep, sm.p,
				      KILL_SEND_LEN, sm.desc, 0,
				      &sctx[i])) == -FI_EAGAIN &&
		       cf_now_ms() < end)
			cf_progress(&cm.f);
		/* Over iWARP a send the peer has no receive for ends the
		 * connection (below): a later post is refused, and the
		 * error names that end. */
		if (ret && cf_iwarp(&cm.f) &&
		    (ret == -FI_ECONNRESET || ret == -FI_ENOTCONN ||
		     ret == -FI_ESHUTDOWN || ret == -FI_ECONNABORTED)) {
			sdone[i] = true;
			nserr++;
			nrefused++;
			continue;
		}
		cf_assert(!ret, "fi_send %d: %zd (%s)", i, ret,
			  fi_strerror((int)-ret));
	}
	/* Let some of it go out, then kill at a moment of our choosing. */
	delay = (uint32_t)(cf_now_ms() % 50);
	for (t0 = cf_now_ms(); cf_now_ms() - t0 < delay;)
		cm_pump(&cm);
	cf_progress(&cm.f);
	/* Over iWARP a send the peer has no receive for breaks the
	 * connection (no RNR retry): errors may come before the kill. */
	for (i = 0; i < (int)cm.f.ep[CM_SERVER].q.n; i++)
		if (cm.f.ep[CM_SERVER].q.v[i].err)
			nbefore++;
	if (nbefore)
		cf_note("%d completion(s) in error before the kill", nbefore);
	if (nrefused)
		cf_note("%d send(s) refused at the post: the connection had "
			"ended", nrefused);
	cf_assert(!kill(l.pid, SIGKILL), "kill: %s", strerror(errno));
	status = cf_reap(&l, CF_WAIT_MS);
	t0 = cf_now_ms();
	cf_assert(WIFSIGNALED(status), "the peer ended with status 0x%x",
		  status);

	while (!shut || nrerr < KILL_NRECV || nserr + nsok < KILL_NSEND) {
		cf_assert(cf_now_ms() - t0 <= KILL_MSG_BOUND_MS,
			  "%d ms after the peer died: FI_SHUTDOWN %s, %d of %d "
			  "receives and %d of %d sends completed",
			  KILL_MSG_BOUND_MS, shut ? "seen" : "not seen", nrerr,
			  KILL_NRECV, nserr + nsok, KILL_NSEND);
		if (!shut && cm_poll(&cm, CM_SERVER, &ev, 0)) {
			cf_assert(ev.ret != -FI_EAVAIL && ev.event == FI_SHUTDOWN,
				  "EQ: %s (err %d) instead of FI_SHUTDOWN",
				  ev.ret == -FI_EAVAIL ? "an error entry"
						       : cm_event_str(ev.event),
				  ev.ret == -FI_EAVAIL ? ev.err.err : 0);
			cf_assert(cm_entry(&ev)->fid ==
				      &cm.f.ep[CM_SERVER].ep->fid,
				  "FI_SHUTDOWN for another fid");
			cf_note("FI_SHUTDOWN %llu ms after waitpid",
				(unsigned long long)(cf_now_ms() - t0));
			shut = true;
		}
		if (!cf_poll(&cm.f, CM_SERVER, &c, 0))
			continue;
		for (i = 0; i < KILL_NRECV && c.ctx != &rctx[i]; i++)
			;
		if (i < KILL_NRECV) {
			cf_assert(!rdone[i], "receive %d completed twice", i);
			cf_assert(c.err, "receive %d completed successfully "
					 "(%zu bytes) from a peer that sent "
					 "nothing",
				  i, c.len);
			rdone[i] = true;
			nrerr++;
			continue;
		}
		for (i = 0; i < KILL_NSEND && c.ctx != &sctx[i]; i++)
			;
		cf_assert(i < KILL_NSEND, "a completion of nothing posted");
		cf_assert(!sdone[i], "send %d completed twice", i);
		sdone[i] = true;
		if (c.err) {
			nserr++;
		} else {
			/* Sends go out in order: none after a failed one. */
			cf_assert(!nserr, "send %d completed successfully "
					  "after an earlier one failed",
				  i);
			nsok++;
		}
	}
	cf_note("%d receives flushed (all posted), %d sends in error, %d "
		"written out before the kill, all within %llu ms of waitpid",
		nrerr, nserr, nsok, (unsigned long long)(cf_now_ms() - t0));
	cf_assert(nserr > 0, "no send ended in error: none was under way at "
			     "the kill");
	cf_expect_none(&cm.f, CM_SERVER, 50);
	cf_mem_close(&rm);
	cf_mem_close(&sm);
	cm_ep_close(&cm, CM_SERVER);
	cf_mem_free(&rm);
	cf_mem_free(&sm);
	cm_close(&cm);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

/*
 * An address of the endpoint's family on its host (loopback) with a port
 * that is bound here then closed, or left listening (fd returned) but
 * never accepted.  Skips if the provider's addresses are not sockets.
 */
static int cm_port(struct cm_fix *cm, struct sockaddr_storage *ss,
		   socklen_t *sl, bool listening)
{
	const struct sockaddr *src = cm->f.info->src_addr;
	int fd;

	if (!src || !cf_is_sockaddr(cm->f.info->addr_format) ||
	    (src->sa_family != AF_INET && src->sa_family != AF_INET6))
		cf_skip("addr_format %u: not a socket address",
			cm->f.info->addr_format);
	memset(ss, 0, sizeof(*ss));
	*sl = src->sa_family == AF_INET ? sizeof(struct sockaddr_in)
					: sizeof(struct sockaddr_in6);
	memcpy(ss, src, *sl);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = 0;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = 0;
	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cf_assert(fd >= 0, "socket: %s", strerror(errno));
	cf_assert(!bind(fd, (struct sockaddr *)ss, *sl), "bind: %s",
		  strerror(errno));
	cf_assert(!getsockname(fd, (struct sockaddr *)ss, sl),
		  "getsockname: %s", strerror(errno));
	if (listening) {
		cf_assert(!listen(fd, 4), "listen: %s", strerror(errno));
		return fd;
	}
	close(fd);
	return -1;
}

/*
 * fi_connect to a port nobody listens on: either fi_connect fails with
 * -FI_ECONNREFUSED or an error entry for the endpoint, FI_ECONNREFUSED,
 * arrives on its EQ within CM_EVENT_MS.
 */
static int case_cm_refused(const char *prov)
{
	struct sockaddr_storage ss;
	struct cm_fix cm;
	struct cm_ev ev;
	socklen_t sl;
	uint64_t t0;
	char buf[256];
	fid_t cfid;
	int ret;

	cm_open(&cm, prov, 0, 0);
	cm_port(&cm, &ss, &sl, false);
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	cfid = &cm.f.ep[CM_CLIENT].ep->fid;
	t0 = cf_now_ms();
	ret = fi_connect(cm.f.ep[CM_CLIENT].ep, &ss, NULL, 0);
	if (ret) {
		cf_assert(ret == -FI_ECONNREFUSED,
			  "fi_connect to a closed port: %d (%s)", ret,
			  fi_strerror(-ret));
		cf_note("fi_connect itself returned -FI_ECONNREFUSED");
		goto out;
	}
	cf_mark("waiting for the refusal");
	cf_assert(cm_poll(&cm, CM_CLIENT, &ev, CM_EVENT_MS),
		  "connect to a closed port: no event within %d ms",
		  CM_EVENT_MS);
	cf_assert(ev.ret == -FI_EAVAIL,
		  "connect to a closed port: event %s, not an error",
		  cm_event_str(ev.event));
	cf_expect(ev.err.fid == cfid, "error entry names fid %p, want %p",
		  (void *)ev.err.fid, (void *)cfid);
	cf_expect(ev.err.err == FI_ECONNREFUSED,
		  "connect to a closed port: err %d (%s), want "
		  "FI_ECONNREFUSED; prov_errno %d (%s)",
		  ev.err.err, fi_strerror(ev.err.err), ev.err.prov_errno,
		  fi_eq_strerror(cm.eq[CM_CLIENT], ev.err.prov_errno, NULL, buf,
				 sizeof(buf)));
	cf_note("refused after %llu ms",
		(unsigned long long)(cf_now_ms() - t0));
	cf_expect(!cm_poll(&cm, CM_CLIENT, &ev, 50),
		  "a second event after the refusal");
out:
	cm_close(&cm);
	return 0;
}

/*
 * A connection nobody answers: (1) a TCP listener that never accepts,
 * (2) a passive endpoint whose FI_CONNREQ is never accepted nor rejected.
 * The client sees no FI_CONNECTED for CM_NO_ANSWER_MS (an error entry is
 * allowed and reported), and fi_close of the pending endpoint returns
 * within CM_CLOSE_MS.  Then the unanswered request can still be rejected
 * or dropped without hanging.
 */
static int case_cm_no_answer(const char *prov)
{
	struct sockaddr_storage ss;
	struct fi_info *req;
	struct cm_fix cm;
	struct cm_ev ev;
	socklen_t sl;
	uint64_t took;
	int fd, ret;

	cm_open(&cm, prov, 0, 0);
	fd = cm_port(&cm, &ss, &sl, true);
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, &ss, NULL, 0));
	cf_mark("waiting on a connection nobody answers");
	if (cm_poll(&cm, CM_CLIENT, &ev, CM_NO_ANSWER_MS)) {
		cf_assert(ev.ret == -FI_EAVAIL,
			  "silent TCP listener: event %s on the client",
			  cm_event_str(ev.event));
		cf_note("silent TCP listener: error %d (%s) on the client",
			ev.err.err, fi_strerror(ev.err.err));
	}
	took = cm_ep_close(&cm, CM_CLIENT);
	cf_note("silent TCP listener: pending endpoint closed in %llu ms",
		(unsigned long long)took);
	close(fd);

	cm_listen(&cm);
	cm_ep_open(&cm, CM_CLIENT, cm.f.info);
	cf_ok(fi_connect(cm.f.ep[CM_CLIENT].ep, cm.pname, NULL, 0));
	cm_expect_event(&cm, CM_SERVER, FI_CONNREQ, &cm.pep->fid, &ev,
			"fi_connect");
	req = cm_entry(&ev)->info;
	cf_assert(req && req->handle, "FI_CONNREQ without info or handle");
	cf_mark("waiting on a request nobody answers");
	if (cm_poll(&cm, CM_CLIENT, &ev, CM_NO_ANSWER_MS)) {
		cf_assert(ev.ret == -FI_EAVAIL,
			  "unanswered FI_CONNREQ: event %s on the client",
			  cm_event_str(ev.event));
		cf_note("unanswered FI_CONNREQ: error %d (%s) on the client",
			ev.err.err, fi_strerror(ev.err.err));
	}
	took = cm_ep_close(&cm, CM_CLIENT);
	cf_note("unanswered FI_CONNREQ: pending endpoint closed in %llu ms",
		(unsigned long long)took);
	/* The request outlived its client: rejecting it must not hang. */
	cf_mark("fi_reject of a request whose client is gone");
	ret = fi_reject(cm.pep, req->handle, NULL, 0);
	if (ret)
		cf_note("fi_reject of a request whose client is gone: %d (%s)",
			ret, fi_strerror(-ret));
	fi_freeinfo(req);
	cm_pump(&cm);
	cm.nq[CM_SERVER] = cm.nq[CM_CLIENT] = 0;
	cm_close(&cm);
	return 0;
}

/*
 * RMA over a connection: fi_writedata raises FI_REMOTE_WRITE|
 * FI_REMOTE_CQ_DATA with the data at the target, the bytes in place (when
 * the domain has remote CQ data); then fi_write and fi_read at 1 B to
 * 1 MiB, data and guard bytes checked.
 */
static int case_cm_rma(const char *prov)
{
	static const size_t sizes[] = {1, 4097, 1 << 20};
	const uint64_t lacc = FI_READ | FI_WRITE;
	const uint64_t racc = FI_REMOTE_READ | FI_REMOTE_WRITE;
	struct fi_context2 ctx, rctx;
	struct cf_mem lm, tm, rm;
	struct cf_comp c;
	struct cm_fix cm;
	uint64_t mask, end;
	bool rx_cq_data;
	size_t cqd, i, g, len;
	char what[64];

	/*
	 * fi_getinfo(3): FI_RX_CQ_DATA is a mode an application may support;
	 * a provider that needs it (remote CQ data consumes a posted receive,
	 * as on verbs) says so in the info it returns.
	 */
	cm_open(&cm, prov, FI_MSG | FI_RMA, FI_RX_CQ_DATA);
	rx_cq_data = ((cm.f.info->mode | cm.f.info->rx_attr->mode) &
		      FI_RX_CQ_DATA) != 0;
	cqd = cm.f.info->domain_attr->cq_data_size;
	mask = cqd >= 8 ? ~0ULL : (1ULL << (8 * cqd)) - 1;
	cm_connect_pair(&cm);
	cf_mem_reg(&cm.f, CM_CLIENT, &lm, (1 << 20) + GUARD, lacc);
	cf_mem_reg(&cm.f, CM_SERVER, &tm, (1 << 20) + 2 * GUARD, racc);
	if (!cqd) {
		/* fi_domain(3): no remote CQ data (iWARP verbs). */
		cf_note("cq_data_size is 0: fi_writedata not tried");
		rx_cq_data = false;
		goto plain;
	}

	memset(tm.p, GUARD_BYTE, (1 << 20) + 2 * GUARD);
	cf_fill(lm.p, 70000, 41);
	if (rx_cq_data) {
		/* The receive the immediate data is delivered through. */
		cf_mem_reg(&cm.f, CM_SERVER, &rm, 64, FI_RECV);
		cf_post(&cm.f, fi_recv(cm.f.ep[CM_SERVER].ep, rm.p, 64,
				       rm.desc, 0, &rctx));
	}
	cf_post(&cm.f, fi_writedata(cm.f.ep[CM_CLIENT].ep, lm.p, 70000, lm.desc,
				    0xc0ffee1234ULL, 0, tm.raddr + GUARD,
				    tm.key, &ctx));
	c = cf_wait_ctx(&cm.f, CM_CLIENT, &ctx);
	cf_assert(!c.err, "fi_writedata: error %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_check_flags(&c, FI_RMA | FI_WRITE, "fi_writedata initiator");
	c = cf_wait(&cm.f, CM_SERVER);
	cf_assert(!c.err, "fi_writedata target: error %d (%s)", c.err,
		  fi_strerror(c.err));
	cf_check_flags(&c, FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		       "fi_writedata target");
	if (rx_cq_data) {
		cf_expect(c.ctx == &rctx,
			  "fi_writedata target: context %p, not the consumed "
			  "receive's %p",
			  c.ctx, (void *)&rctx);
		cf_note("FI_RX_CQ_DATA: the data came through a receive");
	}
	/* fi_cq(3): FI_RMA goes with FI_REMOTE_WRITE, as in rma_writedata. */
	cf_expect(c.flags & FI_RMA, "fi_writedata target: no FI_RMA flag");
	cf_assert(c.data == (0xc0ffee1234ULL & mask),
		  "fi_writedata target data 0x%llx",
		  (unsigned long long)c.data);
	cf_check_fill(tm.p + GUARD, 70000, 41, "fi_writedata target");
	check_guard(tm.p + GUARD, 70000, "fi_writedata target");

plain:

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		len = sizes[i];
		snprintf(what, sizeof(what), "fi_write of %zu bytes", len);
		memset(tm.p, GUARD_BYTE, (1 << 20) + 2 * GUARD);
		cf_fill(lm.p, len, 42 + (unsigned)i);
		cf_post(&cm.f,
			fi_write(cm.f.ep[CM_CLIENT].ep, lm.p, len, lm.desc, 0,
				 tm.raddr + GUARD, tm.key, &ctx));
		c = cf_wait_ctx(&cm.f, CM_CLIENT, &ctx);
		cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
			  fi_strerror(c.err));
		cf_check_flags(&c, FI_RMA | FI_WRITE, what);
		/* Transmit-complete only: poll the target with progress. */
		end = cf_now_ms() + CF_WAIT_MS;
		for (;;) {
			uint8_t *want = malloc(len);
			bool same;

			cf_assert(want, "out of memory");
			cf_fill(want, len, 42 + (unsigned)i);
			same = !memcmp(tm.p + GUARD, want, len);
			free(want);
			if (same || cf_now_ms() > end)
				break;
			cf_progress(&cm.f);
		}
		cf_check_fill(tm.p + GUARD, len, 42 + (unsigned)i, what);
		check_guard(tm.p + GUARD, len, what);
		for (g = 0; g < GUARD; g++)
			cf_assert(tm.p[g] == GUARD_BYTE,
				  "%s: wrote before the target", what);

		snprintf(what, sizeof(what), "fi_read of %zu bytes", len);
		cf_fill(tm.p + GUARD, len, 52 + (unsigned)i);
		memset(lm.p, GUARD_BYTE, len + GUARD);
		cf_post(&cm.f,
			fi_read(cm.f.ep[CM_CLIENT].ep, lm.p, len, lm.desc, 0,
				tm.raddr + GUARD, tm.key, &ctx));
		c = cf_wait_ctx(&cm.f, CM_CLIENT, &ctx);
		cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
			  fi_strerror(c.err));
		cf_check_flags(&c, FI_RMA | FI_READ, what);
		cf_check_fill(lm.p, len, 52 + (unsigned)i, what);
		check_guard(lm.p, len, what);
	}
	/* Plain writes and reads complete nothing at the target. */
	cf_expect_none(&cm.f, CM_SERVER, 50);
	cf_expect_none(&cm.f, CM_CLIENT, 0);
	cf_mem_free(&lm);
	cf_mem_free(&tm);
	if (rx_cq_data)
		cf_mem_free(&rm);
	cm_close(&cm);
	return 0;
}

/*
 * The target closes its registration while a large write into it is still
 * arriving (tcp reads the payload into the registration over many
 * progress calls; a device places it on its own): once fi_close returns,
 * not one byte of the region changes, and the write completes once, in
 * error or (had it all landed first) not.  One process drives both sides,
 * so the close falls between two progress calls, after the first byte
 * landed and, when the window is caught, before the last.
 */
static int case_cm_rma_mr_close(const char *prov)
{
	const size_t len = 16 << 20;
	struct fi_context2 ctx;
	struct cf_mem lm, tm;
	struct cf_comp c;
	struct cm_fix cm;
	uint64_t end;
	uint8_t *snap;
	bool partial;
	int round, caught = 0;

	cm_open(&cm, prov, FI_MSG | FI_RMA, 0);
	cm_connect_pair(&cm);
	cf_mem_reg(&cm.f, CM_CLIENT, &lm, len, FI_WRITE);
	memset(lm.p, 0xa5, len);
	snap = malloc(len);
	cf_assert(snap, "out of memory");
	for (round = 0; round < 4; round++) {
		cf_mem_reg(&cm.f, CM_SERVER, &tm, len, FI_REMOTE_WRITE);
		memset(tm.p, 0, len);
		cf_post(&cm.f, fi_write(cm.f.ep[CM_CLIENT].ep, lm.p, len,
					lm.desc, 0, tm.raddr, tm.key, &ctx));
		end = cf_now_ms() + CF_WAIT_MS;
		while (((volatile uint8_t *)tm.p)[0] != 0xa5) {
			cf_assert(cf_now_ms() < end,
				  "round %d: nothing of the write landed in %d "
				  "ms",
				  round, CF_WAIT_MS);
			cf_progress(&cm.f);
		}
		partial = ((volatile uint8_t *)tm.p)[len - 1] != 0xa5;
		cf_mem_close(&tm);
		memcpy(snap, tm.p, len);
		c = cf_wait_ctx(&cm.f, CM_CLIENT, &ctx);
		if (partial)
			caught++;
		cf_note("round %d: closed %s the write landed; it completed "
			"with %d (%s)",
			round, partial ? "before" : "after", c.err,
			fi_strerror(c.err));
		/* Everything still under way has had its chance. */
		end = cf_now_ms() + 100;
		while (cf_now_ms() < end)
			cf_progress(&cm.f);
		cf_expect_none(&cm.f, CM_CLIENT, 0);
		cf_assert(!memcmp(snap, tm.p, len),
			  "round %d: the region changed after fi_close of its "
			  "MR returned",
			  round);
		free(tm.p);
		if (c.err) {
			/* The connection may not survive that (verbs). */
			cf_mem_free(&lm);
			cm_close(&cm);
			cm_open(&cm, prov, FI_MSG | FI_RMA, 0);
			cm_connect_pair(&cm);
			cf_mem_reg(&cm.f, CM_CLIENT, &lm, len, FI_WRITE);
			memset(lm.p, 0xa5, len);
		}
	}
	if (!caught)
		cf_note("the write always landed whole before the close: "
			"the window was not met");
	free(snap);
	cf_mem_free(&lm);
	cm_close(&cm);
	return 0;
}

/*
 * A listener whose EQ holds 4 entries gets 8 connection requests before it
 * is read: 8 FI_CONNREQ events, or an FI_EOVERRUN error for those it could
 * not keep (fi_eq(3)); fewer without that is a silent loss.  Each request
 * is rejected, and every client gets its FI_ECONNREFUSED exactly once.
 */
#define CM_OVR_N 8

static int case_cm_eq_overrun(const char *prov)
{
	struct fi_eq_attr small = {.size = 4, .wait_obj = FI_WAIT_UNSPEC};
	uint64_t raw[(sizeof(struct fi_eq_cm_entry) + CM_DATA_MAX) / 8 + 1];
	struct fi_eq_cm_entry *entry = (struct fi_eq_cm_entry *)raw;
	int nreq = 0, overruns = 0, refused = 0, seen[CM_OVR_N] = {0};
	struct fid_ep *cl[CM_OVR_N];
	struct fi_eq_err_entry err;
	struct fid_eq *leq;
	struct cm_fix cm;
	uint32_t event;
	uint64_t end;
	ssize_t n;
	int i, k;

	cm_open(&cm, prov, 0, 0);
	cf_ok(fi_eq_open(cm.f.fabric, &small, &leq, NULL));
	cf_ok(fi_passive_ep(cm.f.fabric, cm.f.info, &cm.pep, NULL));
	cf_ok(fi_pep_bind(cm.pep, &leq->fid, 0));
	cf_ok(fi_listen(cm.pep));
	cm.pnamelen = sizeof(cm.pname);
	cf_ok(fi_getname(&cm.pep->fid, cm.pname, &cm.pnamelen));
	for (i = 0; i < CM_OVR_N; i++) {
		cf_ok(fi_endpoint(cm.f.domain, cm.f.info, &cl[i], NULL));
		cf_ok(fi_ep_bind(cl[i], &cm.eq[CM_CLIENT]->fid, 0));
		cf_ok(fi_ep_bind(cl[i], &cm.f.ep[CM_CLIENT].cq->fid,
				 FI_TRANSMIT | FI_RECV));
		cf_ok(fi_enable(cl[i]));
		cf_ok(fi_connect(cl[i], cm.pname, NULL, 0));
	}
	/* The requests arrive while only the clients' side is read. */
	end = cf_now_ms() + 300;
	while (cf_now_ms() < end) {
		n = fi_eq_read(cm.eq[CM_CLIENT], &event, raw, sizeof(raw),
			       FI_PEEK);
		cf_assert(n == -FI_EAGAIN, "a client event before any answer: "
					   "%zd",
			  n);
		cf_progress(&cm.f);
	}
	end = cf_now_ms() + CM_EVENT_MS;
	while (nreq < CM_OVR_N && cf_now_ms() < end) {
		cf_mark("fi_eq_read of the listener's EQ");
		n = fi_eq_read(leq, &event, raw, sizeof(raw), 0);
		if (n == -FI_EAGAIN) {
			cf_progress(&cm.f);
			continue;
		}
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			cf_assert(fi_eq_readerr(leq, &err, 0) > 0,
				  "fi_eq_readerr after -FI_EAVAIL");
			cf_assert(err.err == FI_EOVERRUN,
				  "listener EQ error %d (%s)", err.err,
				  fi_strerror(err.err));
			overruns++;
			continue;
		}
		cf_assert(n >= (ssize_t)sizeof(*entry) && event == FI_CONNREQ,
			  "listener EQ: %zd bytes, event %s", n,
			  cm_event_str(event));
		cf_assert(entry->info && entry->info->handle,
			  "FI_CONNREQ without info or handle");
		cf_ok(fi_reject(cm.pep, entry->info->handle, NULL, 0));
		fi_freeinfo(entry->info);
		nreq++;
	}
	cf_expect(nreq == CM_OVR_N || overruns,
		  "%d of %d FI_CONNREQ in an EQ of 4, no FI_EOVERRUN", nreq,
		  CM_OVR_N);
	cf_note("%d of %d FI_CONNREQ in an EQ of 4, %d FI_EOVERRUN", nreq,
		CM_OVR_N, overruns);
	/* Every rejected client hears so once. */
	end = cf_now_ms() + CM_EVENT_MS;
	while (refused < nreq && cf_now_ms() < end) {
		n = fi_eq_read(cm.eq[CM_CLIENT], &event, raw, sizeof(raw), 0);
		if (n == -FI_EAGAIN) {
			cf_progress(&cm.f);
			continue;
		}
		cf_assert(n == -FI_EAVAIL, "client event %s instead of a "
					   "rejection",
			  cm_event_str(event));
		memset(&err, 0, sizeof(err));
		cf_assert(fi_eq_readerr(cm.eq[CM_CLIENT], &err, 0) > 0,
			  "fi_eq_readerr after -FI_EAVAIL");
		cf_expect(err.err == FI_ECONNREFUSED,
			  "rejection: err %d (%s)", err.err,
			  fi_strerror(err.err));
		for (k = 0; k < CM_OVR_N && err.fid != &cl[k]->fid; k++)
			;
		cf_assert(k < CM_OVR_N, "rejection for an unknown fid");
		cf_expect(!seen[k]++, "client %d rejected twice", k);
		refused++;
	}
	cf_expect(refused == nreq, "%d of %d rejected clients told so",
		  refused, nreq);
	for (i = 0; i < CM_OVR_N; i++)
		cf_ok(fi_close(&cl[i]->fid));
	cf_ok(fi_close(&cm.pep->fid));
	cm.pep = NULL;
	cf_ok(fi_close(&leq->fid));
	cm_close(&cm);
	return 0;
}

/*
 * Reads, writes and sends mixed on one connection, each asking for a
 * completion (siw completes a send or a write once TCP took it, before
 * the answer to a read posted earlier has come back, so its send queue
 * finishes out of order).  cm_mix_post posts them from the client, with
 * the server's receives first; cm_mix_take harvests the client's
 * completions, each exactly once.
 */
#define CM_MIX_N 96
#define CM_MIX_SMALL 64
#define CM_MIX_KIND(i) ((i) % 3) /* 0 read, 1 write, 2 send */

struct cm_mix {
	size_t big; /* bytes of each read and write */
	struct cf_mem lm, tm, sm, rm;
	struct fi_context2 ctx[CM_MIX_N], rctx[CM_MIX_N];
	int done[CM_MIX_N];
	int nrecv;
};

static void cm_mix_post(struct cm_fix *cm, struct cm_mix *x, size_t big)
{
	struct fid_ep *ep = cm->f.ep[CM_CLIENT].ep;
	size_t off;
	int i;

	memset(x, 0, sizeof(*x));
	x->big = big;
	cf_mem_reg(&cm->f, CM_CLIENT, &x->lm, (size_t)CM_MIX_N * x->big,
		   FI_READ | FI_WRITE);
	cf_mem_reg(&cm->f, CM_SERVER, &x->tm, (size_t)CM_MIX_N * x->big,
		   FI_REMOTE_READ | FI_REMOTE_WRITE);
	cf_mem_reg(&cm->f, CM_CLIENT, &x->sm, (size_t)CM_MIX_N * CM_MIX_SMALL,
		   FI_SEND);
	cf_mem_reg(&cm->f, CM_SERVER, &x->rm, (size_t)CM_MIX_N * CM_MIX_SMALL,
		   FI_RECV);
	for (i = 0; i < CM_MIX_N; i++) {
		uint8_t *l = x->lm.p + (size_t)i * x->big;
		uint8_t *t = x->tm.p + (size_t)i * x->big;

		switch (CM_MIX_KIND(i)) {
		case 0: /* read: the target's bytes into ours */
			cf_fill(t, x->big, 100 + (unsigned)i);
			memset(l, 0, x->big);
			break;
		case 1: /* write: ours into the target's */
			cf_fill(l, x->big, 100 + (unsigned)i);
			memset(t, 0, x->big);
			break;
		default: /* send */
			cf_fill(x->sm.p + (size_t)i * CM_MIX_SMALL,
				CM_MIX_SMALL, 100 + (unsigned)i);
			cf_post(&cm->f,
				fi_recv(cm->f.ep[CM_SERVER].ep,
					x->rm.p + (size_t)i * CM_MIX_SMALL,
					CM_MIX_SMALL, x->rm.desc, 0,
					&x->rctx[i]));
			x->nrecv++;
			break;
		}
	}
	for (i = 0; i < CM_MIX_N; i++) {
		off = (size_t)i * x->big;
		switch (CM_MIX_KIND(i)) {
		case 0:
			cf_post(&cm->f, fi_read(ep, x->lm.p + off, x->big,
						x->lm.desc, 0,
						x->tm.raddr + off, x->tm.key,
						&x->ctx[i]));
			break;
		case 1:
			cf_post(&cm->f, fi_write(ep, x->lm.p + off, x->big,
						 x->lm.desc, 0,
						 x->tm.raddr + off, x->tm.key,
						 &x->ctx[i]));
			break;
		default:
			cf_post(&cm->f,
				fi_send(ep, x->sm.p + (size_t)i * CM_MIX_SMALL,
					CM_MIX_SMALL, x->sm.desc, 0,
					&x->ctx[i]));
			break;
		}
	}
}

/*
 * Every transmit's completion within ms, in whatever order they come,
 * none twice, none naming something never posted.  errors_ok: the peer
 * left, so an error completion is allowed (a success still has its data
 * in place).  Returns how many completed in error.
 */
static int cm_mix_take(struct cm_fix *cm, struct cm_mix *x, bool errors_ok,
		       int ms)
{
	uint64_t end = cf_now_ms() + (uint64_t)ms;
	struct cf_comp c;
	int i, j, nerr = 0;
	char what[64];

	for (j = 0; j < CM_MIX_N; j++) {
		cf_assert(cf_poll(&cm->f, CM_CLIENT, &c,
				  (int)(end > cf_now_ms() ? end - cf_now_ms()
							  : 0)),
			  "%d of %d transmits completed within %d ms", j,
			  CM_MIX_N, ms);
		i = (int)((struct fi_context2 *)c.ctx - x->ctx);
		cf_assert(i >= 0 && i < CM_MIX_N,
			  "a completion with a context never posted (%p)",
			  c.ctx);
		cf_assert(!x->done[i], "transmit %d completed twice", i);
		x->done[i] = 1;
		snprintf(what, sizeof(what), "transmit %d (%s)", i,
			 CM_MIX_KIND(i) == 0   ? "read"
			 : CM_MIX_KIND(i) == 1 ? "write"
					       : "send");
		if (c.err) {
			cf_assert(errors_ok, "%s: error %d (%s)", what, c.err,
				  fi_strerror(c.err));
			nerr++;
			continue;
		}
		cf_check_flags(&c, CM_MIX_KIND(i) == 0	 ? FI_RMA | FI_READ
				   : CM_MIX_KIND(i) == 1 ? FI_RMA | FI_WRITE
							 : FI_MSG | FI_SEND,
			       what);
		if (CM_MIX_KIND(i) == 0)
			cf_check_fill(x->lm.p + (size_t)i * x->big,
				      x->big, 100 + (unsigned)i, what);
	}
	cf_expect_none(&cm->f, CM_CLIENT, 100);
	return nerr;
}

static void cm_mix_free(struct cm_mix *x)
{
	cf_mem_free(&x->lm);
	cf_mem_free(&x->tm);
	cf_mem_free(&x->sm);
	cf_mem_free(&x->rm);
}

/* All of them complete, successfully, with their data in place. */
static int case_cm_mixed_completions(const char *prov)
{
	static struct cm_mix x;
	struct cf_comp c;
	struct cm_fix cm;
	int i, j;
	char what[64];
	uint64_t end;

	cm_open(&cm, prov, FI_MSG | FI_RMA, 0);
	cm_connect_pair(&cm);
	cm_mix_post(&cm, &x, 64 * 1024);
	cm_mix_take(&cm, &x, false, CF_WAIT_MS);
	for (j = 0; j < x.nrecv; j++) {
		c = cf_wait(&cm.f, CM_SERVER);
		i = (int)((struct fi_context2 *)c.ctx - x.rctx);
		cf_assert(i >= 0 && i < CM_MIX_N && CM_MIX_KIND(i) == 2,
			  "a receive completion with a context never posted");
		cf_assert(!c.err, "receive %d: error %d (%s)", i, c.err,
			  fi_strerror(c.err));
		cf_check_fill(x.rm.p + (size_t)i * CM_MIX_SMALL, CM_MIX_SMALL,
			      100 + (unsigned)i, "receive");
	}
	/* A completed write has reached the target (transmit complete;
	 * with the target's progress, as in cm_rma). */
	for (i = 1; i < CM_MIX_N; i += 3) {
		uint8_t *t = x.tm.p + (size_t)i * x.big;
		uint8_t *want = malloc(x.big);

		cf_assert(want, "out of memory");
		cf_fill(want, x.big, 100 + (unsigned)i);
		end = cf_now_ms() + CF_WAIT_MS;
		while (memcmp(t, want, x.big) && cf_now_ms() < end)
			cf_progress(&cm.f);
		free(want);
		snprintf(what, sizeof(what), "write %d at the target", i);
		cf_check_fill(t, x.big, 100 + (unsigned)i, what);
	}
	cf_expect_none(&cm.f, CM_SERVER, 50);
	cm_mix_free(&x);
	cm_close(&cm);
	return 0;
}

/*
 * The same mix, and the peer closes its endpoint while they are under
 * way (some sends done, reads still waiting for their answers): the
 * connection ends with FI_SHUTDOWN, and every transmit still completes
 * exactly once within 2 s, in error or (if it finished first)
 * successfully with its data in place.
 */
static int case_cm_mixed_peer_close(const char *prov)
{
	static struct cm_mix x;
	struct cm_fix cm;
	struct cm_ev ev;
	int nerr;

	cm_open(&cm, prov, FI_MSG | FI_RMA, 0);
	cm_connect_pair(&cm);
	/* Larger, so that a device is still moving them at the close. */
	cm_mix_post(&cm, &x, 256 * 1024);
	/* At once: the posts drove progress when the queue was full, so
	 * some are done, and a device goes on with the rest meanwhile. */
	cm_ep_close(&cm, CM_SERVER);
	cm_expect_event(&cm, CM_CLIENT, FI_SHUTDOWN,
			&cm.f.ep[CM_CLIENT].ep->fid, &ev, "peer's fi_close");
	nerr = cm_mix_take(&cm, &x, true, CM_CLOSE_MS);
	cf_note("%d of %d transmits completed in error once the peer left",
		nerr, CM_MIX_N);
	cm_mix_free(&x);
	cm_close(&cm);
	return 0;
}

/*
 * FI_EP_MSG endpoints on one shared receive context, as an rxm-style
 * client keeps one for all its connections: each accepted endpoint opened
 * from its FI_CONNREQ info with rx_ctx_cnt FI_SHARED_CONTEXT and bound to
 * the context before fi_accept.  Messages from either client, expected
 * or unexpected, land in the context's receives and complete on the CQ
 * of the endpoint they came by; one connection ending does not end the
 * receives the other still feeds.
 */
#define MS_N 2

struct ms {
	struct cm_fix cm;
	struct fid_ep *c[MS_N], *s[MS_N], *srx;
	struct fid_cq *cq[2 * MS_N]; /* clients', then servers' */
};

/* Completions read and not yet claimed. */
struct ms_got {
	struct fi_cq_data_entry c;
	int at, err;
};

static struct ms_got ms_q[32];
static int ms_nq;

/* The completion of ctx on any of the CQs (each once); its CQ's index
 * in *at. */
static struct fi_cq_data_entry ms_wait(struct ms *m, void *ctx, int *at,
				       int *err, const char *what)
{
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	struct fi_cq_data_entry c;
	int i, k;

	for (;;) {
		for (k = 0; k < ms_nq; k++) {
			if (ms_q[k].c.op_context != ctx)
				continue;
			c = ms_q[k].c;
			*at = ms_q[k].at;
			*err = ms_q[k].err;
			ms_q[k] = ms_q[--ms_nq];
			return c;
		}
		cf_assert(cf_now_ms() < end, "%s: no completion within %d ms",
			  what, CF_WAIT_MS);
		for (i = 0; i < 2 * MS_N; i++) {
			ssize_t n = fi_cq_read(m->cq[i], &c, 1);

			if (n == -FI_EAGAIN)
				continue;
			cf_assert(ms_nq < 32, "too many completions");
			if (n == -FI_EAVAIL) {
				struct fi_cq_err_entry e = {0};

				cf_assert(fi_cq_readerr(m->cq[i], &e, 0) == 1,
					  "fi_cq_readerr");
				memset(&c, 0, sizeof(c));
				c.op_context = e.op_context;
				ms_q[ms_nq++] = (struct ms_got){c, i, e.err};
				continue;
			}
			cf_assert(n == 1, "CQ %d: fi_cq_read %zd", i, n);
			ms_q[ms_nq++] = (struct ms_got){c, i, 0};
		}
		cm_pump(&m->cm);
	}
}

/* ctx's completion must be a receive of len bytes on server endpoint s. */
static void ms_recvd(struct ms *m, void *ctx, int s, size_t len,
		     const char *what)
{
	struct fi_cq_data_entry c;
	int at, err;

	c = ms_wait(m, ctx, &at, &err, what);
	cf_assert(!err, "%s: error %d (%s)", what, err, fi_strerror(err));
	cf_expect(at == MS_N + s, "%s: on CQ %d, want the server endpoint "
				  "%d's",
		  what, at, s);
	cf_expect(c.len == len && (c.flags & FI_RECV),
		  "%s: len %zu flags %s", what, c.len, cf_flags_str(c.flags));
}

static void ms_sent(struct ms *m, void *ctx, int cl)
{
	int at, err;

	ms_wait(m, ctx, &at, &err, "a client's send");
	cf_assert(!err && at == cl, "send of client %d: error %d on CQ %d",
		  cl, err, at);
}

/*
 * The context's rules, the same for every provider (fi_endpoint(3)): one
 * context per endpoint, bound to endpoints opened for one; fi_enable of
 * such an endpoint without one fails; an endpoint bound and closed unused
 * lets it go; the context cannot close while endpoints use it; its op
 * flags read back.
 */
static void ms_rules(struct ms *m)
{
	struct fi_info *shared = fi_dupinfo(m->cm.f.info);
	struct fid_ep *ep;
	uint64_t flags;

	cf_assert(shared, "fi_dupinfo");
	shared->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	cf_ok(fi_endpoint(m->cm.f.domain, shared, &ep, NULL));
	cf_ok(fi_ep_bind(ep, &m->srx->fid, 0));
	cf_expect(fi_ep_bind(ep, &m->srx->fid, 0) == -FI_EALREADY,
		  "a second bind of the context to an endpoint");
	cf_ok(fi_close(&ep->fid));
	cf_ok(fi_endpoint(m->cm.f.domain, m->cm.f.info, &ep, NULL));
	cf_expect(fi_ep_bind(ep, &m->srx->fid, 0) == -FI_EINVAL,
		  "a bind to an endpoint not opened with rx_ctx_cnt "
		  "FI_SHARED_CONTEXT");
	cf_ok(fi_close(&ep->fid));
	cf_ok(fi_endpoint(m->cm.f.domain, shared, &ep, NULL));
	cf_ok(fi_ep_bind(ep, &m->cm.eq[CM_CLIENT]->fid, 0));
	cf_ok(fi_ep_bind(ep, &m->cq[0]->fid, FI_TRANSMIT | FI_RECV));
	cf_expect(fi_enable(ep) == -FI_EOPBADSTATE,
		  "fi_enable of an endpoint opened for a shared receive "
		  "context with none bound");
	cf_ok(fi_close(&ep->fid));
	fi_freeinfo(shared);
	cf_expect(fi_close(&m->srx->fid) == -FI_EBUSY,
		  "fi_close of a context endpoints are bound to");
	flags = FI_RECV;
	cf_ok(fi_control(&m->srx->fid, FI_GETOPSFLAG, &flags));
}

static int case_cm_srx(const char *prov)
{
	struct fi_cq_attr cq_attr = {.size = 256, .format = FI_CQ_FORMAT_DATA};
	struct fi_context2 rctx[8], sctx[8];
	uint8_t *sbuf[8], *rbuf[8];
	struct cf_mem sm, rm;
	struct ms m;
	struct cm_ev ev;
	int i;

	memset(&m, 0, sizeof(m));
	cm_open(&m.cm, prov, FI_MSG, 0);
	if (!m.cm.f.info->domain_attr->max_ep_srx_ctx)
		cf_skip("max_ep_srx_ctx 0: no shared receive contexts");
	cm_listen(&m.cm);
	cf_ok(fi_srx_context(m.cm.f.domain, m.cm.f.info->rx_attr, &m.srx,
			     NULL));
	for (i = 0; i < 2 * MS_N; i++)
		cf_ok(fi_cq_open(m.cm.f.domain, &cq_attr, &m.cq[i], NULL));
	for (i = 0; i < MS_N; i++) {
		struct fi_info *req;

		cf_ok(fi_endpoint(m.cm.f.domain, m.cm.f.info, &m.c[i], NULL));
		cf_ok(fi_ep_bind(m.c[i], &m.cm.eq[CM_CLIENT]->fid, 0));
		cf_ok(fi_ep_bind(m.c[i], &m.cq[i]->fid, FI_TRANSMIT | FI_RECV));
		cf_ok(fi_enable(m.c[i]));
		cf_ok(fi_connect(m.c[i], m.cm.pname, NULL, 0));
		cm_expect_event(&m.cm, CM_SERVER, FI_CONNREQ, &m.cm.pep->fid,
				&ev, "connect");
		req = cm_entry(&ev)->info;
		cf_assert(req && req->handle, "FI_CONNREQ without info");
		req->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
		cf_ok(fi_endpoint(m.cm.f.domain, req, &m.s[i], NULL));
		fi_freeinfo(req);
		cf_ok(fi_ep_bind(m.s[i], &m.cm.eq[CM_SERVER]->fid, 0));
		cf_ok(fi_ep_bind(m.s[i], &m.cq[MS_N + i]->fid,
				 FI_TRANSMIT | FI_RECV));
		cf_ok(fi_ep_bind(m.s[i], &m.srx->fid, 0));
		cf_ok(fi_enable(m.s[i]));
		cf_ok(fi_accept(m.s[i], NULL, 0));
		cm_expect_event(&m.cm, CM_SERVER, FI_CONNECTED, &m.s[i]->fid,
				&ev, "accept");
		cm_expect_event(&m.cm, CM_CLIENT, FI_CONNECTED, &m.c[i]->fid,
				&ev, "connect");
	}
	ms_rules(&m);
	/* Registered: verbs receives into (and sends past its inline size
	 * from) registered memory only (FI_MR_LOCAL). */
	cf_mem_reg(&m.cm.f, CM_SERVER, &rm, 8 * 64, FI_RECV);
	cf_mem_reg(&m.cm.f, CM_CLIENT, &sm, 8 * 64, FI_SEND);
	for (i = 0; i < 8; i++) {
		rbuf[i] = rm.p + 64 * i;
		sbuf[i] = sm.p + 64 * i;
		cf_fill(sbuf[i], 64, 0x300 + (unsigned int)i);
	}

	/* Expected: the context's receives take both clients' messages. */
	cf_ok(fi_recv(m.srx, rbuf[0], 64, rm.desc, 0, &rctx[0]));
	cf_ok(fi_recv(m.srx, rbuf[1], 64, rm.desc, 0, &rctx[1]));
	cf_ok(fi_send(m.c[0], sbuf[0], 64, sm.desc, 0, &sctx[0]));
	ms_recvd(&m, &rctx[0], 0, 64, "client 0 to its endpoint");
	cf_ok(fi_send(m.c[1], sbuf[1], 40, sm.desc, 0, &sctx[1]));
	ms_recvd(&m, &rctx[1], 1, 40, "client 1 to its endpoint");
	cf_check_fill(rbuf[0], 64, 0x300, "client 0's message");
	cf_check_fill(rbuf[1], 40, 0x301, "client 1's message");
	ms_sent(&m, &sctx[0], 0);
	ms_sent(&m, &sctx[1], 1);

	/* Unexpected, through the second endpoint (its send may wait for
	 * the receive: verbs retries until one is posted).  Over iWARP a
	 * send that finds no receive ends the connection (no RNR retry;
	 * fi_verbs(7)): the receive goes first there. */
	if (cf_iwarp(&m.cm.f)) {
		cf_note("%s: iWARP: no message before its receive", prov);
		cf_ok(fi_recv(m.srx, rbuf[2], 64, rm.desc, 0, &rctx[2]));
		cf_ok(fi_send(m.c[1], sbuf[2], 48, sm.desc, 0, &sctx[2]));
	} else {
		cf_ok(fi_send(m.c[1], sbuf[2], 48, sm.desc, 0, &sctx[2]));
		for (i = 0; i < 50; i++) {
			struct fi_cq_data_entry c;

			cf_expect(fi_cq_read(m.cq[MS_N + 1], &c, 1) ==
					  -FI_EAGAIN,
				  "a completion on the server before any "
				  "receive");
			cf_sleep_ms(2);
		}
		cf_ok(fi_recv(m.srx, rbuf[2], 64, rm.desc, 0, &rctx[2]));
	}
	ms_recvd(&m, &rctx[2], 1, 48, "client 1's unexpected message");
	cf_check_fill(rbuf[2], 48, 0x302, "client 1's unexpected message");
	ms_sent(&m, &sctx[2], 1);

	/* Client 0 leaves: its endpoint's FI_SHUTDOWN ends no receive of
	 * the context, which client 1 still feeds. */
	cf_ok(fi_recv(m.srx, rbuf[3], 64, rm.desc, 0, &rctx[3]));
	cf_ok(fi_close(&m.c[0]->fid));
	m.c[0] = NULL;
	cm_expect_event(&m.cm, CM_SERVER, FI_SHUTDOWN, &m.s[0]->fid, &ev,
			"client 0's fi_close");
	cf_ok(fi_send(m.c[1], sbuf[3], 64, sm.desc, 0, &sctx[3]));
	ms_recvd(&m, &rctx[3], 1, 64, "client 1 after client 0 left");
	cf_check_fill(rbuf[3], 64, 0x303, "client 1 after client 0 left");
	ms_sent(&m, &sctx[3], 1);

	for (i = 0; i < MS_N; i++) {
		if (m.c[i])
			cf_ok(fi_close(&m.c[i]->fid));
		cf_ok(fi_close(&m.s[i]->fid));
	}
	cf_ok(fi_close(&m.srx->fid));
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	for (i = 0; i < 2 * MS_N; i++)
		cf_ok(fi_close(&m.cq[i]->fid));
	cm_close(&m.cm);
	return 0;
}

/*
 * A connected endpoint whose transmits are counted only (a send counter,
 * no transmit CQ; MPI one-sided layers bind this way): sends that ask for
 * a completion are counted, none fails for want of a CQ, and each arrives.
 */
#define CO_N 4

static int case_cm_cntr_only(const char *prov)
{
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_context2 rctx[CO_N], sctx[CO_N];
	struct cf_ep *cl;
	struct fid_cntr *sc;
	struct cf_mem sm, rm;
	struct cm_fix cm;
	struct cm_ev ev;
	struct cf_comp c;
	uint64_t end;
	int i;

	cm_open(&cm, prov, 0, 0);
	cm_listen(&cm);
	cl = &cm.f.ep[CM_CLIENT];
	cf_ok(fi_cntr_open(cm.f.domain, &ca, &sc, NULL));
	cf_ok(fi_endpoint(cm.f.domain, cm.f.info, &cl->ep, NULL));
	cf_ok(fi_ep_bind(cl->ep, &cm.eq[CM_CLIENT]->fid, 0));
	cf_ok(fi_ep_bind(cl->ep, &cl->cq->fid, FI_RECV));
	cf_ok(fi_ep_bind(cl->ep, &sc->fid, FI_SEND));
	cf_ok(fi_enable(cl->ep));
	cf_ok(fi_connect(cl->ep, cm.pname, NULL, 0));
	cm_accept_next(&cm, "connect");
	cm_expect_event(&cm, CM_CLIENT, FI_CONNECTED, &cl->ep->fid, &ev,
			"connect");

	cf_mem_reg(&cm.f, CM_CLIENT, &sm, CO_N * 64, FI_SEND);
	cf_mem_reg(&cm.f, CM_SERVER, &rm, CO_N * 64, FI_RECV);
	for (i = 0; i < CO_N; i++) {
		cf_fill(sm.p + 64 * i, 64, 0x500 + (unsigned int)i);
		cf_post(&cm.f, fi_recv(cm.f.ep[CM_SERVER].ep, rm.p + 64 * i,
				       64, rm.desc, 0, &rctx[i]));
	}
	for (i = 0; i < CO_N; i++) {
		struct iovec iov = {sm.p + 64 * i, 64};
		void *desc = sm.desc;
		struct fi_msg msg = {.msg_iov = &iov, .desc = &desc,
				     .iov_count = 1, .context = &sctx[i]};

		/* Plain, and asking for the completion outright. */
		if (i & 1)
			cf_post(&cm.f, fi_sendmsg(cl->ep, &msg, FI_COMPLETION));
		else
			cf_post(&cm.f, fi_send(cl->ep, iov.iov_base, 64, desc,
					       0, &sctx[i]));
	}
	for (i = 0; i < CO_N; i++) {
		c = cf_wait_ctx(&cm.f, CM_SERVER, &rctx[i]);
		cf_assert(!c.err, "receive %d: error %d (%s)", i, c.err,
			  fi_strerror(c.err));
		cf_check_fill(rm.p + 64 * i, 64, 0x500 + (unsigned int)i,
			      "a counted send's message");
	}
	end = cf_now_ms() + CF_WAIT_MS;
	while (fi_cntr_read(sc) < CO_N && !fi_cntr_readerr(sc) &&
	       cf_now_ms() < end)
		cm_pump(&cm);
	cf_expect(fi_cntr_read(sc) == CO_N && !fi_cntr_readerr(sc),
		  "the send counter reads %llu (%llu errors) after %d sends",
		  (unsigned long long)fi_cntr_read(sc),
		  (unsigned long long)fi_cntr_readerr(sc), CO_N);
	/* Its CQ takes receives only: no send lands there. */
	cf_expect_none(&cm.f, CM_CLIENT, 100);
	cm_ep_close(&cm, CM_CLIENT);
	cf_ok(fi_close(&sc->fid));
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cm_close(&cm);
	return 0;
}

const struct cf_case cf_cases_cm[] = {
    {"cm_cntr_only",
     "FI_EP_MSG: sends of an endpoint with a send counter and no transmit "
     "CQ are counted, whether they ask for a completion or not, and arrive",
     case_cm_cntr_only},
    {"cm_srx",
     "FI_EP_MSG: two accepted endpoints on one shared receive context; "
     "both clients' messages, expected and unexpected, complete on the "
     "endpoint they came by; one client leaving ends no receive",
     case_cm_srx},
    {"cm_connect",
     "FI_EP_MSG: private data in FI_CONNREQ and FI_CONNECTED, messages "
     "both ways, fi_getname/fi_getpeer agree",
     case_cm_connect},
    {"cm_reject",
     "FI_EP_MSG: fi_reject gives FI_ECONNREFUSED with its data; the "
     "listener still accepts",
     case_cm_reject},
    {"cm_pep_api",
     "FI_EP_MSG: a passive endpoint's rules: fi_listen needs an EQ, "
     "fi_setname refused while listening, fi_reject checks its handle "
     "and data, FI_CONNREQ names the client",
     case_cm_pep_api},
    {"cm_shutdown",
     "FI_EP_MSG: fi_shutdown gives the peer FI_SHUTDOWN; no receive "
     "completes successfully; closes are prompt",
     case_cm_shutdown},
    {"cm_peer_close",
     "FI_EP_MSG: fi_close of a connected endpoint gives the peer "
     "FI_SHUTDOWN",
     case_cm_peer_close},
    {"cm_refused",
     "FI_EP_MSG: connect to a closed port: FI_ECONNREFUSED on the EQ "
     "within 5 s",
     case_cm_refused},
    {"cm_no_answer",
     "FI_EP_MSG: connect nobody answers: no FI_CONNECTED, fi_close of "
     "the pending endpoint within 2 s",
     case_cm_no_answer},
    {"cm_eq_overrun",
     "FI_EP_MSG: listener EQ of 4, 8 requests: all FI_CONNREQ or "
     "FI_EOVERRUN; each rejection heard once",
     case_cm_eq_overrun},
    {"cm_source",
     "FI_EP_MSG: FI_SOURCE and FI_DIRECTED_RECV: FI_ADDR_NOTAVAIL and "
     "any source without an AV; the peer's fi_addr_t with one",
     case_cm_source},
    {"cm_rma",
     "FI_EP_MSG: fi_writedata with remote CQ data, fi_write/fi_read 1 B "
     "to 1 MiB",
     case_cm_rma},
    {"cm_mixed_completions",
     "FI_EP_MSG: 96 reads, writes and sends with completions, mixed: "
     "each completes once, data in place, in any order",
     case_cm_mixed_completions},
    {"cm_mixed_peer_close",
     "FI_EP_MSG: the peer closes while 96 mixed reads, writes and sends "
     "are under way: FI_SHUTDOWN, each completes once within 2 s",
     case_cm_mixed_peer_close},
    {"cm_setname",
     "FI_EP_MSG: fi_setname with a port before fi_connect: the "
     "connection comes from it (fi_getname, the peer's fi_getpeer)",
     case_cm_setname},
    {"cm_rma_mr_close",
     "FI_EP_MSG: the target closes its MR while a 16 MiB write into it "
     "arrives: nothing changes after fi_close returns",
     case_cm_rma_mr_close},
    {"cm_peer_killed",
     "FI_EP_MSG: the peer process SIGKILLed: FI_SHUTDOWN, every posted "
     "receive and send under way flushed in error within 2 s",
     case_cm_peer_killed},
    {NULL},
};
