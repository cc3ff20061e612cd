/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs provider: RDMA devices through libibverbs, connections through
 * librdmacm.
 *
 *  verbs_prov.c  registration, discovery (fi_getinfo), fabric, domain, MR
 *  verbs_proto.c the wire format's decoders (verbs_proto.h)
 *  verbs_msg.c   FI_EP_MSG: the data path straight onto one RC QP
 *  verbs_cm.c    FI_EP_MSG: rdma_cm connection management, passive
 *                endpoints
 *  verbs_srx.c   FI_EP_MSG: shared receive contexts (verbs_msg.h: what
 *                these three share)
 *  verbs_rdm.c   FI_EP_RDM: the RDM engine (weft/util_rdm.h) over RC QPs
 *                connected on demand, with verbs_rdm_conn.c, _tx.c and
 *                _rx.c (verbs_rdm.h: what these four share)
 *
 * What this header shares between them: the device limits found at
 * discovery (struct verbs_dev), the domain (a protection domain on an open
 * device, embedding the util MR domain), registrations (struct verbs_mr,
 * whose fi_mr_desc gives the lkey), and the tunables (FI_VERBS_*).
 *
 * Memory registration.  Every fi_mr_reg is one ibv_mr with access flags
 * from the OFI access bits; the key peers use is its rkey.  The domain's
 * util_mr_map records each registration under that rkey, with the
 * verbs_mr as owner: a transport that must check a peer's key in software
 * (an atomic the device cannot do) finds the registration with
 * util_mr_map_verify and the same bounds and access rules as tcp and shm.
 */
#ifndef WEFT_VERBS_H
#define WEFT_VERBS_H

#include "weft/core.h"

#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "weft/ofi.h"

#include "weft/list.h"
#include "weft/util_domain.h"
#include "weft/util_eq.h"
#include "weft/util_getinfo.h"
#include "weft/util_ifaddr.h"
#include "weft/util_mr.h"
#include "weft/util_mr_cache.h"
#include "weft/util_rdm.h"

#include "verbs_proto.h"

extern struct fi_provider verbs_prov;

/* Most scatter-gather entries one fi_sendv / fi_recvv turns into. */
#define VERBS_IOV_MAX 8
/* Bytes of immediate data a write or send carries (domain cq_data_size). */
#define VERBS_CQ_DATA_SIZE sizeof(uint32_t)
/* The private data of connections and the RDM protocol: verbs_proto.h. */

/* Tunables, read once from FI_VERBS_* (verbs_params_init). */
struct verbs_params {
	char iface[IF_NAMESIZE]; /* FI_VERBS_IFACE: "" for every interface */
	char device[64];	 /* FI_VERBS_DEVICE_NAME: "" for every device */
	size_t tx_size;		 /* FI_VERBS_TX_SIZE, capped by the device */
	size_t rx_size;		 /* FI_VERBS_RX_SIZE, capped by the device */
	size_t inline_size;	 /* FI_VERBS_INLINE_SIZE: 0 = the device's */
	int conn_timeout_ms;	 /* rdma_cm address and route resolution */
	int ack_timeout;	 /* FI_VERBS_ACK_TIMEOUT: RC exponent, 0 = rdma_cm's */
	size_t mr_cache_entries; /* FI_VERBS_MR_CACHE_ENTRIES: 0 keeps none */
	bool shm; /* FI_VERBS_SHM: RDM endpoints use shm for local peers */
	/* FI_VERBS_DEVICE_ATOMICS: RDM endpoints offer the device's atomics
	 * only (64-bit FI_SUM and FI_CSWAP), instead of every atomic of
	 * fi_atomic(3) applied by the target endpoint (verbs_rdm_rx.c). */
	bool device_atomics;
};
extern struct verbs_params verbs_params;
void verbs_params_init(void);

/*
 * What discovery learnt of one port of one device, and what the domain
 * checks every queue against: no CQ, QP or SGE count above these.
 */
struct verbs_dev {
	char name[IBV_SYSFS_NAME_MAX]; /* "rxe0": the domain name */
	uint8_t port;		       /* 1-based port number */
	bool iwarp;		       /* transport IBV_TRANSPORT_IWARP */
	bool ethernet;		       /* link layer (RoCE, iWARP) */
	bool atomics;		       /* 64-bit fetch-add and cmp-swap */
	/* Work requests posted once the QP is in error are never
	 * completed, not even as flushed (siw: a user-mapped send queue,
	 * whose doorbell flushes nothing then). */
	bool err_post_lost;
	uint32_t max_cqe;
	uint32_t max_qp_wr;
	uint32_t max_sge;    /* send and receive scatter-gather entries */
	uint32_t max_sge_rd; /* scatter-gather entries of an RDMA read */
	uint32_t max_inline; /* bytes IBV_SEND_INLINE carries on an RC QP */
	uint32_t max_qp_rd_atom; /* reads / atomics in flight, initiator */
	uint32_t max_qp_init_rd_atom;
	uint32_t max_qp, max_cq, max_mr, max_pd;
	uint32_t max_srq, max_srq_wr, max_srq_sge; /* 0: no SRQ */
	uint64_t max_mr_size;
	uint32_t max_msg_sz; /* port */
	/* For fi_info's nic attributes. */
	uint32_t vendor_id, vendor_part_id, hw_ver;
	char fw_ver[64];
	enum ibv_port_state state;
	int mtu; /* bytes: active_mtu */
	uint64_t speed; /* bits per second, from active speed and width */
};

/*
 * Query a device's and port's limits into dev (dev->name is set from the
 * context).  Creates and destroys a throwaway RC QP to learn the largest
 * inline size the device accepts.  Control path; may take milliseconds.
 * Returns 0 or -FI_E* from the failing ibv_ call.
 */
int verbs_dev_query(struct ibv_context *ctx, uint8_t port,
		    struct verbs_dev *dev);

/*
 * A domain: one device opened (ibv_context) and one protection domain.
 * base.util is the util domain (threading, CQ and counter opening); the
 * key map in base.mr_map holds registrations under their rkeys.
 */
struct verbs_domain {
	struct util_mr_domain base; /* first */
	struct ibv_context *ctx; /* librdmacm's context of the device */
	struct ibv_pd *pd;
	struct verbs_dev dev; /* the limits of ctx and its port */
	enum fi_ep_type ep_type; /* of the info the domain was opened with */
	uint32_t addr_format;	 /* FI_SOCKADDR_IN or _IN6 */
	struct fi_info *info;	 /* a copy, for endpoints' defaults */
	/* Registrations the provider makes itself, for buffers that came
	 * without a fitting descriptor (a rendezvous send from memory the
	 * application registered for FI_SEND only, or not at all): kept,
	 * and dropped when the application unmaps the memory. */
	struct util_mr_cache mr_cache;
	/* The RDM endpoints' completion and rdma_cm channels: every one's
	 * wait fd, so that a thread sleeping on one endpoint wakes for the
	 * others' connection events too (the engine's domain sweep). */
	int epfd;
	/* Teardowns of closed endpoints still using pd (verbs_domain_hold);
	 * closed: fi_close has returned, the last release frees the rest. */
	unsigned int teardowns;
	bool closed;
	/* iWARP write fences (docs/verbs-protocol.md): fence_mem[0] is
	 * what peers read behind their writes to us, fence_mem[1] where our
	 * own fence reads land.  Registered on iWARP devices only. */
	struct ibv_mr *fence_mr;
	uint64_t fence_mem[2];
};

/*
 * The largest send or receive queue of one endpoint, whose one CQ takes
 * both directions: on iWARP a write takes two send work requests (the
 * write and its fence read), and both may complete (flushed).
 */
static inline uint32_t verbs_queue_depth(const struct verbs_dev *d)
{
	uint32_t per_tx = d->iwarp ? 2 : 1;
	uint32_t a = d->max_qp_wr / per_tx, b = d->max_cqe / (per_tx + 1);

	return a < b ? a : b;
}

/*
 * Fill wr (zeroed by the caller) and sge with the fence read behind
 * writes to the peer whose fence region is f: 8 bytes of it into the
 * domain's fence_mem[1].  On iWARP a write completes once TCP took it;
 * the read's answer comes only after the target placed the writes before
 * it, and never when it refused one (it ends the stream), so the read's
 * completion is the writes' verdict.  Not zero bytes: siw now and then
 * refuses a zero-length read as an invalid STag.
 */
static inline void verbs_fence_wr(const struct verbs_domain *d,
				  const struct verbs_fence *f,
				  struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	sge->addr = (uintptr_t)&d->fence_mem[1];
	sge->length = sizeof(d->fence_mem[1]);
	sge->lkey = d->fence_mr->lkey;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_RDMA_READ;
	wr->wr.rdma.remote_addr = f->addr;
	wr->wr.rdma.rkey = f->rkey;
}

/*
 * Our fence region, as connections' private data offers it to peers:
 * filled into *f and returned, or NULL when the domain has none (not
 * iWARP).
 */
static inline const struct verbs_fence *
verbs_domain_fence(const struct verbs_domain *d, struct verbs_fence *f)
{
	if (!d->fence_mr)
		return NULL;
	f->addr = (uintptr_t)d->fence_mem;
	f->rkey = d->fence_mr->rkey;
	return f;
}

static inline struct verbs_domain *verbs_domain_of(struct fid_domain *fid)
{
	return container_of(fid, struct verbs_domain, base.util.domain_fid);
}

/*
 * A registration.  fi_mr_desc returns the verbs_mr itself: the data path
 * reads the lkey with verbs_desc_lkey.  fi_mr_key is mr->rkey.
 */
struct verbs_mr {
	struct fid_mr mr_fid;
	struct verbs_domain *domain;
	struct ibv_mr *mr;
	uint64_t access; /* OFI access bits */
};

/* lkey of a descriptor from fi_mr_desc (NULL desc: not registered). */
static inline uint32_t verbs_desc_lkey(void *desc)
{
	return ((struct verbs_mr *)desc)->mr->lkey;
}

/*
 * An endpoint whose teardown must finish in the background (an iWARP
 * connection attempt the kernel will not abandon before its timeout: see
 * verbs_msg.c) keeps its domain's protection domain alive: hold before
 * handing the work over, release when its QP, CQ and registrations are
 * gone.  A domain closed meanwhile is freed by the last release.  Any
 * thread; never blocks for long.  verbs_teardowns_wait blocks until no
 * teardown is left (the provider's cleanup).
 */
/*
 * verbs_prov.c's discovery, for verbs_domain.c: verbs_sites_get finds the
 * devices once (0 or -FI_E*); verbs_sites_prov then describes what they
 * offer, for fi_domain's and fi_endpoint's checks; verbs_site_port is the
 * port of device dev that serves fabric (any when NULL), 1 when none.
 */
int verbs_sites_get(void);
const struct util_prov *verbs_sites_prov(void);
uint8_t verbs_site_port(const char *dev, const char *fabric);
/* fi_domain (verbs_domain.c). */
int verbs_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, void *context);
void verbs_domain_hold(struct verbs_domain *domain);
void verbs_domain_release(struct verbs_domain *domain);
void verbs_teardowns_wait(void);

/* ibv_access_flags for OFI access bits (FI_REMOTE_WRITE ...). */
int verbs_access_flags(uint64_t access);

/*
 * Translate a work completion status into a positive FI_E* error for a
 * fi_cq_err_entry (IBV_WC_WR_FLUSH_ERR is FI_ECANCELED).
 */
int verbs_wc_err(enum ibv_wc_status status);

/*
 * rdma_resolve_addr(id, src, dst) with verbs_params.conn_timeout_ms; over
 * iWARP, with no port in src, from a local port TCP lets siw bind (siw
 * binds the connection's socket to rdma_cm's port, from a space of its
 * own).  0 or -FI_E*.
 */
int verbs_resolve_addr(struct rdma_cm_id *id, const struct verbs_dev *dev,
		       const struct sockaddr *src, const struct sockaddr *dst);
void verbs_qp_tune(struct rdma_cm_id *id, const struct verbs_dev *dev);

/*
 * Atomics.  The device does 64-bit fetch-add and compare-and-swap, atomic
 * with respect to each other only (IBV_ATOMIC_HCA), not with the CPU's
 * updates.  MSG endpoints offer those; RDM endpoints offer every atomic of
 * fi_atomic(3), each applied by the target endpoint's CPU, unless
 * FI_VERBS_DEVICE_ATOMICS asks for the device's only (docs/verbs-protocol.md
 * says why never a mix of both).
 *
 * verbs_dev_atomic: whether the device does op on dt in the class that
 * flags selects (0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC), as
 * util_atomic_query answers (attr written only on success, count 1).
 * verbs_rdm_device_atomics: whether RDM endpoints use the device's.
 */
#define VERBS_RDM_ATOMIC_MAX VRDM_ATOMIC_MAX /* bytes of one atomic's operands */
int verbs_dev_atomic(const struct verbs_dev *d, enum fi_datatype dt,
		     enum fi_op op, uint64_t flags, struct fi_atomic_attr *attr);
static inline bool verbs_rdm_device_atomics(void)
{
	return verbs_params.device_atomics;
}

/* verbs_cm.c, verbs_msg.c, verbs_srx.c */
int verbs_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_pep **pep, void *context);
int verbs_msg_ep_open(struct verbs_domain *domain, struct fi_info *info,
		      struct fid_ep **ep, void *context);
/* fi_srx_context: a shared receive context (an SRQ) for MSG endpoints. */
int verbs_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context);

/*
 * verbs_rdm.c: fi_endpoint of an FI_EP_RDM info on a verbs domain.  The
 * caller (the domain's endpoint op) has checked info against the
 * provider's candidates.  Returns 0 and *ep, or -FI_E*.  Until the RDM
 * transport is part of the build a weak definition in verbs_prov.c
 * answers -FI_ENOSYS.
 */
int verbs_rdm_ep_open(struct verbs_domain *domain, struct fi_info *info,
		      struct fid_ep **ep, void *context);
/* fi_scalable_ep of an RDM endpoint (verbs_rdm_sep.c), with at most
 * this many contexts of each kind. */
#define VERBS_RDM_MAX_CTX 16
int verbs_rdm_sep_open(struct verbs_domain *domain, struct fi_info *info,
		       struct fid_ep **sep, void *context);

#endif /* WEFT_VERBS_H */
