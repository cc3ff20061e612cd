/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the pieces of the verbs MSG endpoint share: verbs_msg.c (its data
 * path), verbs_msg_ep.c (its setup, QP and close), verbs_cm.c (connection
 * management and passive endpoints), verbs_srx.c (shared receive
 * contexts).  Private to prov/verbs.
 */
#ifndef WEFT_VERBS_MSG_H
#define WEFT_VERBS_MSG_H

#include "verbs.h"

#include "weft/util_cq.h"
#include "weft/util_ep.h"
#include "weft/util_eq.h"

/* A transmit in flight (slot wr_id of the send ring). */
struct verbs_tx {
	void *context;
	uint64_t cq_flags; /* FI_SEND | FI_MSG, FI_RMA | FI_WRITE ... */
	size_t len;
	bool report;  /* a CQ slot was reserved */
	uint8_t cntr; /* enum util_ep_tx_kind */
	bool signaled; /* its own completion will come */
	bool done;     /* completed (verbs_msg.c: Completion order) */
};

/* A posted receive (slot wr_id of the receive ring). */
struct verbs_rx {
	void *context;
	void *buf;
	bool report;
	bool on_qp; /* handed to the QP */
	uint32_t nsge;
	struct ibv_sge sge[VERBS_IOV_MAX];
};

/* wr_id of a receive: its ring index with this bit; a transmit's lacks it. */
#define VERBS_WR_RX (1ULL << 63)
/* wr_id of a receive posted to a shared receive context: its slot there
 * with both bits. */
#define VERBS_WR_SRX (1ULL << 62)

/*
 * A shared receive context (fi_srx_context): one SRQ that the QPs of the
 * MSG endpoints bound to it take their receives from.  A receive's
 * completion comes on the CQ of the endpoint whose QP consumed it, in no
 * order across endpoints, so the receives are slots taken from and given
 * back to a free list rather than a ring.  No CQ slot is reserved at post
 * time (which CQ is known only at completion): completions are written
 * unreserved and a full CQ overflows (FI_EOVERRUN) rather than refusing
 * the post.  Lock order: an endpoint's lock, then the srx's.
 */
struct verbs_srx {
	/* First: fid, domain, op flags, the endpoints bound, and the lock
	 * of the slots, the free list and cancel_cq (weft/util_ep.h). */
	struct util_srx base;
	struct ibv_srq *srq;
	size_t size;
	uint32_t max_sge;
	struct verbs_rx *rx; /* size slots; on_qp: posted, not completed */
	uint32_t *free;	     /* free slot numbers */
	size_t nfree;
	/* The receive CQ of the first endpoint bound with one, held
	 * (util_cq_bind): where receives still posted at fi_close are
	 * reported FI_ECANCELED. */
	struct util_cq *cancel_cq;
};

enum verbs_cm_state {
	VERBS_CM_IDLE,
	VERBS_CM_RESOLVING, /* fi_connect: address, then route */
	VERBS_CM_CONNECTING, /* rdma_connect / rdma_accept sent */
	VERBS_CM_CONNECTED,
	VERBS_CM_SHUTDOWN,
	VERBS_CM_FAILED,
};

struct verbs_msg_ep {
	/* First: fid, lock, op flags, CQ / counter / AV / EQ bindings,
	 * progress hooks, enable, completion reporting (weft/util_ep.h). */
	struct util_ep base;
	struct verbs_domain *domain;
	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *comp_ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	bool armed; /* the CQ will raise an event on the channel */
	uint8_t state; /* enum verbs_cm_state */
	bool local_shutdown;
	/* Shut down on a device that never completes what is posted to a
	 * QP in error (err_post_lost: siw): what is still outstanding once
	 * the CQ is found empty is flushed by poll_cq (err_flush). */
	bool err_flush;
	/* FI_RX_CQ_DATA accepted: RMA writes may carry remote CQ data */
	bool rx_cq_data;
	/* the device carries immediate data (not iWARP): remote CQ data */
	bool imm;

	size_t tx_size, rx_size;
	uint32_t max_sge, inline_max;
	struct verbs_tx *tx; /* ring of tx_size */
	uint64_t tx_head, tx_tail;
	uint64_t tx_seen; /* slot after the last one completed */
	uint64_t tx_signaled; /* slot after the last signalled transmit */
	uint32_t tx_signal_every; /* at most this many transmits unsignalled */
	struct verbs_rx *rx; /* ring of rx_size */
	uint64_t rx_head, rx_tail, rx_on_qp;
	/* fi_atomic without a result: the device writes it here */
	uint64_t *scratch;
	struct ibv_mr *scratch_mr;

	/* fi_connect / fi_accept private data, with its header */
	uint8_t cm_priv[VERBS_CM_PRIV_BUF];
	uint8_t cm_priv_len;
	/* The peer's fence region (iWARP): every write is followed by an
	 * 8-byte read of it (verbs_fence_wr).  rkey 0: not fenced. */
	struct verbs_fence fence;
	struct sockaddr_storage src_addr;
};

/* The shared receive context bound to ep (base.srx), or NULL. */
static inline struct verbs_srx *verbs_ep_srx(const struct verbs_msg_ep *ep)
{
	return ep->base.srx ? container_of(ep->base.srx, struct verbs_srx, base) :
			      NULL;
}

/* A connection request waiting for fi_endpoint + fi_accept or fi_reject. */
struct verbs_connreq {
	struct fid handle; /* FI_CLASS_CONNREQ */
	struct rdma_cm_id *id;
	struct verbs_fence fence; /* the connecting peer's */
};

static inline struct verbs_msg_ep *msg_ep_of(struct fid_ep *ep_fid)
{
	return container_of(ep_fid, struct verbs_msg_ep, base.ep_fid);
}

/* Send work requests a transmit may take: a fenced write takes two. */
static inline size_t tx_wrs(const struct verbs_msg_ep *ep)
{
	return ep->domain->fence_mr ? 2 : 1;
}

/* ---- verbs_msg_ep.c ------------------------------------------------------ */

/* Create ep's QP on its id (once the id knows its device) and hand it the
 * receives posted so far.  0 or -FI_E*. */
int verbs_msg_qp_create(struct verbs_msg_ep *ep);

/* ---- verbs_msg.c --------------------------------------------------------- */

/* The data calls. */
extern struct fi_ops_msg verbs_msg_ops;
extern struct fi_ops_rma verbs_rma_ops;
extern struct fi_ops_atomic verbs_atomic_ops;
/* The endpoint's part of the base's ops (util_ep_ops): read the CQ; arm
 * its completion channel before a sleep; the channel's fd. */
int verbs_msg_progress(struct util_ep *base);
int verbs_msg_arm(struct util_ep *base);
int verbs_msg_wait_fds(struct util_ep *base, int *fds);
/* Fill sge from iov/desc: 0, or -FI_EINVAL (no descriptor under
 * FI_MR_LOCAL for a non-empty buffer that is not sent inline); *len the
 * bytes they cover. */
int verbs_sge_fill(struct ibv_sge *sge, const struct iovec *iov, void **desc,
		   size_t count, bool inline_ok, size_t *total);
/* Report a receive whose completion came on ep's CQ (reserved: it holds a
 * slot of the receive CQ; wanted: it asked for a completion). */
void verbs_msg_rx_report(struct verbs_msg_ep *ep, void *context, void *buf,
			 bool reserved, bool wanted, const struct ibv_wc *wc);

/* ---- verbs_cm.c ---------------------------------------------------------- */

extern struct fi_ops_cm verbs_msg_cm_ops;
/* The progress of an endpoint's rdma_cm channel, run by its bound EQ. */
void verbs_msg_cm_progress(struct util_progress *p);
int verbs_ep_getopt(fid_t fid, int level, int optname, void *optval,
		    size_t *optlen);
int verbs_ep_setopt(fid_t fid, int level, int optname, const void *optval,
		    size_t optlen);
/* O_NONBLOCK on fd: 0 or -FI_E*. */
int verbs_set_nonblock(int fd);

/* ---- verbs_srx.c --------------------------------------------------------- */

/* A receive of ep's bound shared context completed on ep's CQ. */
void verbs_srx_rx_complete(struct verbs_msg_ep *ep, const struct ibv_wc *wc);
/* An endpoint bound to srx is gone. */
void verbs_srx_release(struct verbs_srx *srx);
/* A shared receive context's fi_ops: what tells ours from another's. */
extern struct fi_ops verbs_srx_fi_ops;

#endif /* WEFT_VERBS_MSG_H */
