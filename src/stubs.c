/* SPDX-License-Identifier: BSD-2-Clause */
/* Typed -FI_ENOSYS stubs for ops a provider leaves out (weft/stubs.h). */
#include "weft/core.h"
#include "weft/stubs.h"

int weft_no_close(struct fid *fid)
{
	return -FI_ENOSYS;
}

int weft_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int weft_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int weft_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int weft_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		   struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		    struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_query_collective(struct fid_domain *domain,
			     enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

int weft_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

int weft_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int weft_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen)
{
	return -FI_ENOSYS;
}

int weft_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int weft_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int weft_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen)
{
	return -FI_ENOSYS;
}

int weft_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int weft_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_getopt(fid_t fid, int level, int optname, void *optval,
		   size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

int weft_no_setopt(fid_t fid, int level, int optname, const void *optval,
		   size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

int weft_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		   struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_recv(struct fid_ep *ep, void *buf, size_t len,
			   void *desc, fi_addr_t src, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_recvv(struct fid_ep *ep, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t src,
			    void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			      uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_send(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, fi_addr_t dest, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_sendv(struct fid_ep *ep, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest,
			    void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			      uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_inject(struct fid_ep *ep, const void *buf, size_t len,
			     fi_addr_t dest)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_senddata(struct fid_ep *ep, const void *buf,
			       size_t len, void *desc, uint64_t data,
			       fi_addr_t dest, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_injectdata(struct fid_ep *ep, const void *buf,
				 size_t len, uint64_t data, fi_addr_t dest)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_trecv(struct fid_ep *ep, void *buf, size_t len,
			    void *desc, fi_addr_t src, uint64_t tag,
			    uint64_t ignore, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_trecvv(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t src,
			     uint64_t tag, uint64_t ignore, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_trecvmsg(struct fid_ep *ep,
			       const struct fi_msg_tagged *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_tsend(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, fi_addr_t dest, uint64_t tag,
			    void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_tsendv(struct fid_ep *ep, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t dest,
			     uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_tsendmsg(struct fid_ep *ep,
			       const struct fi_msg_tagged *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_tinject(struct fid_ep *ep, const void *buf, size_t len,
			      fi_addr_t dest, uint64_t tag)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_tsenddata(struct fid_ep *ep, const void *buf,
				size_t len, void *desc, uint64_t data,
				fi_addr_t dest, uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

ssize_t weft_no_tinjectdata(struct fid_ep *ep, const void *buf,
				  size_t len, uint64_t data, fi_addr_t dest,
				  uint64_t tag)
{
	return -FI_ENOSYS;
}
