/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer harness for udp's RDM-engine transport facing a hostile peer
 * (prov/udp/udp_xp.c, docs/udp-protocol.md).
 *
 * The victim is a real endpoint opened over the public API on 127.0.0.1,
 * its progress (fi_cq_read) running the transport's own arrival path:
 * FI_EP_RDM under "udp" (reliable), or FI_EP_DGRAM under "sockets" (the
 * engine over unreliable datagrams), either as a plain endpoint or as a
 * scalable one of 2 to 4 context pairs (FI_NAMED_RX_CTX), whose sockets
 * share one address and have the kernel steer datagrams by dst_ctx.  The
 * peer is a plain UDP socket of this process, in the victim's AV, so the
 * victim's own transfers go to it; whatever reaches the victim from it is
 * the fuzzer's.
 *
 * The input's first byte says the victim: bit 0 "sockets" DGRAM (else
 * udp RDM), bit 1 a scalable endpoint of 2 + (byte >> 2) % 3 contexts.
 * Then records, each starting with a byte whose value modulo 5 says what
 * it is:
 *   0 DGRAM     f, g, lo, hi, then n = (lo | hi << 8) % 2048 bytes: a
 *               datagram from the peer to the victim.  f bit 0 clear:
 *               the bytes as they are.  Set: the bytes are a udpx_hdr
 *               (zeros past their end) and its payload, with magic and
 *               version made right, and f bit 1: flags' reliable bit
 *               made what the victim takes; bit 2: the peer's own epoch;
 *               bit 3: seq the peer's next, base the peer's first; bit 4:
 *               ack the victim's next packet not yet read, sack 0; bit 5:
 *               tx_id the one of the victim's last request or message
 *               read; bit 6: dst_ctx one of the victim's contexts, src_ctx
 *               0; bit 7: len the payload's.  g bit 0: a request's ranges
 *               (n = tag & 0xff of them in the payload) made to fall in
 *               the victim's registered buffer, under its key
 *   1 PROGRESS  c: 1 + c % 16 calls of fi_cq_read; c bit 7: after a
 *               sleep past the retransmission timeout
 *   2 POST      lo, hi, t: a receive of (lo | hi << 8) % 8192 bytes;
 *               t bit 0: tagged (tag t >> 4), bit 1: directed to the
 *               peer, bits 2-3: which receive context
 *   3 ISSUE     k: the victim starts a transfer to the peer (k % 8: a
 *               send of 8, 600, or 5000 bytes (rendezvous), a read of
 *               256 or 3000 bytes, a write, a fetching and a compare
 *               atomic; k bit 3: delivery complete, bit 4: tagged, bits
 *               5-6: which transmit context)
 *   4 READ_PEER the peer reads what the victim sent it: the victim's
 *               sequence numbers and transmit ids, which DGRAM may echo
 *
 * Every buffer is allocated at its exact size.  Aborts when a completion
 * names nothing posted or started (a call that failed started nothing;
 * only a remote write's CQ data names nothing), comes twice, or says a
 * receive holds more than its buffer, or when an error completion carries
 * no positive FI_E* below 65536 (a status a peer reports is no more
 * trusted than the rest), or when the victim holds more memory than any
 * input sends it.  A buffer is freed when its operation completes,
 * so AddressSanitizer catches the provider touching it later (a late
 * packet written into it; not a packet sent again from it, which the
 * kernel reads), as it catches any access outside memory; libFuzzer's
 * timeout a progress that never ends.
 *
 * Built with -DFUZZ_SEEDS, it writes a starting corpus into the directory
 * it is given; with tests/fuzz/fuzz_replay.c, it replays files.
 */
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "fuzz_util.h"
#include "udp_xp.h"

/* Linked from the convenience library, the provider's object is pulled in
 * only if something refers to it. */
static struct fi_provider *const link_udp __attribute__((used)) = &udp_prov;

enum rec { R_DGRAM, R_PROGRESS, R_POST, R_ISSUE, R_READ_PEER, R_KINDS };

/* DGRAM's f: what the harness makes right in a cooked header. */
#define D_COOKED (1u << 0)
#define D_REL (1u << 1)
#define D_EPOCH (1u << 2)
#define D_SEQ (1u << 3)
#define D_ACK (1u << 4)
#define D_TX_ID (1u << 5)
#define D_CTX (1u << 6)
#define D_LEN (1u << 7)
/* DGRAM's g */
#define D_RANGES (1u << 0)

#define HDR sizeof(struct udpx_hdr)
#define DGRAM_MAX 2048
#define TARGET_SIZE 4096
#define TARGET_KEY 7
#define MAX_BUFS 8
#define MAX_CTX 4
#define PEER_EPOCH 0x5eed
#define RTO_MS 2
/* More than the victim needs for what an input sends it (its endpoints'
 * receive buffers, send rings, packets kept out of order). */
#define HEAP_MAX ((size_t)256 << 20)

/* A receive posted or a transfer started, and its buffers. */
struct buf {
	void *mem, *res, *cmp;
	size_t size;
	int live; /* the call that posted or started it returned 0 */
	int done;
};

struct fz {
	int dgram; /* "sockets" DGRAM, else udp RDM */
	int nctx;  /* contexts of a scalable endpoint, 0: a plain one */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep; /* the endpoint, or the scalable one */
	struct fid_ep *tx[MAX_CTX], *rx[MAX_CTX];
	struct fid_mr *mr;
	char *target; /* registered for remote access */
	fi_addr_t peer_addr;
	struct sockaddr_in vname; /* the victim's address */
	/* the peer's stream to the victim, and what it read of the victim */
	uint32_t seq;
	uint32_t vnext; /* the victim's next sequence number not read */
	int vknown;
	uint64_t last_tx;
	struct buf recv[MAX_BUFS], op[MAX_BUFS];
	size_t nrecv, nop;
};

static int peer_fd = -1;
static struct sockaddr_in peer_name;
static struct fi_info *info_rdm, *info_dgram;

/* FUZZ_TRACE=1 in the environment: say what happens, on stderr. */
static int trace = -1;

#define TRACE(...)                                                            \
	do {                                                                  \
		if (trace)                                                    \
			fprintf(stderr, "fuzz_udp_peer: " __VA_ARGS__);       \
	} while (0)

static void fail(const char *what, long a)
{
	fprintf(stderr, "fuzz_udp_peer: %s (%ld)\n", what, a);
	abort();
}

/* ---- the victim ---------------------------------------------------------- */

static struct fi_info *info_get(int dgram)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	if (!hints)
		return NULL;
	hints->ep_attr->type = dgram ? FI_EP_DGRAM : FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE |
		      FI_NAMED_RX_CTX;
	if (!dgram)
		hints->caps |= FI_RMA | FI_ATOMIC;
	hints->fabric_attr->prov_name = strdup(dgram ? "sockets" : "udp");
	hints->addr_format = FI_SOCKADDR_IN;
	if (fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, hints,
		       &info))
		info = NULL;
	fi_freeinfo(hints);
	return info;
}

static int ctx_open(struct fz *z, int k)
{
	int ret;

	ret = fi_tx_context(z->ep, k, NULL, &z->tx[k], NULL);
	if (!ret)
		ret = fi_rx_context(z->ep, k, NULL, &z->rx[k], NULL);
	if (!ret)
		ret = fi_ep_bind(z->tx[k], &z->cq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(z->rx[k], &z->cq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(z->tx[k]);
	if (!ret)
		ret = fi_enable(z->rx[k]);
	return ret;
}

static int victim_open(struct fz *z)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	size_t len = sizeof(z->vname);
	int ret, k;

	z->info = fi_dupinfo(z->dgram ? info_dgram : info_rdm);
	if (!z->info)
		return -FI_ENOMEM;
	if (z->nctx) {
		z->info->ep_attr->tx_ctx_cnt = z->nctx;
		z->info->ep_attr->rx_ctx_cnt = z->nctx;
		av_attr.rx_ctx_bits = 2;
	}
	ret = fi_fabric(z->info->fabric_attr, &z->fabric, NULL);
	if (!ret)
		ret = fi_domain(z->fabric, z->info, &z->domain, NULL);
	if (!ret)
		ret = fi_av_open(z->domain, &av_attr, &z->av, NULL);
	if (!ret)
		ret = fi_cq_open(z->domain, &cq_attr, &z->cq, NULL);
	if (ret)
		return ret;
	if (z->nctx) {
		ret = fi_scalable_ep(z->domain, z->info, &z->ep, NULL);
		if (!ret)
			ret = fi_scalable_ep_bind(z->ep, &z->av->fid, 0);
		if (!ret)
			ret = fi_enable(z->ep);
		for (k = 0; !ret && k < z->nctx; k++)
			ret = ctx_open(z, k);
	} else {
		ret = fi_endpoint(z->domain, z->info, &z->ep, NULL);
		if (!ret)
			ret = fi_ep_bind(z->ep, &z->av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(z->ep, &z->cq->fid,
					 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(z->ep);
		z->tx[0] = z->rx[0] = z->ep;
	}
	if (!ret)
		ret = fi_getname(&z->ep->fid, &z->vname, &len);
	if (!ret && !z->dgram) {
		z->target = calloc(1, TARGET_SIZE);
		ret = z->target ? fi_mr_reg(z->domain, z->target, TARGET_SIZE,
					    FI_REMOTE_READ | FI_REMOTE_WRITE,
					    0, TARGET_KEY, 0, &z->mr, NULL) :
				  -FI_ENOMEM;
	}
	if (!ret)
		ret = fi_av_insert(z->av, &peer_name, 1, &z->peer_addr, 0,
				   NULL) == 1 ?
			      0 :
			      -FI_EINVAL;
	return ret;
}

static void victim_close(struct fz *z)
{
	int k;

	for (k = 0; k < z->nctx; k++) {
		if (z->tx[k])
			fi_close(&z->tx[k]->fid);
		if (z->rx[k])
			fi_close(&z->rx[k]->fid);
	}
	if (z->ep)
		fi_close(&z->ep->fid);
	if (z->mr)
		fi_close(&z->mr->fid);
	if (z->cq)
		fi_close(&z->cq->fid);
	if (z->av)
		fi_close(&z->av->fid);
	if (z->domain)
		fi_close(&z->domain->fid);
	if (z->fabric)
		fi_close(&z->fabric->fid);
	fi_freeinfo(z->info);
	free(z->target);
}

/* A completion: it must name something of ours, once, within bounds. */
static void completed(struct fz *z, void *ctx, size_t len, uint64_t flags,
		      int err)
{
	struct buf *b = ctx;
	int is_recv = b >= z->recv && b < z->recv + MAX_BUFS;

	TRACE("completion %s %zd, %zu bytes, flags %#llx, error %d\n",
	      !b ? "remote" : is_recv ? "receive" : "transfer",
	      !b ? 0 : is_recv ? b - z->recv : b - z->op, len,
	      (unsigned long long)flags, err);
	if (!b && (flags & FI_REMOTE_CQ_DATA)) {
		/* A remote write's CQ data: no receive of ours is used. */
		if (!(flags & FI_REMOTE_WRITE) || (flags & FI_REMOTE_READ))
			fail("remote CQ data for what is not a write",
			     (long)flags);
		if (len > TARGET_SIZE * UTIL_RDM_IOV_MAX)
			fail("remote CQ data out of bounds", (long)len);
		return;
	}
	if (b >= z->recv && b < z->recv + z->nrecv) {
		if (len > b->size)
			fail("receive completed past its buffer", (long)len);
	} else if (!(b >= z->op && b < z->op + z->nop)) {
		fail("completion for nothing posted or started", (long)flags);
	}
	if (!b->live)
		fail("completion for a call that failed", (long)flags);
	if (b->done++)
		fail("completed twice", (long)flags);
	/* Its buffers are the application's again: gone, so that the
	 * provider touching them later is a use after free. */
	free(b->mem);
	free(b->res);
	free(b->cmp);
	b->mem = b->res = b->cmp = NULL;
}

/*
 * What the victim holds in large allocations (glibc's mapped chunks)
 * must stay within what peers sent it: a length a packet claims is not
 * memory to reserve before any byte backs it.  (Under ASan, libFuzzer's
 * malloc limit says the same.)
 */
static void heap_check(void)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
	size_t held = mallinfo2().hblkhd;

	if (held > HEAP_MAX)
		fail("the victim holds memory no peer sent", (long)(held >> 20));
#endif
}

static void completed_cb(void *z, void *ctx, size_t len, uint64_t flags,
			 int err)
{
	completed(z, ctx, len, flags, err);
}

static void progress(struct fz *z, int calls)
{
	for (; calls > 0; calls--)
		fuzz_cq_poll("fuzz_udp_peer", z->cq, completed_cb, z);
	heap_check();
}

/* ---- the peer ------------------------------------------------------------ */

/* What the victim sent the peer: kept as an honest peer would. */
static void peer_read(struct fz *z, int keep)
{
	uint8_t buf[65536];
	struct udpx_hdr h;
	ssize_t n;

	while ((n = recv(peer_fd, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
		if (!keep || (size_t)n < HDR)
			continue;
		memcpy(&h, buf, HDR);
		TRACE("victim sent type %u flags %#x ctx %u>%u seq %u ack %u "
		      "len %llu tx_id %#llx\n",
		      h.type, h.flags, h.src_ctx, h.dst_ctx, h.seq, h.ack,
		      (unsigned long long)h.len, (unsigned long long)h.tx_id);
		if (h.magic != UDPX_MAGIC || h.type == UDPX_ACK ||
		    h.type == UDPX_NOCTX)
			continue;
		if (h.tx_id && h.type != UDPX_DACK && h.type != UDPX_RESP &&
		    h.type != UDPX_DATA)
			z->last_tx = h.tx_id;
		if ((h.flags & UDPX_F_REL) &&
		    (!z->vknown || (int32_t)(h.seq + 1 - z->vnext) > 0)) {
			z->vnext = h.seq + 1;
			z->vknown = 1;
		}
	}
}

static void rec_dgram(struct fz *z, uint8_t f, uint8_t g, const uint8_t *p,
		      size_t n)
{
	uint8_t buf[HDR + DGRAM_MAX];
	struct udpx_hdr h;
	struct fi_rma_iov rma;
	size_t len = n, i, k;

	memcpy(buf, p, n);
	if (f & D_COOKED) {
		if (len < HDR) {
			memset(buf + len, 0, HDR - len);
			len = HDR;
		}
		memcpy(&h, buf, HDR);
		h.magic = UDPX_MAGIC;
		h.version = UDPX_VERSION;
		if (f & D_REL)
			h.flags = z->dgram ? h.flags & ~UDPX_F_REL :
					     h.flags | UDPX_F_REL;
		if (f & D_EPOCH)
			h.epoch = PEER_EPOCH;
		if (f & D_SEQ) {
			h.seq = z->seq++;
			h.base = 0;
		}
		if (f & D_ACK) {
			h.ack = z->vnext;
			h.sack = 0;
		}
		if (f & D_TX_ID)
			h.tx_id = z->last_tx;
		if (f & D_CTX) {
			h.dst_ctx = z->nctx ? h.dst_ctx % z->nctx : 0;
			h.src_ctx = 0;
		}
		if (f & D_LEN)
			h.len = len - HDR;
		k = h.tag & 0xff;
		for (i = 0; (g & D_RANGES) && i < k && i < UTIL_RDM_IOV_MAX &&
			    HDR + (i + 1) * sizeof(rma) <= len;
		     i++) {
			memcpy(&rma, buf + HDR + i * sizeof(rma), sizeof(rma));
			rma.addr %= TARGET_SIZE;
			if (rma.len > TARGET_SIZE - rma.addr)
				rma.len = TARGET_SIZE - rma.addr;
			rma.key = TARGET_KEY;
			memcpy(buf + HDR + i * sizeof(rma), &rma, sizeof(rma));
		}
		memcpy(buf, &h, HDR);
	}
	if (sendto(peer_fd, buf, len, 0, (struct sockaddr *)&z->vname,
		   sizeof(z->vname)) < 0)
		TRACE("sendto: %m\n");
}

static struct buf *buf_new(struct buf *tab, size_t *count, size_t size)
{
	struct buf *b;

	if (*count == MAX_BUFS)
		return NULL;
	b = &tab[(*count)++];
	b->size = size;
	b->mem = calloc(1, size ? size : 1);
	b->res = calloc(1, 64);
	b->cmp = calloc(1, 64);
	if (!b->mem || !b->res || !b->cmp)
		abort();
	return b;
}

static void rec_post(struct fz *z, size_t size, uint8_t t)
{
	struct buf *b = buf_new(z->recv, &z->nrecv, size % 8192);
	struct fid_ep *rx = z->rx[z->nctx ? ((t >> 2) & 3) % z->nctx : 0];
	fi_addr_t src = (t & 2) ? z->peer_addr : FI_ADDR_UNSPEC;

	if (!b)
		return;
	if (t & 1)
		b->live = !fi_trecv(rx, b->mem, b->size, NULL, src, t >> 4, 0,
				    b);
	else
		b->live = !fi_recv(rx, b->mem, b->size, NULL, src, b);
}

/* Transfers of the victim towards the peer, whose answers the input gives. */
static void rec_issue(struct fz *z, uint8_t k)
{
	static const size_t sizes[] = { 8, 600, 5000, 256, 3000, 1000, 8, 8 };
	struct fid_ep *tx = z->tx[z->nctx ? ((k >> 5) & 3) % z->nctx : 0];
	struct fi_msg_tagged tmsg = { 0 };
	struct fi_msg msg = { 0 };
	struct iovec iov;
	struct buf *b = buf_new(z->op, &z->nop, sizes[k % 8]);
	uint64_t remote = 0, key = 1;
	uint64_t flags = FI_COMPLETION | ((k & 8) ? FI_DELIVERY_COMPLETE : 0);
	ssize_t ret;

	if (!b)
		return;
	iov.iov_base = b->mem;
	iov.iov_len = b->size;
	msg.msg_iov = tmsg.msg_iov = &iov;
	msg.iov_count = tmsg.iov_count = 1;
	msg.addr = tmsg.addr = z->peer_addr;
	msg.context = tmsg.context = b;
	tmsg.tag = 5;
	switch (k % 8) {
	case 0:
	case 1:
	case 2:
		ret = (k & 16) ? fi_tsendmsg(tx, &tmsg, flags) :
				 fi_sendmsg(tx, &msg, flags);
		break;
	case 3:
	case 4:
		ret = fi_read(tx, b->mem, b->size, NULL, z->peer_addr, remote,
			      key, b);
		break;
	case 5:
		ret = fi_write(tx, b->mem, b->size, NULL, z->peer_addr, remote,
			       key, b);
		break;
	case 6:
		ret = fi_fetch_atomic(tx, b->mem, 1, NULL, b->res, NULL,
				      z->peer_addr, remote, key, FI_UINT64,
				      FI_SUM, b);
		break;
	default:
		ret = fi_compare_atomic(tx, b->mem, 1, NULL, b->cmp, NULL,
					b->res, NULL, z->peer_addr, remote, key,
					FI_UINT64, FI_CSWAP, b);
		break;
	}
	b->live = !ret;
	TRACE("issue %u: %zd\n", k, ret);
}

static void bufs_free(struct buf *tab, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		free(tab[i].mem);
		free(tab[i].res);
		free(tab[i].cmp);
	}
}

static void setup_once(void)
{
	socklen_t len = sizeof(peer_name);

	trace = getenv("FUZZ_TRACE") && atoi(getenv("FUZZ_TRACE"));
	/* Small packets, so that a few kilobytes make messages of several
	 * of them, and rendezvous above 4 KiB; a short retransmission
	 * timeout that PROGRESS may wait out; acknowledgements at the next
	 * progress, not after a delay that makes replays differ. */
	setenv("FI_UDP_MTU", "576", 1);
	setenv("FI_UDP_EAGER_MAX", "4096", 1);
	setenv("FI_UDP_RTO", "2", 1);
	setenv("FI_UDP_ACK_DELAY", "0", 1);
	if (!getenv("FI_LOG_LEVEL"))
		setenv("FI_LOG_LEVEL", "none", 1);
	info_rdm = info_get(0);
	info_dgram = info_get(1);
	if (!info_rdm || !info_dgram)
		fail("no udp RDM or sockets DGRAM on 127.0.0.1", 0);
	peer_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&peer_name, 0, sizeof(peer_name));
	peer_name.sin_family = AF_INET;
	peer_name.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (peer_fd < 0 ||
	    bind(peer_fd, (struct sockaddr *)&peer_name, sizeof(peer_name)) ||
	    getsockname(peer_fd, (struct sockaddr *)&peer_name, &len))
		fail("cannot open the peer's socket", 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz z;
	size_t i = 1, n;
	uint8_t c;
	int ret;

	if (peer_fd < 0)
		setup_once();
	memset(&z, 0, sizeof(z));
	if (size) {
		z.dgram = data[0] & 1;
		z.nctx = (data[0] & 2) ? 2 + (data[0] >> 2) % 3 : 0;
	}
	/* What a victim of an input before sent the peer is not this one's. */
	peer_read(&z, 0);
	ret = victim_open(&z);
	if (ret)
		fail("cannot open the victim", ret);
	while (i < size) {
		c = data[i++];
		switch ((enum rec)(c % R_KINDS)) {
		case R_DGRAM:
			if (size - i < 4)
				goto done;
			n = (data[i + 2] | data[i + 3] << 8) % DGRAM_MAX;
			if (n > size - i - 4)
				n = size - i - 4;
			rec_dgram(&z, data[i], data[i + 1], data + i + 4, n);
			i += 4 + n;
			break;
		case R_PROGRESS:
			if (size - i < 1)
				goto done;
			if (data[i] & 0x80)
				usleep(RTO_MS * 1000 + 500);
			progress(&z, 1 + data[i++] % 16);
			break;
		case R_POST:
			if (size - i < 3)
				goto done;
			rec_post(&z, data[i] | data[i + 1] << 8, data[i + 2]);
			i += 3;
			break;
		case R_ISSUE:
			if (size - i < 1)
				goto done;
			rec_issue(&z, data[i++]);
			break;
		default:
			peer_read(&z, 1);
			break;
		}
	}
done:
	progress(&z, 16);
	victim_close(&z);
	bufs_free(z.recv, z.nrecv);
	bufs_free(z.op, z.nop);
	return 0;
}

#ifdef FUZZ_SEEDS
/* Seeds: honest conversations, each a file of records. */
struct seed {
	uint8_t b[4096];
	size_t n;
};

static void put(struct seed *s, const void *p, size_t n)
{
	if (n)
		memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void two(struct seed *s, uint8_t a, uint8_t b)
{
	uint8_t h[2] = { a, b };

	put(s, h, 2);
}

static void one(struct seed *s, uint8_t a)
{
	put(s, &a, 1);
}

/* A cooked datagram: h and payload, with the harness filling in f's. */
static void dgram(struct seed *s, uint8_t f, uint8_t g,
		  const struct udpx_hdr *h, const void *payload, size_t plen)
{
	uint16_t n = (uint16_t)(HDR + plen);
	uint8_t r[5] = { R_DGRAM, f, g, (uint8_t)n, (uint8_t)(n >> 8) };

	put(s, r, 5);
	put(s, h, HDR);
	put(s, payload, plen);
}

static void post(struct seed *s, uint16_t size, uint8_t t)
{
	uint8_t h[4] = { R_POST, (uint8_t)size, (uint8_t)(size >> 8), t };

	put(s, h, 4);
}

static void start(struct seed *s, uint8_t victim)
{
	memset(s, 0, sizeof(*s));
	one(s, victim);
}

/* An honest peer's packet: reliable, numbered, acknowledging. */
#define HONEST (D_COOKED | D_REL | D_EPOCH | D_SEQ | D_ACK | D_CTX | D_LEN)

int main(int argc, char **argv)
{
	static const char text[] = "sixteen bytes!!";
	uint8_t body[1024];
	struct fi_rma_iov rma;
	struct udpx_hdr h;
	struct seed s;
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s corpus-dir\n", argv[0]);
		return 2;
	}
	memset(&h, 0, sizeof(h));

	/* A message into a posted receive, on RDM. */
	start(&s, 0);
	post(&s, 64, 0);
	h.type = UDPX_MSG;
	h.flags = UDPX_F_REL;
	dgram(&s, HONEST, 0, &h, text, sizeof(text));
	two(&s, R_PROGRESS, 4);
	rc |= fuzz_write_file(argv[1], "rdm-msg", s.b, s.n);

	/* A tagged message in three packets, the receive posted late. */
	start(&s, 0);
	memset(body, 'x', sizeof(body));
	h.type = UDPX_MSG;
	h.flags = UDPX_F_REL | UDPX_F_TAGGED;
	h.tag = 9;
	h.len = 1200;
	dgram(&s, HONEST & ~D_LEN, 0, &h, body, 484);
	two(&s, R_PROGRESS, 2);
	post(&s, 2000, 1 | 9 << 4);
	memset(&h, 0, sizeof(h));
	h.type = UDPX_DATA;
	dgram(&s, HONEST & ~D_LEN, 0, &h, body, 484);
	dgram(&s, HONEST & ~D_LEN, 0, &h, body, 232);
	two(&s, R_PROGRESS, 4);
	rc |= fuzz_write_file(argv[1], "rdm-tagged-packets", s.b, s.n);

	/* The victim's sends: eager, rendezvous (complete at the ack) and
	 * delivery complete (at the DACK). */
	start(&s, 0);
	two(&s, R_ISSUE, 0);
	two(&s, R_ISSUE, 2);
	two(&s, R_PROGRESS, 2);
	one(&s, R_READ_PEER);
	memset(&h, 0, sizeof(h));
	h.type = UDPX_ACK;
	dgram(&s, HONEST & ~D_SEQ, 0, &h, NULL, 0);
	two(&s, R_PROGRESS, 2);
	two(&s, R_ISSUE, 8 | 1);
	two(&s, R_PROGRESS, 2);
	one(&s, R_READ_PEER);
	h.type = UDPX_DACK;
	dgram(&s, HONEST | D_TX_ID, 0, &h, NULL, 0);
	two(&s, R_PROGRESS, 4);
	rc |= fuzz_write_file(argv[1], "rdm-victim-sends", s.b, s.n);

	/* The victim's read and fetching atomic, answered. */
	start(&s, 0);
	two(&s, R_ISSUE, 3);
	two(&s, R_PROGRESS, 2);
	one(&s, R_READ_PEER);
	memset(&h, 0, sizeof(h));
	h.type = UDPX_RESP;
	h.len = 256;
	dgram(&s, (HONEST & ~D_LEN) | D_TX_ID, 0, &h, body, 256);
	two(&s, R_PROGRESS, 2);
	two(&s, R_ISSUE, 6);
	two(&s, R_PROGRESS, 2);
	one(&s, R_READ_PEER);
	h.len = 8;
	dgram(&s, (HONEST & ~D_LEN) | D_TX_ID, 0, &h, body, 8);
	two(&s, R_PROGRESS, 4);
	rc |= fuzz_write_file(argv[1], "rdm-victim-rma", s.b, s.n);

	/* Requests on the victim's registered buffer: a write with CQ
	 * data, a read, a fetching atomic. */
	start(&s, 0);
	memset(&h, 0, sizeof(h));
	memset(&rma, 0, sizeof(rma));
	h.type = UDPX_WRITE;
	h.flags = UDPX_F_REL | UDPX_F_CQ_DATA;
	h.tag = UDPX_RMA_TAG(1, 0, 0, 0);
	h.data = 77;
	h.tx_id = 0x100000001ull;
	rma.addr = 128;
	rma.len = 16;
	memcpy(body, &rma, sizeof(rma));
	memcpy(body + sizeof(rma), text, 16);
	dgram(&s, HONEST, D_RANGES, &h, body, sizeof(rma) + 16);
	two(&s, R_PROGRESS, 2);
	h.type = UDPX_READ;
	h.flags = UDPX_F_REL;
	dgram(&s, HONEST, D_RANGES, &h, body, sizeof(rma));
	two(&s, R_PROGRESS, 2);
	h.type = UDPX_ATOMIC;
	h.tag = UDPX_RMA_TAG(1, FI_SUM, FI_UINT64, UDPX_AT_FETCH);
	rma.len = 8;
	memcpy(body, &rma, sizeof(rma));
	dgram(&s, HONEST, D_RANGES, &h, body, sizeof(rma) + 8);
	two(&s, R_PROGRESS, 4);
	one(&s, R_READ_PEER);
	rc |= fuzz_write_file(argv[1], "rdm-target", s.b, s.n);

	/* sockets DGRAM: a message each way. */
	start(&s, 1);
	post(&s, 64, 2);
	memset(&h, 0, sizeof(h));
	h.type = UDPX_MSG;
	dgram(&s, HONEST, 0, &h, text, sizeof(text));
	two(&s, R_ISSUE, 0);
	two(&s, R_PROGRESS, 4);
	one(&s, R_READ_PEER);
	rc |= fuzz_write_file(argv[1], "dgram-msg", s.b, s.n);

	/* Scalable endpoints of 3 contexts, RDM and DGRAM: a message to
	 * context 2, a send from context 1, a message to a context past
	 * the count. */
	start(&s, 2 | 1 << 2);
	post(&s, 64, 2 << 2);
	memset(&h, 0, sizeof(h));
	h.type = UDPX_MSG;
	h.flags = UDPX_F_REL;
	h.dst_ctx = 2;
	dgram(&s, HONEST, 0, &h, text, sizeof(text));
	two(&s, R_ISSUE, 1 << 5 | 1);
	two(&s, R_PROGRESS, 4);
	one(&s, R_READ_PEER);
	h.dst_ctx = 9;
	dgram(&s, HONEST & ~D_CTX, 0, &h, text, sizeof(text));
	two(&s, R_PROGRESS, 4);
	one(&s, R_READ_PEER);
	rc |= fuzz_write_file(argv[1], "sep-rdm", s.b, s.n);
	s.b[0] |= 1;
	rc |= fuzz_write_file(argv[1], "sep-dgram", s.b, s.n);
	return rc;
}
#endif
