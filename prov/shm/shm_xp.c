/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm transport (struct shm_xp, shm_transport): the engine's data
 * path over shared memory.
 *
 * Protocols (docs/shm-layout.md):
 *  - inline: payloads up to SHM_INLINE_MAX bytes travel in the queue slot;
 *  - bounce: up to bounce_size bytes are copied into one of the receiver's
 *    bounce buffers, which the receiver copies out of and frees (so the
 *    payload outlives its sender);
 *  - CMA: larger messages are announced (RTS) with the sender's iovecs;
 *    the receiver reads them with process_vm_readv once a receive matches,
 *    then acknowledges, which completes the send.
 *
 * RMA and atomics are in shm_rma.c, connections in shm_conn.c.
 */
#include "shm.h"

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/util_iov.h"
#include "shm_ep_priv.h"

static_assert(SHM_IOV_MAX == UTIL_RDM_IOV_MAX,
	      "descriptors carry the engine's iovecs");
static_assert(sizeof(struct shm_rts) <= UTIL_RDM_STASH_MAX,
	      "RTS fits the engine's stash");

/* Most slots handled per progress call, so one busy peer cannot starve
 * the caller. */
#define SHM_PROGRESS_BATCH 64

/* ---- peer input ---------------------------------------------------------
 *
 * Slots, the descriptors in them and the regions they point into are
 * written by other processes, which may be broken or hostile.  Every field
 * that locates or sizes memory is checked against what this process
 * checked or chose itself: the geometry of a mapped region (shm_region.h:
 * shm_map_peer, shm_map_bounce_in, shm_peer_name) and, here, the
 * descriptors.  Each check works on a private copy, read once.  A check
 * that fails costs the peer its message or operation (answered with
 * FI_EIO where the peer waits for an answer), never this process.
 */

/*
 * Whether we may copy with process_vm_readv/writev from or to `pid` for
 * the sender behind c: only with CMA on here, and, when pid is this very
 * process, only for a sender that is one of our own endpoints.  Otherwise
 * any peer could have us read or write our own memory where its request
 * says.
 */
static bool cma_allowed(struct shm_xp *ep, const struct shm_conn *c,
			int32_t pid)
{
	return ep->cma && (pid != weft_pid() || shm_name_held_here(c->name));
}

/* An RTS: its iovecs fit their array and hold the whole message. */
static bool rts_valid(const struct shm_rts *rts)
{
	uint64_t sum = 0;
	uint32_t i;

	if (rts->iov_count > UTIL_RDM_IOV_MAX)
		return false;
	for (i = 0; i < rts->iov_count; i++) {
		if (rts->len[i] > UINT64_MAX - sum)
			return false;
		sum += rts->len[i];
	}
	return sum >= rts->msg_len;
}

/*
 * An RMA request from the sender behind `c`: counts within their arrays, a
 * kind we serve, target ranges that add up to its length, results that fit
 * one of our bounce buffers, and, when it names one, an initiator's bounce
 * buffer holding what we will read (operands, then compare values).
 * Returns 0 and the initiator's buffer in *ib (NULL when none), or -FI_EIO.
 */
int rma_req_check(struct shm_xp *ep, struct shm_conn *c,
		  const struct shm_rma_req *req, struct shm_bounce **ib)
{
	uint64_t sum = 0, in;
	size_t i;

	*ib = NULL;
	if (req->iov_count > UTIL_RDM_IOV_MAX ||
	    req->rma_count > UTIL_RDM_IOV_MAX ||
	    req->kind < UTIL_RDM_TX_WRITE ||
	    req->kind > UTIL_RDM_TX_COMPARE_ATOMIC)
		return -FI_EIO;
	for (i = 0; i < req->rma_count; i++) {
		if (req->rma[i].len > UINT64_MAX - sum)
			return -FI_EIO;
		sum += req->rma[i].len;
	}
	if (sum != req->len ||
	    (req->reply_bounce && req->len > ep->own.bounce_size))
		return -FI_EIO;
	/* A write without the initiator's bounce buffer is read from its
	 * memory, a read without ours written into it, by CMA. */
	if (((req->kind == UTIL_RDM_TX_WRITE && req->bounce == SHM_NO_BOUNCE) ||
	     (req->kind == UTIL_RDM_TX_READ && !req->reply_bounce)) &&
	    !cma_allowed(ep, c, req->pid))
		return -FI_EIO;
	if (req->bounce == SHM_NO_BOUNCE)
		return 0;
	in = req->len;
	if (req->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
		if (in > UINT64_MAX / 2)
			return -FI_EIO;
		in *= 2;
	}
	if (conn_map(ep, c))
		return -FI_EIO;
	*ib = shm_map_bounce_out(&c->map, req->bounce, in);
	return *ib ? 0 : -FI_EIO;
}

/* ---- sending slots ------------------------------------------------------ */

/*
 * Claim a slot in c's queue and mark it ours in our peer entry until it
 * is published (conn_publish): should we die in between, the owner skips
 * it instead of waiting for it forever (queue_unstall).
 */
struct shm_slot *slot_claim(struct shm_conn *c, uint64_t *pos)
{
	struct shm_slot *s;

	/* Marked before the claim: an owner that sees the tail moved sees
	 * the mark too (the claim releases it), so a claimer that dies
	 * between the two is still found (queue_unstall). */
	atomic_store_explicit(c->claim, SHM_CLAIMING, memory_order_relaxed);
	s = shm_queue_claim(c->map.queue, c->map.queue_slots, pos);
	atomic_store_explicit(c->claim, s ? *pos + 1 : 0,
			      memory_order_relaxed);
	return s;
}

/* Send a control slot now, or keep it for the next progress call. */
int send_ctrl_data(struct shm_xp *ep, struct shm_conn *c, uint16_t op,
	       uint64_t tag, uint32_t aux, uint64_t data, uint32_t len)
{
	struct shm_pending *p;
	struct shm_slot *s;
	uint64_t pos;
	int ret;

	ret = conn_ready(ep, c);
	if (ret == -FI_ECONNRESET)
		return 0; /* nobody to answer any more */
	if (!ret && slist_empty(&ep->pending)) {
		s = slot_claim(c, &pos);
		if (s) {
			s->op = op;
			s->flags = 0;
			s->src = c->src_id;
			s->tag = tag;
			s->aux = aux;
			s->data = data;
			s->len = len;
			conn_publish(c, s, pos);
			return 0;
		}
	}
	p = malloc(sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	p->conn = c;
	p->op = op;
	p->tag = tag;
	p->aux = aux;
	p->data = data;
	p->len = len;
	slist_insert_tail(&p->entry, &ep->pending);
	return 0;
}

static int send_ctrl(struct shm_xp *ep, struct shm_conn *c, uint16_t op,
		     uint64_t tag, uint32_t aux)
{
	return send_ctrl_data(ep, c, op, tag, aux, 0, 0);
}

static void flush_pending(struct shm_xp *ep)
{
	struct shm_pending *p;
	struct shm_slot *s;
	uint64_t pos;
	int ret;

	while (!slist_empty(&ep->pending)) {
		p = container_of(ep->pending.head, struct shm_pending, entry);
		ret = conn_ready(ep, p->conn);
		if (ret == -FI_ECONNRESET) {
			/* conn_died dropped what was queued for the peer */
			if (ep->pending.head == &p->entry) {
				slist_remove_head(&ep->pending);
				free(p);
			}
			continue;
		}
		if (ret)
			return;
		s = slot_claim(p->conn, &pos);
		if (!s)
			return;
		s->op = p->op;
		s->flags = 0;
		s->src = p->conn->src_id;
		s->tag = p->tag;
		s->aux = p->aux;
		s->data = p->data;
		s->len = p->len;
		conn_publish(p->conn, s, pos);
		slist_remove_head(&ep->pending);
		free(p);
	}
}

/*
 * Bounce buffers: a region's pools (shm_layout.h).  An eager message takes
 * one of its receiver's inbound buffers (a small one when it fits, indices
 * from 2 x bounce_count; else one of the large pool, indices below
 * bounce_count; each a stack shared by all who map the region), so the
 * payload lives where it is consumed; pushed data and RMA take one of the
 * sender's own outbound pool (the indices between), in ring order, which
 * the peer gives back once it copied it out.
 */
static int buf_get_in(struct shm_map *m, size_t len, uint32_t *idx)
{
	struct shm_queue *q = shm_map_queue(m);

	if (len <= m->small_size &&
	    !shm_buf_pop(&q->small_free, shm_map_small(m, 0),
			 shm_map_small_stride(m), m->small_count, idx)) {
		*idx += (uint32_t)shm_map_small_first(m);
		return 0;
	}
	return shm_buf_pop(&q->buf_free, shm_map_bounce(m, 0),
			   shm_map_bounce_stride(m), m->bounce_count, idx);
}

/* How often a sender finding c's pool empty looks for buffers its dead
 * senders took. */
#define SHM_RECLAIM_MS 10

/*
 * An inbound buffer of c's pool for a message to c, marked ours in our
 * entry until a published slot hands it over.  When the pool is empty,
 * buffers that senders killed meanwhile had taken are given back (at most
 * every SHM_RECLAIM_MS), and the pool is tried once more.
 */
static int buf_get_in_for(struct shm_xp *ep, struct shm_conn *c, size_t len,
			  uint32_t *idx)
{
	uint64_t t;
	uint32_t i;
	int ret = buf_get_in(&c->map, len, idx);

	if (weft_unlikely(ret)) {
		t = weft_coarse_ms();
		if (t - c->reclaim_ms < SHM_RECLAIM_MS)
			return ret;
		c->reclaim_ms = t;
		for (i = 0; i < c->map.max_peers; i++) {
			struct shm_peer *p = &c->map.peers[i];

			if (atomic_load_explicit(&p->bounce,
						 memory_order_relaxed) &&
			    peer_holder_dead(p))
				buf_mark_reclaim(&c->map, p);
		}
		ret = buf_get_in(&c->map, len, idx);
		if (ret)
			return ret;
	}
	(void)ep;
	atomic_store_explicit(c->bounce, *idx + 1, memory_order_relaxed);
	return 0;
}

/*
 * The next outbound buffer, in ring order.  Readers free them mostly in
 * the order they were filled, so looking at the next one alone (one cache
 * line, which the reader writes) is enough; scanning for another would
 * read many lines other cores are writing.
 */
int buf_get_out(struct shm_xp *ep, struct shm_conn *reader,
		uint32_t *idx)
{
	uint32_t n = ep->own.bounce_count, b = ep->out_next;
	struct shm_bounce *bb = shm_map_bounce(&ep->own, n + b);

	if (atomic_load_explicit(&bb->busy, memory_order_acquire))
		return -FI_EAGAIN;
	ep->out_next = b + 1 == n ? 0 : b + 1;
	atomic_store_explicit(&bb->busy, 1, memory_order_relaxed);
	ep->out_reader[b] = reader;
	*idx = n + b;
	return 0;
}

/* A reader that died frees nothing: what it held is ours again. */
void bufs_out_reclaim(struct shm_xp *ep, struct shm_conn *reader)
{
	uint32_t n = ep->own.bounce_count, b;

	for (b = 0; ep->out_reader && b < n; b++) {
		if (ep->out_reader[b] != reader)
			continue;
		ep->out_reader[b] = NULL;
		atomic_store_explicit(&shm_map_bounce(&ep->own, n + b)->busy,
				      0, memory_order_release);
	}
}

/* Whether idx names a buffer of the region. */
static bool buf_valid(const struct shm_map *m, uint64_t idx)
{
	return idx < 2 * (uint64_t)m->bounce_count;
}

void buf_put(struct shm_map *m, uint32_t idx)
{
	uint32_t n = m->bounce_count;

	if (idx < n)
		shm_buf_push(&shm_map_queue(m)->buf_free, shm_map_bounce(m, 0),
			     shm_map_bounce_stride(m), idx);
	else if (buf_valid(m, idx))
		atomic_store_explicit(&shm_map_bounce(m, idx)->busy, 0,
				      memory_order_release);
	else if (shm_map_buf_inbound(m, idx))
		shm_buf_push(&shm_map_queue(m)->small_free,
			     shm_map_small(m, 0), shm_map_small_stride(m),
			     idx - (uint32_t)shm_map_small_first(m));
}

static int shm_send_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			  const struct util_rdm_hdr *hdr,
			  const struct iovec *iov, void **desc,
			  size_t iov_count)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_conn *c;
	struct shm_slot *s;
	uint32_t bidx = 0;
	uint64_t pos;
	bool inl;
	int ret;

	(void)desc;
	inl = hdr->len <= SHM_INLINE_MAX -
			     ((hdr->flags & UTIL_RDM_ACK_REQ) ?
				      sizeof(hdr->tx_id) : 0);
	ret = conn_of_peer_ready(ep, peer, &c);
	if (weft_unlikely(ret))
		return ret;
	if (weft_unlikely(conn_held(c)))
		return -FI_EAGAIN; /* the receiver holds us back */
	if (!inl) {
		ret = buf_get_in_for(ep, c, hdr->len, &bidx);
		if (ret)
			return ret;
	}
	s = slot_claim(c, &pos);
	if (weft_unlikely(!s)) {
		if (!inl) {
			atomic_store_explicit(c->bounce, 0,
					      memory_order_relaxed);
			buf_put(&c->map, bidx);
		}
		/* A queue that stays full may belong to a dead peer. */
		check_peers(ep, false);
		return c->dead ? -FI_ECONNRESET : -FI_EAGAIN;
	}
	s->flags = (uint16_t)(hdr->flags | SHM_SLOT_CLASS(hdr->op));
	s->src = c->src_id;
	s->tag = hdr->tag;
	s->data = hdr->data;
	s->len = (uint32_t)hdr->len;
	if (inl) {
		s->op = SHM_OP_INLINE;
		/* A message that waits for its acknowledgement carries the
		 * whole id at the end of the slot. */
		if (hdr->flags & UTIL_RDM_ACK_REQ)
			memcpy(s->payload + SHM_INLINE_MAX - sizeof(hdr->tx_id),
			       &hdr->tx_id, sizeof(hdr->tx_id));
		/* A 0-byte message may name no buffer at all. */
		if (iov_count == 1 && hdr->len)
			memcpy(s->payload, iov[0].iov_base, hdr->len);
		else if (iov_count > 1)
			util_iov_copy_from(s->payload, iov, iov_count, 0, hdr->len);
	} else {
		struct shm_bounce *bb = shm_map_bounce_in(&c->map, bidx,
							  hdr->len);

		s->op = SHM_OP_BOUNCE;
		s->aux = bidx;
		memcpy(s->payload, &hdr->tx_id, sizeof(hdr->tx_id));
		util_iov_copy_from(bb->data, iov, iov_count, 0, hdr->len);
		bb->len = (uint32_t)hdr->len;
		/* The slot hands it over from here on. */
		atomic_store_explicit(c->bounce, 0, memory_order_relaxed);
	}
	conn_publish(c, s, pos);
	return 0;
}

static int shm_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_rts rts = { 0 };
	struct shm_conn *c;
	struct shm_slot *s;
	uint64_t pos;
	size_t i;
	int ret;

	ret = conn_of_peer_ready(ep, tx->peer, &c);
	if (ret)
		return ret;
	if (conn_held(c))
		return -FI_EAGAIN;
	s = slot_claim(c, &pos);
	if (!s)
		return -FI_EAGAIN;
	rts.tx_id = tx->hdr.tx_id;
	rts.msg_len = tx->hdr.len;
	rts.pid = weft_pid();
	rts.push = !c->cma || tx->hdr.len < shm_params.cma_min;
	rts.iov_count = (uint32_t)tx->iov_count;
	for (i = 0; i < tx->iov_count; i++) {
		rts.addr[i] = (uintptr_t)tx->iov[i].iov_base;
		rts.len[i] = tx->iov[i].iov_len;
	}
	s->op = SHM_OP_RTS;
	s->flags = (uint16_t)(tx->hdr.flags | SHM_SLOT_CLASS(tx->hdr.op));
	s->src = c->src_id;
	s->tag = tx->hdr.tag;
	s->data = tx->hdr.data;
	/* The RTS carries the whole length: messages may pass 4 GiB. */
	s->len = 0;
	s->aux = 0;
	memcpy(s->payload, &rts, sizeof(rts));
	conn_publish(c, s, pos);
	return 0;
}

void cma_unavailable(struct shm_xp *ep, int err)
{
	if (ep->cma_warned)
		return;
	ep->cma_warned = true;
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"%s: process_vm_readv/writev %s: large transfers are copied "
		"through shared memory instead\n",
		ep->name, err ? strerror(err) : "is disabled");
}

/* Ask the sender to push the message through its bounce buffers. */
static int fetch_by_push(struct shm_xp *ep, const struct shm_rts *rts,
			 const struct iovec *iov, size_t iov_count, size_t len,
			 void *cookie)
{
	struct shm_rxpeer *rp = rxpeer_of(ep, rts->src);
	struct shm_pull *pull;
	int ret;

	if (!rp)
		return -FI_EIO;
	/* Its sender died after sending it: nobody will push. */
	if (rp->conn->dead)
		return -FI_ECONNRESET;
	pull = util_bufpool_get(ep->pulls);
	if (!pull)
		return -FI_ENOMEM;
	pull->cookie = cookie;
	pull->iov_count = iov_count;
	memcpy(pull->iov, iov, iov_count * sizeof(*iov));
	pull->len = len;
	pull->got = 0;
	pull->tx_id = rts->tx_id;
	pull->src = rts->src;
	pull->conn = rp->conn;
	ret = send_ctrl_data(ep, rp->conn, SHM_OP_CTS, rts->tx_id,
			     (uint32_t)util_bufpool_index(ep->pulls, pull), len,
			     0);
	if (!ret && rp->conn->dead) /* found dead on the way */
		ret = -FI_ECONNRESET;
	if (ret) {
		util_bufpool_put(ep->pulls, pull);
		return ret;
	}
	dlist_insert_tail(&pull->entry, &ep->pull_list);
	return -FI_EINPROGRESS;
}

static int shm_fetch(struct util_rdm_xport *xp, const void *stash,
		     const struct iovec *iov, void **desc, size_t iov_count,
		     size_t len, void *cookie)
{
	struct shm_xp *ep = shm_xp_of(xp);
	const struct shm_rts *rts = stash;
	struct iovec remote[UTIL_RDM_IOV_MAX];
	struct shm_rxpeer *rp;
	size_t i, nremote, left = len, got = 0;
	ssize_t n;
	int err = 0;

	if (rts->push || !ep->cma) {
		if (len)
			return fetch_by_push(ep, rts, iov, iov_count, len,
					     cookie);
		goto ack;
	}
	for (i = 0; i < rts->iov_count && i < UTIL_RDM_IOV_MAX; i++) {
		remote[i].iov_base = (void *)(uintptr_t)rts->addr[i];
		remote[i].iov_len = rts->len[i];
	}
	nremote = i;
	while (left) {
		struct iovec l[UTIL_RDM_IOV_MAX], r[UTIL_RDM_IOV_MAX];
		size_t nl = 0, nr = 0, skip, j;

		/* Describe what is left on both sides. */
		for (skip = got, j = 0; j < iov_count; j++) {
			if (skip >= iov[j].iov_len) {
				skip -= iov[j].iov_len;
				continue;
			}
			l[nl].iov_base = (char *)iov[j].iov_base + skip;
			l[nl++].iov_len = iov[j].iov_len - skip;
			skip = 0;
		}
		for (skip = got, j = 0; j < nremote; j++) {
			if (skip >= remote[j].iov_len) {
				skip -= remote[j].iov_len;
				continue;
			}
			r[nr].iov_base = (char *)remote[j].iov_base + skip;
			r[nr++].iov_len = remote[j].iov_len - skip;
			skip = 0;
		}
		n = process_vm_readv(rts->pid, l, nl, r, nr, 0);
		if (n < 0 && !got && (errno == EPERM || errno == ENOSYS)) {
			/* Denied (seccomp, ptrace rules): copy instead. */
			cma_unavailable(ep, errno);
			ep->cma = false;
			return fetch_by_push(ep, rts, iov, iov_count, len,
					     cookie);
		}
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			FI_WARN(&shm_prov, FI_LOG_EP_DATA,
				"process_vm_readv from pid %d: %s\n", rts->pid,
				strerror(err));
			break;
		}
		got += (size_t)n;
		left = got < len ? len - got : 0;
	}
ack:
	rp = rxpeer_of(ep, rts->src);
	if (rp)
		send_ctrl(ep, rp->conn, SHM_OP_ACK, rts->tx_id,
			  err ? FI_EIO : 0);
	return err ? -FI_EIO : 0;
}

/* Sending side: push what room allows; true when everything was sent. */
static bool push_continue(struct shm_xp *ep, struct shm_push *push)
{
	struct util_rdm_tx *tx = push->tx;

	/* Not while its region is not (or no longer) ours to write. */
	if (!push->conn->claimed || push->conn->dead || !push->conn->map.hdr)
		return false;
	while (push->sent < push->len) {
		size_t chunk = WEFT_MIN(push->len - push->sent,
					shm_params.push_chunk);
		struct shm_bounce *bb;
		struct shm_slot *s;
		uint32_t bidx;
		uint64_t pos;

		if (buf_get_out(ep, push->conn, &bidx))
			return false;
		s = slot_claim(push->conn, &pos);
		if (!s) {
			buf_put(&ep->own, bidx);
			return false;
		}
		bb = shm_map_bounce(&ep->own, bidx);
		util_iov_copy_from(bb->data, tx->iov, tx->iov_count, push->sent,
				   chunk);
		bb->len = (uint32_t)chunk;
		s->op = SHM_OP_DATA;
		s->flags = 0;
		s->src = push->conn->src_id;
		s->tag = push->pull_id;
		s->aux = bidx;
		s->data = push->sent;
		s->len = (uint32_t)chunk;
		conn_publish(push->conn, s, pos);
		push->sent += chunk;
	}
	return true;
}

static int pushes_continue(struct shm_xp *ep)
{
	struct dlist_entry *e, *tmp;
	int n = 0;

	dlist_foreach_safe(&ep->pushes, e, tmp) {
		struct shm_push *push = container_of(e, struct shm_push, entry);

		if (push_continue(ep, push)) {
			dlist_remove(e);
			util_bufpool_put(ep->push_pool, push);
			n++;
		}
	}
	return n;
}

/* The receiver is ready for a pushed message (its tx waits for the ACK). */
static void handle_cts(struct shm_xp *ep, struct shm_slot *s)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(ep->base.ep, s->tag);
	struct shm_rxpeer *rp = rxpeer_of(ep, s->src);
	struct shm_push *push;
	int ret;

	if (!tx || !rp)
		return;
	push = util_bufpool_get(ep->push_pool);
	if (!push) {
		util_rdm_tx_done(ep->base.ep, tx, FI_ENOMEM);
		return;
	}
	push->tx = tx;
	push->conn = rp->conn;
	push->pull_id = s->aux;
	push->len = WEFT_MIN(s->data, tx->hdr.len);
	push->sent = 0;
	ret = conn_ready(ep, push->conn);
	/*
	 * A peer found gone (its region marked gone, or its owner dead) had
	 * its transfers failed by conn_died, tx perhaps among them; nothing
	 * is pushed to it.  Only a peer not ready yet gets the push later.
	 */
	if (ret && (ret != -FI_EAGAIN ||
		    util_rdm_tx_of(ep->base.ep, s->tag) != tx)) {
		util_bufpool_put(ep->push_pool, push);
		return;
	}
	if (ret || !push_continue(ep, push))
		dlist_insert_tail(&push->entry, &ep->pushes);
	else
		util_bufpool_put(ep->push_pool, push);
}

/* Receiving side: pushed bytes arrived. */
static void handle_data(struct shm_xp *ep, struct shm_slot *s)
{
	struct shm_pull *pull = util_bufpool_at(ep->pulls, s->tag);
	struct shm_rxpeer *rp = rxpeer_of(ep, s->src);
	uint64_t off = s->data;
	uint32_t len = s->len;
	struct shm_bounce *bb;
	int err = 0;

	if (!rp || conn_map(ep, rp->conn))
		return;
	if (pull && pull->conn != rp->conn)
		pull = NULL; /* another sender's */
	bb = shm_map_bounce_out(&rp->conn->map, s->aux, len);
	if (!bb || (pull && (off > pull->len || len > pull->len - off))) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: pushed data from %s out of bounds\n", ep->name,
			rp->conn->name);
		err = FI_EIO;
	} else if (pull) {
		util_iov_copy_to(pull->iov, pull->iov_count, off, bb->data,
				 len);
		pull->got += len;
	}
	if (bb)
		buf_put(&rp->conn->map, s->aux);
	if (pull && (err || pull->got == pull->len)) {
		struct shm_conn *c = rp->conn;
		uint64_t tx_id = pull->tx_id;
		void *cookie = pull->cookie;

		/* Done with it before the answer: sending may find the
		 * sender dead, which fails every pull still listed. */
		dlist_remove(&pull->entry);
		util_bufpool_put(ep->pulls, pull);
		util_rdm_fetch_done(ep->base.ep, cookie, err);
		send_ctrl(ep, c, SHM_OP_ACK, tx_id, (uint32_t)err);
	}
}

static void shm_discard(struct util_rdm_xport *xp, const void *stash)
{
	struct shm_xp *ep = shm_xp_of(xp);
	const struct shm_rts *rts = stash;
	struct shm_rxpeer *rp = rxpeer_of(ep, rts->src);

	if (rp)
		send_ctrl(ep, rp->conn, SHM_OP_ACK, rts->tx_id, 0);
}

static int shm_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		   int err)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_rxpeer *rp = rxpeer_of(ep, (uint32_t)(uintptr_t)reply);

	if (!rp)
		return -FI_ENOTCONN;
	return send_ctrl(ep, rp->conn, SHM_OP_ACK, tx_id, (uint32_t)err);
}

/* ---- receiving ---------------------------------------------------------- */

/* The sender's fi_addr, when matching or completions need it. */
static fi_addr_t rxpeer_addr(struct shm_xp *ep, struct shm_rxpeer *rp)
{
	struct util_ep *base = &ep->base.ep->base;

	if (!(base->caps & (FI_SOURCE | FI_DIRECTED_RECV)) || !base->av)
		return FI_ADDR_NOTAVAIL;
	if (rp->fi_addr == FI_ADDR_NOTAVAIL)
		rp->fi_addr = util_av_lookup_addr(base->av, rp->addr);
	return rp->fi_addr;
}

/*
 * A message slot from sender rp (NULL: unknown); `copy`, for a held
 * BOUNCE message, is where its payload was moved.  -FI_EAGAIN when the
 * engine cannot take it now: it is held and offered again later (see
 * held_push).
 */
static int handle_msg(struct shm_xp *ep, struct shm_slot *s,
		      struct shm_rxpeer *rp, const void *copy)
{
	struct util_rdm_msg msg = {
		.op = SHM_SLOT_OP(s->flags),
		.flags = s->flags & (UTIL_RDM_CQ_DATA | UTIL_RDM_ACK_REQ),
		.tag = s->tag,
		.data = s->data,
		.len = s->len,
		.src = FI_ADDR_NOTAVAIL,
		.reply = (void *)(uintptr_t)s->src,
	};
	struct shm_bounce *bb = NULL;
	struct shm_rts rts;
	uint16_t op = s->op;

	if (weft_unlikely(!rp)) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: message from an unknown peer entry %u dropped\n",
			ep->name, s->src & 0xffff);
		return 0;
	}
	msg.src = rxpeer_addr(ep, rp);
	msg.src_raw = rp->addr;
	msg.src_raw_len = rp->addr_len;

	switch (op) {
	case SHM_OP_INLINE:
		msg.payload = s->payload;
		if (msg.flags & UTIL_RDM_ACK_REQ) {
			memcpy(&msg.tx_id,
			       s->payload + SHM_INLINE_MAX - sizeof(msg.tx_id),
			       sizeof(msg.tx_id));
			if (msg.len > SHM_INLINE_MAX - sizeof(msg.tx_id))
				goto refuse;
		}
		if (msg.len > SHM_INLINE_MAX)
			goto refuse;
		break;
	case SHM_OP_BOUNCE:
		memcpy(&msg.tx_id, s->payload, sizeof(msg.tx_id));
		if (copy) {
			msg.payload = copy;
			break;
		}
		/* The sender filled one of our own inbound buffers. */
		bb = shm_map_bounce_in(&ep->own, s->aux, msg.len);
		if (!bb)
			goto refuse;
		msg.payload = bb->data;
		break;
	case SHM_OP_RTS:
		memcpy(&rts, s->payload, sizeof(rts));
		rts.src = s->src;
		msg.stash = &rts;
		msg.stash_len = sizeof(rts);
		msg.tx_id = rts.tx_id;
		msg.len = rts.msg_len;
		if (!rts_valid(&rts))
			goto refuse;
		/* A sender we may not read by CMA pushes. */
		if (!rts.push && !cma_allowed(ep, rp->conn, rts.pid))
			rts.push = 1;
		break;
	}
	if (util_rdm_msg_arrived(&ep->base, &msg) == -FI_EAGAIN)
		return -FI_EAGAIN;
	if (bb)
		buf_put(&ep->own, s->aux);
	return 0;

refuse:
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"%s: message from %s out of bounds dropped\n", ep->name,
		rp->conn->name);
	/* A sender that waits for an answer gets one. */
	if (op == SHM_OP_RTS || (msg.flags & UTIL_RDM_ACK_REQ))
		send_ctrl(ep, rp->conn, SHM_OP_ACK, msg.tx_id, FI_EIO);
	return 0;
}

static void handle_cts(struct shm_xp *ep, struct shm_slot *s);
static void handle_data(struct shm_xp *ep, struct shm_slot *s);

/*
 * Answers to what this endpoint sent (acknowledgements, RMA responses, the
 * go-ahead to push, pushed data).  Returns false for any other op.
 */
static bool serve_answer(struct shm_xp *ep, struct shm_slot *s)
{
	switch (s->op) {
	case SHM_OP_ACK:
		util_rdm_tx_acked(ep->base.ep, s->tag, peer_status(s->aux));
		return true;
	case SHM_OP_RMA_RESP:
		handle_rma_resp(ep, s);
		return true;
	case SHM_OP_CTS:
		handle_cts(ep, s);
		return true;
	case SHM_OP_DATA:
		handle_data(ep, s);
		return true;
	case SHM_OP_RMA_EVENT:
		rma_event_in(ep, s);
		return true;
	default:
		return false;
	}
}

/* A message or RMA request from rp; -FI_EAGAIN when it must wait. */
static int serve_request(struct shm_xp *ep, struct shm_slot *s,
			 struct shm_rxpeer *rp, const void *copy)
{
	switch (s->op) {
	case SHM_OP_INLINE:
	case SHM_OP_BOUNCE:
	case SHM_OP_RTS:
		return handle_msg(ep, s, rp, copy);
	case SHM_OP_RMA:
		return handle_rma(ep, s, rp);
	default:
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: unknown slot op %u dropped\n", ep->name, s->op);
		return 0;
	}
}

/*
 * Held requests.  A message or RMA request that cannot be served yet (the
 * engine refuses an unexpected message past its bound; no buffer for RMA
 * results) leaves the queue for a record of ours, with what we know of its
 * sender, and so does every later request of that sender, so its order
 * holds.  The `hold` flag of the sender's peer entry then tells it to send
 * no requests (it gets -FI_EAGAIN) until its held ones are served.  Other
 * senders go on: a message that matches a posted receive is delivered,
 * whoever else waits.  The queue keeps flowing for answers, so our own
 * transfers complete too (the application may need them before it posts
 * the receives that make room).
 *
 * Records come from a pool that grows as needed: they number at most the
 * requests senders had under way when they were held back (each held
 * sender sends no more), and a request left in the queue for want of one
 * would stop the answers behind it.  A held eager message's payload moves out of
 * its bounce buffer into memory sized to it, so that our inbound pool stays
 * free for the senders we do not hold: at most bounce_count such payloads
 * can be under way when we start holding.
 */
static bool held_push(struct shm_xp *ep, const struct shm_slot *s,
		      const struct shm_rxpeer *rp)
{
	uint32_t idx = s->src & 0xffff;
	struct shm_held *h = util_bufpool_get(ep->held_pool);
	struct shm_bounce *bb;

	if (!h)
		return false;
	h->copy = NULL;
	bb = s->op == SHM_OP_BOUNCE ?
		     shm_map_bounce_in(&ep->own, s->aux, s->len) :
		     NULL;
	if (bb) {
		h->copy = malloc(s->len);
		if (!h->copy) {
			util_bufpool_put(ep->held_pool, h);
			return false;
		}
		memcpy(h->copy, bb->data, s->len);
		buf_put(&ep->own, s->aux);
	}
	memcpy(&h->slot, s, sizeof(*s));
	h->rp = *rp;
	dlist_insert_tail(&h->entry, &ep->held_list);
	if (!ep->rxpeers[idx].held++)
		atomic_store_explicit(&ep->own.peers[idx].hold, 1,
				      memory_order_relaxed);
	return true;
}

/* Serve held requests, oldest first, each sender's in its order. */
static int held_serve(struct shm_xp *ep)
{
	struct dlist_entry *e, *tmp;
	uint32_t pass = ++ep->held_pass;
	int n = 0;

	dlist_foreach_safe(&ep->held_list, e, tmp) {
		struct shm_held *h = container_of(e, struct shm_held, entry);
		uint32_t idx = h->slot.src & 0xffff;
		struct shm_rxpeer *rp = &ep->rxpeers[idx];

		if (rp->held_pass == pass)
			continue; /* an older one of this sender waits */
		if (serve_request(ep, &h->slot, &h->rp, h->copy) ==
		    -FI_EAGAIN) {
			rp->held_pass = pass;
			continue;
		}
		free(h->copy);
		dlist_remove(e);
		util_bufpool_put(ep->held_pool, h);
		n++;
		if (!--rp->held)
			atomic_store_explicit(&ep->own.peers[idx].hold,
					      0, memory_order_release);
	}
	return n;
}

/*
 * Whether what a dead peer sent is all offered: it sends nothing more, so
 * once our queue was empty and nothing is held, nothing of it waits.
 */
static bool shm_peer_drained(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct shm_xp *ep = shm_xp_of(xp);

	(void)peer;
	return !ep->own.queue ||
	       (!shm_queue_peek(ep->own.queue, ep->own.queue_slots) &&
		dlist_empty(&ep->held_list));
}

/* How long a claimed slot at our queue's head may stay unpublished
 * before its claimer is looked at. */
#define SHM_STALL_MS 10

/*
 * Our queue's head slot is claimed (tail is past it) but not published:
 * normally a sender between its claim and its publish, for a moment.  A
 * sender killed there would stop the queue for everyone behind it.  When
 * the same head has waited SHM_STALL_MS, the peer entry whose claim mark
 * names it tells who claimed it; if that holder is dead, the slot is
 * published as SHM_OP_SKIP on its behalf.  (A sender that died between
 * its claim and the mark, a few instructions, is not found.)
 */
/* Publish the slot at head, which p's dead holder claimed, as nothing. */
static void skip_dead_claim(struct shm_xp *ep, struct shm_slot *s,
			    uint64_t head, struct shm_peer *p)
{
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"%s: slot %llu was claimed by %.*s, which died before "
		"filling it: skipped\n",
		ep->name, (unsigned long long)head, (int)sizeof(p->name),
		p->name);
	s->op = SHM_OP_SKIP;
	atomic_store_explicit(&p->claim, 0, memory_order_relaxed);
	buf_mark_reclaim(&ep->own, p);
	shm_queue_publish(s, head);
}

static void queue_unstall(struct shm_xp *ep)
{
	struct shm_peer *claiming_dead = NULL;
	bool claiming_alive = false;
	struct shm_queue *q = ep->own.queue;
	uint32_t slots = ep->own.queue_slots, i;
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint64_t t = weft_coarse_ms();
	struct shm_slot *s;

	if (atomic_load_explicit(&q->tail, memory_order_acquire) == head) {
		ep->stall_head = UINT64_MAX;
		return;
	}
	if (ep->stall_head != head) {
		ep->stall_head = head;
		ep->stall_ms = t;
		return;
	}
	if (t - ep->stall_ms < SHM_STALL_MS)
		return;
	ep->stall_ms = t;
	s = &q->slot[head & (slots - 1)];
	if (atomic_load_explicit(&s->seq, memory_order_acquire) == head + 1)
		return;
	/* The claimer is the entry marked with this slot; or, when none is,
	 * one that died marked as claiming, provided no live one is still
	 * between its mark and its claim (it may hold this slot). */
	for (i = 0; i < ep->own.max_peers; i++) {
		struct shm_peer *p = &ep->own.peers[i];
		uint64_t c = atomic_load_explicit(&p->claim,
						  memory_order_acquire);

		if (c == head + 1) {
			if (!peer_holder_dead(p))
				return; /* alive: it will publish */
			skip_dead_claim(ep, s, head, p);
			return;
		}
		if (c == SHM_CLAIMING) {
			if (!peer_holder_dead(p))
				claiming_alive = true;
			else if (!claiming_dead)
				claiming_dead = p;
		}
	}
	if (claiming_dead && !claiming_alive)
		skip_dead_claim(ep, s, head, claiming_dead);
}

static int shm_progress(struct util_rdm_xport *xp)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_queue *q = ep->own.queue;
	uint32_t slots = ep->own.queue_slots;
	struct shm_rxpeer *rp;
	struct shm_slot *s;
	int n, n_done = 0;

	/* Inside another provider's endpoint whose region could not be
	 * made: nothing comes this way. */
	if (weft_unlikely(!q))
		return 0;
	/* Looking at the clock costs too: only every 256th call. */
	if (weft_unlikely((util_rdm_tx_waiting(xp->ep) ||
			   util_rdm_rx_directed(xp->ep) ||
			   !dlist_empty(&ep->pull_list)) &&
			  !(++ep->progress_calls & 255)))
		check_peers(ep, false);
	if (weft_unlikely(SHM_OWNER_HINT && shm_owner_died(q)))
		owner_relock(ep);
	if (weft_unlikely(!slist_empty(&ep->pending)))
		flush_pending(ep);
	if (weft_unlikely(!dlist_empty(&ep->pushes)))
		n_done = pushes_continue(ep);
	if (weft_unlikely(!dlist_empty(&ep->chunked)))
		n_done += chunks_continue(ep);
	if (weft_unlikely(!dlist_empty(&ep->held_list)))
		n_done += held_serve(ep);
	for (n = 0; n < SHM_PROGRESS_BATCH && (s = shm_queue_peek(q, slots));
	     n++) {
		switch (s->op) {
		case SHM_OP_INLINE:
		case SHM_OP_BOUNCE:
		case SHM_OP_RTS:
		case SHM_OP_RMA:
			rp = rxpeer_of(ep, s->src);
			if (weft_unlikely(rp && rp->held)) {
				/* Behind its sender's held ones. */
				if (!held_push(ep, s, rp))
					goto out;
			} else if (weft_unlikely(serve_request(ep, s, rp,
							       NULL) ==
						 -FI_EAGAIN) &&
				   !held_push(ep, s, rp)) {
				goto out; /* no record: wait in the queue */
			}
			break;
		case SHM_OP_SKIP:
			break;
		default:
			if (!serve_answer(ep, s))
				FI_WARN(&shm_prov, FI_LOG_EP_DATA,
					"%s: unknown slot op %u dropped\n",
					ep->name, s->op);
			break;
		}
		shm_queue_release(q, slots, s);
	}
	/* Nothing to read: now and then, is a dead sender's claim in the
	 * way? */
	if (weft_unlikely(!n && !(++ep->empty_calls & 255)))
		queue_unstall(ep);
out:
	return n + n_done;
}

/* ---- sleeping, and the transport ---------------------------------------- */

/* Sleeping: the bell wakes us when a slot arrives. */
static int shm_wait_fd(struct util_rdm_xport *xp)
{
	return shm_xp_of(xp)->wait_fd;
}

/*
 * About to sleep: empty the bell, and say so in the queue, unless a slot
 * came meanwhile or work of ours needs polling (transfers under way, whose
 * peers may die; slots, or transmits the engine queued, that found a
 * queue full: nobody rings us when it has room again; requests held
 * back).
 */
static int shm_arm(struct util_rdm_xport *xp)
{
	struct shm_xp *ep = shm_xp_of(xp);
	char buf[64];

	if (!ep->own.queue)
		return 0; /* no region: nothing comes this way */
	if (ep->bell_fd < 0)
		return 1; /* no bell to wake us: poll */
	while (read(ep->bell_fd, buf, sizeof(buf)) > 0)
		;
	if (util_rdm_tx_waiting(xp->ep) || !dlist_empty(&ep->pull_list) ||
	    !slist_empty(&ep->pending) || !dlist_empty(&ep->pushes) ||
	    !dlist_empty(&ep->chunked) || !dlist_empty(&ep->held_list) ||
	    util_rdm_tx_queued(xp->ep, xp))
		return 1;
	return shm_queue_sleep(ep->own.queue) ? 0 : 1;
}

const struct util_rdm_transport shm_transport = {
	.reaches = shm_reaches,
	.peer_drained = shm_peer_drained,
	.wait_fd = shm_wait_fd,
	.arm = shm_arm,
	.peer_size = sizeof(struct shm_conn),
	.peer_init = shm_peer_init,
	.peer_fini = shm_peer_fini,
	.send_eager = shm_send_eager,
	.send_rndv = shm_send_rndv,
	.fetch = shm_fetch,
	.discard = shm_discard,
	.ack = shm_ack,
	.rma = shm_rma,
	.progress = shm_progress,
};
