/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What tcp's endpoint files share (tcp_ep.c, tcp_xp.c); the rest of tcp
 * goes through tcp.h.  The library exports none of these functions (the
 * version script, libfabric.map).
 */
#ifndef WEFT_TCP_EP_PRIV_H
#define WEFT_TCP_EP_PRIV_H

#include "tcp.h"

/* tcp_ep.c: connections */

static inline struct tcp_peer *tcp_peer_of(struct util_peer *peer)
{
	return container_of(peer, struct tcp_peer, peer);
}

static inline struct tcp_domain *ep_domain(struct tcp_ep *ep)
{
	return container_of(util_mr_domain_of(ep->rdm.base.domain),
			    struct tcp_domain, base);
}

/* The peer a connection serves, as the engine knows it. */
static inline struct tcp_peer *conn_tpeer(struct tcp_conn *conn)
{
	return conn->peer;
}

int send_resp(struct tcp_conn *conn, uint8_t op, uint64_t tx_id,
	      uint32_t status, const void *data, size_t len);
int peer_connect(struct tcp_ep *ep, struct tcp_peer *tp);

/*
 * The connection a transmit to peer goes on, if it can take one now:
 * 0 and *out, -FI_EAGAIN while it is being made (started here when there
 * is none), or the error of starting it.
 */
static inline int peer_conn(struct tcp_ep *ep, struct util_peer *peer,
			    struct tcp_conn **out)
{
	struct tcp_peer *tp = tcp_peer_of(peer);
	struct tcp_conn *conn = tp->conn;
	int ret;

	if (weft_likely(conn && conn->state == TCP_CONN_OPEN)) {
		if (weft_likely(dlist_empty(&conn->outq))) {
			*out = conn;
			return 0;
		}
		tcp_conn_flush(conn);
		if (dlist_empty(&conn->outq) && conn->state == TCP_CONN_OPEN) {
			*out = conn;
			return 0;
		}
		return conn->state == TCP_CONN_OPEN ? -FI_EAGAIN :
						      -FI_ECONNRESET;
	}
	*out = NULL; /* (no connection: what follows fails or waits) */
	if (conn)
		return -FI_EAGAIN;
	if (ep->type == FI_EP_MSG)
		return -FI_EAGAIN; /* until fi_connect / fi_accept */
	if (weft_unlikely(tp->refused)) {
		if (weft_coarse_ms() < tp->retry_ms)
			return -tp->refused;
		tp->refused = 0;
	}
	ret = peer_connect(ep, tp);
	return ret ? ret : -FI_EAGAIN;
}

/* tcp_xp.c: the transport's ops */
extern const struct util_rdm_transport tcp_transport;

#endif /* WEFT_TCP_EP_PRIV_H */
