// SPDX-License-Identifier: BSD-2-Clause
/*
 * The pingpong and bandwidth loops shared by the benchmark programs.
 *
 * Both sides run the same number of operations (same options).  Warmup
 * operations run first and are not timed.  Data seeds are the operation's
 * sequence number, so -v checks that every byte landed where it belongs.
 */
#include <stdio.h>
#include <string.h>

#include "ft.h"

#define FT_ACK_LEN 4
/* Seeds of the data the server sends back in a pingpong. */
#define FT_REPLY_SEED(j) ((j) ^ 0x5a5aULL)
/* Seeds of the server's rx slots that the client reads. */
#define FT_READ_SEED(slot) (0xbeefULL + (slot))

static bool ft_is_tagged(enum ft_xfer kind)
{
	return kind == FT_XFER_TAGGED;
}

static int ft_post_xfer(struct ft_ep *e, enum ft_xfer kind, int slot,
			size_t size, uint64_t seq)
{
	switch (kind) {
	case FT_XFER_MSG:
	case FT_XFER_TAGGED:
		return ft_post_send(e, slot, size, ft_is_tagged(kind));
	default:
		return ft_post_rma(e, kind, slot, size, seq);
	}
}

/* Receives this kind of transfer consumes at the target, and their size:
 * messages, and writes with remote CQ data under FI_RX_CQ_DATA. */
static bool ft_takes_recv(enum ft_xfer kind, size_t *size)
{
	if (kind == FT_XFER_MSG || kind == FT_XFER_TAGGED)
		return true;
	if (kind == FT_XFER_WRITEDATA && ft_rx_cq_data()) {
		*size = 0;
		return true;
	}
	return false;
}

static int ft_pp_run(struct ft_ep *e, enum ft_xfer kind, size_t size,
		     int count, uint64_t base)
{
	size_t rsize = size;
	bool msg = ft_takes_recv(kind, &rsize);
	bool verify = ft.opts.verify;
	uint64_t rx0, j;
	int i, ret;

	if (!count)
		return 0;
	if (msg) {
		ret = ft_post_recv(e, 0, rsize, ft_is_tagged(kind));
		if (ret)
			return ret;
	}
	ret = e->no_oob ? 0 : ft_sync();
	if (ret)
		return ret;
	rx0 = e->rx_done;

	for (i = 0; i < count; i++) {
		j = base + i;
		if (!ft.server) {
			if (verify)
				ft_fill(ft_tx_slot(e, 0), size, j);
			ret = ft_post_xfer(e, kind, 0, size, j);
			if (ret)
				return ret;
		}
		ret = ft_wait(e, 0, rx0 + i + 1);
		if (ret)
			return ret;
		if (verify) {
			ret = ft_check(ft_rx_slot(e, 0), size,
				       ft.server ? j : FT_REPLY_SEED(j),
				       ft.server ? "request" : "reply");
			if (ret)
				return ret;
		}
		if (msg && i + 1 < count) {
			ret = ft_post_recv(e, 0, rsize, ft_is_tagged(kind));
			if (ret)
				return ret;
		}
		/* the previous send must be done before its buffer changes */
		ret = ft_wait_tx(e);
		if (ret)
			return ret;
		if (ft.server) {
			if (verify)
				ft_fill(ft_tx_slot(e, 0), size, FT_REPLY_SEED(j));
			ret = ft_post_xfer(e, kind, 0, size, j);
			if (ret)
				return ret;
		}
	}
	return ft_wait_tx(e);
}

int ft_pingpong(struct ft_ep *e, enum ft_xfer kind, size_t size, int iters,
		double *secs)
{
	int warmup = ft.opts.warmup < iters ? ft.opts.warmup : iters;
	double start;
	int ret;

	ret = ft_pp_run(e, kind, size, warmup, e->tx_seq);
	e->tx_seq += warmup;
	if (ret)
		return ret;
	start = ft_now();
	ret = ft_pp_run(e, kind, size, iters, e->tx_seq);
	*secs = ft_now() - start;
	e->tx_seq += iters;
	return ret;
}

int ft_raw_pingpong(size_t size, int count, uint64_t base, char *tx,
		    char *rx, int (*send)(const char *buf, size_t len),
		    int (*recv)(char *buf, size_t len))
{
	uint64_t j;
	int i, ret;

	for (i = 0; i < count; i++) {
		j = base + i;
		if (!ft.server) {
			if (ft.opts.verify)
				ft_fill(tx, size, j);
			ret = send(tx, size);
			if (ret)
				return ret;
		}
		ret = recv(rx, size);
		if (!ret && ft.opts.verify)
			ret = ft_check(rx, size,
				       ft.server ? j : FT_REPLY_SEED(j),
				       ft.server ? "request" : "reply");
		if (ret)
			return ret;
		if (ft.server) {
			if (ft.opts.verify)
				ft_fill(tx, size, FT_REPLY_SEED(j));
			ret = send(tx, size);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* ---- bandwidth ---- */

static bool ft_needs_ack(enum ft_xfer kind)
{
	return kind == FT_XFER_MSG || kind == FT_XFER_TAGGED ||
	       kind == FT_XFER_WRITEDATA;
}

static int ft_post_window_recvs(struct ft_ep *e, enum ft_xfer kind,
				size_t size, int n)
{
	int k, ret;

	if (!ft_takes_recv(kind, &size))
		return 0;
	for (k = 0; k < n; k++) {
		ret = ft_post_recv(e, k, size, ft_is_tagged(kind));
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Without the side channel (an endpoint driven by a thread of its own),
 * the two sides of a bandwidth run meet in band before the data flows:
 *
 *     client                          server
 *                                     (hello receive already posted)
 *     post the ready receive          post the window's receives
 *     send hello        ------->      wait for hello
 *     wait for ready    <-------      send ready
 *     data ...
 *
 * so that no message finds its receive missing (iWARP has no receiver-not-
 * ready retry: such a send breaks the connection), and the side that
 * connected speaks first (iWARP requires it of a new connection).  The
 * server posts the hello receive of its next run before the last ack of
 * the current one, and the first one in ft_bw_prepare, before the programs
 * meet on the side channel.
 */
static int ft_post_hello_recv(struct ft_ep *e, enum ft_xfer kind)
{
	int ret = ft_post_recv(e, 0, FT_ACK_LEN, ft_is_tagged(kind));

	if (!ret)
		e->hello_rx = e->rx_posted;
	return ret;
}

int ft_bw_prepare(struct ft_ep *e, enum ft_xfer kind)
{
	if (!e->no_oob || !ft_needs_ack(kind) || !ft.server)
		return 0;
	return ft_post_hello_recv(e, kind);
}

/* The in-band meeting; the server's window receives are posted. */
static int ft_bw_meet(struct ft_ep *e, enum ft_xfer kind)
{
	bool tagged = ft_is_tagged(kind);
	int ret;

	if (ft.server) {
		if (!e->hello_rx) {
			ft_err("bandwidth run without ft_bw_prepare");
			return -FI_EINVAL;
		}
		ret = ft_wait(e, 0, e->hello_rx);
		e->hello_rx = 0;
		if (!ret)
			ret = ft_wait_tx(e);
		if (!ret)
			ret = ft_post_send(e, 0, FT_ACK_LEN, tagged);
		return ret;
	}
	ret = ft_post_recv(e, 0, FT_ACK_LEN, tagged);
	if (!ret)
		ret = ft_wait_tx(e);
	if (!ret)
		ret = ft_post_send(e, 0, FT_ACK_LEN, tagged);
	if (!ret)
		ret = ft_wait(e, e->tx_posted, e->rx_posted);
	return ret;
}

static int ft_bw_client(struct ft_ep *e, enum ft_xfer kind, size_t size,
			int count, uint64_t base)
{
	bool ack = ft_needs_ack(kind);
	int W = e->nslots, done, n, k, ret;

	for (done = 0; done < count; done += n) {
		n = count - done < W ? count - done : W;
		if (ack) {
			ret = ft_post_recv(e, 0, FT_ACK_LEN, ft_is_tagged(kind));
			if (ret)
				return ret;
		}
		for (k = 0; k < n; k++) {
			if (ft.opts.verify && kind != FT_XFER_READ)
				ft_fill(ft_tx_slot(e, k), size, base + done + k);
			ret = ft_post_xfer(e, kind, k, size, base + done + k);
			if (ret)
				return ret;
		}
		ret = ft_wait(e, e->tx_posted, ack ? e->rx_posted : 0);
		if (ret)
			return ret;
		for (k = 0; kind == FT_XFER_READ && ft.opts.verify && k < n; k++) {
			ret = ft_check(ft_rx_slot(e, k), size, FT_READ_SEED(k),
				       "read data");
			if (ret)
				return ret;
			memset(ft_rx_slot(e, k), 0, size);
		}
	}
	return 0;
}

static int ft_bw_server(struct ft_ep *e, enum ft_xfer kind, size_t size,
			int count, uint64_t base, uint64_t rx0)
{
	int W = e->nslots, done, n, k, ret;
	uint64_t j;

	for (done = 0; done < count; done += n) {
		n = count - done < W ? count - done : W;
		ret = ft_wait(e, 0, rx0 + done + n);
		if (ret)
			return ret;
		for (k = 0; ft.opts.verify && k < n; k++) {
			j = base + done + k;
			ret = ft_check(ft_rx_slot(e, k), size, j, "received data");
			if (ret)
				return ret;
		}
		if (done + n < count) {
			k = count - done - n < W ? count - done - n : W;
			ret = ft_post_window_recvs(e, kind, size, k);
			if (ret)
				return ret;
		}
		ret = ft_wait_tx(e);
		/* The next run's hello may come as soon as the last ack. */
		if (!ret && e->no_oob && done + n == count)
			ret = ft_post_hello_recv(e, kind);
		if (!ret)
			ret = ft_post_send(e, 0, FT_ACK_LEN, ft_is_tagged(kind));
		if (ret)
			return ret;
	}
	return ft_wait_tx(e);
}

/* RMA write: the slot k holds what the last operation aimed at it wrote. */
static int ft_check_written(struct ft_ep *e, size_t size, int count,
			    uint64_t base)
{
	int W = e->nslots, k, last, ret;

	for (k = 0; k < W && k < count; k++) {
		last = k + W * ((count - 1 - k) / W);
		ret = ft_check(ft_rx_slot(e, k), size, base + last,
			       "written data");
		if (ret)
			return ret;
	}
	return 0;
}

static int ft_bw_run(struct ft_ep *e, enum ft_xfer kind, size_t size,
		     int count, uint64_t base)
{
	int W = e->nslots, k, ret;
	uint64_t rx0;
	char done = 'd';

	if (!count)
		return 0;
	if (e->no_oob && !ft_needs_ack(kind)) {
		ft_err("bandwidth of this transfer needs the side channel");
		return -FI_EINVAL;
	}
	/* The data's receives come after the hello's, if any. */
	rx0 = e->no_oob && ft.server ? e->hello_rx : e->rx_done;
	if (ft.server) {
		ret = ft_post_window_recvs(e, kind, size,
					   count < W ? count : W);
		for (k = 0; !ret && kind == FT_XFER_READ && k < W; k++)
			ft_fill(ft_rx_slot(e, k), size, FT_READ_SEED(k));
		if (ret)
			return ret;
	}
	ret = e->no_oob ? ft_bw_meet(e, kind) : ft_sync();
	if (ret)
		return ret;
	if (e->no_oob && !ft.server)
		rx0 = e->rx_done;

	if (!ft.server) {
		ret = ft_bw_client(e, kind, size, count, base);
		if (!ret && !ft_needs_ack(kind))
			ret = ft_oob_send(&done, 1);
		return ret;
	}
	if (ft_needs_ack(kind))
		return ft_bw_server(e, kind, size, count, base, rx0);
	/* write/read: the target only drives progress until the client is done */
	ret = ft_oob_recv_progress(e, &done, 1);
	if (!ret && kind == FT_XFER_WRITE && ft.opts.verify)
		ret = ft_check_written(e, size, count, base);
	return ret;
}

int ft_bandwidth(struct ft_ep *e, enum ft_xfer kind, size_t size, int iters,
		 double *secs)
{
	uint64_t *seq = &e->tx_seq;
	int warmup = ft.opts.warmup < iters ? ft.opts.warmup : iters;
	double start;
	int ret;

	ret = ft_bw_run(e, kind, size, warmup, *seq);
	*seq += warmup;
	if (ret)
		return ret;
	start = ft_now();
	ret = ft_bw_run(e, kind, size, iters, *seq);
	*secs = ft_now() - start;
	*seq += iters;
	return ret;
}

int ft_timed(int (*once)(size_t size, int count, uint64_t base), size_t size,
	     int iters, uint64_t *seq, bool sync, double *secs)
{
	int warmup = ft.opts.warmup < iters ? ft.opts.warmup : iters;
	double start;
	int ret;

	ret = once(size, warmup, *seq);
	*seq += warmup;
	if (!ret && sync)
		ret = ft_sync();
	if (ret)
		return ret;
	start = ft_now();
	ret = once(size, iters, *seq);
	*secs = ft_now() - start;
	*seq += iters;
	return ret;
}
