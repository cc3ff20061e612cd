/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The hook layer's data path: the wrappers of an endpoint's messages,
 * tagged messages, RMA and atomics (weft/hook.h, hook_priv.h).
 */
#include "hook_priv.h"

#include "weft/core.h"

/* ---- messages ------------------------------------------------------------- */

#define EP_CALL(ep_, fn_, kind_, args_)                                        \
	struct weft_hook_fid *hf = HF(ep_);                                    \
	struct fid_ep *in = INNER(hf, struct fid_ep);                          \
	CALL(hf, fn_, kind_, args_)

/* The arguments of a data call on one buffer, or on an iovec. */
static inline void call_buf(struct weft_hook_call *c, const void *buf,
			    size_t len, fi_addr_t addr, void *context)
{
	c->buf = buf;
	c->len = len;
	c->addr = addr;
	c->context = context;
}

static inline void call_iov(struct weft_hook_call *c, const struct iovec *iov,
			    size_t count, fi_addr_t addr, void *context)
{
	c->iov = iov;
	c->count = count;
	c->len = iov_total(iov, count);
	c->addr = addr;
	c->context = context;
}

#define A_BUF (WEFT_HA_BUF | WEFT_HA_ADDR | WEFT_HA_CTX)
#define A_IOV (WEFT_HA_IOV | WEFT_HA_ADDR | WEFT_HA_CTX)
#define A_MSG (WEFT_HA_IOV | WEFT_HA_ADDR | WEFT_HA_CTX | WEFT_HA_FLAGS)

static ssize_t hook_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			 fi_addr_t src, void *context)
{
	EP_CALL(ep, "fi_recv", WEFT_HK_RECV, A_BUF);
	call_buf(&c, buf, len, src, context);
	RUN(in->msg->recv(in, buf, len, desc, src, context));
	return c.ret;
}

static ssize_t hook_recvv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  void *context)
{
	EP_CALL(ep, "fi_recvv", WEFT_HK_RECV, A_IOV);
	call_iov(&c, iov, count, src, context);
	RUN(in->msg->recvv(in, iov, desc, count, src, context));
	return c.ret;
}

static ssize_t hook_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			    uint64_t flags)
{
	EP_CALL(ep, "fi_recvmsg", WEFT_HK_RECV, A_MSG);
	if (msg) {
		call_iov(&c, msg->msg_iov, msg->iov_count, msg->addr,
			 msg->context);
	}
	c.flags = flags;
	RUN(in->msg->recvmsg(in, msg, flags));
	return c.ret;
}

static ssize_t hook_send(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, void *context)
{
	EP_CALL(ep, "fi_send", WEFT_HK_SEND, A_BUF);
	call_buf(&c, buf, len, dest, context);
	RUN(in->msg->send(in, buf, len, desc, dest, context));
	return c.ret;
}

static ssize_t hook_sendv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  void *context)
{
	EP_CALL(ep, "fi_sendv", WEFT_HK_SEND, A_IOV);
	call_iov(&c, iov, count, dest, context);
	RUN(in->msg->sendv(in, iov, desc, count, dest, context));
	return c.ret;
}

static ssize_t hook_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			    uint64_t flags)
{
	EP_CALL(ep, "fi_sendmsg", WEFT_HK_SEND, A_MSG | WEFT_HA_DATA);
	if (msg) {
		call_iov(&c, msg->msg_iov, msg->iov_count, msg->addr,
			 msg->context);
		c.data = msg->data;
	}
	c.flags = flags;
	RUN(in->msg->sendmsg(in, msg, flags));
	return c.ret;
}

static ssize_t hook_inject(struct fid_ep *ep, const void *buf, size_t len,
			   fi_addr_t dest)
{
	EP_CALL(ep, "fi_inject", WEFT_HK_INJECT, WEFT_HA_BUF | WEFT_HA_ADDR);
	call_buf(&c, buf, len, dest, NULL);
	RUN(in->msg->inject(in, buf, len, dest));
	return c.ret;
}

static ssize_t hook_senddata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     void *context)
{
	EP_CALL(ep, "fi_senddata", WEFT_HK_SEND, A_BUF | WEFT_HA_DATA);
	call_buf(&c, buf, len, dest, context);
	c.data = data;
	RUN(in->msg->senddata(in, buf, len, desc, data, dest, context));
	return c.ret;
}

static ssize_t hook_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			       uint64_t data, fi_addr_t dest)
{
	EP_CALL(ep, "fi_injectdata", WEFT_HK_INJECT,
		WEFT_HA_BUF | WEFT_HA_ADDR | WEFT_HA_DATA);
	call_buf(&c, buf, len, dest, NULL);
	c.data = data;
	RUN(in->msg->injectdata(in, buf, len, data, dest));
	return c.ret;
}

const struct fi_ops_msg hook_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = hook_recv,
	.recvv = hook_recvv,
	.recvmsg = hook_recvmsg,
	.send = hook_send,
	.sendv = hook_sendv,
	.sendmsg = hook_sendmsg,
	.inject = hook_inject,
	.senddata = hook_senddata,
	.injectdata = hook_injectdata,
};

/* ---- tagged --------------------------------------------------------------- */

static ssize_t hook_trecv(struct fid_ep *ep, void *buf, size_t len,
			  void *desc, fi_addr_t src, uint64_t tag,
			  uint64_t ignore, void *context)
{
	EP_CALL(ep, "fi_trecv", WEFT_HK_TRECV, A_BUF | WEFT_HA_TAG);
	call_buf(&c, buf, len, src, context);
	c.tag = tag;
	c.ignore = ignore;
	RUN(in->tagged->recv(in, buf, len, desc, src, tag, ignore, context));
	return c.ret;
}

static ssize_t hook_trecvv(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src,
			   uint64_t tag, uint64_t ignore, void *context)
{
	EP_CALL(ep, "fi_trecvv", WEFT_HK_TRECV, A_IOV | WEFT_HA_TAG);
	call_iov(&c, iov, count, src, context);
	c.tag = tag;
	c.ignore = ignore;
	RUN(in->tagged->recvv(in, iov, desc, count, src, tag, ignore,
			      context));
	return c.ret;
}

static ssize_t hook_trecvmsg(struct fid_ep *ep,
			     const struct fi_msg_tagged *msg, uint64_t flags)
{
	EP_CALL(ep, "fi_trecvmsg", WEFT_HK_TRECV, A_MSG | WEFT_HA_TAG);
	if (msg) {
		call_iov(&c, msg->msg_iov, msg->iov_count, msg->addr,
			 msg->context);
		c.tag = msg->tag;
		c.ignore = msg->ignore;
	}
	c.flags = flags;
	RUN(in->tagged->recvmsg(in, msg, flags));
	return c.ret;
}

static ssize_t hook_tsend(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, fi_addr_t dest, uint64_t tag,
			  void *context)
{
	EP_CALL(ep, "fi_tsend", WEFT_HK_TSEND, A_BUF | WEFT_HA_TAG);
	call_buf(&c, buf, len, dest, context);
	c.tag = tag;
	RUN(in->tagged->send(in, buf, len, desc, dest, tag, context));
	return c.ret;
}

static ssize_t hook_tsendv(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest,
			   uint64_t tag, void *context)
{
	EP_CALL(ep, "fi_tsendv", WEFT_HK_TSEND, A_IOV | WEFT_HA_TAG);
	call_iov(&c, iov, count, dest, context);
	c.tag = tag;
	RUN(in->tagged->sendv(in, iov, desc, count, dest, tag, context));
	return c.ret;
}

static ssize_t hook_tsendmsg(struct fid_ep *ep,
			     const struct fi_msg_tagged *msg, uint64_t flags)
{
	EP_CALL(ep, "fi_tsendmsg", WEFT_HK_TSEND,
		A_MSG | WEFT_HA_TAG | WEFT_HA_DATA);
	if (msg) {
		call_iov(&c, msg->msg_iov, msg->iov_count, msg->addr,
			 msg->context);
		c.tag = msg->tag;
		c.data = msg->data;
	}
	c.flags = flags;
	RUN(in->tagged->sendmsg(in, msg, flags));
	return c.ret;
}

static ssize_t hook_tinject(struct fid_ep *ep, const void *buf, size_t len,
			    fi_addr_t dest, uint64_t tag)
{
	EP_CALL(ep, "fi_tinject", WEFT_HK_TINJECT,
		WEFT_HA_BUF | WEFT_HA_ADDR | WEFT_HA_TAG);
	call_buf(&c, buf, len, dest, NULL);
	c.tag = tag;
	RUN(in->tagged->inject(in, buf, len, dest, tag));
	return c.ret;
}

static ssize_t hook_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, uint64_t data, fi_addr_t dest,
			      uint64_t tag, void *context)
{
	EP_CALL(ep, "fi_tsenddata", WEFT_HK_TSEND,
		A_BUF | WEFT_HA_TAG | WEFT_HA_DATA);
	call_buf(&c, buf, len, dest, context);
	c.data = data;
	c.tag = tag;
	RUN(in->tagged->senddata(in, buf, len, desc, data, dest, tag,
				 context));
	return c.ret;
}

static ssize_t hook_tinjectdata(struct fid_ep *ep, const void *buf,
				size_t len, uint64_t data, fi_addr_t dest,
				uint64_t tag)
{
	EP_CALL(ep, "fi_tinjectdata", WEFT_HK_TINJECT,
		WEFT_HA_BUF | WEFT_HA_ADDR | WEFT_HA_TAG | WEFT_HA_DATA);
	call_buf(&c, buf, len, dest, NULL);
	c.data = data;
	c.tag = tag;
	RUN(in->tagged->injectdata(in, buf, len, data, dest, tag));
	return c.ret;
}

const struct fi_ops_tagged hook_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = hook_trecv,
	.recvv = hook_trecvv,
	.recvmsg = hook_trecvmsg,
	.send = hook_tsend,
	.sendv = hook_tsendv,
	.sendmsg = hook_tsendmsg,
	.inject = hook_tinject,
	.senddata = hook_tsenddata,
	.injectdata = hook_tinjectdata,
};

/* ---- RMA ------------------------------------------------------------------ */

#define A_RMA (A_BUF | WEFT_HA_RMA)

static ssize_t hook_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
			 fi_addr_t src, uint64_t addr, uint64_t key,
			 void *context)
{
	EP_CALL(ep, "fi_read", WEFT_HK_READ, A_RMA);
	call_buf(&c, buf, len, src, context);
	c.raddr = addr;
	c.rkey = key;
	RUN(in->rma->read(in, buf, len, desc, src, addr, key, context));
	return c.ret;
}

static ssize_t hook_readv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t addr, uint64_t key, void *context)
{
	EP_CALL(ep, "fi_readv", WEFT_HK_READ, A_IOV | WEFT_HA_RMA);
	call_iov(&c, iov, count, src, context);
	c.raddr = addr;
	c.rkey = key;
	RUN(in->rma->readv(in, iov, desc, count, src, addr, key, context));
	return c.ret;
}

static void rma_msg_args(struct weft_hook_call *c, const struct fi_msg_rma *msg)
{
	if (!msg)
		return;
	c->iov = msg->msg_iov;
	c->count = msg->iov_count;
	c->len = iov_total(msg->msg_iov, msg->iov_count);
	c->addr = msg->addr;
	c->context = msg->context;
	c->data = msg->data;
	if (msg->rma_iov && msg->rma_iov_count) {
		c->raddr = msg->rma_iov[0].addr;
		c->rkey = msg->rma_iov[0].key;
	}
}

static ssize_t hook_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	EP_CALL(ep, "fi_readmsg", WEFT_HK_READ, A_MSG | WEFT_HA_RMA);
	rma_msg_args(&c, msg);
	c.flags = flags;
	RUN(in->rma->readmsg(in, msg, flags));
	return c.ret;
}

static ssize_t hook_write(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, fi_addr_t dest, uint64_t addr,
			  uint64_t key, void *context)
{
	EP_CALL(ep, "fi_write", WEFT_HK_WRITE, A_RMA);
	call_buf(&c, buf, len, dest, context);
	c.raddr = addr;
	c.rkey = key;
	RUN(in->rma->write(in, buf, len, desc, dest, addr, key, context));
	return c.ret;
}

static ssize_t hook_writev(struct fid_ep *ep, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest,
			   uint64_t addr, uint64_t key, void *context)
{
	EP_CALL(ep, "fi_writev", WEFT_HK_WRITE, A_IOV | WEFT_HA_RMA);
	call_iov(&c, iov, count, dest, context);
	c.raddr = addr;
	c.rkey = key;
	RUN(in->rma->writev(in, iov, desc, count, dest, addr, key, context));
	return c.ret;
}

static ssize_t hook_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			     uint64_t flags)
{
	EP_CALL(ep, "fi_writemsg", WEFT_HK_WRITE,
		A_MSG | WEFT_HA_RMA | WEFT_HA_DATA);
	rma_msg_args(&c, msg);
	c.flags = flags;
	RUN(in->rma->writemsg(in, msg, flags));
	return c.ret;
}

static ssize_t hook_inject_write(struct fid_ep *ep, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t addr,
				 uint64_t key)
{
	EP_CALL(ep, "fi_inject_write", WEFT_HK_INJECT_WRITE,
		WEFT_HA_BUF | WEFT_HA_ADDR | WEFT_HA_RMA);
	call_buf(&c, buf, len, dest, NULL);
	c.raddr = addr;
	c.rkey = key;
	RUN(in->rma->inject(in, buf, len, dest, addr, key));
	return c.ret;
}

static ssize_t hook_writedata(struct fid_ep *ep, const void *buf, size_t len,
			      void *desc, uint64_t data, fi_addr_t dest,
			      uint64_t addr, uint64_t key, void *context)
{
	EP_CALL(ep, "fi_writedata", WEFT_HK_WRITE, A_RMA | WEFT_HA_DATA);
	call_buf(&c, buf, len, dest, context);
	c.data = data;
	c.raddr = addr;
	c.rkey = key;
	RUN(in->rma->writedata(in, buf, len, desc, data, dest, addr, key,
			       context));
	return c.ret;
}

static ssize_t hook_inject_writedata(struct fid_ep *ep, const void *buf,
				     size_t len, uint64_t data,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key)
{
	EP_CALL(ep, "fi_inject_writedata", WEFT_HK_INJECT_WRITE,
		WEFT_HA_BUF | WEFT_HA_ADDR | WEFT_HA_RMA | WEFT_HA_DATA);
	call_buf(&c, buf, len, dest, NULL);
	c.data = data;
	c.raddr = addr;
	c.rkey = key;
	RUN(in->rma->injectdata(in, buf, len, data, dest, addr, key));
	return c.ret;
}

const struct fi_ops_rma hook_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = hook_read,
	.readv = hook_readv,
	.readmsg = hook_readmsg,
	.write = hook_write,
	.writev = hook_writev,
	.writemsg = hook_writemsg,
	.inject = hook_inject_write,
	.writedata = hook_writedata,
	.injectdata = hook_inject_writedata,
};

/* ---- atomics -------------------------------------------------------------- */

#define A_ATOMIC (WEFT_HA_ADDR | WEFT_HA_RMA | WEFT_HA_ATOMIC)

static void atomic_args(struct weft_hook_call *c, size_t bytes,
			fi_addr_t dest, uint64_t addr, uint64_t key,
			enum fi_datatype dt, enum fi_op op, void *context)
{
	c->len = bytes;
	c->addr = dest;
	c->raddr = addr;
	c->rkey = key;
	c->datatype = dt;
	c->op = op;
	c->context = context;
}

static void atomic_msg_args(struct weft_hook_call *c,
			    const struct fi_msg_atomic *msg, uint64_t flags)
{
	c->flags = flags;
	if (!msg)
		return;
	atomic_args(c, ioc_total(msg->msg_iov, msg->iov_count, msg->datatype),
		    msg->addr,
		    msg->rma_iov && msg->rma_iov_count ? msg->rma_iov[0].addr :
							 0,
		    msg->rma_iov && msg->rma_iov_count ? msg->rma_iov[0].key :
							 0,
		    msg->datatype, msg->op, msg->context);
	c->data = msg->data;
}

static ssize_t hook_atomic(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op op,
			   void *context)
{
	EP_CALL(ep, "fi_atomic", WEFT_HK_ATOMIC, A_ATOMIC | WEFT_HA_CTX);
	atomic_args(&c, count * util_atomic_dt_size(dt), dest, addr, key, dt,
		    op, context);
	RUN(in->atomic->write(in, buf, count, desc, dest, addr, key, dt, op,
			      context));
	return c.ret;
}

static ssize_t hook_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
			    void **desc, size_t count, fi_addr_t dest,
			    uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op op, void *context)
{
	EP_CALL(ep, "fi_atomicv", WEFT_HK_ATOMIC, A_ATOMIC | WEFT_HA_CTX);
	atomic_args(&c, ioc_total(iov, count, dt), dest, addr, key, dt, op,
		    context);
	RUN(in->atomic->writev(in, iov, desc, count, dest, addr, key, dt, op,
			       context));
	return c.ret;
}

static ssize_t hook_atomicmsg(struct fid_ep *ep,
			      const struct fi_msg_atomic *msg, uint64_t flags)
{
	EP_CALL(ep, "fi_atomicmsg", WEFT_HK_ATOMIC,
		A_ATOMIC | WEFT_HA_CTX | WEFT_HA_FLAGS);
	atomic_msg_args(&c, msg, flags);
	RUN(in->atomic->writemsg(in, msg, flags));
	return c.ret;
}

static ssize_t hook_inject_atomic(struct fid_ep *ep, const void *buf,
				  size_t count, fi_addr_t dest, uint64_t addr,
				  uint64_t key, enum fi_datatype dt,
				  enum fi_op op)
{
	EP_CALL(ep, "fi_inject_atomic", WEFT_HK_INJECT_ATOMIC, A_ATOMIC);
	atomic_args(&c, count * util_atomic_dt_size(dt), dest, addr, key, dt,
		    op, NULL);
	RUN(in->atomic->inject(in, buf, count, dest, addr, key, dt, op));
	return c.ret;
}

static ssize_t hook_fetch_atomic(struct fid_ep *ep, const void *buf,
				 size_t count, void *desc, void *result,
				 void *result_desc, fi_addr_t dest,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype dt, enum fi_op op,
				 void *context)
{
	EP_CALL(ep, "fi_fetch_atomic", WEFT_HK_FETCH_ATOMIC,
		A_ATOMIC | WEFT_HA_CTX);
	atomic_args(&c, count * util_atomic_dt_size(dt), dest, addr, key, dt,
		    op, context);
	RUN(in->atomic->readwrite(in, buf, count, desc, result, result_desc,
				  dest, addr, key, dt, op, context));
	return c.ret;
}

static ssize_t hook_fetch_atomicv(struct fid_ep *ep, const struct fi_ioc *iov,
				  void **desc, size_t count,
				  struct fi_ioc *resultv, void **result_desc,
				  size_t result_count, fi_addr_t dest,
				  uint64_t addr, uint64_t key,
				  enum fi_datatype dt, enum fi_op op,
				  void *context)
{
	EP_CALL(ep, "fi_fetch_atomicv", WEFT_HK_FETCH_ATOMIC,
		A_ATOMIC | WEFT_HA_CTX);
	atomic_args(&c, ioc_total(resultv, result_count, dt), dest, addr, key,
		    dt, op, context);
	RUN(in->atomic->readwritev(in, iov, desc, count, resultv, result_desc,
				   result_count, dest, addr, key, dt, op,
				   context));
	return c.ret;
}

static ssize_t hook_fetch_atomicmsg(struct fid_ep *ep,
				    const struct fi_msg_atomic *msg,
				    struct fi_ioc *resultv, void **result_desc,
				    size_t result_count, uint64_t flags)
{
	EP_CALL(ep, "fi_fetch_atomicmsg", WEFT_HK_FETCH_ATOMIC,
		A_ATOMIC | WEFT_HA_CTX | WEFT_HA_FLAGS);
	atomic_msg_args(&c, msg, flags);
	RUN(in->atomic->readwritemsg(in, msg, resultv, result_desc,
				     result_count, flags));
	return c.ret;
}

static ssize_t hook_compare_atomic(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc,
				   const void *compare, void *compare_desc,
				   void *result, void *result_desc,
				   fi_addr_t dest, uint64_t addr, uint64_t key,
				   enum fi_datatype dt, enum fi_op op,
				   void *context)
{
	EP_CALL(ep, "fi_compare_atomic", WEFT_HK_COMPARE_ATOMIC,
		A_ATOMIC | WEFT_HA_CTX);
	atomic_args(&c, count * util_atomic_dt_size(dt), dest, addr, key, dt,
		    op, context);
	RUN(in->atomic->compwrite(in, buf, count, desc, compare, compare_desc,
				  result, result_desc, dest, addr, key, dt, op,
				  context));
	return c.ret;
}

static ssize_t hook_compare_atomicv(struct fid_ep *ep,
				    const struct fi_ioc *iov, void **desc,
				    size_t count, const struct fi_ioc *comparev,
				    void **compare_desc, size_t compare_count,
				    struct fi_ioc *resultv, void **result_desc,
				    size_t result_count, fi_addr_t dest,
				    uint64_t addr, uint64_t key,
				    enum fi_datatype dt, enum fi_op op,
				    void *context)
{
	EP_CALL(ep, "fi_compare_atomicv", WEFT_HK_COMPARE_ATOMIC,
		A_ATOMIC | WEFT_HA_CTX);
	atomic_args(&c, ioc_total(iov, count, dt), dest, addr, key, dt, op,
		    context);
	RUN(in->atomic->compwritev(in, iov, desc, count, comparev,
				   compare_desc, compare_count, resultv,
				   result_desc, result_count, dest, addr, key,
				   dt, op, context));
	return c.ret;
}

static ssize_t hook_compare_atomicmsg(struct fid_ep *ep,
				      const struct fi_msg_atomic *msg,
				      const struct fi_ioc *comparev,
				      void **compare_desc,
				      size_t compare_count,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      uint64_t flags)
{
	EP_CALL(ep, "fi_compare_atomicmsg", WEFT_HK_COMPARE_ATOMIC,
		A_ATOMIC | WEFT_HA_CTX | WEFT_HA_FLAGS);
	atomic_msg_args(&c, msg, flags);
	RUN(in->atomic->compwritemsg(in, msg, comparev, compare_desc,
				     compare_count, resultv, result_desc,
				     result_count, flags));
	return c.ret;
}

static int hook_atomicvalid(struct fid_ep *ep, enum fi_datatype dt,
			    enum fi_op op, size_t *count)
{
	struct fid_ep *in = INNER(HF(ep), struct fid_ep);

	return in->atomic->writevalid(in, dt, op, count);
}

static int hook_fetch_atomicvalid(struct fid_ep *ep, enum fi_datatype dt,
				  enum fi_op op, size_t *count)
{
	struct fid_ep *in = INNER(HF(ep), struct fid_ep);

	return in->atomic->readwritevalid(in, dt, op, count);
}

static int hook_compare_atomicvalid(struct fid_ep *ep, enum fi_datatype dt,
				    enum fi_op op, size_t *count)
{
	struct fid_ep *in = INNER(HF(ep), struct fid_ep);

	return in->atomic->compwritevalid(in, dt, op, count);
}

const struct fi_ops_atomic hook_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = hook_atomic,
	.writev = hook_atomicv,
	.writemsg = hook_atomicmsg,
	.inject = hook_inject_atomic,
	.readwrite = hook_fetch_atomic,
	.readwritev = hook_fetch_atomicv,
	.readwritemsg = hook_fetch_atomicmsg,
	.compwrite = hook_compare_atomic,
	.compwritev = hook_compare_atomicv,
	.compwritemsg = hook_compare_atomicmsg,
	.writevalid = hook_atomicvalid,
	.readwritevalid = hook_fetch_atomicvalid,
	.compwritevalid = hook_compare_atomicvalid,
};

/* ---- collectives ---------------------------------------------------------- */

/* A collective's arguments: its group, its context and flags, the bytes
 * of its buffer, and the datatype and op (FI_NOOP where none). */
static void coll_args(struct weft_hook_call *c, fi_addr_t coll_addr,
		      size_t count, enum fi_datatype dt, enum fi_op op,
		      uint64_t flags, void *context)
{
	c->addr = coll_addr;
	c->len = count * util_atomic_dt_size(dt);
	c->datatype = dt;
	c->op = op;
	c->flags = flags;
	c->context = context;
}

#define A_COLL (WEFT_HA_ADDR | WEFT_HA_CTX | WEFT_HA_FLAGS | WEFT_HA_ATOMIC)

static ssize_t hook_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
			     uint64_t flags, void *context)
{
	EP_CALL(ep, "fi_barrier", WEFT_HK_OTHER, A_COLL);
	coll_args(&c, coll_addr, 0, FI_VOID, FI_NOOP, flags, context);
	RUN(flags ? in->collective->barrier2(in, coll_addr, flags, context) :
		    in->collective->barrier(in, coll_addr, context));
	return c.ret;
}

static ssize_t hook_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
			    void *context)
{
	return hook_barrier2(ep, coll_addr, 0, context);
}

static ssize_t hook_broadcast(struct fid_ep *ep, void *buf, size_t count,
			      void *desc, fi_addr_t coll_addr,
			      fi_addr_t root_addr, enum fi_datatype dt,
			      uint64_t flags, void *context)
{
	EP_CALL(ep, "fi_broadcast", WEFT_HK_OTHER, A_COLL);
	coll_args(&c, coll_addr, count, dt, FI_NOOP, flags, context);
	RUN(in->collective->broadcast(in, buf, count, desc, coll_addr,
				      root_addr, dt, flags, context));
	return c.ret;
}

/* The operations whose calls differ only by the op they name: with a
 * send and a result buffer (PLAIN), an op too (REDUCING), a root too
 * (ROOTED). */
#define HOOK_COLL_PLAIN(fn, name, member)                                      \
	static ssize_t fn(struct fid_ep *ep, const void *buf, size_t count,    \
			  void *desc, void *result, void *result_desc,         \
			  fi_addr_t coll_addr, enum fi_datatype dt,            \
			  uint64_t flags, void *context)                       \
	{                                                                      \
		EP_CALL(ep, name, WEFT_HK_OTHER, A_COLL);                      \
		coll_args(&c, coll_addr, count, dt, FI_NOOP, flags, context);  \
		RUN(in->collective->member(in, buf, count, desc, result,       \
					   result_desc, coll_addr, dt, flags,  \
					   context));                          \
		return c.ret;                                                  \
	}
#define HOOK_COLL_REDUCING(fn, name, member)                                   \
	static ssize_t fn(struct fid_ep *ep, const void *buf, size_t count,    \
			  void *desc, void *result, void *result_desc,         \
			  fi_addr_t coll_addr, enum fi_datatype dt,            \
			  enum fi_op op, uint64_t flags, void *context)        \
	{                                                                      \
		EP_CALL(ep, name, WEFT_HK_OTHER, A_COLL);                      \
		coll_args(&c, coll_addr, count, dt, op, flags, context);       \
		RUN(in->collective->member(in, buf, count, desc, result,       \
					   result_desc, coll_addr, dt, op,     \
					   flags, context));                   \
		return c.ret;                                                  \
	}
#define HOOK_COLL_ROOTED(fn, name, member)                                     \
	static ssize_t fn(struct fid_ep *ep, const void *buf, size_t count,    \
			  void *desc, void *result, void *result_desc,         \
			  fi_addr_t coll_addr, fi_addr_t root_addr,            \
			  enum fi_datatype dt, uint64_t flags, void *context)  \
	{                                                                      \
		EP_CALL(ep, name, WEFT_HK_OTHER, A_COLL);                      \
		coll_args(&c, coll_addr, count, dt, FI_NOOP, flags, context);  \
		RUN(in->collective->member(in, buf, count, desc, result,       \
					   result_desc, coll_addr, root_addr,  \
					   dt, flags, context));               \
		return c.ret;                                                  \
	}

HOOK_COLL_PLAIN(hook_alltoall, "fi_alltoall", alltoall)
HOOK_COLL_PLAIN(hook_allgather, "fi_allgather", allgather)
HOOK_COLL_REDUCING(hook_allreduce, "fi_allreduce", allreduce)
HOOK_COLL_REDUCING(hook_reduce_scatter, "fi_reduce_scatter", reduce_scatter)
HOOK_COLL_ROOTED(hook_scatter, "fi_scatter", scatter)
HOOK_COLL_ROOTED(hook_gather, "fi_gather", gather)

static ssize_t hook_reduce(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, void *result, void *result_desc,
			   fi_addr_t coll_addr, fi_addr_t root_addr,
			   enum fi_datatype dt, enum fi_op op, uint64_t flags,
			   void *context)
{
	EP_CALL(ep, "fi_reduce", WEFT_HK_OTHER, A_COLL);
	coll_args(&c, coll_addr, count, dt, op, flags, context);
	RUN(in->collective->reduce(in, buf, count, desc, result, result_desc,
				   coll_addr, root_addr, dt, op, flags,
				   context));
	return c.ret;
}

static ssize_t hook_collectivemsg(struct fid_ep *ep,
				  const struct fi_msg_collective *msg,
				  struct fi_ioc *resultv, void **result_desc,
				  size_t result_count, uint64_t flags)
{
	EP_CALL(ep, "fi_collectivemsg", WEFT_HK_OTHER, A_COLL);
	if (msg)
		coll_args(&c, msg->coll_addr,
			  msg->iov_count && msg->msg_iov ?
				  msg->msg_iov[0].count :
				  0,
			  msg->datatype, msg->op, flags, msg->context);
	RUN(in->collective->msg(in, msg, resultv, result_desc, result_count,
				flags));
	return c.ret;
}

const struct fi_ops_collective hook_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = hook_barrier,
	.broadcast = hook_broadcast,
	.alltoall = hook_alltoall,
	.allreduce = hook_allreduce,
	.allgather = hook_allgather,
	.reduce_scatter = hook_reduce_scatter,
	.reduce = hook_reduce,
	.scatter = hook_scatter,
	.gather = hook_gather,
	.msg = hook_collectivemsg,
	.barrier2 = hook_barrier2,
};
