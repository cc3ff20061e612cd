/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer harness for shm's receiving side facing a hostile peer
 * (docs/shm-layout.md, "What a receiver checks in a slot").
 *
 * The victim is a real shm endpoint opened over the public API; its
 * progress (fi_cq_read) runs the provider's own slot handlers.  The peer is
 * played by hand, as in tests/unit/test_shm_trust.c: a region of its own
 * made with shm_region_create, an entry in the victim's peer table, and
 * slots written straight into the victim's queue.  Whatever the peer may
 * write is the fuzzer's: slot contents (op, flags, lengths, buffer
 * indices, iovec counts, RTS and RMA descriptors), its own region (header,
 * queue, peer table, bounce buffers, which the victim maps) and the
 * victim's region outside the owner's mutex.  The peer also consumes the
 * victim's slots in its queue, so that the victim's transfers towards it
 * (sends, reads, writes, atomics the input starts) wait on answers the
 * fuzzer writes.
 *
 * The input is a sequence of records, each starting with a byte whose value
 * modulo 5 says what it is:
 *   0 SLOT      f, n, n bytes: a slot (all but seq) into the victim's
 *               queue; f bit 0: src names the peer's real entry; bit 1:
 *               an RMA request's ranges are made offsets into the victim's
 *               registered buffer, under its key; bit 2: tag (or an RTS's
 *               or RMA request's tx id) answers the peer's last request;
 *               bit 3: an RTS's or RMA request's pid is this process and
 *               its iovecs offsets into a canary buffer of the harness
 *   1 POKE      s, off (2, LE), n, n bytes: written at off in a section
 *               of a region: s bits 0-1: header, queue, peer table,
 *               bounce buffers; bit 2: the peer's region, else the victim's
 *   2 PROGRESS  c: 1 + c % 16 calls of fi_cq_read
 *   3 POST      lo, hi, t: a receive of lo | hi << 8 (mod 8192) bytes;
 *               tagged (tag t >> 1) when t is odd
 *   4 ISSUE     k: the victim starts a transfer to the peer (k % 8: small,
 *               eager and rendezvous sends, short and long reads, a write,
 *               a fetching and a compare atomic)
 *
 * Every buffer is allocated at its exact size.  Aborts when a completion
 * names nothing posted or started (only a remote write's CQ data names
 * nothing), comes twice, or says a receive holds more than its buffer, or
 * when an error completion carries no positive FI_E* below 65536 (a
 * status a peer reports is no more trusted than the rest); AddressSanitizer catches any
 * access outside memory, libFuzzer's timeout a progress that never ends.
 * The victim runs without CMA, so the canary buffer must never change: a
 * request naming this process must not make it read or write its own
 * memory where the request says.
 *
 * Built with -DFUZZ_SEEDS, it writes a starting corpus into the directory
 * it is given; with tests/fuzz/fuzz_replay.c, it replays files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "weft/util_rdm.h"
#include "fuzz_util.h"
#include "shm_queue.h"
#include "shm_region.h"

/* Linked from the convenience library, the provider's object is pulled in
 * only if something refers to it. */
extern struct fi_provider shm_prov;
static struct fi_provider *const link_shm __attribute__((used)) = &shm_prov;

enum rec { R_SLOT, R_POKE, R_PROGRESS, R_POST, R_ISSUE, R_KINDS };
enum sect { S_HDR, S_QUEUE, S_PEERS, S_BOUNCE };

#define SLOTS 16
#define BOUNCE_COUNT 2
#define BOUNCE_SIZE 1024
#define TARGET_SIZE 4096
#define CANARY_SIZE 4096
#define CANARY_BYTE 0xa5
#define MAX_BUFS 8
#define SRC0 (0u | 1u << 16) /* the peer's entry 0, generation 1 */
#define SLOT_BODY (sizeof(struct shm_slot) - sizeof(uint64_t))

static const struct shm_region_attr peer_attr = {
	.queue_slots = SLOTS,
	.max_peers = 4,
	.bounce_count = BOUNCE_COUNT,
	.bounce_size = BOUNCE_SIZE,
};

/* A receive posted or a transfer started, and its buffers. */
struct buf {
	void *mem, *res, *cmp;
	size_t size;
	int done;
};

struct fz {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	fi_addr_t peer_addr;
	char *target; /* registered for remote access */
	uint64_t target_base; /* its address for peers (0 without VIRT_ADDR) */
	struct shm_map peer; /* the peer's own region */
	struct shm_map vic; /* the victim's, as the peer maps it */
	struct buf recv[MAX_BUFS], op[MAX_BUFS];
	size_t nrecv, nop;
	uint64_t last_tx, last_pull; /* ids of the victim's last requests */
};

/* FUZZ_TRACE=1 in the environment: say what happens, on stderr. */
static int trace = -1;

#define TRACE(...)                                                            \
	do {                                                                  \
		if (trace)                                                    \
			fprintf(stderr, "fuzz_shm_peer: " __VA_ARGS__);       \
	} while (0)

static uint8_t canary[CANARY_SIZE];

static void fail(const char *what, long a)
{
	fprintf(stderr, "fuzz_shm_peer: %s (%ld)\n", what, a);
	abort();
}

/* ---- the victim ---------------------------------------------------------- */

static int victim_open(struct fz *z, const char *name, const char *peer)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_info *hints = fi_allocinfo();
	char addr[FI_NAME_MAX];
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &z->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(z->info->fabric_attr, &z->fabric, NULL);
	if (!ret)
		ret = fi_domain(z->fabric, z->info, &z->domain, NULL);
	if (!ret)
		ret = fi_av_open(z->domain, &av_attr, &z->av, NULL);
	if (!ret)
		ret = fi_cq_open(z->domain, &cq_attr, &z->cq, NULL);
	if (!ret)
		ret = fi_endpoint(z->domain, z->info, &z->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(z->ep, &z->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(z->ep, &z->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret) {
		snprintf(addr, sizeof(addr), "fi_shm://%s", name);
		ret = fi_setname(&z->ep->fid, addr, strlen(addr) + 1);
	}
	if (!ret)
		ret = fi_enable(z->ep);
	if (!ret) {
		z->target = calloc(1, TARGET_SIZE);
		ret = z->target ? fi_mr_reg(z->domain, z->target, TARGET_SIZE,
					    FI_REMOTE_READ | FI_REMOTE_WRITE,
					    0, 0, 0, &z->mr, NULL) :
				  -FI_ENOMEM;
	}
	if (!ret) {
		z->target_base = z->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
					 (uintptr_t)z->target :
					 0;
		snprintf(addr, sizeof(addr), "fi_shm://%s", peer);
		ret = fi_av_insert(z->av, addr, 1, &z->peer_addr, 0, NULL) == 1 ?
			      0 :
			      -FI_EINVAL;
	}
	return ret;
}

static void victim_close(struct fz *z)
{
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

	TRACE("completion %s %zd, %zu bytes, flags %#llx, error %d\n",
	      b >= z->recv && b < z->recv + MAX_BUFS ? "receive" : "transfer",
	      b >= z->recv && b < z->recv + MAX_BUFS ? b - z->recv : b - z->op,
	      len, (unsigned long long)flags, err);
	if (!b && (flags & FI_REMOTE_CQ_DATA)) {
		/* A remote write's CQ data: no receive of ours is used. */
		if (!(flags & FI_REMOTE_WRITE) || (flags & FI_REMOTE_READ))
			fail("remote CQ data for what is not a write",
			     (long)flags);
		if (len > SHM_IOV_MAX * TARGET_SIZE)
			fail("remote CQ data out of bounds", (long)len);
		return;
	}
	if (b >= z->recv && b < z->recv + z->nrecv) {
		if (len > b->size)
			fail("receive completed past its buffer", (long)len);
	} else if (!(b >= z->op && b < z->op + z->nop)) {
		fail("completion for nothing posted or started", (long)flags);
	}
	if (b->done++)
		fail("completed twice", (long)flags);
}

/* ---- the peer ------------------------------------------------------------ */

/* Consume the victim's slots in our queue, as a peer that reads them. */
static void peer_consume(struct fz *z)
{
	struct shm_queue *q = z->peer.queue;
	struct shm_slot *s;
	struct shm_bounce *b;
	uint64_t id;
	int n;

	for (n = 0; n < SLOTS && (s = shm_queue_peek(q, SLOTS)); n++) {
		TRACE("victim sent op %u tag %llu aux %u len %u\n", s->op,
		      (unsigned long long)s->tag, s->aux, s->len);
		switch (s->op) {
		case SHM_OP_CTS:
			z->last_pull = s->aux;
			break;
		case SHM_OP_RTS:
		case SHM_OP_RMA:
		case SHM_OP_BOUNCE:
			memcpy(&id, s->payload, sizeof(id));
			z->last_tx = id;
			break;
		case SHM_OP_INLINE:
			memcpy(&id, s->payload + SHM_INLINE_MAX - sizeof(id),
			       sizeof(id));
			z->last_tx = id;
			break;
		default:
			break;
		}
		/* What the victim lent us from its outbound pool, back. */
		if (s->op == SHM_OP_DATA) {
			b = shm_map_bounce_out(&z->vic, s->aux, 0);
			if (b)
				atomic_store(&b->busy, 0);
		}
		if (s->op == SHM_OP_RMA) {
			struct shm_rma_req req;

			memcpy(&req, s->payload, sizeof(req));
			b = shm_map_bounce_out(&z->vic, req.bounce, 0);
			if (b)
				atomic_store(&b->busy, 0);
		}
		if (s->op == SHM_OP_BOUNCE && s->aux < BOUNCE_COUNT)
			shm_buf_push(&q->buf_free,
				     (struct shm_bounce *)z->peer.bounce,
				     shm_map_bounce_stride(&z->peer), s->aux);
		shm_queue_release(q, SLOTS, s);
	}
}

static void completed_cb(void *z, void *ctx, size_t len, uint64_t flags,
			 int err)
{
	completed(z, ctx, len, flags, err);
}

static void progress(struct fz *z, int calls)
{
	for (; calls > 0; calls--) {
		fuzz_cq_poll("fuzz_shm_peer", z->cq, completed_cb, z);
		peer_consume(z);
	}
}

/* Publish a slot in the victim's queue, as its only producer. */
static void put_slot(struct fz *z, const struct shm_slot *in)
{
	struct shm_queue *q = z->vic.queue;
	uint64_t pos = atomic_load(&q->tail);
	struct shm_slot *s = &q->slot[pos & (z->vic.queue_slots - 1)];

	if (atomic_load(&s->seq) != pos) {
		progress(z, 1);
		if (atomic_load(&s->seq) != pos)
			return; /* still full: the slot is lost */
	}
	atomic_store(&q->tail, pos + 1);
	memcpy((char *)s + sizeof(s->seq), (const char *)in + sizeof(in->seq),
	       SLOT_BODY);
	atomic_store(&s->seq, pos + 1);
}

static void rec_slot(struct fz *z, uint8_t f, const uint8_t *p, size_t n)
{
	struct shm_slot s;
	struct shm_rma_req req;
	struct shm_rts rts;
	size_t i;

	memset(&s, 0, sizeof(s));
	memcpy((char *)&s + sizeof(s.seq), p, n < SLOT_BODY ? n : SLOT_BODY);
	if (f & 1)
		s.src = SRC0;
	if (s.op == SHM_OP_RMA && (f & 14)) {
		memcpy(&req, s.payload, sizeof(req));
		for (i = 0; (f & 8) && i < SHM_IOV_MAX; i++) {
			req.pid = getpid();
			req.laddr[i] = (uintptr_t)canary +
				       req.laddr[i] % CANARY_SIZE;
			if (req.llen[i] > CANARY_SIZE - req.laddr[i] % CANARY_SIZE)
				req.llen[i] = 0;
		}
		for (i = 0; (f & 2) && i < SHM_IOV_MAX; i++) {
			req.rma[i].addr = z->target_base +
					  req.rma[i].addr % TARGET_SIZE;
			req.rma[i].key = fi_mr_key(z->mr);
		}
		if (f & 4)
			req.tx_id = z->last_tx;
		memcpy(s.payload, &req, sizeof(req));
	} else if (s.op == SHM_OP_RTS && (f & 12)) {
		memcpy(&rts, s.payload, sizeof(rts));
		if (f & 4)
			rts.tx_id = z->last_tx;
		for (i = 0; (f & 8) && i < SHM_IOV_MAX; i++) {
			rts.pid = getpid();
			rts.addr[i] = (uintptr_t)canary +
				      rts.addr[i] % CANARY_SIZE;
			if (rts.len[i] > CANARY_SIZE - rts.addr[i] % CANARY_SIZE)
				rts.len[i] = 0;
		}
		memcpy(s.payload, &rts, sizeof(rts));
	} else if (f & 4) {
		s.tag = s.op == SHM_OP_DATA ? z->last_pull : z->last_tx;
	}
	put_slot(z, &s);
}

/* A section of a region, as the peer may write it. */
static void rec_poke(struct fz *z, uint8_t sel, size_t off, const uint8_t *p,
		     size_t n)
{
	struct shm_map *m = (sel & 4) ? &z->peer : &z->vic;
	char *base;
	size_t len;

	switch ((enum sect)(sel & 3)) {
	case S_HDR:
		base = (char *)m->hdr;
		len = sizeof(struct shm_region_hdr);
		break;
	case S_QUEUE:
		/* Not the owner's robust mutex: left alone (see below). */
		base = (char *)&m->queue->tail;
		len = sizeof(struct shm_queue) -
		      offsetof(struct shm_queue, tail) +
		      m->queue_slots * sizeof(struct shm_slot);
		break;
	case S_PEERS:
		base = (char *)m->peers;
		len = m->max_peers * sizeof(struct shm_peer);
		break;
	default:
		base = m->bounce;
		len = 2 * m->bounce_count * shm_map_bounce_stride(m);
		break;
	}
	off %= len;
	if (n > len - off)
		n = len - off;
	memcpy(base + off, p, n);
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

	if (!b)
		return;
	if (t & 1)
		fi_trecv(z->ep, b->mem, b->size, NULL, FI_ADDR_UNSPEC, t >> 1,
			 0, b);
	else
		fi_recv(z->ep, b->mem, b->size, NULL, FI_ADDR_UNSPEC, b);
}

/* Transfers of the victim towards the peer, whose answers the input gives. */
static void rec_issue(struct fz *z, uint8_t k)
{
	static const size_t sizes[] = { 8, 600, 4000, 256, 3000, 100, 32, 32 };
	struct fi_msg msg = { 0 };
	struct iovec iov;
	struct buf *b = buf_new(z->op, &z->nop, sizes[k % 8]);
	uint64_t remote = 0x10000, key = 1;

	if (!b)
		return;
	switch (k % 8) {
	case 0:
	case 1:
	case 2:
		iov.iov_base = b->mem;
		iov.iov_len = b->size;
		msg.msg_iov = &iov;
		msg.iov_count = 1;
		msg.addr = z->peer_addr;
		msg.context = b;
		fi_sendmsg(z->ep, &msg,
			   FI_COMPLETION |
				   ((k & 8) ? FI_DELIVERY_COMPLETE : 0));
		break;
	case 3:
	case 4:
		fi_read(z->ep, b->mem, b->size, NULL, z->peer_addr, remote, key,
			b);
		break;
	case 5:
		fi_write(z->ep, b->mem, b->size, NULL, z->peer_addr, remote,
			 key, b);
		break;
	case 6:
		fi_fetch_atomic(z->ep, b->mem, 4, NULL, b->res, NULL,
				z->peer_addr, remote, key, FI_UINT64, FI_SUM, b);
		break;
	default:
		fi_compare_atomic(z->ep, b->mem, 4, NULL, b->cmp, NULL, b->res,
				  NULL, z->peer_addr, remote, key, FI_UINT64,
				  FI_CSWAP, b);
		break;
	}
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

static int setup(struct fz *z)
{
	static int once;
	char vname[SHM_NAME_MAX], pname[SHM_NAME_MAX];
	struct shm_peer *p;

	if (trace < 0)
		trace = getenv("FUZZ_TRACE") && atoi(getenv("FUZZ_TRACE"));
	if (!once) {
		/* Small regions; no CMA, so that the victim never reads or
		 * writes memory of this process, or of another, where a slot
		 * says.  FUZZ_SHM_CMA=1 leaves CMA on, for replaying inputs
		 * that name this process alone (replay.sh: cma-self). */
		setenv("FI_SHM_QUEUE_SLOTS", "16", 1);
		setenv("FI_SHM_MAX_PEERS", "4", 1);
		setenv("FI_SHM_BOUNCE_COUNT", "2", 1);
		setenv("FI_SHM_BOUNCE_SIZE", "1024", 1);
		if (!getenv("FUZZ_SHM_CMA") || atoi(getenv("FUZZ_SHM_CMA")) != 1)
			setenv("FI_SHM_DISABLE_CMA", "1", 1);
		if (!getenv("FI_LOG_LEVEL"))
			setenv("FI_LOG_LEVEL", "none", 1);
		once = 1;
	}
	snprintf(vname, sizeof(vname), "fuzz-victim-%d", (int)getpid());
	snprintf(pname, sizeof(pname), "fuzz-peer-%d", (int)getpid());
	if (shm_region_create(pname, &peer_attr, &z->peer))
		return -1;
	if (victim_open(z, vname, pname) || shm_region_map(vname, &z->vic))
		return -1;
	p = &z->vic.peers[0];
	p->pid = getpid();
	snprintf(p->name, sizeof(p->name), "%s", pname);
	atomic_store(&p->gen, 1);
	atomic_store(&p->state, SHM_PEER_ACTIVE);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int warm;
	struct fz z;
	size_t i = 0, n;
	uint8_t c;

	/* The first endpoint of a process does work of its own (parameters,
	 * the sweep of stale regions): an empty run first, so that every
	 * input, replayed alone or fuzzed after others, starts alike. */
	if (!warm) {
		warm = 1;
		LLVMFuzzerTestOneInput(data, 0);
	}

	memset(&z, 0, sizeof(z));
	memset(canary, CANARY_BYTE, sizeof(canary));
	if (setup(&z))
		fail("cannot set up the victim and its peer", 0);
	while (i < size) {
		c = data[i++];
		switch ((enum rec)(c % R_KINDS)) {
		case R_SLOT:
			if (size - i < 2)
				goto done;
			n = data[i + 1];
			if (n > size - i - 2)
				n = size - i - 2;
			rec_slot(&z, data[i], data + i + 2, n);
			i += 2 + n;
			break;
		case R_POKE:
			if (size - i < 4)
				goto done;
			n = data[i + 3];
			if (n > size - i - 4)
				n = size - i - 4;
			rec_poke(&z, data[i], data[i + 1] | data[i + 2] << 8,
				 data + i + 4, n);
			i += 4 + n;
			break;
		case R_PROGRESS:
			if (size - i < 1)
				goto done;
			progress(&z, 1 + data[i++] % 16);
			break;
		case R_POST:
			if (size - i < 3)
				goto done;
			rec_post(&z, data[i] | data[i + 1] << 8, data[i + 2]);
			i += 3;
			break;
		default:
			if (size - i < 1)
				goto done;
			rec_issue(&z, data[i++]);
			break;
		}
	}
done:
	progress(&z, 16);
	shm_region_unmap(&z.vic);
	victim_close(&z);
	shm_region_unmap(&z.peer);
	bufs_free(z.recv, z.nrecv);
	bufs_free(z.op, z.nop);
	for (i = 0; i < CANARY_SIZE; i++)
		if (canary[i] != CANARY_BYTE)
			fail("the victim wrote into its own memory for a peer",
			     (long)i);
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
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void slot(struct seed *s, uint8_t f, const struct shm_slot *sl)
{
	uint8_t h[3] = { R_SLOT, f, (uint8_t)SLOT_BODY };

	put(s, h, 3);
	put(s, (const char *)sl + sizeof(sl->seq), SLOT_BODY);
}

static void poke(struct seed *s, uint8_t sel, uint16_t off, const void *p,
		 uint8_t n)
{
	uint8_t h[5] = { R_POKE, sel, (uint8_t)off, (uint8_t)(off >> 8), n };

	put(s, h, 5);
	put(s, p, n);
}

static void two(struct seed *s, uint8_t a, uint8_t b)
{
	uint8_t h[2] = { a, b };

	put(s, h, 2);
}

static void post(struct seed *s, uint16_t size, uint8_t t)
{
	uint8_t h[4] = { R_POST, (uint8_t)size, (uint8_t)(size >> 8), t };

	put(s, h, 4);
}

static int write_seed(const char *dir, const char *name, const struct seed *s)
{
	return fuzz_write_file(dir, name, s->b, s->n);
}

/* Offset of bounce buffer i in the bounce section, and of its data. */
#define BB(i) ((uint16_t)((i) * (64 + BOUNCE_SIZE)))
#define BBD(i) ((uint16_t)(BB(i) + 64))

int main(int argc, char **argv)
{
	static const char text[] = "sixteen bytes!!";
	struct shm_rma_req req;
	struct shm_rts rts;
	struct shm_slot sl;
	struct seed s;
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s corpus-dir\n", argv[0]);
		return 2;
	}
	/* An inline message. */
	memset(&s, 0, sizeof(s));
	post(&s, 64, 0);
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_INLINE;
	sl.len = sizeof(text);
	memcpy(sl.payload, text, sizeof(text));
	slot(&s, 1, &sl);
	two(&s, R_PROGRESS, 4);
	rc |= write_seed(argv[1], "inline", &s);

	/* A tagged eager message in the victim's inbound buffer 1. */
	memset(&s, 0, sizeof(s));
	post(&s, 2000, 7);
	poke(&s, S_BOUNCE, BBD(1) + 8, text, sizeof(text));
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_BOUNCE;
	sl.flags = SHM_SLOT_TAGGED;
	sl.tag = 3;
	sl.aux = 1;
	sl.len = 500;
	slot(&s, 1, &sl);
	two(&s, R_PROGRESS, 4);
	rc |= write_seed(argv[1], "bounce-tagged", &s);

	/* A rendezvous message pushed through the peer's buffer 2. */
	memset(&s, 0, sizeof(s));
	post(&s, 4096, 0);
	memset(&rts, 0, sizeof(rts));
	rts.tx_id = 5;
	rts.msg_len = 1500;
	rts.iov_count = 1;
	rts.len[0] = 1500;
	rts.push = 1;
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_RTS;
	memcpy(sl.payload, &rts, sizeof(rts));
	slot(&s, 1, &sl);
	two(&s, R_PROGRESS, 2);
	poke(&s, 4 | S_BOUNCE, BBD(2), text, sizeof(text));
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_DATA;
	sl.aux = 2;
	sl.len = 1000;
	slot(&s, 5, &sl);
	two(&s, R_PROGRESS, 2);
	sl.aux = 3;
	sl.data = 1000;
	sl.len = 500;
	slot(&s, 5, &sl);
	two(&s, R_PROGRESS, 4);
	rc |= write_seed(argv[1], "rendezvous-push", &s);

	/* RMA requests on the victim's registered buffer. */
	memset(&req, 0, sizeof(req));
	req.tx_id = 9;
	req.len = 64;
	req.bounce = 2;
	req.kind = UTIL_RDM_TX_WRITE;
	req.rma_count = 1;
	req.rma[0].addr = 128;
	req.rma[0].len = 64;
	req.flags = SHM_RMA_F_LAST;
	memset(&s, 0, sizeof(s));
	poke(&s, 4 | S_BOUNCE, BBD(2), text, sizeof(text));
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_RMA;
	memcpy(sl.payload, &req, sizeof(req));
	slot(&s, 3, &sl);
	two(&s, R_PROGRESS, 2);
	req.kind = UTIL_RDM_TX_READ;
	req.bounce = SHM_NO_BOUNCE;
	req.reply_bounce = 1;
	memcpy(sl.payload, &req, sizeof(req));
	slot(&s, 3, &sl);
	two(&s, R_PROGRESS, 2);
	req.kind = UTIL_RDM_TX_FETCH_ATOMIC;
	req.bounce = 3;
	req.datatype = FI_UINT64;
	req.op = FI_SUM;
	req.len = 32;
	req.rma[0].len = 32;
	memcpy(sl.payload, &req, sizeof(req));
	slot(&s, 3, &sl);
	two(&s, R_PROGRESS, 2);
	rc |= write_seed(argv[1], "rma-target", &s);

	/* An RMA read and write without bounce buffers, naming this process
	 * and the canary: the victim has no CMA, so both must fail. */
	memset(&s, 0, sizeof(s));
	memset(&req, 0, sizeof(req));
	req.tx_id = 11;
	req.len = 64;
	req.bounce = SHM_NO_BOUNCE;
	req.kind = UTIL_RDM_TX_READ;
	req.iov_count = 1;
	req.laddr[0] = 256;
	req.llen[0] = 64;
	req.rma_count = 1;
	req.rma[0].addr = 0;
	req.rma[0].len = 64;
	req.flags = SHM_RMA_F_LAST;
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_RMA;
	memcpy(sl.payload, &req, sizeof(req));
	slot(&s, 11, &sl);
	two(&s, R_PROGRESS, 2);
	req.kind = UTIL_RDM_TX_WRITE;
	memcpy(sl.payload, &req, sizeof(req));
	slot(&s, 11, &sl);
	two(&s, R_PROGRESS, 2);
	rc |= write_seed(argv[1], "cma-self", &s);

	/* The victim's own transfers, answered. */
	memset(&s, 0, sizeof(s));
	two(&s, R_ISSUE, 3); /* read of 256 bytes */
	two(&s, R_PROGRESS, 2);
	poke(&s, 4 | S_BOUNCE, BBD(2), text, sizeof(text));
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_RMA_RESP;
	sl.data = 3; /* the peer's buffer 2, + 1 */
	sl.len = 256;
	slot(&s, 5, &sl);
	two(&s, R_PROGRESS, 2);
	two(&s, R_ISSUE, 6); /* fetching atomic */
	two(&s, R_PROGRESS, 2);
	slot(&s, 5, &sl);
	two(&s, R_PROGRESS, 2);
	two(&s, R_ISSUE, 8 | 0); /* small send, delivery complete */
	two(&s, R_PROGRESS, 2);
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_ACK;
	slot(&s, 5, &sl);
	two(&s, R_PROGRESS, 2);
	rc |= write_seed(argv[1], "victim-transfers", &s);

	/* A rendezvous send of the victim, fetched by push. */
	memset(&s, 0, sizeof(s));
	two(&s, R_ISSUE, 2);
	two(&s, R_PROGRESS, 2);
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_CTS;
	sl.aux = 1;
	sl.data = 4000;
	slot(&s, 5, &sl);
	two(&s, R_PROGRESS, 8);
	memset(&sl, 0, sizeof(sl));
	sl.op = SHM_OP_ACK;
	slot(&s, 5, &sl);
	two(&s, R_PROGRESS, 4);
	rc |= write_seed(argv[1], "victim-rendezvous", &s);
	return rc;
}
#endif
