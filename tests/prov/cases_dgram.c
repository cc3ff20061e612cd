/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_DGRAM cases: what fi_endpoint(3), fi_msg(3), fi_cq(3) and
 * fi_cm(3) (fi_join) promise of datagram endpoints.  Providers without
 * FI_EP_DGRAM skip them (fi_getinfo refuses).  Everything runs on
 * loopback, where no datagram is lost; each wait is still bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conformance.h"
#include "proc.h"

#define DG_GUARD 64
#define DG_GUARD_BYTE 0xa5

static const struct cf_opts dg_opts = {
	.ep_type = FI_EP_DGRAM,
	.caps = FI_MSG,
	.cq_format = FI_CQ_FORMAT_MSG,
};

static size_t dg_max(const struct cf_fix *f)
{
	return f->info->ep_attr->max_msg_size;
}

/* A receive buffer of len bytes followed by guard bytes. */
static uint8_t *dg_rbuf(size_t len)
{
	uint8_t *p = malloc(len + DG_GUARD);

	cf_assert(p, "out of memory");
	memset(p, 0, len);
	memset(p + len, DG_GUARD_BYTE, DG_GUARD);
	return p;
}

static void dg_check_guard(const uint8_t *p, size_t len, const char *what)
{
	size_t i;

	for (i = 0; i < DG_GUARD; i++)
		cf_assert(p[len + i] == DG_GUARD_BYTE,
			  "%s: guard byte %zu after the buffer overwritten",
			  what, i);
}

/* One datagram of len bytes from ep 0 to ep 1 by `how`, checked. */
enum dg_how { DG_SEND, DG_SENDV, DG_SENDMSG, DG_INJECT };

static void dg_one(struct cf_fix *f, size_t len, unsigned int seed,
		   enum dg_how how)
{
	struct fi_context2 sctx, rctx;
	uint8_t *s = malloc(len + 1), *r = dg_rbuf(dg_max(f));
	struct cf_comp c;
	char what[64];

	cf_assert(s, "out of memory");
	cf_fill(s, len, seed);
	snprintf(what, sizeof(what), "%zu-byte datagram (way %d)", len, how);
	cf_post(f, fi_recv(f->ep[1].ep, r, dg_max(f), NULL, FI_ADDR_UNSPEC,
			   &rctx));
	switch (how) {
	case DG_SEND:
		cf_post(f, fi_send(f->ep[0].ep, s, len, NULL, f->ep[1].addr,
				   &sctx));
		break;
	case DG_SENDV: {
		/* Three uneven pieces. */
		size_t a = len / 3, b = len / 2 - a;
		struct iovec iov[3] = { { s, a },
					{ s + a, b },
					{ s + a + b, len - a - b } };

		cf_post(f, fi_sendv(f->ep[0].ep, iov, NULL, 3, f->ep[1].addr,
				    &sctx));
		break;
	}
	case DG_SENDMSG: {
		struct iovec iov = { s, len };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
				      .addr = f->ep[1].addr,
				      .context = &sctx };

		/* FI_INJECT on fi_sendmsg still asks for a completion
		 * (only fi_inject has none). */
		cf_post(f, fi_sendmsg(f->ep[0].ep, &msg,
				      FI_COMPLETION |
					      (len <= f->info->tx_attr->inject_size ?
						       FI_INJECT :
						       0)));
		break;
	}
	case DG_INJECT:
		cf_post(f, fi_inject(f->ep[0].ep, s, len, f->ep[1].addr));
		memset(s, 0, len); /* the buffer is ours again at once */
		break;
	}
	if (how != DG_INJECT) {
		c = cf_wait_ctx(f, 0, &sctx);
		cf_assert(!c.err, "%s: send completed with error %d", what,
			  c.err);
		cf_check_flags(&c, FI_SEND | FI_MSG, what);
	}
	c = cf_wait_ctx(f, 1, &rctx);
	cf_assert(!c.err, "%s: receive completed with error %d", what, c.err);
	cf_assert(c.len == len, "%s: receive len %zu", what, c.len);
	cf_check_flags(&c, FI_RECV | FI_MSG, what);
	cf_check_fill(r, len, seed, what);
	dg_check_guard(r, dg_max(f), what);
	free(s);
	free(r);
}

static int case_dgram_sizes(const char *prov)
{
	static const size_t sizes[] = { 0, 1, 7, 64, 1000 };
	struct cf_fix f;
	size_t i;
	int how;

	cf_open(&f, prov, &dg_opts);
	cf_assert(dg_max(&f) >= 1024,
		  "max_msg_size %zu: under a KiB", dg_max(&f));
	for (how = DG_SEND; how <= DG_INJECT; how++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			dg_one(&f, sizes[i], (unsigned int)(i + 10 * how),
			       (enum dg_how)how);
		/* The largest the endpoint takes, and one byte less. */
		if (how != DG_INJECT ||
		    f.info->tx_attr->inject_size >= dg_max(&f)) {
			dg_one(&f, dg_max(&f), 99, (enum dg_how)how);
			dg_one(&f, dg_max(&f) - 1, 98, (enum dg_how)how);
		}
	}
	cf_expect_none(&f, 0, 100);
	cf_expect_none(&f, 1, 100);
	cf_close(&f);
	return 0;
}

/*
 * A datagram over max_msg_size fails at the post and goes nowhere: weft
 * says -FI_EMSGSIZE (fi_udp(7)).
 */
static int case_dgram_oversize(const char *prov)
{
	struct fi_context2 sctx, rctx;
	struct cf_fix f;
	uint8_t *s, *r;
	size_t big;
	ssize_t ret;

	cf_open(&f, prov, &dg_opts);
	big = dg_max(&f) + 1;
	s = calloc(1, big);
	r = dg_rbuf(big);
	cf_assert(s, "out of memory");
	cf_post(&f, fi_recv(f.ep[1].ep, r, big, NULL, FI_ADDR_UNSPEC, &rctx));
	cf_mark("fi_send over max_msg_size");
	ret = fi_send(f.ep[0].ep, s, big, NULL, f.ep[1].addr, &sctx);
	cf_expect(ret == -FI_EMSGSIZE,
		  "fi_send of %zu bytes (max_msg_size %zu): %zd (%s), want "
		  "-FI_EMSGSIZE",
		  big, dg_max(&f), ret, fi_strerror((int)-ret));
	cf_mark("fi_inject over max_msg_size");
	ret = fi_inject(f.ep[0].ep, s, big, f.ep[1].addr);
	cf_expect(ret < 0, "fi_inject of %zu bytes: %zd, want an error", big,
		  ret);
	cf_expect_none(&f, 1, 300);
	if (ret >= 0)
		cf_fail("an oversized datagram was taken");
	/* The endpoint goes on: a datagram that fits gets the receive. */
	cf_post(&f, fi_send(f.ep[0].ep, s, 8, NULL, f.ep[1].addr, &sctx));
	cf_assert(!cf_wait_ctx(&f, 1, &rctx).err, "receive after: error");
	cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send after: error");
	free(s);
	free(r);
	cf_close(&f);
	return 0;
}

/* A datagram longer than its receive: FI_ETRUNC, len the posted length,
 * olen what was cut, the posted bytes filled and nothing past them. */
static int case_dgram_trunc(const char *prov)
{
	struct cf_opts o = dg_opts;
	struct fi_context2 sctx, rctx[2];
	struct cf_fix f;
	uint8_t s[1000], *r = dg_rbuf(100), *r2 = dg_rbuf(1000);
	uint64_t v = 0;
	struct cf_comp c;

	o.cntr_mask = 1u << CF_CNTR_RECV;
	cf_open(&f, prov, &o);
	cf_fill(s, sizeof(s), 7);
	cf_post(&f, fi_recv(f.ep[1].ep, r, 100, NULL, FI_ADDR_UNSPEC,
			    &rctx[0]));
	cf_post(&f, fi_recv(f.ep[1].ep, r2, 1000, NULL, FI_ADDR_UNSPEC,
			    &rctx[1]));
	cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL, f.ep[1].addr,
			    &sctx));
	c = cf_wait_ctx(&f, 1, &rctx[0]);
	cf_assert(c.err == FI_ETRUNC, "1000 B into 100 B: error %d, want "
		  "FI_ETRUNC", c.err);
	cf_expect(c.len == 100, "truncated: len %zu, want 100", c.len);
	cf_expect(c.olen == 900, "truncated: olen %zu, want 900", c.olen);
	cf_check_fill(r, 100, 7, "truncated receive");
	dg_check_guard(r, 100, "truncated receive");
	cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send: error");
	/* The next datagram takes the next receive, whole. */
	cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL, f.ep[1].addr,
			    &sctx));
	c = cf_wait_ctx(&f, 1, &rctx[1]);
	cf_assert(!c.err && c.len == 1000, "next receive: error %d len %zu",
		  c.err, c.len);
	cf_check_fill(r2, 1000, 7, "next receive");
	cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send: error");
	v = fi_cntr_readerr(f.ep[1].cntr[CF_CNTR_RECV]);
	cf_expect(v == 1, "receive counter errors %lu, want 1 (the "
		  "truncation)", (unsigned long)v);
	v = fi_cntr_read(f.ep[1].cntr[CF_CNTR_RECV]);
	cf_expect(v == 1, "receive counter %lu, want 1", (unsigned long)v);
	free(r);
	free(r2);
	cf_close(&f);
	return 0;
}

/* A plain UDP socket of the endpoint's family, on loopback. */
static int dg_raw_socket(const struct cf_fix *f)
{
	const struct sockaddr *sa = (const void *)f->ep[1].name;
	struct sockaddr_storage any = { .ss_family = sa->sa_family };
	int fd = socket(sa->sa_family, SOCK_DGRAM, 0);

	cf_assert(fd >= 0, "socket: %s", strerror(errno));
	cf_assert(!bind(fd, (struct sockaddr *)&any, sizeof(any)),
		  "bind: %s", strerror(errno));
	return fd;
}

/*
 * FI_SOURCE: fi_cq_readfrom names the sender's fi_addr; a datagram from
 * a socket the AV does not hold (of 0 and of 100 bytes) arrives with
 * FI_ADDR_NOTAVAIL, and the endpoint goes on.
 */
static int case_dgram_source(const char *prov)
{
	struct cf_opts o = dg_opts;
	struct fi_context2 sctx, rctx[3];
	struct cf_fix f;
	uint8_t s[100], r[3][128];
	struct cf_comp c;
	int fd, i;

	o.caps |= FI_SOURCE;
	o.readfrom = true;
	cf_open(&f, prov, &o);
	cf_fill(s, sizeof(s), 3);
	for (i = 0; i < 3; i++)
		cf_post(&f, fi_recv(f.ep[1].ep, r[i], sizeof(r[i]), NULL,
				    FI_ADDR_UNSPEC, &rctx[i]));
	cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL, f.ep[1].addr,
			    &sctx));
	c = cf_wait_ctx(&f, 1, &rctx[0]);
	cf_assert(!c.err, "receive: error %d", c.err);
	cf_expect(c.src == f.ep[0].addr, "sender reported as %lu, want %lu",
		  (unsigned long)c.src, (unsigned long)f.ep[0].addr);
	cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send: error");

	/* Datagrams of a plain socket are messages only where the wire is
	 * plain UDP (FI_PROTO_UDP): others frame theirs, and drop what is
	 * not framed. */
	if (f.info->ep_attr->protocol != FI_PROTO_UDP) {
		cf_note("%s frames its datagrams: no plain socket's sent",
			prov);
		cf_close(&f);
		return 0;
	}
	fd = dg_raw_socket(&f);
	cf_assert(sendto(fd, s, 0, 0, (const void *)f.ep[1].name,
			 (socklen_t)f.ep[1].namelen) == 0,
		  "sendto: %s", strerror(errno));
	cf_assert(sendto(fd, s, sizeof(s), 0, (const void *)f.ep[1].name,
			 (socklen_t)f.ep[1].namelen) == (ssize_t)sizeof(s),
		  "sendto: %s", strerror(errno));
	c = cf_wait_ctx(&f, 1, &rctx[1]);
	cf_assert(!c.err, "zero-length datagram of a stranger: error %d",
		  c.err);
	cf_expect(c.len == 0, "zero-length datagram: len %zu", c.len);
	cf_expect(c.src == FI_ADDR_NOTAVAIL,
		  "stranger reported as fi_addr %lu, want FI_ADDR_NOTAVAIL",
		  (unsigned long)c.src);
	c = cf_wait_ctx(&f, 1, &rctx[2]);
	cf_assert(!c.err && c.len == sizeof(s),
		  "stranger's datagram: error %d len %zu", c.err, c.len);
	cf_check_fill(r[2], sizeof(s), 3, "stranger's datagram");
	cf_expect(c.src == FI_ADDR_NOTAVAIL,
		  "stranger reported as fi_addr %lu, want FI_ADDR_NOTAVAIL",
		  (unsigned long)c.src);
	close(fd);
	cf_close(&f);
	return 0;
}

/*
 * Counters: sends and receives counted, no CQ entries asked (counters
 * alone on the transmit side).
 */
static int case_dgram_cntr(const char *prov)
{
	struct cf_opts o = dg_opts;
	struct fi_context2 rctx[8];
	struct cf_fix f;
	uint8_t s[64], r[8][64];
	int i;

	o.cntr_mask = (1u << CF_CNTR_SEND) | (1u << CF_CNTR_RECV);
	cf_open(&f, prov, &o);
	cf_fill(s, sizeof(s), 5);
	for (i = 0; i < 8; i++)
		cf_post(&f, fi_recv(f.ep[1].ep, r[i], sizeof(r[i]), NULL,
				    FI_ADDR_UNSPEC, &rctx[i]));
	for (i = 0; i < 8; i++)
		cf_post(&f, fi_inject(f.ep[0].ep, s, sizeof(s), f.ep[1].addr));
	cf_wait_cntr(&f, 0, CF_CNTR_SEND, 8);
	cf_wait_cntr(&f, 1, CF_CNTR_RECV, 8);
	for (i = 0; i < 8; i++) {
		struct cf_comp c = cf_wait_ctx(&f, 1, &rctx[i]);

		cf_assert(!c.err && c.len == sizeof(s), "receive %d", i);
		cf_check_fill(r[i], sizeof(s), 5, "counted datagram");
	}
	cf_expect(fi_cntr_read(f.ep[0].cntr[CF_CNTR_SEND]) == 8,
		  "send counter past 8");
	cf_expect(fi_cntr_readerr(f.ep[0].cntr[CF_CNTR_SEND]) == 0 &&
			  fi_cntr_readerr(f.ep[1].cntr[CF_CNTR_RECV]) == 0,
		  "errors counted");
	cf_expect_none(&f, 0, 100);
	cf_close(&f);
	return 0;
}

/*
 * FI_FENCE on datagrams: a send completes when its call returns, so a
 * fence finds nothing outstanding.  A plain send, then fi_sendmsg with
 * FI_FENCE and with FI_FENCE | FI_INJECT: each is taken, its completion
 * is there at the first read after its post, in posting order, and the
 * datagrams arrive whole.
 */
static int case_dgram_fence(const char *prov)
{
	static const uint64_t flags[3] = {
		0, FI_FENCE | FI_COMPLETION,
		FI_FENCE | FI_INJECT | FI_COMPLETION};
	struct cf_opts o = dg_opts;
	struct fi_context2 sctx[3], rctx[3];
	uint8_t s[64], r[3][64];
	struct cf_comp c;
	struct cf_fix f;
	int i;

	o.caps |= FI_FENCE;
	cf_open(&f, prov, &o);
	for (i = 0; i < 3; i++)
		cf_post(&f, fi_recv(f.ep[1].ep, r[i], sizeof(r[i]), NULL,
				    FI_ADDR_UNSPEC, &rctx[i]));
	for (i = 0; i < 3; i++) {
		struct iovec iov = {s, sizeof(s)};
		struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1,
				     .addr = f.ep[1].addr,
				     .context = &sctx[i]};

		cf_fill(s, sizeof(s), 40 + (unsigned int)i);
		if (flags[i])
			cf_post(&f, fi_sendmsg(f.ep[0].ep, &msg, flags[i]));
		else
			cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL,
					    f.ep[1].addr, &sctx[i]));
		memset(s, 0xee, sizeof(s));
		cf_progress(&f);
		cf_expect(f.ep[0].q.n == 1,
			  "send %d: %zu completions after its post, not 1", i,
			  f.ep[0].q.n);
		c = cf_wait(&f, 0);
		cf_expect(c.ctx == &sctx[i] && !c.err,
			  "send %d: completion of ctx %p, err %d", i, c.ctx,
			  c.err);
	}
	for (i = 0; i < 3; i++) {
		c = cf_wait_ctx(&f, 1, &rctx[i]);
		cf_assert(!c.err && c.len == sizeof(s), "receive %d: err %d",
			  i, c.err);
		cf_check_fill(r[i], sizeof(s), 40 + (unsigned int)i,
			      "a datagram sent with FI_FENCE");
	}
	cf_close(&f);
	return 0;
}

/*
 * A flood that overruns the receives: 300 datagrams, each carrying its
 * number, at 8 posted receives, then more receives.  Whatever arrives is
 * whole and in sending order; what the kernel dropped is gone; the
 * receives posted first are filled.
 */
static int case_dgram_flood(const char *prov)
{
	enum { N = 300, R = 8, LEN = 1000 };
	struct fi_context2 rctx[R];
	static uint8_t r[R][LEN];
	uint8_t s[LEN];
	struct cf_fix f;
	struct cf_comp c;
	int i, got = 0, last = -1;
	uint32_t k;

	cf_open(&f, prov, &dg_opts);
	for (i = 0; i < R; i++)
		cf_post(&f, fi_recv(f.ep[1].ep, r[i], LEN, NULL,
				    FI_ADDR_UNSPEC, &rctx[i]));
	for (k = 0; k < N; k++) {
		cf_fill(s, LEN, k);
		memcpy(s, &k, sizeof(k));
		cf_post(&f, fi_inject(f.ep[0].ep, s, LEN, f.ep[1].addr));
	}
	for (;;) {
		if (!cf_poll(&f, 1, &c, got < R ? CF_WAIT_MS : 300))
			break;
		cf_assert(!c.err && c.len == LEN, "datagram %d: error %d len "
			  "%zu", got, c.err, c.len);
		i = (int)((struct fi_context2 *)c.ctx - rctx);
		cf_assert(i >= 0 && i < R, "unknown context");
		cf_assert(i == got % R, "receive %d completed before %d", i,
			  got % R);
		memcpy(&k, r[i], sizeof(k));
		cf_assert((int)k > last && k < N, "datagram %u after %d", k,
			  last);
		cf_fill(s, LEN, k);
		memcpy(s, &k, sizeof(k));
		cf_assert(!memcmp(s, r[i], LEN), "datagram %u corrupted", k);
		last = (int)k;
		got++;
		cf_post(&f, fi_recv(f.ep[1].ep, r[i], LEN, NULL,
				    FI_ADDR_UNSPEC, &rctx[i]));
	}
	cf_assert(got >= R, "only %d datagrams arrived", got);
	cf_note("%d of %d datagrams arrived", got, N);
	cf_close(&f);
	return 0;
}

/* A free UDP port on loopback, for a group. */
static uint16_t dg_free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	uint16_t port;

	cf_assert(fd >= 0, "socket: %s", strerror(errno));
	cf_assert(!bind(fd, (struct sockaddr *)&sin, sizeof(sin)) &&
			  !getsockname(fd, (struct sockaddr *)&sin, &len),
		  "bind: %s", strerror(errno));
	port = sin.sin_port;
	close(fd);
	return port;
}

static struct sockaddr_in dg_group(void)
{
	struct sockaddr_in g = { .sin_family = AF_INET };

	g.sin_port = dg_free_port();
	/* An administratively scoped group of its own per process. */
	g.sin_addr.s_addr =
		htonl(0xefff0000u | ((uint32_t)getpid() & 0xffffu));
	return g;
}

static struct fid_mc *dg_join(struct cf_ep *e, const struct sockaddr_in *g,
			      uint64_t flags, void *ctx)
{
	struct fi_eq_entry entry;
	struct fid_mc *mc = NULL;
	uint32_t event = 0;
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	ssize_t n;

	cf_ok(fi_join(e->ep, g, flags, &mc, ctx));
	cf_assert(mc, "fi_join gave no fid_mc");
	do {
		n = fi_eq_read(e->eq, &event, &entry, sizeof(entry), 0);
		cf_assert(n == -FI_EAGAIN || n == (ssize_t)sizeof(entry),
			  "fi_eq_read: %zd", n);
		cf_assert(cf_now_ms() < end, "no FI_JOIN_COMPLETE");
	} while (n == -FI_EAGAIN);
	cf_assert(event == FI_JOIN_COMPLETE, "event %u, want "
		  "FI_JOIN_COMPLETE", event);
	cf_assert(entry.fid == &mc->fid && entry.context == ctx,
		  "FI_JOIN_COMPLETE names another fid or context");
	return mc;
}

static const struct cf_opts dg_mc_opts = {
	.ep_type = FI_EP_DGRAM,
	.caps = FI_MSG | FI_MULTICAST | FI_SOURCE,
	.cq_format = FI_CQ_FORMAT_MSG,
	.readfrom = true,
	.ep_eq = true,
	.addr_format = FI_SOCKADDR_IN,
};

/*
 * fi_join: endpoints 1 and 2 join a group; endpoint 0 joins to send only
 * and sends to fi_mc_addr: both members get the datagram, with endpoint
 * 0 as its source; endpoint 0 gets nothing.  After endpoint 2 leaves
 * (fi_close of its fid_mc), only endpoint 1 gets the next one.
 */
static int case_dgram_multicast(const char *prov)
{
	struct cf_opts o = dg_mc_opts;
	struct sockaddr_in g = dg_group();
	struct fi_context2 jctx[3], sctx, rctx[3][2];
	uint8_t s[512], r[3][2][512];
	struct fid_mc *mc[3];
	struct cf_fix f;
	struct cf_comp c;
	int i, round;

	o.nep = 3;
	cf_open(&f, prov, &o);
	mc[0] = dg_join(&f.ep[0], &g, FI_SEND, &jctx[0]);
	mc[1] = dg_join(&f.ep[1], &g, 0, &jctx[1]);
	mc[2] = dg_join(&f.ep[2], &g, 0, &jctx[2]);
	for (i = 0; i < 3; i++) {
		cf_post(&f, fi_recv(f.ep[i].ep, r[i][0], 512, NULL,
				    FI_ADDR_UNSPEC, &rctx[i][0]));
		cf_post(&f, fi_recv(f.ep[i].ep, r[i][1], 512, NULL,
				    FI_ADDR_UNSPEC, &rctx[i][1]));
	}
	for (round = 0; round < 2; round++) {
		cf_fill(s, sizeof(s), 40 + round);
		cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL,
				    fi_mc_addr(mc[0]), &sctx));
		cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send: error");
		for (i = 1; i < 3; i++) {
			if (round && i == 2)
				continue;
			c = cf_wait_ctx(&f, i, &rctx[i][round]);
			cf_assert(!c.err && c.len == sizeof(s),
				  "member %d, round %d: error %d len %zu", i,
				  round, c.err, c.len);
			cf_check_fill(r[i][round], sizeof(s), 40 + round,
				      "group datagram");
			cf_expect(c.src == f.ep[0].addr,
				  "member %d: source %lu, want %lu", i,
				  (unsigned long)c.src,
				  (unsigned long)f.ep[0].addr);
		}
		if (!round)
			cf_ok(fi_close(&mc[2]->fid));
	}
	cf_expect_none(&f, 0, 100);
	cf_expect_none(&f, 2, 300);
	cf_ok(fi_close(&mc[1]->fid));
	cf_ok(fi_close(&mc[0]->fid));
	cf_close(&f);
	return 0;
}

/* Multicast to a group nobody joined and to a stranger's port: sends
 * complete (UDP does not know), nothing comes back. */
static int case_dgram_no_listener(const char *prov)
{
	struct cf_opts o = dg_mc_opts;
	struct sockaddr_in g = dg_group(), gone;
	struct fi_context2 jctx, sctx;
	struct fid_mc *mc;
	fi_addr_t dead;
	struct cf_fix f;
	uint8_t s[64] = { 0 };
	int i;

	o.nep = 1;
	cf_open(&f, prov, &o);
	mc = dg_join(&f.ep[0], &g, FI_SEND, &jctx);
	gone = (struct sockaddr_in){ .sin_family = AF_INET,
				     .sin_port = dg_free_port() };
	gone.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cf_assert(fi_av_insert(f.av, &gone, 1, &dead, 0, NULL) == 1,
		  "fi_av_insert");
	for (i = 0; i < 4; i++) {
		cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL,
				    fi_mc_addr(mc), &sctx));
		cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send to group");
		cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL, dead,
				    &sctx));
		cf_assert(!cf_wait_ctx(&f, 0, &sctx).err,
			  "send to a closed port: error");
	}
	cf_expect_none(&f, 0, 200);
	cf_ok(fi_close(&mc->fid));
	cf_close(&f);
	return 0;
}

struct dg_sender {
	struct cf_fix *f;
	int delay_ms;
};

static void *dg_send_later(void *arg)
{
	struct dg_sender *d = arg;
	struct fi_context2 ctx;
	uint8_t s[256];
	struct fi_cq_msg_entry e;
	uint64_t end = cf_now_ms() + CF_WAIT_MS;
	ssize_t n;

	cf_fill(s, sizeof(s), 77);
	cf_sleep_ms(d->delay_ms);
	while (fi_send(d->f->ep[0].ep, s, sizeof(s), NULL, d->f->ep[1].addr,
		       &ctx) == -FI_EAGAIN)
		fi_cq_read(d->f->ep[0].cq, &e, 1);
	/* Drive endpoint 0 alone, through its own CQ. */
	do
		n = fi_cq_read(d->f->ep[0].cq, &e, 1);
	while (n == -FI_EAGAIN && cf_now_ms() < end);
	return NULL;
}

/*
 * fi_cq_sread on a receive CQ (FI_WAIT_UNSPEC, then FI_WAIT_FD): nothing
 * coming, it returns -FI_EAGAIN after its timeout; a datagram sent by
 * another thread 100 ms later wakes it with the entry.
 */
static int case_dgram_sread(const char *prov)
{
	static const enum fi_wait_obj objs[] = { FI_WAIT_UNSPEC, FI_WAIT_FD };
	size_t k;

	for (k = 0; k < 2; k++) {
		struct cf_opts o = dg_opts;
		struct dg_sender d;
		struct fi_context2 rctx;
		struct fi_cq_msg_entry e;
		uint8_t r[256];
		pthread_t t;
		struct cf_fix f;
		ssize_t n;

		o.threading = FI_THREAD_SAFE;
		o.cq_wait = objs[k];
		cf_open(&f, prov, &o);
		cf_post(&f, fi_recv(f.ep[1].ep, r, sizeof(r), NULL,
				    FI_ADDR_UNSPEC, &rctx));
		cf_mark("fi_cq_sread with nothing coming");
		n = fi_cq_sread(f.ep[1].cq, &e, 1, NULL, 300);
		cf_assert(n == -FI_EAGAIN, "fi_cq_sread, nothing coming: %zd",
			  n);
		d.f = &f;
		d.delay_ms = 100;
		cf_assert(!pthread_create(&t, NULL, dg_send_later, &d),
			  "pthread_create");
		cf_mark("fi_cq_sread for a datagram 100 ms away");
		n = fi_cq_sread(f.ep[1].cq, &e, 1, NULL, 5000);
		pthread_join(t, NULL);
		cf_assert(n == 1, "fi_cq_sread: %zd (%s)", n,
			  fi_strerror((int)-n));
		cf_assert(e.op_context == &rctx && e.len == sizeof(r),
			  "fi_cq_sread: another entry");
		cf_check_fill(r, sizeof(r), 77, "woken datagram");
		cf_close(&f);
	}
	return 0;
}

/*
 * fi_cancel of the middle one of three posted receives: FI_ECANCELED
 * with its context, its buffer untouched; the next two datagrams fill the
 * first and the third, in that order; a second cancel adds nothing.
 */
static int case_dgram_cancel(const char *prov)
{
	struct fi_context2 sctx, rctx[3];
	uint8_t s[200], r[3][200];
	struct cf_fix f;
	struct cf_comp c;
	int i;

	cf_open(&f, prov, &dg_opts);
	memset(r, 0x3c, sizeof(r));
	for (i = 0; i < 3; i++)
		cf_post(&f, fi_recv(f.ep[1].ep, r[i], sizeof(r[i]), NULL,
				    FI_ADDR_UNSPEC, &rctx[i]));
	cf_ok(fi_cancel(&f.ep[1].ep->fid, &rctx[1]));
	c = cf_wait_ctx(&f, 1, &rctx[1]);
	cf_assert(c.err == FI_ECANCELED, "canceled receive: error %d, want "
		  "FI_ECANCELED", c.err);
	for (i = 0; i < 2; i++) {
		cf_fill(s, sizeof(s), 60 + i);
		cf_post(&f, fi_send(f.ep[0].ep, s, sizeof(s), NULL,
				    f.ep[1].addr, &sctx));
		cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send %d", i);
		c = cf_wait_ctx(&f, 1, &rctx[i ? 2 : 0]);
		cf_assert(!c.err && c.len == sizeof(s),
			  "datagram %d: error %d len %zu", i, c.err, c.len);
		cf_check_fill(r[i ? 2 : 0], sizeof(s), 60 + i,
			      "datagram after a cancel");
	}
	for (i = 0; i < (int)sizeof(r[1]); i++)
		cf_assert(r[1][i] == 0x3c, "canceled buffer written at %d", i);
	cf_ok(fi_cancel(&f.ep[1].ep->fid, &rctx[1]));
	cf_expect_none(&f, 1, 100);
	cf_close(&f);
	return 0;
}

/* ---- two processes ------------------------------------------------------ */

#define DG_PROC_SIZES 6
static const size_t dg_proc_sizes[DG_PROC_SIZES] = { 0, 1, 100, 1000,
						     1400, 1472 };
#define DG_PROC_MC 4

/*
 * The peer: joins the group it is told of, then echoes every datagram
 * back to the case, checking that FI_SOURCE names the case.
 */
static int dgram_echo_main(void)
{
	struct cf_opts o = dg_mc_opts;
	struct sockaddr_in g;
	struct fi_context2 jctx, rctx, sctx;
	static uint8_t r[2048];
	struct fid_mc *mc;
	fi_addr_t peer;
	struct cf_fix f;
	struct cf_comp c;
	uint32_t n, i;
	char b = 'J';

	o.nep = 1;
	cf_open(&f, cf_prov, &o);
	cf_send_name(PEER_OUT, &f.ep[0]);
	peer = cf_recv_name(PEER_IN, &f);
	cf_read_all(PEER_IN, &g, sizeof(g), CF_WAIT_MS);
	cf_read_all(PEER_IN, &n, sizeof(n), CF_WAIT_MS);
	mc = dg_join(&f.ep[0], &g, 0, &jctx);
	for (i = 0; i < n; i++) {
		cf_post(&f, fi_recv(f.ep[0].ep, r, sizeof(r), NULL,
				    FI_ADDR_UNSPEC, &rctx));
		if (!i)
			cf_write_all(PEER_OUT, &b, 1); /* joined, posted */
		c = cf_wait_ctx(&f, 0, &rctx);
		cf_assert(!c.err, "echo: receive %u: error %d", i, c.err);
		cf_assert(c.src == peer, "echo: source %lu, want %lu",
			  (unsigned long)c.src, (unsigned long)peer);
		cf_post(&f, fi_send(f.ep[0].ep, r, c.len, NULL, peer, &sctx));
		cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "echo: send");
	}
	cf_ok(fi_close(&mc->fid));
	cf_close(&f);
	return 0;
}

bool cf_dgram_is_role(const char *role)
{
	return !strcmp(role, "dgram_echo");
}

int cf_dgram_peer_main(const char *role)
{
	(void)role;
	return dgram_echo_main();
}

/*
 * Two processes: datagrams of 0 B to max_msg_size to the peer, and to a
 * group the peer joined, each echoed back intact, FI_SOURCE naming the
 * sender on both sides.
 */
static int case_dgram_proc(const char *prov)
{
	struct cf_opts o = dg_mc_opts;
	struct sockaddr_in g = dg_group();
	struct fi_context2 jctx, sctx, rctx;
	static uint8_t s[2048], r[2048];
	struct peer_link l;
	struct fid_mc *mc;
	fi_addr_t peer;
	struct cf_fix f;
	struct cf_comp c;
	uint32_t n = DG_PROC_SIZES + DG_PROC_MC, i;
	char b;
	int status;

	o.nep = 1;
	cf_open(&f, prov, &o);
	cf_spawn_peer("dgram_echo", &l);
	cf_send_name(l.wfd, &f.ep[0]);
	peer = cf_recv_name(l.rfd, &f);
	cf_write_all(l.wfd, &g, sizeof(g));
	cf_write_all(l.wfd, &n, sizeof(n));
	mc = dg_join(&f.ep[0], &g, FI_SEND, &jctx);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	for (i = 0; i < n; i++) {
		size_t len = i < DG_PROC_SIZES ?
				     (dg_proc_sizes[i] < dg_max(&f) ? dg_proc_sizes[i] : dg_max(&f)) :
				     200 + i;
		fi_addr_t to = i < DG_PROC_SIZES ? peer : fi_mc_addr(mc);

		cf_fill(s, len, 500 + i);
		memset(r, 0, sizeof(r));
		cf_post(&f, fi_recv(f.ep[0].ep, r, sizeof(r), NULL,
				    FI_ADDR_UNSPEC, &rctx));
		cf_post(&f, fi_send(f.ep[0].ep, s, len, NULL, to, &sctx));
		cf_assert(!cf_wait_ctx(&f, 0, &sctx).err, "send %u: error", i);
		c = cf_wait_ctx(&f, 0, &rctx);
		cf_assert(!c.err && c.len == len,
			  "echo %u: error %d len %zu, want %zu", i, c.err,
			  c.len, len);
		cf_check_fill(r, len, 500 + i, "echoed datagram");
		cf_expect(c.src == peer, "echo %u: source %lu, want %lu", i,
			  (unsigned long)c.src, (unsigned long)peer);
	}
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(status == 0, "echo peer: status %d", status);
	cf_ok(fi_close(&mc->fid));
	cf_close(&f);
	return 0;
}

const struct cf_case cf_cases_dgram[] = {
    {"dgram_sizes",
     "FI_EP_DGRAM: 0 B to max_msg_size by fi_send, fi_sendv, fi_sendmsg "
     "(FI_INJECT | FI_COMPLETION: a completion) and fi_inject (none); "
     "data, guard bytes, flags, len",
     case_dgram_sizes},
    {"dgram_oversize",
     "FI_EP_DGRAM: a send of max_msg_size + 1 fails at the post "
     "(-FI_EMSGSIZE), an inject too; nothing arrives; the endpoint goes on",
     case_dgram_oversize},
    {"dgram_trunc",
     "FI_EP_DGRAM: 1000 B into 100 B: FI_ETRUNC, len 100, olen 900, "
     "guards intact, counted as an error; the next receive is whole",
     case_dgram_trunc},
    {"dgram_source",
     "FI_EP_DGRAM with FI_SOURCE: the sender's fi_addr; a stranger's "
     "datagrams (0 B and 100 B) with FI_ADDR_NOTAVAIL",
     case_dgram_source},
    {"dgram_cntr",
     "FI_EP_DGRAM: send and receive counters count 8 injects exactly",
     case_dgram_cntr},
    {"dgram_fence",
     "FI_EP_DGRAM with FI_FENCE: a send, then fi_sendmsg FI_FENCE and "
     "FI_FENCE|FI_INJECT: each completes with its call, in order, and "
     "arrives whole",
     case_dgram_fence},
    {"dgram_flood",
     "FI_EP_DGRAM: 300 datagrams at 8 receives: what arrives is whole, in "
     "order, in the receives in posting order; the rest is dropped",
     case_dgram_flood},
    {"dgram_multicast",
     "fi_join: two members and a send-only joiner; FI_JOIN_COMPLETE; both "
     "members get what is sent to fi_mc_addr, with its source; after "
     "fi_close of its fid_mc a member gets nothing",
     case_dgram_multicast},
    {"dgram_no_listener",
     "FI_EP_DGRAM: sends to a group nobody joined and to a closed port "
     "complete successfully; nothing comes back",
     case_dgram_no_listener},
    {"dgram_cancel",
     "FI_EP_DGRAM: fi_cancel of the middle of three receives: "
     "FI_ECANCELED, buffer untouched; the next datagrams fill the others "
     "in order; a second cancel adds nothing",
     case_dgram_cancel},
    {"dgram_sread",
     "FI_EP_DGRAM: fi_cq_sread (FI_WAIT_UNSPEC, FI_WAIT_FD) times out "
     "with -FI_EAGAIN, and wakes for a datagram sent by another thread",
     case_dgram_sread},
    {"proc_dgram",
     "FI_EP_DGRAM, two processes: 0 B to max_msg_size unicast and "
     "datagrams to a group the peer joined, echoed back intact, "
     "FI_SOURCE on both sides",
     case_dgram_proc},
    {NULL},
};
