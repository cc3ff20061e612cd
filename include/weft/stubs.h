/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Typed stubs for ops a provider does not implement.  Each returns -FI_ENOSYS
 * (or the op's documented "not supported" answer) with the exact signature
 * of the op it stands for, so no ops table ever holds a cast function.
 */
#ifndef WEFT_STUBS_H
#define WEFT_STUBS_H

#include "weft/ofi.h"

/* struct fi_ops */
int weft_no_close(struct fid *fid);
int weft_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int weft_no_control(struct fid *fid, int command, void *arg);
int weft_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int weft_no_tostr(const struct fid *fid, char *buf, size_t len);
int weft_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);

/* struct fi_ops_av */
struct fi_av_set_attr;
struct fid_av_set;
struct fid_av;
int weft_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		   struct fid_av_set **av_set, void *context);

/* struct fi_ops_fabric, fi_ops_domain */
struct fi_info;
struct fi_tx_attr;
struct fi_rx_attr;
struct fi_collective_attr;
struct fid_pep;
struct fid_ep;
struct fid_stx;
struct fid_mc;
int weft_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_pep **pep, void *context);
int weft_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **sep, void *context);
int weft_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		    struct fid_stx **stx, void *context);
int weft_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		    struct fid_ep **rx_ep, void *context);
int weft_no_query_collective(struct fid_domain *domain,
			     enum fi_collective_op coll,
			     struct fi_collective_attr *attr, uint64_t flags);

/* struct fi_ops_cm */
int weft_no_setname(fid_t fid, void *addr, size_t addrlen);
int weft_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int weft_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen);
int weft_no_listen(struct fid_pep *pep);
int weft_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int weft_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen);
int weft_no_shutdown(struct fid_ep *ep, uint64_t flags);
int weft_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context);

/* struct fi_ops_ep */
ssize_t weft_no_cancel(fid_t fid, void *context);
/* getopt and setopt of an endpoint with no options: -FI_ENOPROTOOPT. */
int weft_no_getopt(fid_t fid, int level, int optname, void *optval,
		   size_t *optlen);
int weft_no_setopt(fid_t fid, int level, int optname, const void *optval,
		   size_t optlen);
int weft_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		   struct fid_ep **tx_ep, void *context);
int weft_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context);
ssize_t weft_no_size_left(struct fid_ep *ep);

/* struct fi_ops_msg, struct fi_ops_tagged: one side of an object that
 * only transmits (a transmit context) or only receives (a receive
 * context, a shared receive context). */
ssize_t weft_no_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		     fi_addr_t src, void *context);
ssize_t weft_no_recvv(struct fid_ep *ep, const struct iovec *iov,
		      void **desc, size_t count, fi_addr_t src, void *context);
ssize_t weft_no_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			uint64_t flags);
ssize_t weft_no_send(struct fid_ep *ep, const void *buf, size_t len,
		     void *desc, fi_addr_t dest, void *context);
ssize_t weft_no_sendv(struct fid_ep *ep, const struct iovec *iov,
		      void **desc, size_t count, fi_addr_t dest, void *context);
ssize_t weft_no_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			uint64_t flags);
ssize_t weft_no_inject(struct fid_ep *ep, const void *buf, size_t len,
		       fi_addr_t dest);
ssize_t weft_no_senddata(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, uint64_t data, fi_addr_t dest,
			 void *context);
ssize_t weft_no_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			   uint64_t data, fi_addr_t dest);
ssize_t weft_no_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t tag, uint64_t ignore,
		      void *context);
ssize_t weft_no_trecvv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *context);
ssize_t weft_no_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			 uint64_t flags);
ssize_t weft_no_tsend(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, uint64_t tag, void *context);
ssize_t weft_no_tsendv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest, uint64_t tag,
		       void *context);
ssize_t weft_no_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			 uint64_t flags);
ssize_t weft_no_tinject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t tag);
ssize_t weft_no_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest,
			  uint64_t tag, void *context);
ssize_t weft_no_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t tag);

#endif /* WEFT_STUBS_H */
