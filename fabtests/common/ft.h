/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fabtests common helpers: option parsing, fabric/domain/endpoint setup for
 * MSG, RDM and DGRAM endpoints, an out-of-band TCP side channel, completion
 * waiting with a progress timeout, data fill/verify and the result table.
 *
 * Everything here uses the public OFI API only (the rdma/ headers), so a
 * program built once runs over any libfabric.so.1 the library path selects.
 */
#ifndef FT_H
#define FT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

/* Exit status of a program whose provider lacks what the test needs. */
#define FT_EXIT_NOTSUPP 77

#define FT_MAX_SIZES 64
#define FT_DEFAULT_PORT "9228"
#define FT_TAG 0x5eedULL
/* Buffers of one endpoint never exceed this, the window shrinks instead. */
#define FT_MAX_BUF (64UL << 20)

enum ft_comp {
	FT_COMP_QUEUE,
	FT_COMP_COUNTER,
};

struct ft_opts {
	const char *prov;
	const char *domain;
	const char *fabric;
	const char *src_addr;
	const char *dst_addr;	/* NULL on the server */
	const char *src_port;	/* -B: side-channel port the server listens on */
	const char *dst_port;	/* -P: side-channel port the client connects to */
	enum fi_ep_type ep_type;
	size_t sizes[FT_MAX_SIZES];
	int nsizes;
	bool sweep;		/* -S all (or the default sweep) */
	int iters;
	int warmup;
	int window;
	long inject;		/* -j; -1: the provider's inject_size */
	bool verify;
	bool machine;
	bool delivery;
	enum fi_wait_obj wait_obj;
	enum ft_comp comp;
	const char *op;
	int timeout;		/* seconds without progress before failing */
	int threads;		/* -n: threads, or ranks (ft_prog.ranks) */
};

/* What a program needs: filled by main() before ft_parse(). */
struct ft_prog {
	const char *name;
	const char *summary;
	enum fi_ep_type ep_type;	/* default endpoint type */
	uint64_t caps;
	int iters;			/* default -I */
	int window;			/* default -W */
	const char *sizes;		/* default -S */
	const char *op;			/* default -o */
	const char *ops_help;		/* NULL: the program has no -o */
	bool threads;			/* accepts -n */
	bool ranks;			/* accepts -n: processes (default 3) */
};

/*
 * One endpoint and everything that hangs off it; or one context pair of a
 * scalable endpoint (struct ft_sep), whose transmit context is `ep` and
 * receive context `rx_ep`.
 */
struct ft_ep {
	struct fi_info *info;
	struct fid_ep *ep;	/* transmits go here */
	struct fid_ep *rx_ep;	/* receives: ep itself, or a receive context */
	struct fid_eq *eq;
	struct fid_cq *txcq;
	struct fid_cq *rxcq;
	struct fid_cntr *txcntr;
	struct fid_cntr *rxcntr;
	struct fid_av *av;
	struct fid_mr *mr;
	void *desc;
	char *buf;		/* tx slots, then rx slots */
	size_t buf_size;
	size_t slot_size;
	int nslots;
	fi_addr_t peer;
	uint64_t mr_key;
	/* remote rx slots, for RMA and atomics */
	uint64_t rkey;
	uint64_t raddr;
	/* counts of posted operations and of their completions */
	uint64_t tx_posted;
	uint64_t tx_done;
	uint64_t rx_posted;
	uint64_t rx_done;
	uint64_t tx_cq_seen;	/* counter mode: CQ entries seen */
	uint64_t rx_cq_seen;
	unsigned int tx_idle_reads; /* receive waits that left the tx CQ */
	uint64_t last_cq_data;
	uint64_t tx_seq;		/* sequence number of the next operation */
	bool no_oob;		/* driven by a thread: no side-channel use */
	uint64_t hello_rx;	/* no_oob server: rx_posted of the hello receive */
	struct fi_context2 *tx_ctx;
	struct fi_context2 *rx_ctx;
	int index;		/* tagged transfers carry FT_TAG + index */
	/* A member of a shared endpoint: completions of its operations,
	 * handed over by whichever member read them (ft_share). */
	struct ft_share *share;
	_Atomic uint64_t tx_handed;
	_Atomic uint64_t rx_handed;
};

/*
 * Threads sharing one endpoint (fi_mt_bw -o shared): member 0 is the
 * endpoint itself, members 1 to count - 1 views of it with buffers and
 * contexts of their own; each member's tagged transfers carry a tag of its
 * own, and whichever member reads the endpoint's CQs hands each completion
 * to the member whose context it carries.  Tagged messages on CQs only:
 * no RMA, no counters; members poll (a member asleep in fi_cq_sread would
 * not see what another read for it).
 */
struct ft_share {
	int count;
	struct ft_ep **ep;	/* the members */
	struct ft_ep *views;	/* storage of members 1 to count - 1 */
};

/*
 * A scalable endpoint: one address and `count` pairs of a transmit and a
 * receive context, pair i being ctx[i] with its own CQs (or counters) and
 * buffers, whose peer is the peer's receive context i
 * (fi_rx_addr(peer, i, rx_ctx_bits)).  A program sets ft.sep.count before
 * ft_init to get one in place of ft.ep.
 */
struct ft_sep {
	int count;
	int rx_ctx_bits;
	struct fid_ep *sep;
	struct fid_av *av;
	struct ft_ep *ctx;
};

struct ft_state {
	struct ft_opts opts;
	const struct ft_prog *prog;
	bool server;
	int oob;			/* side-channel socket */
	struct fi_info *hints;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_eq *pep_eq;
	const char *label;		/* prov= of -m lines without a provider */
	size_t max_size;
	size_t inject_size;
	struct ft_ep ep;	/* unused when sep.count is set */
	struct ft_sep sep;
};

extern struct ft_state ft;

/* Print "call: fi_strerror(-ret) (ret)" on stderr. */
#define FT_ERR(call, ret) \
	ft_err("%s:%d: %s: %s (%d)", __func__, __LINE__, (call), \
	       fi_strerror((int)-(ret)), (int)(ret))

void ft_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Options and setup.  ft_parse exits on a usage error. */
void ft_parse(int argc, char **argv, const struct ft_prog *prog);
uint64_t ft_mr_access(uint64_t caps);
/*
 * Side channel, fabric and the first endpoint (ft.ep, or ft.sep when
 * ft.sep.count is set); an FI_ENODATA from
 * fi_getinfo on either side ends both programs with FT_EXIT_NOTSUPP.
 * Returns 0 or a negative error; never hangs longer than -T seconds.
 */
int ft_init(void);
/* Only the side channel (the raw baselines use it as their data socket). */
/* The -T watchdog: a thread, started once per process (ft_oob_open starts
 * it).  A program that forks does so before: threads do not survive
 * fork(), and a child may inherit a lock that another thread held. */
void ft_watchdog_start(void);
int ft_oob_open(void);
/*
 * The buffer slots of an endpoint for ft.max_size and the window: how
 * many (the window, unless FT_MAX_BUF caps it) and each one's size.  A
 * raw benchmark cycles through as many, so that it touches the same
 * memory as the fabric benchmark it is the limit of.
 */
int ft_slots(size_t *slot_size);
/* Whether the provider wants a receive posted for each remote CQ data a
 * write brings (the FI_RX_CQ_DATA mode of the info in use). */
bool ft_rx_cq_data(void);
/* Further endpoints (fi_mt_bw): index >= 1, set up as the first one. */
int ft_ep_setup(struct ft_ep *e, int index);
void ft_ep_close(struct ft_ep *e);
/* ft.sep's scalable endpoint and its context pairs (ft_init calls it). */
int ft_sep_setup(struct ft_sep *s);
void ft_sep_close(struct ft_sep *s);
/* Share base with count - 1 views; ft_share_close before base closes. */
int ft_share_open(struct ft_share *sh, struct ft_ep *base, int count);
void ft_share_close(struct ft_share *sh);
void ft_fini(void);

/* Side channel: whole-message transfers, bounded by -T. */
int ft_oob_send(const void *buf, size_t len);
int ft_oob_recv(void *buf, size_t len);
int ft_sync(void);
/* Wait for the peer's side-channel message while driving progress on e. */
int ft_oob_recv_progress(struct ft_ep *e, void *buf, size_t len);

/* Buffers. */
static inline char *ft_tx_slot(struct ft_ep *e, int i)
{
	return e->buf + (size_t)(i % e->nslots) * e->slot_size;
}

static inline char *ft_rx_slot(struct ft_ep *e, int i)
{
	return e->buf + (size_t)(e->nslots + i % e->nslots) * e->slot_size;
}

static inline uint64_t ft_rx_slot_raddr(struct ft_ep *e, int i)
{
	return e->raddr + (uint64_t)(e->nslots + i % e->nslots) * e->slot_size;
}

void ft_fill(void *buf, size_t len, uint64_t seed);
int ft_check(const void *buf, size_t len, uint64_t seed, const char *what);

/* Posting: retries -FI_EAGAIN while driving progress, bounded by -T. */
int ft_post_recv(struct ft_ep *e, int slot, size_t len, bool tagged);
int ft_post_send(struct ft_ep *e, int slot, size_t len, bool tagged);
int ft_post_rma(struct ft_ep *e, int op, int slot, size_t len, uint64_t data);
/* Read both completion queues (or counters) once; returns < 0 on error. */
int ft_progress(struct ft_ep *e);
/* Wait until tx_done >= tx and rx_done >= rx; fail after -T s idle. */
int ft_wait(struct ft_ep *e, uint64_t tx, uint64_t rx);
static inline int ft_wait_tx(struct ft_ep *e)
{
	return ft_wait(e, e->tx_posted, 0);
}

/* Result table: bytes iters total time MB/sec usec/xfer Mxfers/sec. */
void ft_report_header(const char *first);
void ft_report(const char *name, size_t size, uint64_t iters, double secs,
	       int xfers_per_iter);
double ft_now(void);
/* Tell the watchdog something progressed (-T + 5 s idle ends the run). */
void ft_alive(void);
const char *ft_ep_type_str(enum fi_ep_type type);

/* Iteration count for one size of a sweep: large sizes run fewer times. */
int ft_iters_for(size_t size);

/* Kinds of transfer the pingpong and bandwidth loops drive. */
enum ft_xfer {
	FT_XFER_MSG,
	FT_XFER_TAGGED,
	FT_XFER_WRITE,
	FT_XFER_WRITEDATA,
	FT_XFER_READ,
};

int ft_pingpong(struct ft_ep *e, enum ft_xfer kind, size_t size, int iters,
		double *secs);
/*
 * The loop of the raw pingpongs (no libfabric): count round trips of size
 * bytes through tx and rx, the client sending first, each side's bytes
 * seeded as ft_pingpong seeds them and checked under -v.  send and recv
 * move one message each way and return 0 or -FI_Exxx (having said why).
 */
int ft_raw_pingpong(size_t size, int count, uint64_t base, char *tx,
		    char *rx, int (*send)(const char *buf, size_t len),
		    int (*recv)(char *buf, size_t len));
/*
 * Before the first ft_bandwidth of a no_oob endpoint, while the programs
 * can still meet on the side channel (ft_sync after it): the server posts
 * the receive of the client's first in-band hello.
 */
int ft_bw_prepare(struct ft_ep *e, enum ft_xfer kind);
int ft_bandwidth(struct ft_ep *e, enum ft_xfer kind, size_t size, int iters,
		 double *secs);
/*
 * One size of a raw baseline: `once(size, count, base)` moves count
 * transfers numbered from base.  Runs the warmup, syncs over the side
 * channel when `sync`, then times the iterations; *seq counts transfers
 * across sizes.
 */
int ft_timed(int (*once)(size_t size, int count, uint64_t base), size_t size,
	     int iters, uint64_t *seq, bool sync, double *secs);
/* Run fn for every size of the sweep, printing the table; exit status. */
int ft_run_sizes(int (*fn)(size_t size, int iters, double *secs),
		 int xfers_per_iter);
/* fi_close a fid if set, reporting a failure as `what`. */
void ft_close_fid(struct fid *fid, const char *what);
/* End of main(): close everything, map a result to an exit status. */
int ft_exit(int ret);

#endif /* FT_H */
