/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tcp provider: FI_EP_RDM and FI_EP_MSG over TCP sockets.
 *
 * Both endpoint types are prov/util's engine (weft/util_rdm.h) with this
 * provider as its transport.  An RDM endpoint listens on a socket and
 * connects to each peer on first use (the engine's peer map holds one
 * struct tcp_peer per remote endpoint); an MSG endpoint is the same engine
 * with one fixed peer, its connection made through fi_connect / fi_accept.
 * The wire protocol is in tcp_proto.h and docs/tcp-protocol.md.
 *
 * Progress: one epoll set per domain, holding every socket of its
 * endpoints, driven from the engine's progress (the application's calls,
 * or a thread under FI_PROGRESS_AUTO).  Whichever endpoint polls it handles
 * what is ready, for itself and for the domain's other endpoints whose
 * lock it can take; the rest stays ready (level-triggered) for their own
 * calls.  Its fd is what the engine adds to bound CQs' and counters' wait
 * objects, so a CQ shared by many endpoints sleeps on one fd.
 */
#ifndef WEFT_TCP_H
#define WEFT_TCP_H

#include "weft/core.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "weft/ofi.h"

#include "weft/list.h"
#include "weft/util_av.h"
#include "weft/util_domain.h"
#include "weft/util_eq.h"
#include "weft/util_pep.h"
#include "weft/util_mr.h"
#include "weft/util_rdm.h"

#include "tcp_proto.h"


extern struct fi_provider tcp_prov;

/* Tunables, read once from FI_TCP_* (tcp_params_init). */
struct tcp_params {
	char iface[IF_NAMESIZE]; /* FI_TCP_IFACE: "" for any */
	size_t eager_max;    /* larger messages stream from the user's buffer */
	size_t rx_stage;     /* payloads up to this are read via staging */
	size_t staging;      /* bytes of a connection's receive buffer */
	size_t unexp_max;
	int conn_timeout_ms; /* a connect (with its handshake) gives up */
	int pending_max;     /* accepted connections waiting for HELLO */
	size_t max_msg;
	bool nodelay;
	bool shm; /* FI_TCP_SHM: RDM endpoints use shm for local peers */
};
extern struct tcp_params tcp_params;

/* Bytes of one atomic's operands: they and the compare values arrive in
 * one staged frame.  The endpoints' limit and fi_query_atomic's. */
static inline size_t tcp_atomic_max(void)
{
	return tcp_params.rx_stage / 2;
}

/* A connection's staging buffer until its traffic needs the full one;
 * a connection holds one only while bytes are staged. */
#define TCP_STAGE_MIN 4096
#define TCP_STAGE_SPARES 8 /* spare staging buffers per endpoint */
/* Payload left from which an empty socket is waited for with epoll. */
#define TCP_DRY_MIN 65536
/* Connections an endpoint or passive endpoint accepts per progress call,
 * at most. */
#define TCP_ACCEPT_BURST 64
void tcp_params_init(void);

struct tcp_domain {
	struct util_mr_domain base; /* first */
	char ifname[IF_NAMESIZE]; /* domain name: the interface, or "" */
	uint32_t addr_format; /* FI_SOCKADDR_IN or _IN6 */
	int epfd; /* every socket of the domain's endpoints */
	/* Held from epoll_wait until its events are handled, so that an
	 * endpoint closing frees nothing an event still names. */
	struct weft_lock prog_lock;
};

struct tcp_ep;

/* Something to write on a connection, in order. */
struct tcp_out {
	struct dlist_entry entry;
	size_t total, sent;
	size_t iov_count;
	struct iovec iov[UTIL_RDM_IOV_MAX * 2 + 2];
	/* When written: complete this tx (a streamed send), or nothing. */
	struct util_rdm_tx *tx;
	void *copy; /* owned bytes the iovs point into (freed when written) */
	uint8_t hdr[TCP_HDR_MAX];
};

/* What the receive side of a connection is doing. */
enum tcp_rx_state {
	TCP_RX_HDR,	/* reading a frame header */
	TCP_RX_PAYLOAD, /* reading a payload into rx_iov (or dropping it) */
	TCP_RX_STAGE,	/* reading a whole payload into the staging buffer */
	TCP_RX_WAIT,	/* a large unexpected message waits for its receive */
	/* Accepted by a scalable endpoint's pair 0 for another pair, HELLO
	 * read: nothing more is read until that pair adopts it. */
	TCP_RX_HANDOFF,
};

/* A large message's payload as the engine's stash names it. */
struct tcp_stash {
	struct tcp_conn *conn; /* NULL once the payload is all read */
	size_t len;
	size_t got;
	void *data;	 /* the payload, when read before a receive took it */
	void *cookie;	 /* the engine's, once fetched */
	struct iovec iov[UTIL_RDM_IOV_MAX]; /* where a late fetch wants it */
	size_t iov_count;
	size_t want;	 /* bytes the fetch wants (truncation) */
	bool discarded;
	bool fetched;
	int error; /* the connection failed before all of it came */
	bool waiting; /* still in the socket, until a receive takes it */
	uint64_t tx_id;
	uint16_t flags;
	struct tcp_peer *peer;
};

enum tcp_conn_state {
	TCP_CONN_CONNECTING, /* non-blocking connect under way */
	TCP_CONN_HELLO,	     /* our HELLO sent, waiting for HELLO_ACK */
	TCP_CONN_ACCEPTED,   /* accepted, waiting for the peer's HELLO */
	TCP_CONN_CMWAIT,     /* MSG: HELLO seen, fi_accept / fi_reject due */
	TCP_CONN_OPEN,
	TCP_CONN_CLOSED,
};

struct tcp_conn {
	struct fid handle; /* FI_CLASS_CONNREQ: an FI_CONNREQ's info->handle */
	struct dlist_entry entry; /* tcp_ep.conns, or tcp_pep.pending */
	struct tcp_ep *ep;
	int epfd; /* the epoll set watching it */
	struct tcp_peer *peer; /* RDM: whom it carries; NULL until known */
	int fd;
	uint8_t state;	 /* enum tcp_conn_state */
	uint8_t prev_state; /* before it closed */
	bool rejected;	 /* MSG: refused by the peer (reported already) */
	bool refused;	 /* RDM: the peer's HELLO_ACK refused it (error) */
	bool reported;	 /* its FI_CONNREQ was written */
	bool await_ack;	 /* RDM, outgoing: open, HELLO_ACK not read yet */
	bool outgoing;
	bool want_out;	 /* EPOLLOUT armed */
	bool rx_held;	 /* the engine refused an arrival: read later */
	bool rx_dry;	 /* a large payload is coming and the socket was empty */
	int error;	 /* why it closed (positive FI_E*) */
	uint64_t deadline_ms; /* connecting / handshake gives up then */
	struct dlist_entry outq; /* struct tcp_out */

	/* receive side */
	uint8_t rx_state;
	size_t stage_need; /* payload bytes to stage before handling */
	char *rbuf;
	size_t rbuf_size, rstart, rend;
	struct tcp_frame frame; /* the frame being received */
	struct iovec rx_iov[UTIL_RDM_IOV_MAX * 2];
	size_t rx_iov_count, rx_left, rx_drop;
	/* An RMA write landing in registered memory: the map that named it
	 * and its generation then (tcp_rx_recheck), or NULL. */
	struct util_mr_map *rx_map;
	uint64_t rx_map_gen;
	struct tcp_stash *rx_stash; /* the message rx_iov belongs to */
	struct util_rdm_tx *rx_tx;  /* RESP: the request it answers */
	void (*rx_done)(struct tcp_conn *conn); /* payload all read */
	uint32_t rx_status;

	/* RDM HELLO kept while the connection is handed to another pair
	 * of a scalable endpoint (TCP_RX_HANDOFF). */
	struct sockaddr_storage hello_sa;
	uint8_t hello_src_ctx;
	uint8_t handoff_ctx; /* the pair it goes to */

	/* MSG connection management */
	uint8_t cm_data[TCP_CM_DATA_MAX];
	size_t cm_len;
	struct tcp_pep *pep; /* accepted by this passive endpoint */
};

/* A remote endpoint of an RDM endpoint (the engine's peer map). */
struct tcp_peer {
	struct util_peer peer; /* first */
	struct tcp_conn *conn; /* the connection we send on, or NULL */
	uint64_t retry_ms;     /* after a failure, connect again from then */
	/* Why its endpoint refused our last connection (a positive FI_E*,
	 * HELLO_ACK's status), 0: it did not.  Until retry_ms, transmits to
	 * it fail with it at once rather than connect to be refused again. */
	int refused;
};

/* How long a peer's refusal stands (tcp_peer.refused). */
#define TCP_REFUSED_MS 1000

struct tcp_ep {
	struct util_rdm_ep rdm; /* first */
	struct util_rdm_xport xp; /* the engine's handle of this transport */
	/* While it has no connection: polls left before the clock is read,
	 * when it was read, when the domain's set was last looked at. */
	unsigned int idle_skip;
	uint64_t idle_clock_ns, idle_look_ns;
	struct tcp_domain *domain;
	enum fi_ep_type type;
	int epfd; /* the domain's, or its own (own_set) */
	bool own_set;
	int lfd; /* RDM: the listening socket; -1 */
	struct sockaddr_storage addr; /* RDM: what fi_getname reports */
	socklen_t addrlen;
	struct dlist_entry conns; /* struct tcp_conn */
	struct dlist_entry closed; /* MSG: its connection, once closed */
	struct tcp_conn *hot; /* the only open connection, or NULL */
	/* Staging buffers no connection holds now (tcp_conn.c): up to
	 * TCP_STAGE_SPARES, so that as many connections busy at once
	 * take and give back theirs without allocating. */
	struct {
		char *buf;
		size_t size;
	} stage_spare[TCP_STAGE_SPARES];
	unsigned int nstage_spare;
	int nopen;
	int npending; /* accepted, HELLO not read yet (TCP_CONN_ACCEPTED) */
	unsigned int calls;
	unsigned int looks; /* at the domain's set */
	bool closing;
	struct util_progress cm_progress; /* on the bound EQ */

	/* A scalable endpoint's pair (tcp_sep.c): its index and its
	 * endpoint.  The connections pair 0 accepts for it come through its
	 * inbox there (util_rdm_inbox: tcp_conn.entry), which it adopts in
	 * its progress. */
	uint8_t ctx;
	struct tcp_sep *sep;

	/* MSG */
	struct util_eq *eq;
	struct tcp_conn *conn; /* the one connection */
	struct tcp_peer *mpeer;
	bool shutdown_local; /* fi_shutdown was called */
	bool shutdown_reported; /* FI_SHUTDOWN is on the EQ */
	struct sockaddr_storage peer_addr;
	struct sockaddr_storage src_addr;
	socklen_t src_addrlen;
	void *cm_param;
};

/* A passive endpoint: listens, reports FI_CONNREQ. */
struct tcp_pep {
	struct util_pep util; /* first */
	int lfd;
	int epfd; /* the listening socket and connections not claimed */
	struct dlist_entry pending; /* struct tcp_conn accepted, not claimed */
};

static inline struct tcp_pep *tcp_pep_of(struct util_pep *pep)
{
	return container_of(pep, struct tcp_pep, util);
}

static inline struct tcp_ep *tcp_ep_of(struct util_rdm_ep *rdm)
{
	return container_of(rdm, struct tcp_ep, rdm);
}

/* A scalable endpoint: pair 0 listens at its address and hands each
 * connection to the pair its HELLO names. */
struct tcp_sep {
	struct util_rdm_sep base; /* first */
};

int tcp_sep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **sep, void *context);
/* Open pair ctx of sep (tcp_ep.c): an RDM endpoint; pair 0 listens. */
int tcp_pair_open(struct tcp_sep *sep, uint32_t ctx, struct tcp_ep **out);

/* tcp_prov.c */
int tcp_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);
int tcp_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);
size_t tcp_sockaddr_len(const void *addr);
/* The first address of family on interface name ("": any interface). */
int tcp_iface_addr(const char *name, int family,
		   struct sockaddr_storage *out);

/* tcp_conn.c: sockets, the write queue, the receive state machine */
int tcp_errno_fi(int err); /* errno -> positive FI_E* */
void tcp_sock_opts(int fd);
/*
 * Accept one connection on the listening socket lfd (non-blocking, options
 * set): its fd, or -1 when none waits or none can be had.  When the
 * process or the system has no descriptor left, the waiting connections
 * are refused (their peers' transmits fail with FI_EMFILE) and a line
 * naming the limit is logged; who names the listener in it.  Needs
 * tcp_fd_reserve, called when a listener is made.
 */
int tcp_sock_accept(int lfd, const char *who);
void tcp_fd_reserve(void);
/* Log, at most once a second, that err (EMFILE or ENFILE) stopped `what`:
 * accepting (refused more connections refused), or connecting. */
void tcp_fd_warn(int err, const char *what, bool accepting,
		 unsigned long refused);
/* Log that a peer refused a connection of ours with status (FI_E*). */
void tcp_refused_warn(uint32_t status);
/* ep: the endpoint it serves, NULL for a passive endpoint's; set before
 * the fd enters epfd, where another thread's progress may see it. */
struct tcp_conn *tcp_conn_new(struct tcp_ep *ep, int epfd, int fd,
			      uint8_t state);
int tcp_conn_move(struct tcp_conn *conn, int epfd);
/* Close the oldest connection of list still waiting for its HELLO. */
void tcp_pending_evict(struct dlist_entry *list);
void tcp_conn_close(struct tcp_conn *conn, int err);
void tcp_conn_free(struct tcp_conn *conn);
int tcp_conn_watch(struct tcp_conn *conn, bool want_out);
struct tcp_out *tcp_out_new(size_t copy_len);
void tcp_conn_queue(struct tcp_conn *conn, struct tcp_out *out);
int tcp_conn_flush(struct tcp_conn *conn);
int tcp_conn_write_copy(struct tcp_conn *conn, const void *hdr,
			size_t hdr_len, const struct iovec *iov, size_t count,
			size_t len);
int tcp_conn_read(struct tcp_conn *conn);
/* The registrations an RMA write lands in changed while its payload
 * came: check its ranges again; what no longer may be written is dropped
 * and the write answered with the error. */
void tcp_rx_recheck(struct tcp_conn *conn);
void tcp_rx_into(struct tcp_conn *conn, const struct iovec *iov, size_t count,
		 size_t keep, size_t len, void (*done)(struct tcp_conn *));

/* tcp_ep.c, tcp_xp.c: what the connection layer calls back */
void tcp_conn_drained(struct tcp_conn *conn);
void tcp_conn_lost(struct tcp_conn *conn);
void tcp_rx_abort(struct tcp_conn *conn, int err);
void tcp_proto_error(struct tcp_conn *conn, const char *why);
int tcp_frame_start(struct tcp_conn *conn);
int tcp_frame_staged(struct tcp_conn *conn);
/* HELLO (conn->frame) with its payload, on a connection we accepted. */
int tcp_conn_hello_in(struct tcp_conn *conn, const void *payload);
void tcp_conn_hello_ack_in(struct tcp_conn *conn, uint32_t status,
			   const void *cm, size_t cm_len);
int tcp_send_hello(struct tcp_conn *conn, const void *addr, size_t alen,
		   const void *cm, size_t cm_len, uint8_t src_ctx,
		   uint8_t dst_ctx);
int tcp_send_hello_ack(struct tcp_conn *conn, uint32_t status,
		       const void *cm, size_t cm_len);
int tcp_progress_ep(struct tcp_ep *ep);

/* tcp_pep.c: passive endpoints */
int tcp_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep, void *context);
void tcp_pep_connreq(struct tcp_pep *pep, struct tcp_conn *conn);
/* fi_endpoint with an FI_CONNREQ's handle: the endpoint takes the
 * connection from its passive endpoint. */
int tcp_pep_claim(fid_t handle, struct tcp_ep *ep);
/* FI_OPT_CM_DATA_SIZE, for passive and active endpoints. */
int tcp_cm_getopt(int level, int optname, void *optval, size_t *optlen);

#endif /* WEFT_TCP_H */
