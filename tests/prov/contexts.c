/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every case over contexts (CF_CONTEXTS=sep): each fixture endpoint is a
 * scalable endpoint with CF_SEP_CTX transmit and receive contexts, and
 * the case holds a stand-in endpoint that posts transmits on transmit
 * context CF_SEP_TX, receives on receive context CF_SEP_RX, and addresses
 * every peer at that receive context (fi_rx_addr), whatever fi_addr the
 * case has for it (another AV's, another process's).  The two are of
 * different pairs, neither pair 0: a message leaves under the identity
 * of one context and must be reported as coming from the endpoint.  The
 * stand-in only forwards: what a case checks is what the contexts did.
 */
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

struct cf_sep {
	struct fid_ep fid; /* the case's endpoint */
	struct cf_fix *f;
	struct fid_ep *sep;
	struct fid_ep *tx[CF_SEP_CTX], *rx[CF_SEP_CTX];
	int ti, ri;
};

static struct cf_sep *sep_of(struct fid_ep *ep)
{
	return container_of(ep, struct cf_sep, fid);
}

bool cf_contexts(void)
{
	const char *m = getenv("CF_CONTEXTS");

	return m && !strcmp(m, "sep");
}

bool cf_stx(void)
{
	const char *m = getenv("CF_CONTEXTS");

	return m && !strcmp(m, "stx");
}

bool cf_srx(void)
{
	const char *m = getenv("CF_CONTEXTS");

	return m && !strcmp(m, "srx");
}

#define CF_SEP_TX 1
#define CF_SEP_RX 2

/* dest as its receive context (a plain peer: as it is). */
static fi_addr_t to(struct cf_sep *s, fi_addr_t dest)
{
	int k;

	if (dest == FI_ADDR_UNSPEC || dest == FI_ADDR_NOTAVAIL)
		return dest;
	if (s->f->o.plain_peers) {
		for (k = 0; k < s->f->nep; k++)
			if (s->f->ep[k].addr == dest)
				break;
		if (k == s->f->nep)
			return dest;
	}
	return fi_rx_addr(dest, CF_SEP_RX, CF_SEP_CTX_BITS);
}

#define TX(ep) (sep_of(ep)->tx[sep_of(ep)->ti])
#define RX(ep) (sep_of(ep)->rx[sep_of(ep)->ri])

/* ---- msg ---------------------------------------------------------------- */

static ssize_t p_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, void *ctx)
{
	return fi_recv(RX(ep), buf, len, desc, src, ctx);
}

static ssize_t p_recvv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src, void *ctx)
{
	return fi_recvv(RX(ep), iov, desc, count, src, ctx);
}

static ssize_t p_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	return fi_recvmsg(RX(ep), msg, flags);
}

static ssize_t p_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, void *ctx)
{
	return fi_send(TX(ep), buf, len, desc, to(sep_of(ep), dest), ctx);
}

static ssize_t p_sendv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest, void *ctx)
{
	return fi_sendv(TX(ep), iov, desc, count, to(sep_of(ep), dest), ctx);
}

static ssize_t p_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	struct fi_msg m = *msg;

	m.addr = to(sep_of(ep), m.addr);
	return fi_sendmsg(TX(ep), &m, flags);
}

static ssize_t p_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest)
{
	return fi_inject(TX(ep), buf, len, to(sep_of(ep), dest));
}

static ssize_t p_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest, void *ctx)
{
	return fi_senddata(TX(ep), buf, len, desc, data,
			   to(sep_of(ep), dest), ctx);
}

static ssize_t p_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest)
{
	return fi_injectdata(TX(ep), buf, len, data, to(sep_of(ep), dest));
}

static struct fi_ops_msg p_msg = {
	.size = sizeof(struct fi_ops_msg),
	.recv = p_recv,
	.recvv = p_recvv,
	.recvmsg = p_recvmsg,
	.send = p_send,
	.sendv = p_sendv,
	.sendmsg = p_sendmsg,
	.inject = p_inject,
	.senddata = p_senddata,
	.injectdata = p_injectdata,
};

/* ---- tagged ------------------------------------------------------------- */

static ssize_t p_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	return fi_trecv(RX(ep), buf, len, desc, src, tag, ignore, ctx);
}

static ssize_t p_trecvv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src, uint64_t tag,
			uint64_t ignore, void *ctx)
{
	return fi_trecvv(RX(ep), iov, desc, count, src, tag, ignore, ctx);
}

static ssize_t p_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			  uint64_t flags)
{
	return fi_trecvmsg(RX(ep), msg, flags);
}

static ssize_t p_tsend(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t tag, void *ctx)
{
	return fi_tsend(TX(ep), buf, len, desc, to(sep_of(ep), dest), tag,
			ctx);
}

static ssize_t p_tsendv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t tag, void *ctx)
{
	return fi_tsendv(TX(ep), iov, desc, count, to(sep_of(ep), dest), tag,
			 ctx);
}

static ssize_t p_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			  uint64_t flags)
{
	struct fi_msg_tagged m = *msg;

	m.addr = to(sep_of(ep), m.addr);
	return fi_tsendmsg(TX(ep), &m, flags);
}

static ssize_t p_tinject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest, uint64_t tag)
{
	return fi_tinject(TX(ep), buf, len, to(sep_of(ep), dest), tag);
}

static ssize_t p_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest,
			   uint64_t tag, void *ctx)
{
	return fi_tsenddata(TX(ep), buf, len, desc, data,
			    to(sep_of(ep), dest), tag, ctx);
}

static ssize_t p_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest, uint64_t tag)
{
	return fi_tinjectdata(TX(ep), buf, len, data, to(sep_of(ep), dest),
			      tag);
}

static struct fi_ops_tagged p_tagged = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = p_trecv,
	.recvv = p_trecvv,
	.recvmsg = p_trecvmsg,
	.send = p_tsend,
	.sendv = p_tsendv,
	.sendmsg = p_tsendmsg,
	.inject = p_tinject,
	.senddata = p_tsenddata,
	.injectdata = p_tinjectdata,
};

/* ---- rma ---------------------------------------------------------------- */

static ssize_t p_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
{
	return fi_read(TX(ep), buf, len, desc, to(sep_of(ep), src), addr, key,
		       ctx);
}

static ssize_t p_readv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src,
		       uint64_t addr, uint64_t key, void *ctx)
{
	return fi_readv(TX(ep), iov, desc, count, to(sep_of(ep), src), addr,
			key, ctx);
}

static ssize_t p_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			 uint64_t flags)
{
	struct fi_msg_rma m = *msg;

	m.addr = to(sep_of(ep), m.addr);
	return fi_readmsg(TX(ep), &m, flags);
}

static ssize_t p_write(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t addr,
		       uint64_t key, void *ctx)
{
	return fi_write(TX(ep), buf, len, desc, to(sep_of(ep), dest), addr,
			key, ctx);
}

static ssize_t p_writev(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, void *ctx)
{
	return fi_writev(TX(ep), iov, desc, count, to(sep_of(ep), dest), addr,
			 key, ctx);
}

static ssize_t p_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags)
{
	struct fi_msg_rma m = *msg;

	m.addr = to(sep_of(ep), m.addr);
	return fi_writemsg(TX(ep), &m, flags);
}

static ssize_t p_rinject(struct fid_ep *ep, const void *buf, size_t len,
			 fi_addr_t dest, uint64_t addr, uint64_t key)
{
	return fi_inject_write(TX(ep), buf, len, to(sep_of(ep), dest), addr,
			       key);
}

static ssize_t p_writedata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest,
			   uint64_t addr, uint64_t key, void *ctx)
{
	return fi_writedata(TX(ep), buf, len, desc, data,
			    to(sep_of(ep), dest), addr, key, ctx);
}

static ssize_t p_rinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			     uint64_t data, fi_addr_t dest, uint64_t addr,
			     uint64_t key)
{
	return fi_inject_writedata(TX(ep), buf, len, data,
				   to(sep_of(ep), dest), addr, key);
}

static struct fi_ops_rma p_rma = {
	.size = sizeof(struct fi_ops_rma),
	.read = p_read,
	.readv = p_readv,
	.readmsg = p_readmsg,
	.write = p_write,
	.writev = p_writev,
	.writemsg = p_writemsg,
	.inject = p_rinject,
	.writedata = p_writedata,
	.injectdata = p_rinjectdata,
};

/* ---- atomic ------------------------------------------------------------- */

static ssize_t p_awrite(struct fid_ep *ep, const void *buf, size_t count,
			void *desc, fi_addr_t dest, uint64_t addr,
			uint64_t key, enum fi_datatype dt, enum fi_op op,
			void *ctx)
{
	return fi_atomic(TX(ep), buf, count, desc, to(sep_of(ep), dest), addr,
			 key, dt, op, ctx);
}

static ssize_t p_awritev(struct fid_ep *ep, const struct fi_ioc *iov,
			 void **desc, size_t count, fi_addr_t dest,
			 uint64_t addr, uint64_t key, enum fi_datatype dt,
			 enum fi_op op, void *ctx)
{
	return fi_atomicv(TX(ep), iov, desc, count, to(sep_of(ep), dest),
			  addr, key, dt, op, ctx);
}

static ssize_t p_awritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			   uint64_t flags)
{
	struct fi_msg_atomic m = *msg;

	m.addr = to(sep_of(ep), m.addr);
	return fi_atomicmsg(TX(ep), &m, flags);
}

static ssize_t p_ainject(struct fid_ep *ep, const void *buf, size_t count,
			 fi_addr_t dest, uint64_t addr, uint64_t key,
			 enum fi_datatype dt, enum fi_op op)
{
	return fi_inject_atomic(TX(ep), buf, count, to(sep_of(ep), dest), addr,
				key, dt, op);
}

static ssize_t p_areadwrite(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, void *res, void *res_desc,
			    fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return fi_fetch_atomic(TX(ep), buf, count, desc, res, res_desc,
			       to(sep_of(ep), dest), addr, key, dt, op, ctx);
}

static ssize_t p_areadwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			     void **desc, size_t count,
			     struct fi_ioc *resv, void **res_desc,
			     size_t res_count, fi_addr_t dest, uint64_t addr,
			     uint64_t key, enum fi_datatype dt, enum fi_op op,
			     void *ctx)
{
	return fi_fetch_atomicv(TX(ep), iov, desc, count, resv, res_desc,
				res_count, to(sep_of(ep), dest), addr, key, dt,
				op, ctx);
}

static ssize_t p_areadwritemsg(struct fid_ep *ep,
			       const struct fi_msg_atomic *msg,
			       struct fi_ioc *resv, void **res_desc,
			       size_t res_count, uint64_t flags)
{
	struct fi_msg_atomic m = *msg;

	m.addr = to(sep_of(ep), m.addr);
	return fi_fetch_atomicmsg(TX(ep), &m, resv, res_desc, res_count,
				  flags);
}

static ssize_t p_acompwrite(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, const void *compare,
			    void *compare_desc, void *res, void *res_desc,
			    fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return fi_compare_atomic(TX(ep), buf, count, desc, compare,
				 compare_desc, res, res_desc,
				 to(sep_of(ep), dest), addr, key, dt, op, ctx);
}

static ssize_t p_acompwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			     void **desc, size_t count,
			     const struct fi_ioc *comparev,
			     void **compare_desc, size_t compare_count,
			     struct fi_ioc *resv, void **res_desc,
			     size_t res_count, fi_addr_t dest, uint64_t addr,
			     uint64_t key, enum fi_datatype dt, enum fi_op op,
			     void *ctx)
{
	return fi_compare_atomicv(TX(ep), iov, desc, count, comparev,
				  compare_desc, compare_count, resv, res_desc,
				  res_count, to(sep_of(ep), dest), addr, key,
				  dt, op, ctx);
}

static ssize_t p_acompwritemsg(struct fid_ep *ep,
			       const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev,
			       void **compare_desc, size_t compare_count,
			       struct fi_ioc *resv, void **res_desc,
			       size_t res_count, uint64_t flags)
{
	struct fi_msg_atomic m = *msg;

	m.addr = to(sep_of(ep), m.addr);
	return fi_compare_atomicmsg(TX(ep), &m, comparev, compare_desc,
				    compare_count, resv, res_desc, res_count,
				    flags);
}

static int p_writevalid(struct fid_ep *ep, enum fi_datatype dt,
			enum fi_op op, size_t *count)
{
	return fi_atomicvalid(TX(ep), dt, op, count);
}

static int p_readwritevalid(struct fid_ep *ep, enum fi_datatype dt,
			    enum fi_op op, size_t *count)
{
	return fi_fetch_atomicvalid(TX(ep), dt, op, count);
}

static int p_compwritevalid(struct fid_ep *ep, enum fi_datatype dt,
			    enum fi_op op, size_t *count)
{
	return fi_compare_atomicvalid(TX(ep), dt, op, count);
}

static struct fi_ops_atomic p_atomic = {
	.size = sizeof(struct fi_ops_atomic),
	.write = p_awrite,
	.writev = p_awritev,
	.writemsg = p_awritemsg,
	.inject = p_ainject,
	.readwrite = p_areadwrite,
	.readwritev = p_areadwritev,
	.readwritemsg = p_areadwritemsg,
	.compwrite = p_acompwrite,
	.compwritev = p_acompwritev,
	.compwritemsg = p_acompwritemsg,
	.writevalid = p_writevalid,
	.readwritevalid = p_readwritevalid,
	.compwritevalid = p_compwritevalid,
};

/* ---- endpoint ----------------------------------------------------------- */

/* A receive is cancelled at the receive context, anything else at the
 * transmit context. */
static ssize_t p_cancel(fid_t fid, void *ctx)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);
	ssize_t ret = fi_cancel(&RX(ep)->fid, ctx);

	return ret == -FI_ENOENT ? fi_cancel(&TX(ep)->fid, ctx) : ret;
}

static int p_getopt(fid_t fid, int level, int name, void *val, size_t *len)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return fi_getopt(&RX(ep)->fid, level, name, val, len);
}

static int p_setopt(fid_t fid, int level, int name, const void *val,
		    size_t len)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return fi_setopt(&RX(ep)->fid, level, name, val, len);
}

/* (Deprecated calls: no case makes them.) */
static ssize_t p_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static int p_no_ctx(struct fid_ep *sep, int index, void *attr,
		    struct fid_ep **ep, void *ctx)
{
	return -FI_ENOSYS;
}

static struct fi_ops_ep p_ep = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = p_cancel,
	.getopt = p_getopt,
	.setopt = p_setopt,
	.tx_ctx = (void *)p_no_ctx,
	.rx_ctx = (void *)p_no_ctx,
	.rx_size_left = p_size_left,
	.tx_size_left = p_size_left,
};

static int p_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return fi_getname(&sep_of(ep)->sep->fid, addr, addrlen);
}

static int p_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	return fi_setname(&sep_of(ep)->sep->fid, addr, addrlen);
}

static int p_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm p_cm = {
	.size = sizeof(struct fi_ops_cm),
	.setname = p_setname,
	.getname = p_getname,
	.getpeer = p_getpeer,
};

/* Close every context, then the scalable endpoint (its contexts first,
 * fi_endpoint(3)). */
static int p_close(struct fid *fid)
{
	struct cf_sep *s = sep_of(container_of(fid, struct fid_ep, fid));
	int k, ret = 0, r;

	for (k = 0; k < CF_SEP_CTX; k++) {
		if (s->tx[k] && (r = fi_close(&s->tx[k]->fid)))
			ret = ret ? ret : r;
		if (s->rx[k] && (r = fi_close(&s->rx[k]->fid)))
			ret = ret ? ret : r;
	}
	if (s->sep && (r = fi_close(&s->sep->fid)))
		ret = ret ? ret : r;
	free(s);
	return ret;
}

static int p_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int p_control(struct fid *fid, int command, void *arg)
{
	struct fid_ep *ep = container_of(fid, struct fid_ep, fid);

	if (command == FI_GETOPSFLAG || command == FI_SETOPSFLAG)
		return fi_control(&((*(uint64_t *)arg & FI_RECV) ? RX(ep) :
								  TX(ep))->fid,
				  command, arg);
	return -FI_ENOSYS;
}

static struct fi_ops p_fi = {
	.size = sizeof(struct fi_ops),
	.close = p_close,
	.bind = p_bind,
	.control = p_control,
};

/* ---- opening ------------------------------------------------------------ */

static const uint64_t cntr_flag[CF_NCNTR] = {
	[CF_CNTR_SEND] = FI_SEND,	  [CF_CNTR_RECV] = FI_RECV,
	[CF_CNTR_READ] = FI_READ,	  [CF_CNTR_WRITE] = FI_WRITE,
	[CF_CNTR_RREAD] = FI_REMOTE_READ, [CF_CNTR_RWRITE] = FI_REMOTE_WRITE,
};

void cf_sep_open(struct cf_fix *f, int i)
{
	struct cf_ep *e = &f->ep[i];
	struct fi_cq_attr cq_attr = {
		.size = f->o.cq_size ? f->o.cq_size : 4096,
		.format = f->o.cq_format ? f->o.cq_format : FI_CQ_FORMAT_TAGGED,
		.wait_obj = f->o.cq_wait,
	};
	struct cf_sep *s = calloc(1, sizeof(*s));
	struct fid_ep *tx, *rx;
	int k;

	cf_assert(s, "calloc");
	s->f = f;
	s->ti = CF_SEP_TX;
	s->ri = CF_SEP_RX;
	s->fid.fid.fclass = FI_CLASS_EP;
	s->fid.fid.ops = &p_fi;
	s->fid.ops = &p_ep;
	s->fid.cm = &p_cm;
	s->fid.msg = &p_msg;
	s->fid.tagged = &p_tagged;
	s->fid.rma = &p_rma;
	s->fid.atomic = &p_atomic;
	e->ep = &s->fid;

	cf_ok(fi_scalable_ep(f->domain, f->info, &s->sep, NULL));
	cf_ok(fi_scalable_ep_bind(s->sep, &f->av->fid, 0));
	if (f->o.name && !i) {
		int ret = fi_setname(&s->sep->fid, (void *)f->o.name,
				     f->o.namelen);

		if (ret == -FI_ENOSYS)
			cf_skip("fi_setname: not supported");
		cf_assert(!ret, "fi_setname: %d (%s)", ret, fi_strerror(-ret));
	}
	cf_ok(fi_enable(s->sep));
	/* Every context exists; the case uses one of each. */
	for (k = 0; k < CF_SEP_CTX; k++) {
		cf_ok(fi_tx_context(s->sep, k, NULL, &s->tx[k], NULL));
		cf_ok(fi_rx_context(s->sep, k, NULL, &s->rx[k], NULL));
	}
	tx = s->tx[s->ti];
	rx = s->rx[s->ri];
	cf_ok(fi_control(&tx->fid, FI_SETOPSFLAG,
			 &(uint64_t){ f->info->tx_attr->op_flags | FI_TRANSMIT }));
	cf_ok(fi_control(&rx->fid, FI_SETOPSFLAG,
			 &(uint64_t){ f->info->rx_attr->op_flags | FI_RECV }));
	cf_ok(fi_cq_open(f->domain, &cq_attr, &e->cq, NULL));
	if (!f->o.no_tx_cq)
		cf_ok(fi_ep_bind(tx, &e->cq->fid,
				 FI_TRANSMIT | f->o.cq_bind_flags));
	cf_ok(fi_ep_bind(rx, &e->cq->fid, FI_RECV));
	for (k = 0; k < CF_NCNTR; k++) {
		struct fi_cntr_attr ca = {
			.events = FI_CNTR_EVENTS_COMP,
			.wait_obj = FI_WAIT_UNSPEC,
		};
		bool txc = cntr_flag[k] & (FI_SEND | FI_READ | FI_WRITE);

		if (!(f->o.cntr_mask & (1ULL << k)))
			continue;
		cf_ok(fi_cntr_open(f->domain, &ca, &e->cntr[k], NULL));
		cf_ok(fi_ep_bind(txc ? tx : rx, &e->cntr[k]->fid,
				 cntr_flag[k]));
	}
	if (f->o.min_multi_recv && !f->o.min_multi_recv_late)
		cf_ok(fi_setopt(&rx->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &f->o.min_multi_recv,
				sizeof(size_t)));
	cf_ok(fi_enable(tx));
	cf_ok(fi_enable(rx));
	if (f->o.min_multi_recv && f->o.min_multi_recv_late)
		cf_ok(fi_setopt(&rx->fid, FI_OPT_ENDPOINT,
				FI_OPT_MIN_MULTI_RECV, &f->o.min_multi_recv,
				sizeof(size_t)));
	e->namelen = sizeof(e->name);
	cf_ok(fi_getname(&s->sep->fid, e->name, &e->namelen));
	e->addr = FI_ADDR_NOTAVAIL;
}

struct fid_ep *cf_sep_of(struct fid_ep *ep)
{
	return sep_of(ep)->sep;
}
