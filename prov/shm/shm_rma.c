/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shm RMA and atomics: requests the target serves from its progress
 * (through bounce buffers or CMA; in chunks without CMA), one-sided
 * transfers the initiator makes itself through the target's registration
 * table (rma_direct), and the target's side of both.
 */
#include "shm.h"

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/util_atomic.h"
#include "weft/util_iov.h"
#include "shm_ep_priv.h"

/* ---- RMA and atomics ---------------------------------------------------- */

/*
 * The pieces of bytes [skip, skip + len) of an operation's remote ranges,
 * into out; returns how many.  *mask gets bit k set when out[k]'s
 * registration counts the operation in this part (util_mr_map_count):
 * out[k] holds the last byte of the operation's last range in that
 * registration.  Empty ranges count nothing: they change and show nothing.
 */
static size_t rma_piece(const struct fi_rma_iov *rma, size_t count, size_t skip,
			size_t len, struct fi_rma_iov *out, uint8_t *mask)
{
	size_t i, j, n = 0;

	*mask = 0;
	for (i = 0; i < count && len; i++) {
		size_t take;

		if (skip >= rma[i].len) {
			skip -= rma[i].len;
			continue;
		}
		take = WEFT_MIN(rma[i].len - skip, len);
		if (take == rma[i].len - skip) {
			/* This part ends range i: count here unless a
			 * later range lies in the same registration. */
			for (j = i + 1; j < count; j++)
				if (rma[j].len && rma[j].key == rma[i].key)
					break;
			if (j == count)
				*mask |= (uint8_t)(1u << n);
		}
		out[n].addr = rma[i].addr + skip;
		out[n].len = take;
		out[n++].key = rma[i].key;
		len -= take;
		skip = 0;
	}
	return n;
}

/*
 * Send the request for bytes [off, off+len) of an RMA or atomic tx.  Data
 * goes through a bounce buffer when the op is an atomic, when it is small,
 * or when the transfer is chunked (no CMA); otherwise the target moves it
 * with process_vm_readv/writev.  `last` marks the part whose completion at
 * the target counts as the operation's remote event.
 */
static int rma_issue(struct shm_xp *ep, struct util_rdm_tx *tx,
		     struct shm_conn *c, size_t off, size_t len, bool chunked,
		     bool last)
{
	bool atomic = tx->kind >= UTIL_RDM_TX_ATOMIC;
	struct shm_rma_req req = { 0 };
	struct iovec piece[UTIL_RDM_IOV_MAX];
	uint32_t bidx = SHM_NO_BOUNCE;
	struct shm_bounce *bb;
	struct shm_slot *s;
	size_t i, n;
	uint64_t pos;

	if (conn_held(c))
		return -FI_EAGAIN;
	if (atomic || (tx->kind == UTIL_RDM_TX_WRITE &&
		       (chunked || len <= shm_params.bounce_size))) {
		if (buf_get_out(ep, c, &bidx))
			return -FI_EAGAIN;
	}
	s = slot_claim(c, &pos);
	if (!s) {
		if (bidx != SHM_NO_BOUNCE)
			buf_put(&ep->own, bidx);
		return -FI_EAGAIN;
	}

	n = util_iov_slice(tx->iov, tx->iov_count, off, len, piece);
	if (bidx != SHM_NO_BOUNCE) {
		bb = shm_map_bounce(&ep->own, bidx);
		util_iov_copy_from(bb->data, piece, n, 0, len);
		if (tx->cmp_count)
			util_iov_copy_from(bb->data + len, tx->cmp_iov,
					   tx->cmp_count, 0, len);
		bb->len = (uint32_t)len;
	}
	req.reply_bounce = tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ||
			   tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC ||
			   (tx->kind == UTIL_RDM_TX_READ && (chunked || !c->cma));
	req.tx_id = tx->hdr.tx_id;
	req.len = len;
	req.pid = weft_pid();
	req.bounce = bidx;
	req.kind = (uint8_t)tx->kind;
	req.iov_count = (uint8_t)n;
	req.rma_count = (uint8_t)rma_piece(tx->rma_iov, tx->rma_count, off,
					   len, req.rma, &req.count);
	req.datatype = (uint8_t)tx->datatype;
	req.op = (uint8_t)tx->atomic_op;
	req.flags = (last ? SHM_RMA_F_LAST : 0) |
		    ((tx->flags & FI_COMMIT_COMPLETE) &&
				     tx->kind != UTIL_RDM_TX_READ ?
			     SHM_RMA_F_COMMIT :
			     0);
	for (i = 0; i < n; i++) {
		req.laddr[i] = (uintptr_t)piece[i].iov_base;
		req.llen[i] = piece[i].iov_len;
	}

	s->op = SHM_OP_RMA;
	s->flags = (uint16_t)(last ? tx->hdr.flags & UTIL_RDM_CQ_DATA : 0);
	s->src = c->src_id;
	s->tag = tx->hdr.tx_id;
	s->data = tx->hdr.data;
	s->len = 0;
	s->aux = 0;
	memcpy(s->payload, &req, sizeof(req));
	conn_publish(c, s, pos);
	c->rma_queued++;
	return 0;
}

/* Issue the next part of a chunked transfer; false if it must wait. */
static bool chunk_issue(struct shm_xp *ep, struct shm_rma_chunked *ch)
{
	size_t total = ch->tx->hdr.len;
	size_t len = WEFT_MIN(total - ch->off, shm_params.bounce_size);

	if (rma_issue(ep, ch->tx, ch->conn, ch->off, len, true,
		      ch->off + len == total))
		return false;
	ch->inflight = len;
	return true;
}

/* ---- one-sided: the initiator moves the data itself --------------------- */

/* The peer's registration table, mapped once per mapping of its region;
 * NULL when it has none (no CMA there, or the table is unusable). */
static struct shm_mrt_map *conn_mrt(struct shm_xp *ep, struct shm_conn *c)
{
	char name[SHM_NAME_MAX];
	int ret;

	if (weft_likely(c->mrt_tried))
		return c->mrt.hdr ? &c->mrt : NULL;
	c->mrt_tried = true;
	memcpy(name, c->map.hdr->mrt, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (!name[0])
		return NULL;
	ret = shm_mrt_map(name, c->map.hdr->pid, &c->mrt);
	if (ret) {
		FI_INFO(&shm_prov, FI_LOG_EP_DATA,
			"%s: registration table of %s unusable (%s): its RMA "
			"goes through its progress\n",
			ep->name, c->name, fi_strerror(-ret));
		return NULL;
	}
	return &c->mrt;
}

/* What the target must grant, as handle_rma checks it. */
static uint64_t rma_access(int kind)
{
	switch (kind) {
	case UTIL_RDM_TX_WRITE:
	case UTIL_RDM_TX_ATOMIC:
		return FI_REMOTE_WRITE;
	case UTIL_RDM_TX_READ:
		return FI_REMOTE_READ;
	default:
		return FI_REMOTE_READ | FI_REMOTE_WRITE;
	}
}

/*
 * A CMA call toward the target moved `n` of `want` bytes: 0, 1 when CMA
 * is refused (fall back to the target's progress; nothing was moved), or
 * -FI_EIO.
 */
static int cma_result(struct shm_xp *ep, struct shm_conn *c, ssize_t n,
		      size_t want)
{
	if (n == (ssize_t)want)
		return 0;
	if (n < 0 && (errno == EPERM || errno == ENOSYS)) {
		cma_unavailable(ep, errno);
		c->cma = false;
		return 1;
	}
	if (n < 0 && errno == ESRCH)
		return 1; /* gone: the queue path finds out and says so */
	return -FI_EIO;
}

/*
 * An atomic on the target's memory `remote` (n ranges, whole elements
 * each), under the target's atomic lock: read the old values, apply, write
 * the new ones back, and hand fetched values to the initiator.
 */
static int atomic_direct(struct shm_xp *ep, struct shm_conn *c,
			 struct shm_mrt_map *m, struct util_rdm_tx *tx,
			 const struct iovec *remote, size_t n)
{
	size_t len = tx->hdr.len, elem = util_atomic_dt_size(tx->datatype);
	bool fetch = tx->kind != UTIL_RDM_TX_ATOMIC;
	uint8_t *buf, *src = NULL, *cmp = NULL, *res = NULL;
	/* Old values, operands, compare values and results: on the stack
	 * for the usual few elements, no allocation per atomic. */
	uint64_t small[4 * 16];
	struct iovec tgt;
	ssize_t got;
	size_t i;
	int ret;

	if (!elem)
		return -FI_EINVAL;
	for (i = 0; i < n; i++)
		if (remote[i].iov_len % elem)
			return -FI_EINVAL;
	buf = 4 * len <= sizeof(small) ? (uint8_t *)small : malloc(4 * len);
	if (!buf)
		return -FI_ENOMEM;
	tgt.iov_base = buf;
	tgt.iov_len = len;
	if (tx->atomic_op != FI_ATOMIC_READ) {
		src = buf + len;
		util_iov_copy_from(src, tx->iov, tx->iov_count, 0, len);
	}
	if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
		cmp = buf + 2 * len;
		util_iov_copy_from(cmp, tx->cmp_iov, tx->cmp_count, 0, len);
	}
	if (fetch)
		res = buf + 3 * len;

	ret = shm_mrt_lock(m);
	if (ret) {
		if (buf != (uint8_t *)small)
			free(buf);
		return ret;
	}
	got = process_vm_readv(m->pid, &tgt, 1, remote, n, 0);
	ret = cma_result(ep, c, got, len);
	if (!ret)
		ret = util_rdm_target_atomic(tx->atomic_op, tx->datatype, &tgt,
					     1, src, cmp, res);
	if (!ret && tx->atomic_op != FI_ATOMIC_READ) {
		got = process_vm_writev(m->pid, &tgt, 1, remote, n, 0);
		ret = cma_result(ep, c, got, len);
		if (ret > 0)
			ret = -FI_EIO; /* read but not written: no retry */
	}
	shm_mrt_unlock(m);
	if (!ret && fetch)
		util_iov_copy_to(tx->res_iov, tx->res_count, 0, res, len);
	if (buf != (uint8_t *)small)
		free(buf);
	return ret;
}

/*
 * Tell the target what happened to its memory, after the data is in
 * place: once for its endpoint's remote counters (its region says it
 * counts), and once per registration of the operation whose counters
 * count it (events[i]: what the table said of rma_iov[i]'s, as pinned).
 * Remote CQ data never comes this way (rma_direct).  Out of line: most
 * targets count nothing, and rma_direct does not call it then.
 */
static __attribute__((noinline)) void
rma_direct_event(struct shm_xp *ep, struct shm_conn *c, struct util_rdm_tx *tx,
		 const uint64_t *events)
{
	uint64_t ev = util_rdm_mr_events(tx->kind, tx->atomic_op);
	uint64_t what = SHM_EVENT_KIND(tx->kind, tx->atomic_op);
	uint32_t aux = 0;
	size_t i, j;

	if (c->map.hdr->flags & SHM_REGION_RMA_EVENT)
		aux = SHM_EVENT_EP;
	for (i = 0; i < tx->rma_count; i++) {
		if (!(events[i] & ev) || !tx->rma_iov[i].len)
			continue;
		for (j = 0; j < i; j++)
			if (tx->rma_iov[j].len &&
			    tx->rma_iov[j].key == tx->rma_iov[i].key)
				break;
		if (j < i)
			continue; /* that registration is told already */
		send_ctrl_data(ep, c, SHM_OP_RMA_EVENT, tx->rma_iov[i].key,
			       aux | SHM_EVENT_KEY, what,
			       (uint32_t)WEFT_MIN(tx->hdr.len, UINT32_MAX));
		aux = 0; /* the endpoint counts it once */
	}
	if (aux)
		send_ctrl_data(ep, c, SHM_OP_RMA_EVENT, 0, aux, what,
			       (uint32_t)WEFT_MIN(tx->hdr.len, UINT32_MAX));
}

/*
 * RMA or an atomic without the target's help: look the keys up in its
 * registration table, pin the entries, move the data with
 * process_vm_readv/writev, unpin, and complete.  Returns 0 (done, tx
 * completed, in error or not), or 1 when the target must serve it (no
 * table, key not published, CMA refused, our earlier messages or requests
 * still in its queue, FI_COMMIT_COMPLETE).
 */
static int rma_direct(struct shm_xp *ep, struct shm_conn *c,
		      struct util_rdm_tx *tx)
{
	_Atomic int32_t *pin[UTIL_RDM_IOV_MAX];
	struct iovec remote[UTIL_RDM_IOV_MAX];
	uint64_t events[UTIL_RDM_IOV_MAX], counted = 0;
	uint64_t access = rma_access(tx->kind), raddr;
	struct shm_mrt_map *m;
	size_t i, n = 0;
	ssize_t got;
	int ret = 0;

	/* Behind our messages and requests the peer has not served yet, in
	 * its queue, when the endpoint keeps RMA in order (shm.h), or when
	 * the peer holds our requests back.  A write with remote CQ data
	 * goes to the target too: it must look to see the data anyway, and
	 * there it checks the ranges whose length its completion reports,
	 * which an event of ours could only claim. */
	if ((tx->hdr.flags & UTIL_RDM_CQ_DATA) || !c->cma || conn_held(c) ||
	    /* A commit is the target's to make (handle_rma). */
	    (tx->flags & FI_COMMIT_COMPLETE) ||
	    (ep->rma_order &&
	     (c->rma_queued ||
	      !shm_queue_consumed(c->map.queue, c->order_pos))) ||
	    !(m = conn_mrt(ep, c)))
		return 1;
	for (i = 0; i < tx->rma_count; i++) {
		ret = shm_mrt_pin(m, tx->rma_iov[i].key, tx->rma_iov[i].addr,
				  tx->rma_iov[i].len, access, &raddr, &pin[n],
				  &events[n]);
		if (ret)
			break;
		counted |= events[n];
		remote[n].iov_base = (void *)(uintptr_t)raddr;
		remote[n++].iov_len = tx->rma_iov[i].len;
	}
	if (!ret) {
		switch (tx->kind) {
		case UTIL_RDM_TX_WRITE:
			got = process_vm_writev(m->pid, tx->iov, tx->iov_count,
						remote, n, 0);
			ret = cma_result(ep, c, got, tx->hdr.len);
			break;
		case UTIL_RDM_TX_READ:
			got = process_vm_readv(m->pid, tx->iov, tx->iov_count,
					       remote, n, 0);
			ret = cma_result(ep, c, got, tx->hdr.len);
			break;
		default:
			ret = atomic_direct(ep, c, m, tx, remote, n);
			break;
		}
	}
	for (i = 0; i < n; i++)
		shm_mrt_unpin(pin[i]);
	if (ret > 0)
		return 1;
	if (weft_unlikely(counted) ||
	    weft_unlikely(c->map.hdr->flags & SHM_REGION_RMA_EVENT)) {
		if (!ret)
			rma_direct_event(ep, c, tx, events);
	}
	util_rdm_tx_done(ep->base.ep, tx, -ret);
	return 0;
}

int shm_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct shm_xp *ep = shm_xp_of(xp);
	bool atomic = tx->kind >= UTIL_RDM_TX_ATOMIC;
	size_t len = tx->hdr.len;
	struct shm_rma_chunked *ch;
	struct shm_conn *c;
	int ret;

	ret = conn_of_peer_ready(ep, tx->peer, &c);
	if (ret)
		return ret;
	if (atomic && len * (tx->cmp_count ? 2 : 1) > shm_params.bounce_size)
		return -FI_EINVAL;
	if (!rma_direct(ep, c, tx))
		return 0;
	if (atomic)
		return rma_issue(ep, tx, c, 0, len, false, true);
	if (c->cma || len <= shm_params.bounce_size)
		return rma_issue(ep, tx, c, 0, len, false, true);

	/* No CMA: a part per bounce buffer, one at a time. */
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -FI_ENOMEM;
	ch->tx = tx;
	ch->conn = c;
	if (!chunk_issue(ep, ch)) {
		free(ch);
		return -FI_EAGAIN;
	}
	dlist_insert_tail(&ch->entry, &ep->chunked);
	return 0;
}

/* Chunked transfers whose next part found no room: try again. */
int chunks_continue(struct shm_xp *ep)
{
	struct dlist_entry *e;
	int n = 0;

	dlist_foreach(&ep->chunked, e) {
		struct shm_rma_chunked *ch =
			container_of(e, struct shm_rma_chunked, entry);

		if (!ch->inflight && chunk_issue(ep, ch))
			n++;
	}
	return n;
}

/* Target side: translate the request's remote ranges into local memory. */
static int rma_local(struct shm_xp *ep, const struct shm_rma_req *req,
		     uint64_t access, struct iovec *local, size_t *nlocal)
{
	return util_rdm_target_iov(
		&util_mr_domain_of(ep->base.ep->base.domain)->mr_map, req->rma,
		req->rma_count, access, local, UTIL_RDM_IOV_MAX * 2, nlocal);
}

static ssize_t cma_copy(pid_t pid, const struct iovec *local, size_t nlocal,
			const struct shm_rma_req *req, bool write_remote)
{
	struct iovec remote[UTIL_RDM_IOV_MAX];
	size_t i;

	for (i = 0; i < req->iov_count; i++) {
		remote[i].iov_base = (void *)(uintptr_t)req->laddr[i];
		remote[i].iov_len = req->llen[i];
	}
	/* Either way `local` is ours and `remote` the initiator's. */
	return write_remote ?
		       process_vm_writev(pid, local, nlocal, remote, i, 0) :
		       process_vm_readv(pid, local, nlocal, remote, i, 0);
}

/* A request served: count it on the counters bound to the registrations
 * the initiator marked for this part (shm_rma_req.count). */
static void rma_count_local(struct util_mr_map *map,
			    const struct shm_rma_req *req)
{
	struct fi_rma_iov r[SHM_IOV_MAX];
	size_t i, n = 0;

	for (i = 0; i < req->rma_count; i++)
		if (req->count & (1u << i))
			r[n++] = req->rma[i];
	util_mr_map_count(map, r, n, util_rdm_mr_events(req->kind, req->op));
}

/* The key map of the endpoint's domain: its registrations. */
static inline struct util_mr_map *xp_mr_map(struct shm_xp *ep)
{
	return &util_mr_domain_of(ep->base.ep->base.domain)->mr_map;
}

/*
 * A peer read or wrote our memory itself (rma_direct): it counts, on the
 * endpoint's remote counters and on those bound to the registration it
 * names.  What it says of a length we cannot check, so it brings no
 * completion (remote CQ data comes with a request we serve, whose ranges
 * we check); nor of the range, so a registration counts what its key was
 * named for.
 */
void rma_event_in(struct shm_xp *ep, const struct shm_slot *s)
{
	struct util_mr_map *map = xp_mr_map(ep);
	uint32_t kind = (uint32_t)(s->data & 0xff);
	enum fi_op op = (enum fi_op)(s->data >> 8 & 0xff);
	struct fi_rma_iov r = { 0, s->len, s->tag };

	if ((s->aux & SHM_EVENT_CQ_DATA) || kind < UTIL_RDM_TX_WRITE ||
	    kind > UTIL_RDM_TX_COMPARE_ATOMIC || op >= WEFT_ATOMIC_OP_COUNT) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: a malformed RMA event dropped\n", ep->name);
		return;
	}
	if (s->aux & SHM_EVENT_EP)
		util_rdm_remote_event(ep->base.ep,
				      kind == UTIL_RDM_TX_READ ?
					      FI_REMOTE_READ :
					      FI_REMOTE_WRITE,
				      s->len, 0);
	if ((s->aux & SHM_EVENT_KEY) && util_mr_map_counting(map))
		util_mr_map_count(map, &r, 1, util_rdm_mr_events(kind, op));
}

/*
 * Serve one request.  Returns -FI_EAGAIN when it must wait for a free
 * bounce buffer of ours (the slot stays in the queue).
 */
int handle_rma(struct shm_xp *ep, struct shm_slot *s,
	       struct shm_rxpeer *rp)
{
	struct iovec local[UTIL_RDM_IOV_MAX * 2] = { { 0 } };
	struct shm_bounce *ib = NULL, *tb = NULL;
	struct shm_rma_req req;
	uint32_t tidx = 0;
	uint64_t access, ev;
	size_t nlocal = 0;
	ssize_t n;
	int ret;

	memcpy(&req, s->payload, sizeof(req));
	if (!rp)
		return 0;
	ret = rma_req_check(ep, rp->conn, &req, &ib);
	if (ret) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: RMA request from %s out of bounds refused\n",
			ep->name, rp->conn->name);
		goto reply;
	}
	if (req.reply_bounce) {
		ret = buf_get_out(ep, rp->conn, &tidx);
		if (ret)
			return ret;
		tb = shm_map_bounce(&ep->own, tidx);
	}
	switch (req.kind) {
	case UTIL_RDM_TX_WRITE:
		access = FI_REMOTE_WRITE;
		ev = FI_REMOTE_WRITE;
		break;
	case UTIL_RDM_TX_READ:
		access = FI_REMOTE_READ;
		ev = FI_REMOTE_READ;
		break;
	case UTIL_RDM_TX_ATOMIC:
		access = FI_REMOTE_WRITE;
		ev = FI_REMOTE_WRITE;
		break;
	default:
		access = FI_REMOTE_READ | FI_REMOTE_WRITE;
		ev = FI_REMOTE_WRITE;
		break;
	}
	ret = rma_local(ep, &req, access, local, &nlocal);
	if (ret)
		goto reply;

	switch (req.kind) {
	case UTIL_RDM_TX_WRITE:
		if (ib) {
			util_iov_copy_to(local, nlocal, 0, ib->data, req.len);
		} else {
			n = cma_copy(req.pid, local, nlocal, &req, false);
			ret = n == (ssize_t)req.len ? 0 : -FI_EIO;
		}
		break;
	case UTIL_RDM_TX_READ:
		if (tb) {
			util_iov_copy_from(tb->data, local, nlocal, 0, req.len);
		} else {
			n = cma_copy(req.pid, local, nlocal, &req, true);
			ret = n == (ssize_t)req.len ? 0 : -FI_EIO;
		}
		break;
	default:
		ret = util_mr_map_atomic_lock(
			&util_mr_domain_of(ep->base.ep->base.domain)->mr_map);
		if (ret)
			break;
		ret = util_rdm_target_atomic(req.op, req.datatype, local, nlocal,
				       ib && req.op != FI_ATOMIC_READ ?
					       ib->data :
					       NULL,
				       ib && req.kind ==
						       UTIL_RDM_TX_COMPARE_ATOMIC ?
					       ib->data + req.len :
					       NULL,
				       tb ? tb->data : NULL);
		util_mr_map_atomic_unlock(
			&util_mr_domain_of(ep->base.ep->base.domain)->mr_map);
		break;
	}
	if (!ret && req.count && util_mr_map_counting(xp_mr_map(ep)))
		rma_count_local(xp_mr_map(ep), &req);
	/* Remote CQ data comes with writes alone (fi_rma(3)), as in tcp. */
	/* FI_COMMIT_COMPLETE: durable before the initiator hears. */
	if (!ret && (req.flags & SHM_RMA_F_COMMIT) &&
	    req.kind != UTIL_RDM_TX_READ)
		util_mr_map_commit(xp_mr_map(ep), req.rma, req.rma_count);
	if (!ret && (req.flags & SHM_RMA_F_LAST))
		util_rdm_remote_event(ep->base.ep,
				      ev | ((s->flags & UTIL_RDM_CQ_DATA) &&
							    req.kind ==
								    UTIL_RDM_TX_WRITE ?
						    FI_REMOTE_CQ_DATA :
						    0),
				      req.len, s->data);
reply:
	if (ib)
		buf_put(&rp->conn->map, req.bounce);
	if (tb && ret)
		buf_put(&ep->own, tidx);
	else if (tb)
		tb->len = (uint32_t)req.len;
	send_ctrl_data(ep, rp->conn, SHM_OP_RMA_RESP, req.tx_id,
		       ret ? (uint32_t)-ret : 0, tb && !ret ? tidx + 1 : 0,
		       (uint32_t)req.len);
	return 0;
}

static struct shm_rma_chunked *chunk_of(struct shm_xp *ep,
					 struct util_rdm_tx *tx)
{
	struct dlist_entry *e;

	dlist_foreach(&ep->chunked, e) {
		struct shm_rma_chunked *ch =
			container_of(e, struct shm_rma_chunked, entry);

		if (ch->tx == tx)
			return ch;
	}
	return NULL;
}

/* Initiator side: the target answered (for the whole op or one part). */
void handle_rma_resp(struct shm_xp *ep, struct shm_slot *s)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(ep->base.ep, s->tag);
	struct shm_rxpeer *rp = rxpeer_of(ep, s->src);
	struct shm_rma_chunked *ch = NULL;
	struct shm_bounce *tb = NULL;
	uint64_t bidx = s->data;
	uint32_t err = (uint32_t)peer_status(s->aux);
	size_t off = 0, len = 0;

	if (tx) {
		struct shm_conn *tc = conn_of_peer(ep, tx->peer);

		if (tc->rma_queued)
			tc->rma_queued--;
		ch = chunk_of(ep, tx);
	}
	if (ch) {
		off = ch->off;
		len = ch->inflight;
	} else if (tx) {
		len = tx->hdr.len;
	}
	if (bidx && rp && !conn_map(ep, rp->conn))
		tb = shm_map_bounce_out(&rp->conn->map, bidx - 1, len);
	if (bidx && !tb && !err) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: RMA answer names a bounce buffer out of bounds\n",
			ep->name);
		err = FI_EIO;
	}
	if (tx && tb && !err) {
		if (tx->kind == UTIL_RDM_TX_READ) {
			util_iov_copy_to(tx->iov, tx->iov_count, off, tb->data,
					 len);
		} else {
			util_iov_copy_to(tx->res_iov, tx->res_count, 0,
					 tb->data, len);
		}
	}
	if (tb)
		buf_put(&rp->conn->map, (uint32_t)(s->data - 1));
	if (!tx)
		return;
	if (ch) {
		ch->off += ch->inflight;
		ch->inflight = 0;
		if (!err && ch->off < tx->hdr.len) {
			chunk_issue(ep, ch);
			return;
		}
		dlist_remove(&ch->entry);
		free(ch);
	}
	util_rdm_tx_done(ep->base.ep, tx, (int)err);
}
