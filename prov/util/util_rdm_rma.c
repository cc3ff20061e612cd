/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RDM engine (weft/util_rdm.h), one-sided: the RMA and atomic entry
 * points (util_rdm_rma_ops, util_rdm_atomic_ops), and the target side
 * that transports moving RMA and atomics in software call.
 */
#include "weft/util_rdm.h"

#include <string.h>

#include "weft/ofi.h"

#include "weft/util_atomic.h"
#include "weft/util_iov.h"
#include "weft/util_mr.h"

#include "util_rdm_priv.h"

/* ---- RMA ---------------------------------------------------------------- */

static ssize_t rdm_rma(struct util_rdm_ep *ep, uint32_t kind,
		       const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t addr, const struct fi_rma_iov *rma,
		       size_t rma_count, void *context, uint64_t data,
		       uint64_t flags)
{
	const struct util_rdm_transport *tp = ep->xp->ops;
	struct util_rdm_tx *tx;
	struct util_peer *peer;
	size_t len, rlen = 0, i;
	uint64_t id;
	bool comp;
	ssize_t ret;

	if (!tp->rma || !(ep->base.caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	if (count > UTIL_RDM_IOV_MAX || rma_count > UTIL_RDM_IOV_MAX ||
	    !rma_count || (count && !iov) || !rma)
		return -FI_EINVAL;
	len = util_iov_len(iov, count);
	for (i = 0; i < rma_count; i++) {
		/* No remote range wraps the address space: no target has
		 * such memory, and a transport's peer takes such a request
		 * for a broken one (tcp ends the connection). */
		if (rma[i].len > UINT64_MAX - rma[i].addr)
			return -FI_EINVAL;
		rlen += rma[i].len;
	}
	if (len != rlen)
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && (kind != UTIL_RDM_TX_WRITE ||
				    len > ep->inject_max))
		return -FI_EINVAL;
	comp = wants_comp(ep->base.tx_selective, flags);

	ep_lock(ep);
	if (weft_unlikely(!ep->base.enabled)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	ret = util_peer_get(&ep->peers, addr, &peer);
	if (weft_unlikely(ret))
		goto out;
	tx = tx_get(ep, peer);
	if (!tx) {
		ret = -FI_EAGAIN;
		goto out;
	}
	ret = tx_reserve(ep, comp);
	if (ret)
		goto err_put;
	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->peer = peer;
	tx->context = context;
	tx->flags = flags;
	tx->dcntr = deferred_cntr(flags);
	tx->cq_flags = FI_RMA | (kind == UTIL_RDM_TX_READ ? FI_READ : FI_WRITE);
	tx->dest = addr;
	tx->kind = kind;
	tx->cq_reserved = comp;
	tx->hdr.flags = (flags & FI_REMOTE_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0;
	tx->hdr.data = data & ep->data_mask;
	tx->hdr.len = len;
	tx->hdr.tx_id = util_rdm_tx_id(ep, tx);
	tx->rma_count = rma_count;
	memcpy(tx->rma_iov, rma, rma_count * sizeof(*rma));
	tx->res_count = tx->cmp_count = 0;
	if (flags & FI_INJECT) {
		/* The buffer is the caller's again when we return. */
		util_iov_slice(iov, count, 0, len, tx->iov);
		for (i = 0, rlen = 0; i < count; i++) {
			memcpy(tx->inject_buf + rlen, iov[i].iov_base,
			       iov[i].iov_len);
			rlen += iov[i].iov_len;
		}
		tx->iov[0].iov_base = tx->inject_buf;
		tx->iov[0].iov_len = len;
		tx->iov_count = 1;
	} else {
		tx->iov_count = count;
		util_iov_assign(tx->iov, iov, count);
		if (desc)
			memcpy(tx->desc, desc, count * sizeof(*desc));
		else
			memset(tx->desc, 0, sizeof(tx->desc));
	}
	id = tx->hdr.tx_id;
	ret = tx_submit(ep, tx);
	if (!ret) {
		tx_taken(ep, tx, id);
		goto out;
	}
	tx_unreserve(ep, comp);
err_put:
	tx_put(ep, tx);
out:
	ep_unlock(ep);
	return ret;
}

static ssize_t rdm_read(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src, uint64_t addr, uint64_t key,
			void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_READ, &iov, &desc, 1, src, &rma, 1,
		       context, 0, ep->base.tx_op_flags);
}

static ssize_t rdm_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_iov rma = { addr, util_iov_len(iov, count), key };

	return rdm_rma(ep, UTIL_RDM_TX_READ, iov, desc, count, src, &rma, 1,
		       context, 0, ep->base.tx_op_flags);
}

static ssize_t rdm_readmsg(struct fid_ep *ep_fid, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_rma(&ep->base, ep_fid, FI_OP_READ, msg,
					flags);
	return rdm_rma(ep, UTIL_RDM_TX_READ, msg->msg_iov, msg->desc,
		       msg->iov_count, msg->addr, msg->rma_iov,
		       msg->rma_iov_count, msg->context, msg->data,
		       flags);
}

static ssize_t rdm_write(struct fid_ep *ep_fid, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, &desc, 1, dest, &rma, 1,
		       context, 0, ep->base.tx_op_flags);
}

static ssize_t rdm_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_iov rma = { addr, util_iov_len(iov, count), key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, iov, desc, count, dest, &rma, 1,
		       context, 0, ep->base.tx_op_flags);
}

static ssize_t rdm_writemsg(struct fid_ep *ep_fid,
			    const struct fi_msg_rma *msg, uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_rma(&ep->base, ep_fid, FI_OP_WRITE, msg,
					flags);
	return rdm_rma(ep, UTIL_RDM_TX_WRITE, msg->msg_iov, msg->desc,
		       msg->iov_count, msg->addr, msg->rma_iov,
		       msg->rma_iov_count, msg->context, msg->data,
		       flags);
}

static ssize_t rdm_inject_write(struct fid_ep *ep_fid, const void *buf,
				size_t len, fi_addr_t dest, uint64_t addr,
				uint64_t key)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, NULL, 1, dest, &rma, 1,
		       NULL, 0, FI_INJECT | RDM_NO_COMPLETION);
}

static ssize_t rdm_writedata(struct fid_ep *ep_fid, const void *buf,
			     size_t len, void *desc, uint64_t data,
			     fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, &desc, 1, dest, &rma, 1,
		       context, data, ep->base.tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t rdm_inject_writedata(struct fid_ep *ep_fid, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest,
				    uint64_t addr, uint64_t key)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct fi_rma_iov rma = { addr, len, key };

	return rdm_rma(ep, UTIL_RDM_TX_WRITE, &iov, NULL, 1, dest, &rma, 1,
		       NULL, data,
		       FI_INJECT | RDM_NO_COMPLETION | FI_REMOTE_CQ_DATA);
}

struct fi_ops_rma util_rdm_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rdm_read,
	.readv = rdm_readv,
	.readmsg = rdm_readmsg,
	.write = rdm_write,
	.writev = rdm_writev,
	.writemsg = rdm_writemsg,
	.inject = rdm_inject_write,
	.writedata = rdm_writedata,
	.injectdata = rdm_inject_writedata,
};

/* ---- atomics ------------------------------------------------------------ */

/* fi_ioc vectors as byte iovecs; returns the element count, or -1. */
static ssize_t ioc_to_iov(const struct fi_ioc *ioc, size_t count,
			  size_t elem, struct iovec *iov)
{
	size_t i, n = 0;

	if (count > UTIL_RDM_IOV_MAX || (count && !ioc))
		return -1;
	for (i = 0; i < count; i++) {
		iov[i].iov_base = ioc[i].addr;
		iov[i].iov_len = ioc[i].count * elem;
		n += ioc[i].count;
	}
	return (ssize_t)n;
}

struct rdm_atomic_args {
	uint32_t kind;
	const struct fi_ioc *iov;
	void **desc;
	size_t count;
	const struct fi_ioc *cmp;
	size_t cmp_count;
	struct fi_ioc *res;
	size_t res_count;
	fi_addr_t addr;
	const struct fi_rma_ioc *rma;
	size_t rma_count;
	enum fi_datatype datatype;
	enum fi_op op;
	void *context;
	uint64_t data;
	uint64_t flags;
};

static enum util_atomic_class atomic_class(uint32_t kind)
{
	return kind == UTIL_RDM_TX_ATOMIC	 ? UTIL_ATOMIC_BASE :
	       kind == UTIL_RDM_TX_FETCH_ATOMIC ? UTIL_ATOMIC_FETCH :
						  UTIL_ATOMIC_COMPARE;
}

static ssize_t rdm_atomic(struct util_rdm_ep *ep,
			  const struct rdm_atomic_args *a)
{
	const struct util_rdm_transport *tp = ep->xp->ops;
	size_t elem = util_atomic_dt_size(a->datatype), i, rcount = 0;
	ssize_t n, ncmp = 0, nres = 0;
	struct util_rdm_tx *tx;
	struct util_peer *peer;
	uint64_t id;
	bool comp;
	ssize_t ret;

	if (!tp->rma || !(ep->base.caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	if (!util_atomic_valid(a->op, a->datatype, atomic_class(a->kind)))
		return -FI_EOPNOTSUPP;
	if (!a->rma_count || a->rma_count > UTIL_RDM_IOV_MAX || !a->rma)
		return -FI_EINVAL;
	for (i = 0; i < a->rma_count; i++) {
		/* No wrapping target (as in rdm_rma). */
		if (elem && a->rma[i].count > (UINT64_MAX - a->rma[i].addr) / elem)
			return -FI_EINVAL;
		rcount += a->rma[i].count;
	}

	ep_lock(ep);
	if (weft_unlikely(!ep->base.enabled)) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	ret = util_peer_get(&ep->peers, a->addr, &peer);
	if (weft_unlikely(ret))
		goto out;
	tx = tx_get(ep, peer);
	if (!tx) {
		ret = -FI_EAGAIN;
		goto out;
	}
	n = a->op == FI_ATOMIC_READ && !a->iov ?
		    (ssize_t)rcount :
		    ioc_to_iov(a->iov, a->count, elem, tx->iov);
	if (a->kind == UTIL_RDM_TX_COMPARE_ATOMIC)
		ncmp = ioc_to_iov(a->cmp, a->cmp_count, elem, tx->cmp_iov);
	if (a->kind != UTIL_RDM_TX_ATOMIC)
		nres = ioc_to_iov(a->res, a->res_count, elem, tx->res_iov);
	if (n < 0 || ncmp < 0 || nres < 0 || (size_t)n != rcount || !rcount ||
	    (a->kind == UTIL_RDM_TX_COMPARE_ATOMIC && ncmp != n) ||
	    (a->kind != UTIL_RDM_TX_ATOMIC && nres != n) ||
	    rcount * elem > ep->atomic_max) {
		ret = -FI_EINVAL;
		goto err_put;
	}
	comp = wants_comp(ep->base.tx_selective, a->flags);
	ret = tx_reserve(ep, comp);
	if (ret)
		goto err_put;
	memset(&tx->hdr, 0, sizeof(tx->hdr));
	tx->context = a->context;
	tx->flags = a->flags;
	tx->dcntr = deferred_cntr(a->flags);
	tx->cq_flags = FI_ATOMIC |
		       (a->kind == UTIL_RDM_TX_ATOMIC ? FI_WRITE : FI_READ);
	tx->dest = a->addr;
	tx->peer = peer;
	tx->kind = a->kind;
	tx->cq_reserved = comp;
	tx->atomic_op = a->op;
	tx->datatype = a->datatype;
	tx->hdr.flags = (a->flags & FI_REMOTE_CQ_DATA) ? UTIL_RDM_CQ_DATA : 0;
	tx->hdr.data = a->data & ep->data_mask;
	tx->hdr.len = rcount * elem;
	tx->hdr.tx_id = util_rdm_tx_id(ep, tx);
	/* FI_ATOMIC_READ reads no operand, even where one is named (Sandia
	 * OpenSHMEM names one at address NULL): nothing copies it. */
	tx->iov_count = a->op == FI_ATOMIC_READ ? 0 : a->count;
	tx->cmp_count = a->kind == UTIL_RDM_TX_COMPARE_ATOMIC ? a->cmp_count : 0;
	tx->res_count = a->kind != UTIL_RDM_TX_ATOMIC ? a->res_count : 0;
	tx->rma_count = a->rma_count;
	for (i = 0; i < a->rma_count; i++) {
		tx->rma_iov[i].addr = a->rma[i].addr;
		tx->rma_iov[i].len = a->rma[i].count * elem;
		tx->rma_iov[i].key = a->rma[i].key;
	}
	memset(tx->desc, 0, sizeof(tx->desc));
	/* FI_INJECT names the operand's buffer: FI_ATOMIC_READ has none. */
	if ((a->flags & FI_INJECT) && tx->iov_count &&
	    tx->hdr.len > ep->inject_max) {
		ret = -FI_EINVAL;
		goto err_unreserve;
	}
	if ((a->flags & FI_INJECT) && tx->iov_count) {
		/* The operand is the caller's again when we return. */
		util_iov_copy_from(tx->inject_buf, tx->iov, tx->iov_count, 0,
				   tx->hdr.len);
		tx->iov[0].iov_base = tx->inject_buf;
		tx->iov[0].iov_len = tx->hdr.len;
		tx->iov_count = 1;
	}
	id = tx->hdr.tx_id;
	ret = tx_submit(ep, tx);
	if (!ret) {
		tx_taken(ep, tx, id);
		goto out;
	}
err_unreserve:
	tx_unreserve(ep, comp);
err_put:
	tx_put(ep, tx);
out:
	ep_unlock(ep);
	return ret;
}

static ssize_t rdm_atomic_write(struct fid_ep *ep_fid, const void *buf,
				size_t count, void *desc, fi_addr_t dest,
				uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op,
				void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = &ioc, .desc = &desc,
		.count = 1, .addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->base.tx_op_flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_writev(struct fid_ep *ep_fid,
				 const struct fi_ioc *iov, void **desc,
				 size_t count, fi_addr_t dest, uint64_t addr,
				 uint64_t key, enum fi_datatype datatype,
				 enum fi_op op, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_ioc rma = { addr, 0, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = iov, .desc = desc,
		.count = count, .addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->base.tx_op_flags,
	};
	size_t i;

	for (i = 0; iov && i < count; i++)
		rma.count += iov[i].count;
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_writemsg(struct fid_ep *ep_fid,
				   const struct fi_msg_atomic *msg,
				   uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = msg->msg_iov,
		.desc = msg->desc, .count = msg->iov_count, .addr = msg->addr,
		.rma = msg->rma_iov, .rma_count = msg->rma_iov_count,
		.datatype = msg->datatype, .op = msg->op,
		.context = msg->context, .data = msg->data,
		.flags = flags,
	};

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_atomic(&ep->base, ep_fid, FI_OP_ATOMIC,
					   msg, NULL, NULL, 0, NULL, NULL, 0,
					   flags);
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_inject(struct fid_ep *ep_fid, const void *buf,
				 size_t count, fi_addr_t dest, uint64_t addr,
				 uint64_t key, enum fi_datatype datatype,
				 enum fi_op op)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_ATOMIC, .iov = &ioc, .count = 1,
		.addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op,
		.flags = FI_INJECT | RDM_NO_COMPLETION,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_readwrite(struct fid_ep *ep_fid, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t dest,
				    uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op,
				    void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_ioc res = { result, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_FETCH_ATOMIC, .iov = buf ? &ioc : NULL,
		.desc = &desc, .count = 1, .res = &res, .res_count = 1,
		.addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->base.tx_op_flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_readwritev(struct fid_ep *ep_fid,
				     const struct fi_ioc *iov, void **desc,
				     size_t count, struct fi_ioc *resultv,
				     void **result_desc, size_t result_count,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype,
				     enum fi_op op, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_ioc rma = { addr, 0, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_FETCH_ATOMIC, .iov = iov, .desc = desc,
		.count = count, .res = resultv, .res_count = result_count,
		.addr = dest, .rma = &rma, .rma_count = 1,
		.datatype = datatype, .op = op, .context = context,
		.flags = ep->base.tx_op_flags,
	};
	size_t i;

	for (i = 0; resultv && i < result_count; i++)
		rma.count += resultv[i].count;
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_readwritemsg(struct fid_ep *ep_fid,
				       const struct fi_msg_atomic *msg,
				       struct fi_ioc *resultv,
				       void **result_desc, size_t result_count,
				       uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_FETCH_ATOMIC, .iov = msg->msg_iov,
		.desc = msg->desc, .count = msg->iov_count, .res = resultv,
		.res_count = result_count, .addr = msg->addr,
		.rma = msg->rma_iov, .rma_count = msg->rma_iov_count,
		.datatype = msg->datatype, .op = msg->op,
		.context = msg->context, .data = msg->data,
		.flags = flags,
	};

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_atomic(&ep->base, ep_fid,
					   FI_OP_FETCH_ATOMIC, msg, NULL, NULL,
					   0, resultv, result_desc,
					   result_count, flags);
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_compwrite(struct fid_ep *ep_fid, const void *buf,
				    size_t count, void *desc,
				    const void *compare, void *compare_desc,
				    void *result, void *result_desc,
				    fi_addr_t dest, uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op,
				    void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_ioc cmp = { (void *)compare, count };
	struct fi_ioc res = { result, count };
	struct fi_rma_ioc rma = { addr, count, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_COMPARE_ATOMIC, .iov = &ioc,
		.desc = &desc, .count = 1, .cmp = &cmp, .cmp_count = 1,
		.res = &res, .res_count = 1, .addr = dest, .rma = &rma,
		.rma_count = 1, .datatype = datatype, .op = op,
		.context = context, .flags = ep->base.tx_op_flags,
	};

	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_compwritev(struct fid_ep *ep_fid,
				     const struct fi_ioc *iov, void **desc,
				     size_t count, const struct fi_ioc *comparev,
				     void **compare_desc, size_t compare_count,
				     struct fi_ioc *resultv,
				     void **result_desc, size_t result_count,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype datatype,
				     enum fi_op op, void *context)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_rma_ioc rma = { addr, 0, key };
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_COMPARE_ATOMIC, .iov = iov, .desc = desc,
		.count = count, .cmp = comparev, .cmp_count = compare_count,
		.res = resultv, .res_count = result_count, .addr = dest,
		.rma = &rma, .rma_count = 1, .datatype = datatype, .op = op,
		.context = context, .flags = ep->base.tx_op_flags,
	};
	size_t i;

	for (i = 0; iov && i < count; i++)
		rma.count += iov[i].count;
	return rdm_atomic(ep, &a);
}

static ssize_t rdm_atomic_compwritemsg(struct fid_ep *ep_fid,
				       const struct fi_msg_atomic *msg,
				       const struct fi_ioc *comparev,
				       void **compare_desc,
				       size_t compare_count,
				       struct fi_ioc *resultv,
				       void **result_desc, size_t result_count,
				       uint64_t flags)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct rdm_atomic_args a = {
		.kind = UTIL_RDM_TX_COMPARE_ATOMIC, .iov = msg->msg_iov,
		.desc = msg->desc, .count = msg->iov_count, .cmp = comparev,
		.cmp_count = compare_count, .res = resultv,
		.res_count = result_count, .addr = msg->addr,
		.rma = msg->rma_iov, .rma_count = msg->rma_iov_count,
		.datatype = msg->datatype, .op = msg->op,
		.context = msg->context, .data = msg->data,
		.flags = flags,
	};

	if (weft_unlikely(flags & FI_TRIGGER))
		return util_trigger_atomic(&ep->base, ep_fid,
					   FI_OP_COMPARE_ATOMIC, msg, comparev,
					   compare_desc, compare_count,
					   resultv, result_desc, result_count,
					   flags);
	return rdm_atomic(ep, &a);
}

static int rdm_atomic_valid(struct fid_ep *ep_fid, enum fi_datatype datatype,
			    enum fi_op op, uint64_t flags, size_t *count)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	struct fi_atomic_attr attr;
	int ret;

	if (!ep->xp->ops->rma || !(ep->base.caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	if (ep->hooks && ep->hooks->atomic_valid)
		return ep->hooks->atomic_valid(ep, datatype, op, flags, count);
	ret = util_atomic_query(datatype, op, ep->atomic_max, flags,
				&attr);
	if (!ret && count)
		*count = attr.count;
	return ret;
}

static int rdm_atomic_writevalid(struct fid_ep *ep_fid,
				 enum fi_datatype datatype, enum fi_op op,
				 size_t *count)
{
	return rdm_atomic_valid(ep_fid, datatype, op, 0, count);
}

static int rdm_atomic_readwritevalid(struct fid_ep *ep_fid,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	return rdm_atomic_valid(ep_fid, datatype, op, FI_FETCH_ATOMIC, count);
}

static int rdm_atomic_compwritevalid(struct fid_ep *ep_fid,
				     enum fi_datatype datatype, enum fi_op op,
				     size_t *count)
{
	return rdm_atomic_valid(ep_fid, datatype, op, FI_COMPARE_ATOMIC,
				count);
}

struct fi_ops_atomic util_rdm_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = rdm_atomic_write,
	.writev = rdm_atomic_writev,
	.writemsg = rdm_atomic_writemsg,
	.inject = rdm_atomic_inject,
	.readwrite = rdm_atomic_readwrite,
	.readwritev = rdm_atomic_readwritev,
	.readwritemsg = rdm_atomic_readwritemsg,
	.compwrite = rdm_atomic_compwrite,
	.compwritev = rdm_atomic_compwritev,
	.compwritemsg = rdm_atomic_compwritemsg,
	.writevalid = rdm_atomic_writevalid,
	.readwritevalid = rdm_atomic_readwritevalid,
	.compwritevalid = rdm_atomic_compwritevalid,
};

/* ---- target side of software RMA and atomics ---------------------------- */

uint64_t util_rdm_mr_events(uint32_t kind, enum fi_op op)
{
	switch (kind) {
	case UTIL_RDM_TX_WRITE:
	case UTIL_RDM_TX_ATOMIC:
		return FI_REMOTE_WRITE;
	case UTIL_RDM_TX_READ:
		return FI_REMOTE_READ;
	case UTIL_RDM_TX_FETCH_ATOMIC:
		return op == FI_ATOMIC_READ ? FI_REMOTE_READ :
					      FI_REMOTE_READ | FI_REMOTE_WRITE;
	case UTIL_RDM_TX_COMPARE_ATOMIC:
		return FI_REMOTE_READ | FI_REMOTE_WRITE;
	default:
		return 0;
	}
}

int util_rdm_target_iov(struct util_mr_map *map, const struct fi_rma_iov *rma,
			size_t count, uint64_t access, struct iovec *local,
			size_t max, size_t *nlocal)
{
	size_t i, n = 0;
	int ret;

	for (i = 0; i < count; i++) {
		size_t cnt = max - n;

		ret = util_mr_map_verify_iov(map, rma[i].key, rma[i].addr,
					     rma[i].len, access, local + n,
					     &cnt);
		if (ret)
			return ret;
		n += cnt;
	}
	*nlocal = n;
	return 0;
}

int util_rdm_target_atomic(enum fi_op op, enum fi_datatype dt,
			   const struct iovec *local, size_t nlocal,
			   const void *src, const void *cmp, void *res)
{
	size_t elem = util_atomic_dt_size(dt), i, off = 0;
	const uint8_t *s = src, *c = cmp;
	uint8_t *r = res;
	int ret;

	if (!elem)
		return -FI_EINVAL;
	for (i = 0; i < nlocal; i++) {
		size_t cnt = local[i].iov_len / elem;

		if (local[i].iov_len % elem)
			return -FI_EINVAL;
		ret = util_atomic_apply(op, dt, local[i].iov_base,
					s ? s + off : NULL, c ? c + off : NULL,
					r ? r + off : NULL, cnt);
		if (ret)
			return ret;
		off += local[i].iov_len;
	}
	return 0;
}
