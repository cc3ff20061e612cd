/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm provider: FI_EP_RDM between processes of one host.
 *
 * The RDM semantics are prov/util's engine (weft/util_rdm.h); this provider
 * is its transport: each endpoint owns a region in /dev/shm (shm_layout.h)
 * whose queue its peers write into, and it moves message payloads inline
 * in a queue slot, through its own bounce buffers, or with one
 * process_vm_readv by the receiver.
 */
#ifndef WEFT_SHM_H
#define WEFT_SHM_H

#include "weft/core.h"

#include "weft/ofi.h"

#include "weft/list.h"
#include "weft/util_av.h"
#include "weft/util_bufpool.h"
#include "weft/util_domain.h"
#include "weft/util_mr.h"
#include "weft/util_rdm.h"

#include "shm_mrt.h"
#include "shm_region.h"

#define SHM_PREFIX "fi_shm://"
#define SHM_ADDRLEN FI_NAME_MAX /* stored FI_ADDR_STR addresses */

extern struct fi_provider shm_prov;

/* Tunables, read once from FI_SHM_* (shm_params_init). */
struct shm_params {
	size_t queue_slots;
	size_t max_peers;
	size_t bounce_count;
	size_t bounce_size; /* eager limit: larger messages use rendezvous */
	size_t push_chunk; /* bytes per bounce buffer when pushing */
	size_t cma_min; /* messages from this size on are read with CMA */
	size_t unexp_max; /* bytes unexpected messages may hold */
	bool disable_cma;
};
extern struct shm_params shm_params;
void shm_params_init(void);

/*
 * Ordering.  One queue carries everything from one sender, served in
 * order, so messages keep theirs (SAS), and a send stays behind an RMA
 * operation issued before it (SAR, SAW: one moved by CMA is done before
 * its call returns).  An RMA operation moved by CMA keeps its place behind
 * earlier messages and RMA requests still in the target's queue only when
 * asked (SHM_ORDER_RMA in msg_order): then it waits for the target to
 * reach them.  fi_getinfo returns those orders only when the hints ask
 * for them, as libfabric 1.17's shm does.
 */
#define SHM_ORDER_ALWAYS (FI_ORDER_SAS | FI_ORDER_SAR | FI_ORDER_SAW)
#define SHM_ORDER (UTIL_RDM_ORDER_ALL)
#define SHM_ORDER_RMA (SHM_ORDER & ~SHM_ORDER_ALWAYS)

/* Bytes fi_inject may carry, and the size of the small inbound buffers
 * (shm_layout.h): 4 KiB, or less when the bounce buffers are smaller. */
#define SHM_INJECT_SIZE 4096
static inline size_t shm_inject_size(void)
{
	return shm_params.bounce_size < SHM_INJECT_SIZE ? shm_params.bounce_size :
							  SHM_INJECT_SIZE;
}


/*
 * A connection to a peer's region: the mapping, and the entry we hold in
 * its peer table (which our slots name as their source).
 */
struct shm_conn {
	/* First, used only when shm is the endpoint's primary transport:
	 * the engine's peer (use up, which is right either way). */
	struct util_peer peer;
	struct util_peer *up;
	char name[SHM_NAME_MAX];
	struct shm_map map;
	uint32_t src_id; /* index | gen << 16 in the peer's table */
	_Atomic uint32_t *hold; /* our entry's hold flag, once claimed */
	_Atomic uint64_t *claim; /* our entry's claim mark, once claimed */
	_Atomic uint32_t *bounce; /* our entry's bounce mark, once claimed */
	uint64_t reclaim_ms; /* when its dead senders' buffers were sought */
	bool claimed;
	bool cma; /* the peer's memory can be read with process_vm_readv */
	bool dead; /* its owner is gone: transfers to it fail */
	/* It sent to us: its region existed (a sender has one). */
	bool heard;
	uint64_t alive_ms; /* when its owner was last seen alive */
	uint64_t retry_ms; /* when its name was last looked up, dead */
	bool hint_unreliable; /* its owner mutex said "died", wrongly */
	int bell_fd; /* its owner's bell, open for writing; -1 */
	bool bell_tried; /* bell_fd was looked for in this mapping */
	/* Its owner's registration table, mapped at the first RMA (once
	 * per region mapping: mrt_tried), so that RMA and atomics need no
	 * help from it (shm_rma.c, rma_direct). */
	struct shm_mrt_map mrt;
	bool mrt_tried;
	/* Our RMA requests in its queue, not answered yet, and the queue
	 * position past our last message or RMA request: until the peer has
	 * served them, further RMA goes the same way, in order behind them
	 * (FI_ORDER_RAW, WAW, RAS, WAS, ...). */
	uint32_t rma_queued;
	uint64_t order_pos;
};

/* What the owner knows of the sender behind one entry of its peer table. */
struct shm_rxpeer {
	uint32_t gen; /* of the table entry this describes; 0: unknown */
	struct shm_conn *conn; /* to answer it and read its bounce buffers */
	fi_addr_t fi_addr; /* in the endpoint's AV, or FI_ADDR_NOTAVAIL */
	char addr[SHM_ADDRLEN]; /* its address, for FI_SOURCE_ERR */
	uint8_t addr_len;
	uint32_t held; /* requests of this entry's senders we hold */
	uint32_t held_pass; /* the held_serve pass one of them had to wait */
};

/* A request we hold back, and its sender as we knew it then. */
struct shm_held {
	struct dlist_entry entry; /* shm_xp.held_list */
	struct shm_rxpeer rp;
	void *copy; /* a BOUNCE message's payload, out of its buffer */
	struct shm_slot slot;
};

/* A control message that found the peer's queue full, sent later. */
struct shm_pending {
	struct slist_entry entry;
	struct shm_conn *conn;
	uint16_t op;
	uint32_t aux;
	uint32_t len;
	uint64_t tag;
	uint64_t data;
};

/*
 * The shm transport on one endpoint: its region, its connections, the
 * transfers in flight.  The endpoint is a shm endpoint (struct shm_ep), or
 * another provider's RDM endpoint that reaches the peers on its own host
 * through shared memory (shm_local.h).
 */
struct shm_xp {
	struct util_rdm_xport base; /* the engine's handle */
	/* How the endpoint's peer addresses (the AV's stored form) and
	 * region names map to each other: shm's own "fi_shm://NAME", or the
	 * owner's (shm_local.h). */
	const struct shm_naming *naming;
	size_t addr_len; /* bytes of such an address */
	char name[SHM_NAME_MAX];
	struct dlist_entry name_entry; /* names held (shm_name_hold) */
	bool name_held;
	/* A scalable endpoint's pair: its name is derived, never drawn again
	 * or changed (taken: the enable fails). */
	bool name_fixed;
	struct shm_map own;
	pthread_t owner_thread; /* holds own's owner mutex */
	uint32_t out_next; /* the outbound bounce buffer to look at next */
	/* [bounce_count]: the peer each outbound buffer was last filled for,
	 * so that the buffers a dead reader held come back (conn_died). */
	struct shm_conn **out_reader;
	bool cma;
	/* RMA and atomics keep their place behind this endpoint's earlier
	 * messages and RMA requests to the same peer (its msg_order asks
	 * for SHM_ORDER_RMA); else one moved by CMA goes at once. */
	bool rma_order;
	struct shm_mrt *mrt; /* the domain's registration table, or NULL */

	struct shm_rxpeer *rxpeers; /* [own table index] */
	/* A sender in our queue is being made a peer (conn_get): inside
	 * another provider's endpoint, shm_reaches takes it unmapped. */
	bool arriving;
	/* Requests that could not be served yet (held_push). */
	struct util_bufpool *held_pool; /* struct shm_held */
	struct dlist_entry held_list; /* struct shm_held, arrival order */
	uint32_t held_pass; /* held_serve's passes */

	struct slist pending; /* struct shm_pending */

	/* Copying large messages through bounce buffers, without CMA. */
	struct util_bufpool *pulls; /* struct shm_pull, receiving side */
	struct dlist_entry pushes; /* struct shm_push, sending side */
	struct util_bufpool *push_pool;
	struct dlist_entry chunked; /* struct shm_rma_chunked */
	struct dlist_entry pull_list; /* struct shm_pull in flight */
	bool cma_warned;
	/* The bell: a FIFO beside the region that peers write a byte into
	 * when they find us asleep (shm_queue_sleep); its read end is the
	 * transport's wait fd.  -1: none (waits then poll). */
	int bell_fd;
	/* The wait fd, from the start (CQs are bound before the region and
	 * its bell exist): an epoll set that will hold the bell. */
	int wait_fd;
	pid_t bell_pid; /* its maker: a forked child leaves it alone */
	uint64_t last_check_ms; /* when peers were last checked for life */
	uint32_t progress_calls;
	/* Our queue's head while a claimed slot there stays unpublished
	 * (UINT64_MAX: none), and since when (queue_unstall). */
	uint64_t stall_head;
	uint64_t stall_ms;
	uint32_t empty_calls;
};

/* Receiving side of a message pushed through bounce buffers. */
struct shm_pull {
	struct dlist_entry entry; /* shm_xp.pull_list */
	struct shm_conn *conn; /* the sender */
	void *cookie; /* the engine's, for util_rdm_fetch_done */
	struct iovec iov[UTIL_RDM_IOV_MAX];
	size_t iov_count;
	size_t len; /* bytes wanted */
	size_t got;
	uint64_t tx_id; /* the sender's */
	uint32_t src; /* the sender's entry in our table */
};

/* An RMA without CMA, larger than a bounce buffer: sent part by part. */
struct shm_rma_chunked {
	struct dlist_entry entry;
	struct util_rdm_tx *tx;
	struct shm_conn *conn;
	size_t off; /* bytes done */
	size_t inflight; /* bytes of the part the target is serving, or 0 */
};

/* Sending side: a message being pushed after the receiver's go-ahead. */
struct shm_push {
	struct dlist_entry entry;
	struct util_rdm_tx *tx;
	struct shm_conn *conn;
	uint32_t pull_id;
	size_t len; /* bytes the receiver wants */
	size_t sent;
};

/* A shm endpoint: the engine and the transport. */
struct shm_ep {
	struct util_rdm_ep rdm; /* first */
	struct shm_xp x;
};

/* Names of regions and the endpoint's peer addresses. */
struct shm_naming {
	/* The region name of the peer at addr (the AV's stored form):
	 * 0, or -FI_EINVAL when none can reach it. */
	int (*name_of)(const struct shm_xp *x, const void *addr,
		       char name[SHM_NAME_MAX]);
	/* The address (x->addr_len bytes, zero-padded) of the endpoint whose
	 * region is called name: its significant length, or -FI_EINVAL. */
	int (*addr_of)(const struct shm_xp *x, const char *name, void *addr);
};

static inline struct shm_xp *shm_xp_of(struct util_rdm_xport *xp)
{
	return container_of(xp, struct shm_xp, base);
}

extern const struct util_rdm_transport shm_transport;
extern const struct shm_naming shm_own_naming;

/*
 * The transport's life on an endpoint, for shm's own endpoints and for
 * another provider's that embeds it (the owner names the region in
 * x->name before shm_xp_start):
 *   shm_xp_init     set up (addresses per naming, addr_len bytes); then
 *                   the owner gives &x->base to util_rdm_ep_init
 *   shm_xp_start    create and own the region (at FI_ENABLE)
 *   shm_xp_stop     undo shm_xp_start (an enable that failed later)
 *   shm_xp_closing  tell peers the region is going (before the engine's
 *                   util_rdm_ep_fini)
 *   shm_xp_fini     release everything (after util_rdm_ep_fini)
 */
int shm_xp_init(struct shm_xp *x, const struct shm_naming *naming,
		size_t addr_len);
int shm_xp_start(struct shm_xp *x);
void shm_xp_stop(struct shm_xp *x);
void shm_xp_closing(struct shm_xp *x);
void shm_xp_fini(struct shm_xp *x);

int shm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);
int shm_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);
int shm_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);
int shm_sep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **sep, void *context);
int shm_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **av, void *context);

/* Whether process_vm_readv works in this process at all. */
bool shm_cma_probe(void);

/*
 * Endpoint names (shm_name.c; man/fi_shm.7 tells users the same rules).
 * A name is what follows "fi_shm://" in an address; its region is the file
 * /dev/shm/weft-shm.<uid>.<name>.  Names weft draws end in SHM_DRAWN_MARK
 * and 16 random hex digits: nobody else can predict them, and an endpoint
 * whose drawn name is taken draws again.  None of these blocks.
 */
#define SHM_DRAWN_MARK '~'

/*
 * Contexts of a scalable endpoint: pair i > 0 of the endpoint named NAME
 * has the region NAME#i (pair 0 has NAME), and says that name as its
 * sender's identity, which peers read back as NAME and context i.  '#'
 * is therefore no part of a name an application gives.
 */
#define SHM_CTX_MARK '#'
/* Contexts of each kind a scalable endpoint may have: each pair is an
 * endpoint with its region (docs/shm-layout.md). */
#define SHM_MAX_CTX 16
/* Longest context suffix: "#65535" (16 rx_ctx_bits). */
#define SHM_CTX_SUFFIX_MAX 6

/* name: base, or base#ctx.  0, or -FI_EINVAL when it does not fit. */
int shm_name_ctx(char name[SHM_NAME_MAX], const char *base, uint32_t ctx);

/* Cut a context suffix off name in place: its context, or 0 (none). */
uint32_t shm_name_split(char *name);

/*
 * The name in an address of addrlen bytes ("fi_shm://NAME" or a bare NAME),
 * read up to its first NUL or addrlen, whichever comes first, never beyond.
 * Writes the terminated name; returns 0, or -FI_EINVAL when it is no valid
 * name.
 */
int shm_name_from_addr(const void *addr, size_t addrlen,
		       char name[SHM_NAME_MAX]);

/*
 * The address ("fi_shm://NAME", malloc'd, the caller frees it) that node
 * and service name, the way fi_getinfo (source: FI_SOURCE) and
 * fi_av_insertsvc (source false) read them:
 *   node and service          NODE:SERVICE (both sides get the same name)
 *   service only              :SERVICE
 *   "fi_shm://NAME" only      NAME
 *   another node only         source: NODE:~<drawn>; destination: NODE
 *   neither                   ~<drawn> (a default source address)
 * A node given as "fi_shm://NAME" counts as NAME.  Returns 0, -FI_EINVAL
 * when the result is no valid name (too long, or holding '/'), or the
 * error of getrandom.
 */
int shm_addr_resolve(const char *node, const char *service, bool source,
		     char **addr);

/* Write `prefix`, SHM_DRAWN_MARK and random digits into name.  Returns 0,
 * -FI_EINVAL when the prefix leaves no room, or getrandom's error. */
int shm_name_draw(char name[SHM_NAME_MAX], const char *prefix);

/* Whether name ends as shm_name_draw ends the names it makes. */
bool shm_name_drawn(const char *name);

/* New random digits for a drawn name, in place; -FI_EINVAL if not drawn. */
int shm_name_redraw(char name[SHM_NAME_MAX]);

/*
 * Make ep->name one that no other endpoint of this process holds, and hold
 * it until shm_name_release: a drawn name held by another endpoint (both
 * came from one fi_info) is drawn again, a chosen one gets ".N" appended.
 * So endpoints enabled at once by several threads never create the same
 * region.  Called by fi_enable before the region is created; takes a
 * process-wide lock, nothing else.  Returns 0, -FI_EADDRINUSE when no
 * free name is found, or getrandom's error.
 */
int shm_name_hold(struct shm_xp *ep);

/* Draw ep's held, drawn name anew (its file was taken by someone else);
 * same returns as shm_name_hold. */
int shm_name_redraw_held(struct shm_xp *ep);

/* Give up ep's name, if it holds one (close, failed enable). */
void shm_name_release(struct shm_xp *ep);

/* Whether an endpoint of this process holds name (takes the lock above). */
bool shm_name_held_here(const char *name);

#endif /* WEFT_SHM_H */
