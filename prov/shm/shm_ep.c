/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm endpoint: an RDM engine endpoint whose transport is this file.
 *
 * Protocols (docs/shm-layout.md):
 *  - inline: payloads up to SHM_INLINE_MAX bytes travel in the queue slot;
 *  - bounce: up to bounce_size bytes are copied into one of the receiver's
 *    bounce buffers, which the receiver copies out of and frees (so the
 *    payload outlives its sender);
 *  - CMA: larger messages are announced (RTS) with the sender's iovecs;
 *    the receiver reads them with process_vm_readv once a receive matches,
 *    then acknowledges, which completes the send.
 */
#include "shm.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"
#include "weft/util_atomic.h"
#include "weft/util_iov.h"
#include "shm_queue.h"

static_assert(SHM_IOV_MAX == UTIL_RDM_IOV_MAX,
	      "descriptors carry the engine's iovecs");
static_assert(sizeof(struct shm_rts) <= UTIL_RDM_STASH_MAX,
	      "RTS fits the engine's stash");

/* Most slots handled per progress call, so one busy peer cannot starve
 * the caller. */
#define SHM_PROGRESS_BATCH 64

static pthread_once_t sweep_once = PTHREAD_ONCE_INIT;

/* ---- connections -------------------------------------------------------- */

/*
 * Connections are the engine's peers (util_peer.h), keyed by the address
 * as the AV stores it: "fi_shm://NAME", NUL-padded to SHM_ADDRLEN, on shm's
 * own endpoints; the owner's address form inside another provider's
 * (ep->naming says how names and addresses map).
 */
static inline struct shm_conn *conn_of_peer(struct shm_xp *ep,
					    struct util_peer *peer)
{
	return util_rdm_peer_part(&ep->base, peer);
}

static int shm_peer_init(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_conn *c = conn_of_peer(ep, peer);

	char base[SHM_NAME_MAX];
	int ret;

	c->up = peer;
	c->bell_fd = -1;
	ret = ep->naming->name_of(ep, peer->addr, base);
	return ret ? ret : shm_name_ctx(c->name, base, peer->ctx);
}

static void conn_release(struct shm_conn *c);

static void shm_peer_fini(struct util_rdm_xport *xp, struct util_peer *peer)
{
	conn_release(conn_of_peer(shm_xp_of(xp), peer));
}

/* The connection to context ctx of the endpoint called base, made if new;
 * NULL: no memory. */
static struct shm_conn *conn_get(struct shm_xp *ep, const char *base,
				 uint32_t ctx)
{
	char addr[SHM_ADDRLEN] = { 0 };
	struct util_peer *peer;

	if (ep->naming->addr_of(ep, base, addr) < 0 ||
	    util_peer_add(&ep->base.ep->peers, addr, ctx, &peer))
		return NULL;
	return conn_of_peer(ep, peer);
}

/* ---- bells -------------------------------------------------------------- */

/* The bell of the region called name: a FIFO in /dev/shm, per user. */
static void bell_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "/dev/shm/weft-bell.%u.%s", (unsigned)geteuid(),
		 name);
}

/* Make our bell (after the region, whose name we now hold). */
static void bell_make(struct shm_xp *ep)
{
	char path[SHM_NAME_MAX + 48];
	struct stat st;
	int fd;

	ep->bell_fd = -1;
	bell_path(path, sizeof(path), ep->name);
	unlink(path); /* a bell left by a process that is gone */
	if (mkfifo(path, 0600))
		goto none;
	/* Read and write: opening never waits for a writer, and the FIFO
	 * stays open while we sleep on it. */
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		goto none;
	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		goto none;
	}
	if (ep->wait_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(ep->wait_fd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			unlink(path);
			goto none;
		}
	}
	ep->bell_fd = fd;
	ep->bell_pid = getpid();
	return;
none:
	FI_INFO(&shm_prov, FI_LOG_EP_CTRL,
		"%s: no bell (%s): waits on this endpoint poll\n", ep->name,
		strerror(errno));
}

static void bell_remove(struct shm_xp *ep)
{
	char path[SHM_NAME_MAX + 48];

	if (ep->bell_fd < 0)
		return;
	if (ep->wait_fd >= 0)
		epoll_ctl(ep->wait_fd, EPOLL_CTL_DEL, ep->bell_fd, NULL);
	close(ep->bell_fd);
	ep->bell_fd = -1;
	if (ep->bell_pid != getpid())
		return;
	bell_path(path, sizeof(path), ep->name);
	unlink(path);
}

/* A producer found c's owner asleep: wake it (a byte in its bell). */
static void conn_ring(struct shm_conn *c)
{
	char path[SHM_NAME_MAX + 48];
	struct stat st;
	ssize_t n;

	if (!c->bell_tried) {
		c->bell_tried = true;
		bell_path(path, sizeof(path), c->name);
		c->bell_fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC |
						O_NOFOLLOW);
		if (c->bell_fd >= 0 &&
		    (fstat(c->bell_fd, &st) || !S_ISFIFO(st.st_mode) ||
		     st.st_uid != geteuid())) {
			close(c->bell_fd);
			c->bell_fd = -1;
		}
	}
	if (c->bell_fd < 0)
		return;
	/* A full FIFO has the owner woken already. */
	do
		n = write(c->bell_fd, "", 1);
	while (n < 0 && errno == EINTR);
}

/* Publish a slot in c's queue, ringing its owner if it sleeps. */
static inline void conn_publish(struct shm_conn *c, struct shm_slot *s,
				uint64_t pos)
{
	/* Messages and RMA requests are ordered; answers are not. */
	if (s->op <= SHM_OP_RTS || s->op == SHM_OP_RMA)
		c->order_pos = pos + 1;
	shm_queue_publish(s, pos);
	atomic_store_explicit(c->claim, 0, memory_order_relaxed);
	if (shm_queue_wants_bell(c->map.queue))
		conn_ring(c);
}

/* Unmap c's region and forget its bell. */
static void conn_unmap(struct shm_conn *c)
{
	if (c->bell_tried && c->bell_fd >= 0)
		close(c->bell_fd);
	c->bell_tried = false;
	c->bell_fd = -1;
	shm_mrt_unmap(&c->mrt);
	c->mrt_tried = false;
	c->rma_queued = 0;
	c->order_pos = 0;
	shm_region_unmap(&c->map);
}

/* Whether the holder recorded in a peer entry no longer runs. */
static bool peer_holder_dead(const struct shm_peer *p)
{
	if (kill(p->pid, 0) && errno == ESRCH)
		return true;
	return p->pid_start && shm_pid_start(p->pid) != p->pid_start;
}

static void buf_put(struct shm_map *m, uint32_t idx);

/*
 * Give back the inbound buffer a dead (or replaced) holder of entry p had
 * taken and not handed over; the exchange makes sure only one finder
 * does.
 */
static void buf_mark_reclaim(struct shm_map *m, struct shm_peer *p)
{
	uint32_t b = atomic_exchange_explicit(&p->bounce, 0,
					      memory_order_acq_rel);

	if (b && shm_map_buf_inbound(m, b - 1))
		buf_put(m, b - 1);
}

/*
 * Take entry p for ourselves, if it can be had: a FREE one, or a CLOSED
 * one whose holder's slots have all been consumed.  With `dead_too`, an
 * ACTIVE entry whose holder died is first closed on its behalf (its queued
 * slots still name it), then taken under the same rule.
 */
static bool peer_take(struct shm_queue *q, struct shm_peer *p, bool dead_too,
		      bool *waiting)
{
	uint32_t st = atomic_load_explicit(&p->state, memory_order_acquire);

	if (st == SHM_PEER_ACTIVE && dead_too) {
		if (!peer_holder_dead(p) ||
		    !atomic_compare_exchange_strong(&p->state, &st,
						    SHM_PEER_CLAIMED))
			return false;
		/* The state word has no generation: between the look and the
		 * exchange a live sender may have taken the entry.  Holding
		 * it CLAIMED, its holder is stable: look again. */
		if (!peer_holder_dead(p)) {
			atomic_store_explicit(&p->state, SHM_PEER_ACTIVE,
					      memory_order_release);
			return false;
		}
		p->release_pos =
			atomic_load_explicit(&q->tail, memory_order_acquire);
		atomic_store_explicit(&p->state, SHM_PEER_CLOSED,
				      memory_order_release);
		st = SHM_PEER_CLOSED;
	}
	if (st == SHM_PEER_CLOSED && !shm_queue_consumed(q, p->release_pos)) {
		*waiting = true;
		return false;
	}
	if (st != SHM_PEER_FREE && st != SHM_PEER_CLOSED)
		return false;
	if (!atomic_compare_exchange_strong(&p->state, &st, SHM_PEER_CLAIMED))
		return false;
	/*
	 * Between the look at release_pos and the exchange, another sender
	 * may have taken the entry, sent, and closed it again (CLOSED once
	 * more, with messages still queued that name its generation):
	 * taking it now would make the owner drop them.  Holding it
	 * CLAIMED, release_pos is stable: look again.
	 */
	if (st == SHM_PEER_CLOSED && !shm_queue_consumed(q, p->release_pos)) {
		atomic_store_explicit(&p->state, SHM_PEER_CLOSED,
				      memory_order_release);
		*waiting = true;
		return false;
	}
	/* The owner reads the fields below and then the state and gen again
	 * (rxpeer_of): make CLAIMED visible before the fields change. */
	atomic_thread_fence(memory_order_release);
	return true;
}

/*
 * Claim an entry in the peer's table so that our slots can name us.
 * -FI_EAGAIN while every entry is held but some only by closed senders
 * whose slots are still queued; -FI_ENOSPC when all are in use.
 */
static int conn_claim(struct shm_xp *ep, struct shm_conn *c)
{
	struct shm_peer *peers = c->map.peers, *p;
	struct shm_queue *q = c->map.queue;
	uint32_t i = 0, n = c->map.max_peers, gen;
	bool waiting = false;

	/* Free entries first; those of dead holders (a system call each to
	 * find out) only when there are none. */
	while (i < n && !peer_take(q, &peers[i], false, &waiting))
		i++;
	if (i == n)
		for (i = 0; i < n && !peer_take(q, &peers[i], true, &waiting);)
			i++;
	if (i == n) {
		if (waiting)
			return -FI_EAGAIN;
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: all %u peer entries of %s are taken\n", ep->name,
			n, c->name);
		return -FI_ENOSPC;
	}
	p = &peers[i];
	p->pid = getpid();
	p->pid_start = shm_pid_start(getpid());
	snprintf(p->name, sizeof(p->name), "%s", ep->name);
	gen = (atomic_load_explicit(&p->gen, memory_order_relaxed) + 1) & 0xffff;
	if (!gen)
		gen = 1;
	atomic_store_explicit(&p->gen, gen, memory_order_relaxed);
	atomic_store_explicit(&p->state, SHM_PEER_ACTIVE, memory_order_release);
	atomic_store_explicit(&p->claim, 0, memory_order_relaxed);
	/* A buffer its last holder died holding goes back first. */
	buf_mark_reclaim(&c->map, p);
	c->src_id = i | (gen << 16);
	c->hold = &p->hold;
	c->claim = &p->claim;
	c->bounce = &p->bounce;
	c->claimed = true;
	return 0;
}

/* Map the peer's region (once).  -FI_EAGAIN while it does not exist yet. */
static int conn_map(struct shm_xp *ep, struct shm_conn *c)
{
	int ret;

	if (c->map.hdr)
		return 0;
	ret = shm_region_map(c->name, &c->map);
	if (ret)
		return ret == -FI_ENOENT ? -FI_EAGAIN : ret;
	c->cma = ep->cma && (c->map.hdr->flags & SHM_REGION_CMA);
	return 0;
}

static void conn_died(struct shm_xp *ep, struct shm_conn *c);
static uint64_t coarse_ms(void);

/* How often the owner of a region we send to is looked at (kill(pid, 0)). */
#define SHM_PEER_ALIVE_MS 10
/* How often sends to a dead peer look for a successor under its name. */
#define SHM_PEER_RETRY_MS 100

/*
 * Connect (again): map the region c's name refers to now and claim an
 * entry in it.  A region we mapped before that is no longer its owner's
 * (closed or taken over: `gone`; or its owner died) is dropped first, and
 * what waited on it fails.  A dead peer's name is looked up again at most
 * every SHM_PEER_RETRY_MS, or at once with `now` (a fresh AV insert, a
 * successor that announced itself).  Returns 0; -FI_EAGAIN while a peer
 * we never reached has no region yet or no free entry; -FI_ECONNRESET for
 * a peer that is gone.
 */
static int conn_setup(struct shm_xp *ep, struct shm_conn *c, bool now)
{
	uint64_t t = coarse_ms();
	int ret;

	if (c->map.hdr && (c->dead || c->map.hdr->gone)) {
		now |= !!c->map.hdr->gone; /* a successor may be there */
		if (!c->dead)
			conn_died(ep, c);
		conn_unmap(c);
		c->claimed = false;
	}
	if (c->dead && !now && t - c->retry_ms < SHM_PEER_RETRY_MS)
		return -FI_ECONNRESET;
	c->retry_ms = t;
	ret = conn_map(ep, c);
	if (ret)
		return c->dead ? -FI_ECONNRESET : ret;
	if (atomic_load_explicit(&c->map.hdr->gone, memory_order_acquire) ||
	    !shm_region_owner_alive(c->map.hdr)) {
		/* A region left by a process that is gone. */
		conn_unmap(c);
		c->claimed = false;
		if (!c->dead)
			conn_died(ep, c);
		return -FI_ECONNRESET;
	}
	if (!c->claimed) {
		ret = conn_claim(ep, c);
		if (ret)
			return ret;
	}
	if (c->dead)
		util_rdm_peer_back(c->up);
	c->dead = false;
	c->alive_ms = t;
	return 0;
}

/*
 * Make a connection usable for sending.  A load or two when it is: the
 * region's `gone` flag tells at once that its owner closed or was replaced.
 */
static inline int conn_ready(struct shm_xp *ep, struct shm_conn *c)
{
	if (weft_likely(c->claimed && !c->dead &&
			!atomic_load_explicit(&c->map.hdr->gone,
					      memory_order_relaxed)))
		return 0;
	return conn_setup(ep, c, false);
}

/*
 * Before a send to c: has its owner died?  The owner's robust mutex tells
 * at the cost of one load (shm_layout.h), so nothing is reported sent into
 * the queue of a peer that is dead.  When the hint fires, the owner is
 * looked at (pid and start time); if it turns out alive (only the thread
 * that held the mutex ended), or where there is no hint, it is looked at
 * at most every SHM_PEER_ALIVE_MS.
 */
static inline int conn_alive(struct shm_xp *ep, struct shm_conn *c)
{
	uint64_t t;

	if (weft_likely(!shm_owner_died(c->map.queue)))
		return 0;
	t = coarse_ms();
	if ((c->hint_unreliable || !SHM_OWNER_HINT) &&
	    t - c->alive_ms < SHM_PEER_ALIVE_MS)
		return 0;
	c->alive_ms = t;
	if (shm_region_owner_alive(c->map.hdr)) {
		c->hint_unreliable = true;
		return 0;
	}
	conn_died(ep, c);
	return conn_setup(ep, c, true);
}

/*
 * Hold our queue's owner mutex from now on (robust: the kernel marks it
 * when the holding thread ends, and peers read that).
 */
static int owner_lock(struct shm_xp *ep)
{
	pthread_mutex_t *m = &shm_map_queue(&ep->own)->owner.lock;
	pthread_mutexattr_t a;
	int ret;

	ret = pthread_mutexattr_init(&a);
	if (ret)
		return weft_errno(ret);
	ret = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	if (!ret)
		ret = pthread_mutex_lock(m);
	if (ret)
		return weft_errno(ret);
	ep->owner_thread = pthread_self();
	return 0;
}

/* The thread that held our owner mutex ended, but we live: take it again. */
static void owner_relock(struct shm_xp *ep)
{
	pthread_mutex_t *m = &shm_map_queue(&ep->own)->owner.lock;

	if (pthread_mutex_lock(m) == EOWNERDEAD)
		pthread_mutex_consistent(m);
	ep->owner_thread = pthread_self();
}

/*
 * Unmap our region at close.  The mutex sits on the robust list of the
 * thread holding it: unlock it if that is us; if it is another thread
 * still running, the mapping must outlive that list entry, so only the
 * file is removed.
 */
static void owner_unmap(struct shm_xp *ep)
{
	pthread_mutex_t *m = &shm_map_queue(&ep->own)->owner.lock;

	if (pthread_equal(ep->owner_thread, pthread_self())) {
		pthread_mutex_unlock(m);
	} else if (SHM_OWNER_HINT && !shm_owner_died(shm_map_queue(&ep->own))) {
		shm_unlink(ep->own.path);
		ep->own.hdr = NULL;
		return;
	}
	shm_region_unmap(&ep->own);
}

/*
 * Give our entry in the peer's table up.  Slots we sent may still wait in
 * its queue: the entry stays ours (CLOSED) until they are consumed, so
 * they are still attributed to us; their payloads are in the peer's own
 * region (inline, or in its bounce buffers), so nothing of ours is needed.
 */
static void conn_release(struct shm_conn *c)
{
	if (c->claimed) {
		struct shm_peer *p = shm_map_peer(&c->map, c->src_id & 0xffff);

		p->release_pos = atomic_load_explicit(
			&shm_map_queue(&c->map)->tail, memory_order_acquire);
		atomic_store_explicit(&p->state, SHM_PEER_CLOSED,
				      memory_order_release);
		c->claimed = false;
	}
	conn_unmap(c);
}

/* The connection to a peer, ready to take a message (or an error). */
static int conn_of_peer_ready(struct shm_xp *ep, struct util_peer *peer,
			      struct shm_conn **out)
{
	struct shm_conn *c = conn_of_peer(ep, peer);
	int ret;

	*out = c;
	if (weft_unlikely(peer->fresh)) {
		/* A new insert of this address: if we lost its endpoint,
		 * look for it again now. */
		peer->fresh = false;
		if (c->dead) {
			ret = conn_setup(ep, c, true);
			return ret ? ret : conn_alive(ep, c);
		}
	}
	ret = conn_ready(ep, c);
	return weft_likely(!ret) ? conn_alive(ep, c) : ret;
}

/*
 * Inside another provider's endpoint: is this new peer an endpoint of this
 * host whose region we can send to?  Only while our own region is up (a
 * sender needs one: its entries in the receiver name it, and rendezvous
 * reads come back through it).
 */
static bool shm_reaches(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct shm_xp *ep = shm_xp_of(xp);

	return ep->own.hdr && !conn_setup(ep, conn_of_peer(ep, peer), true);
}

/* ---- peers that die ---------------------------------------------------- */

/* How often peers with transfers in flight are checked for life. */
#define SHM_PEER_CHECK_MS 100

static uint64_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void bufs_out_reclaim(struct shm_xp *ep, struct shm_conn *reader);

/* A peer died: fail everything that waits on it. */
static void conn_died(struct shm_xp *ep, struct shm_conn *c)
{
	struct dlist_entry *e, *tmp;
	struct slist keep;
	struct slist_entry *cur;

	c->dead = true;
	c->rma_queued = 0;
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"%s: peer %s is gone; its transfers fail\n", ep->name,
		c->name);
	/* Answers meant for it must not reach a successor of its name. */
	slist_init(&keep);
	while ((cur = slist_remove_head(&ep->pending))) {
		if (container_of(cur, struct shm_pending, entry)->conn == c)
			free(container_of(cur, struct shm_pending, entry));
		else
			slist_insert_tail(cur, &keep);
	}
	ep->pending = keep;
	dlist_foreach_safe(&ep->pushes, e, tmp) {
		struct shm_push *p = container_of(e, struct shm_push, entry);

		if (p->conn == c) {
			dlist_remove(e);
			util_bufpool_put(ep->push_pool, p);
		}
	}
	dlist_foreach_safe(&ep->chunked, e, tmp) {
		struct shm_rma_chunked *ch =
			container_of(e, struct shm_rma_chunked, entry);

		if (ch->conn == c) {
			dlist_remove(e);
			free(ch);
		}
	}
	dlist_foreach_safe(&ep->pull_list, e, tmp) {
		struct shm_pull *pull = container_of(e, struct shm_pull, entry);

		if (pull->conn == c) {
			dlist_remove(e);
			util_rdm_fetch_done(ep->base.ep, pull->cookie,
					    FI_ECONNRESET);
			util_bufpool_put(ep->pulls, pull);
		}
	}
	bufs_out_reclaim(ep, c);
	util_rdm_fail_peer(ep->base.ep, c->up, FI_ECONNRESET);
}

/* With transfers in flight, look (rarely) for peers that died. */
static void check_peers(struct shm_xp *ep, bool now)
{
	uint64_t t = coarse_ms();
	struct dlist_entry *e;

	if (!now && t - ep->last_check_ms < SHM_PEER_CHECK_MS)
		return;
	ep->last_check_ms = t;
	dlist_foreach(&ep->base.ep->peers.list, e) {
		struct shm_conn *c = conn_of_peer(
			ep, container_of(e, struct util_peer, entry));

		/* A peer we only hear from, or only wait for: watch its
		 * region while receives are directed to someone.  A sender
		 * whose region is no longer there closed, or died and
		 * another process swept what it left, before we looked. */
		if (!c->map.hdr && !c->dead &&
		    util_rdm_rx_directed(ep->base.ep) &&
		    conn_map(ep, c) == -FI_EAGAIN && c->heard) {
			conn_died(ep, c);
			continue;
		}
		if (c->map.hdr && !c->dead &&
		    (c->map.hdr->gone || !shm_region_owner_alive(c->map.hdr)))
			conn_died(ep, c);
	}
}

/* ---- senders as the receiver sees them ---------------------------------- */

/*
 * The sender behind a slot's src: its entry in our peer table, as long as
 * the entry is held under the slot's generation (ACTIVE, or CLOSED with
 * slots still queued).  NULL when it is not: never another holder.
 */
static struct shm_rxpeer *rxpeer_learn(struct shm_xp *ep, uint32_t src);

static inline struct shm_rxpeer *rxpeer_of(struct shm_xp *ep, uint32_t src)
{
	uint32_t idx = src & 0xffff, gen = src >> 16;

	/* An entry never learned has gen 0, which no claim makes. */
	if (weft_likely(gen && idx < ep->own.max_peers &&
			ep->rxpeers[idx].gen == gen))
		return &ep->rxpeers[idx];
	return rxpeer_learn(ep, src);
}

/* rxpeer_of when the cache does not know the slot's generation. */
static struct shm_rxpeer *rxpeer_learn(struct shm_xp *ep, uint32_t src)
{
	uint32_t idx = src & 0xffff, gen = src >> 16, st, ctx;
	struct shm_peer *p = shm_map_peer(&ep->own, idx);
	char name[SHM_NAME_MAX];
	int ret;
	struct shm_rxpeer *rp;

	if (!p || !gen) /* a claim never makes gen 0 */
		return NULL;
	rp = &ep->rxpeers[idx];
	st = atomic_load_explicit(&p->state, memory_order_acquire);
	if ((st != SHM_PEER_ACTIVE && st != SHM_PEER_CLOSED) ||
	    atomic_load_explicit(&p->gen, memory_order_relaxed) != gen ||
	    !shm_peer_name(p, name))
		return NULL;
	/*
	 * A new holder goes through CLAIMED and a new generation before it
	 * rewrites the name: read both again.  The holder closing meanwhile
	 * (ACTIVE to CLOSED) changes neither its name nor its generation,
	 * and is no reason to drop its message: a sender that closes right
	 * after its sends complete is the usual case.
	 */
	atomic_thread_fence(memory_order_acquire);
	st = atomic_load_explicit(&p->state, memory_order_relaxed);
	if ((st != SHM_PEER_ACTIVE && st != SHM_PEER_CLOSED) ||
	    atomic_load_explicit(&p->gen, memory_order_relaxed) != gen)
		return NULL;
	/* A context of a scalable endpoint says that endpoint's name. */
	ctx = shm_name_split(name);
	rp->conn = conn_get(ep, name, ctx);
	if (!rp->conn) {
		rp->gen = 0;
		return NULL;
	}
	rp->conn->heard = true;
	/* A sender of a new generation under the name of a peer we lost:
	 * most likely its successor, so the next send looks for it at once
	 * rather than failing until SHM_PEER_RETRY_MS has passed. */
	if (rp->conn->dead)
		rp->conn->retry_ms = 0;
	rp->gen = gen;
	rp->fi_addr = FI_ADDR_NOTAVAIL;
	ret = ep->naming->addr_of(ep, name, rp->addr);
	if (ret < 0) {
		rp->gen = 0;
		return NULL;
	}
	rp->addr_len = (uint8_t)ret;
	return rp;
}

/* The sender's fi_addr, when matching or completions need it. */
static fi_addr_t rxpeer_addr(struct shm_xp *ep, struct shm_rxpeer *rp)
{
	if (!(ep->base.ep->caps & (FI_SOURCE | FI_DIRECTED_RECV)) || !ep->base.ep->av)
		return FI_ADDR_NOTAVAIL;
	if (rp->fi_addr == FI_ADDR_NOTAVAIL)
		rp->fi_addr = util_av_lookup_addr(ep->base.ep->av, rp->addr);
	return rp->fi_addr;
}

/* ---- peer input ---------------------------------------------------------
 *
 * Slots, the descriptors in them and the regions they point into are
 * written by other processes, which may be broken or hostile.  Every field
 * that locates or sizes memory is checked against what this process
 * checked or chose itself: the geometry of a mapped region (shm_region.h:
 * shm_map_peer, shm_map_bounce_in, shm_peer_name) and, here, the
 * descriptors.  Each check works on a private copy, read once.  A check
 * that fails costs the peer its message or operation (answered with
 * FI_EIO where the peer waits for an answer), never this process.
 */

/*
 * The status a peer reports in an ACK or RMA_RESP (aux): 0, or the
 * positive FI_E* it sent when that is below 65536; anything else, which
 * no weft peer sends, is FI_EIO.  Completions then carry a positive error
 * whatever the peer wrote.
 */
static inline int peer_status(uint32_t aux)
{
	return aux < 65536 ? (int)aux : FI_EIO;
}

/*
 * Whether we may copy with process_vm_readv/writev from or to `pid` for
 * the sender behind c: only with CMA on here, and, when pid is this very
 * process, only for a sender that is one of our own endpoints.  Otherwise
 * any peer could have us read or write our own memory where its request
 * says.
 */
static bool cma_allowed(struct shm_xp *ep, const struct shm_conn *c,
			int32_t pid)
{
	return ep->cma && (pid != weft_pid() || shm_name_held_here(c->name));
}

/* An RTS: its iovecs fit their array and hold the whole message. */
static bool rts_valid(const struct shm_rts *rts)
{
	uint64_t sum = 0;
	uint32_t i;

	if (rts->iov_count > UTIL_RDM_IOV_MAX)
		return false;
	for (i = 0; i < rts->iov_count; i++) {
		if (rts->len[i] > UINT64_MAX - sum)
			return false;
		sum += rts->len[i];
	}
	return sum >= rts->msg_len;
}

/*
 * An RMA request from the sender behind `c`: counts within their arrays, a
 * kind we serve, target ranges that add up to its length, results that fit
 * one of our bounce buffers, and, when it names one, an initiator's bounce
 * buffer holding what we will read (operands, then compare values).
 * Returns 0 and the initiator's buffer in *ib (NULL when none), or -FI_EIO.
 */
static int rma_req_check(struct shm_xp *ep, struct shm_conn *c,
			 const struct shm_rma_req *req, struct shm_bounce **ib)
{
	uint64_t sum = 0, in;
	size_t i;

	*ib = NULL;
	if (req->iov_count > UTIL_RDM_IOV_MAX ||
	    req->rma_count > UTIL_RDM_IOV_MAX ||
	    req->kind < UTIL_RDM_TX_WRITE ||
	    req->kind > UTIL_RDM_TX_COMPARE_ATOMIC)
		return -FI_EIO;
	for (i = 0; i < req->rma_count; i++) {
		if (req->rma[i].len > UINT64_MAX - sum)
			return -FI_EIO;
		sum += req->rma[i].len;
	}
	if (sum != req->len ||
	    (req->reply_bounce && req->len > ep->own.bounce_size))
		return -FI_EIO;
	/* A write without the initiator's bounce buffer is read from its
	 * memory, a read without ours written into it, by CMA. */
	if (((req->kind == UTIL_RDM_TX_WRITE && req->bounce == SHM_NO_BOUNCE) ||
	     (req->kind == UTIL_RDM_TX_READ && !req->reply_bounce)) &&
	    !cma_allowed(ep, c, req->pid))
		return -FI_EIO;
	if (req->bounce == SHM_NO_BOUNCE)
		return 0;
	in = req->len;
	if (req->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
		if (in > UINT64_MAX / 2)
			return -FI_EIO;
		in *= 2;
	}
	if (conn_map(ep, c))
		return -FI_EIO;
	*ib = shm_map_bounce_out(&c->map, req->bounce, in);
	return *ib ? 0 : -FI_EIO;
}

/* ---- sending slots ------------------------------------------------------ */

/* Whether the peer holds our requests back (its entry's `hold`). */
static inline bool conn_held(struct shm_conn *c)
{
	return atomic_load_explicit(c->hold, memory_order_relaxed);
}

/*
 * Claim a slot in c's queue and mark it ours in our peer entry until it
 * is published (conn_publish): should we die in between, the owner skips
 * it instead of waiting for it forever (queue_unstall).
 */
static struct shm_slot *slot_claim(struct shm_conn *c, uint64_t *pos)
{
	struct shm_slot *s;

	/* Marked before the claim: an owner that sees the tail moved sees
	 * the mark too (the claim releases it), so a claimer that dies
	 * between the two is still found (queue_unstall). */
	atomic_store_explicit(c->claim, SHM_CLAIMING, memory_order_relaxed);
	s = shm_queue_claim(c->map.queue, c->map.queue_slots, pos);
	atomic_store_explicit(c->claim, s ? *pos + 1 : 0,
			      memory_order_relaxed);
	return s;
}

/* Send a control slot now, or keep it for the next progress call. */
static int send_ctrl_data(struct shm_xp *ep, struct shm_conn *c, uint16_t op,
		      uint64_t tag, uint32_t aux, uint64_t data, uint32_t len)
{
	struct shm_pending *p;
	struct shm_slot *s;
	uint64_t pos;
	int ret;

	ret = conn_ready(ep, c);
	if (ret == -FI_ECONNRESET)
		return 0; /* nobody to answer any more */
	if (!ret && slist_empty(&ep->pending)) {
		s = slot_claim(c, &pos);
		if (s) {
			s->op = op;
			s->flags = 0;
			s->src = c->src_id;
			s->tag = tag;
			s->aux = aux;
			s->data = data;
			s->len = len;
			conn_publish(c, s, pos);
			return 0;
		}
	}
	p = malloc(sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	p->conn = c;
	p->op = op;
	p->tag = tag;
	p->aux = aux;
	p->data = data;
	p->len = len;
	slist_insert_tail(&p->entry, &ep->pending);
	return 0;
}

static int send_ctrl(struct shm_xp *ep, struct shm_conn *c, uint16_t op,
		     uint64_t tag, uint32_t aux)
{
	return send_ctrl_data(ep, c, op, tag, aux, 0, 0);
}

static void flush_pending(struct shm_xp *ep)
{
	struct shm_pending *p;
	struct shm_slot *s;
	uint64_t pos;
	int ret;

	while (!slist_empty(&ep->pending)) {
		p = container_of(ep->pending.head, struct shm_pending, entry);
		ret = conn_ready(ep, p->conn);
		if (ret == -FI_ECONNRESET) {
			/* conn_died dropped what was queued for the peer */
			if (ep->pending.head == &p->entry) {
				slist_remove_head(&ep->pending);
				free(p);
			}
			continue;
		}
		if (ret)
			return;
		s = slot_claim(p->conn, &pos);
		if (!s)
			return;
		s->op = p->op;
		s->flags = 0;
		s->src = p->conn->src_id;
		s->tag = p->tag;
		s->aux = p->aux;
		s->data = p->data;
		s->len = p->len;
		conn_publish(p->conn, s, pos);
		slist_remove_head(&ep->pending);
		free(p);
	}
}

/*
 * Bounce buffers: a region's pools (shm_layout.h).  An eager message takes
 * one of its receiver's inbound buffers (a small one when it fits, indices
 * from 2 x bounce_count; else one of the large pool, indices below
 * bounce_count; each a stack shared by all who map the region), so the
 * payload lives where it is consumed; pushed data and RMA take one of the
 * sender's own outbound pool (the indices between), in ring order, which
 * the peer gives back once it copied it out.
 */
static int buf_get_in(struct shm_map *m, size_t len, uint32_t *idx)
{
	struct shm_queue *q = shm_map_queue(m);

	if (len <= m->small_size &&
	    !shm_buf_pop(&q->small_free, shm_map_small(m, 0),
			 shm_map_small_stride(m), m->small_count, idx)) {
		*idx += (uint32_t)shm_map_small_first(m);
		return 0;
	}
	return shm_buf_pop(&q->buf_free, shm_map_bounce(m, 0),
			   shm_map_bounce_stride(m), m->bounce_count, idx);
}

/* How often a sender finding c's pool empty looks for buffers its dead
 * senders took. */
#define SHM_RECLAIM_MS 10

/*
 * An inbound buffer of c's pool for a message to c, marked ours in our
 * entry until a published slot hands it over.  When the pool is empty,
 * buffers that senders killed meanwhile had taken are given back (at most
 * every SHM_RECLAIM_MS), and the pool is tried once more.
 */
static int buf_get_in_for(struct shm_xp *ep, struct shm_conn *c, size_t len,
			  uint32_t *idx)
{
	uint64_t t;
	uint32_t i;
	int ret = buf_get_in(&c->map, len, idx);

	if (weft_unlikely(ret)) {
		t = coarse_ms();
		if (t - c->reclaim_ms < SHM_RECLAIM_MS)
			return ret;
		c->reclaim_ms = t;
		for (i = 0; i < c->map.max_peers; i++) {
			struct shm_peer *p = &c->map.peers[i];

			if (atomic_load_explicit(&p->bounce,
						 memory_order_relaxed) &&
			    peer_holder_dead(p))
				buf_mark_reclaim(&c->map, p);
		}
		ret = buf_get_in(&c->map, len, idx);
		if (ret)
			return ret;
	}
	(void)ep;
	atomic_store_explicit(c->bounce, *idx + 1, memory_order_relaxed);
	return 0;
}

/*
 * The next outbound buffer, in ring order.  Readers free them mostly in
 * the order they were filled, so looking at the next one alone (one cache
 * line, which the reader writes) is enough; scanning for another would
 * read many lines other cores are writing.
 */
static int buf_get_out(struct shm_xp *ep, struct shm_conn *reader,
		       uint32_t *idx)
{
	uint32_t n = ep->own.bounce_count, b = ep->out_next;
	struct shm_bounce *bb = shm_map_bounce(&ep->own, n + b);

	if (atomic_load_explicit(&bb->busy, memory_order_acquire))
		return -FI_EAGAIN;
	ep->out_next = b + 1 == n ? 0 : b + 1;
	atomic_store_explicit(&bb->busy, 1, memory_order_relaxed);
	ep->out_reader[b] = reader;
	*idx = n + b;
	return 0;
}

/* A reader that died frees nothing: what it held is ours again. */
static void bufs_out_reclaim(struct shm_xp *ep, struct shm_conn *reader)
{
	uint32_t n = ep->own.bounce_count, b;

	for (b = 0; ep->out_reader && b < n; b++) {
		if (ep->out_reader[b] != reader)
			continue;
		ep->out_reader[b] = NULL;
		atomic_store_explicit(&shm_map_bounce(&ep->own, n + b)->busy,
				      0, memory_order_release);
	}
}

/* Whether idx names a buffer of the region. */
static bool buf_valid(const struct shm_map *m, uint64_t idx)
{
	return idx < 2 * (uint64_t)m->bounce_count;
}

static void buf_put(struct shm_map *m, uint32_t idx)
{
	uint32_t n = m->bounce_count;

	if (idx < n)
		shm_buf_push(&shm_map_queue(m)->buf_free, shm_map_bounce(m, 0),
			     shm_map_bounce_stride(m), idx);
	else if (buf_valid(m, idx))
		atomic_store_explicit(&shm_map_bounce(m, idx)->busy, 0,
				      memory_order_release);
	else if (shm_map_buf_inbound(m, idx))
		shm_buf_push(&shm_map_queue(m)->small_free,
			     shm_map_small(m, 0), shm_map_small_stride(m),
			     idx - (uint32_t)shm_map_small_first(m));
}

static int shm_send_eager(struct util_rdm_xport *xp, struct util_peer *peer,
			  const struct util_rdm_hdr *hdr,
			  const struct iovec *iov, void **desc,
			  size_t iov_count)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_conn *c;
	struct shm_slot *s;
	uint32_t bidx = 0;
	uint64_t pos;
	bool inl;
	int ret;

	(void)desc;
	inl = hdr->len <= SHM_INLINE_MAX -
			     ((hdr->flags & UTIL_RDM_ACK_REQ) ?
				      sizeof(hdr->tx_id) : 0);
	ret = conn_of_peer_ready(ep, peer, &c);
	if (weft_unlikely(ret))
		return ret;
	if (weft_unlikely(conn_held(c)))
		return -FI_EAGAIN; /* the receiver holds us back */
	if (!inl) {
		ret = buf_get_in_for(ep, c, hdr->len, &bidx);
		if (ret)
			return ret;
	}
	s = slot_claim(c, &pos);
	if (weft_unlikely(!s)) {
		if (!inl) {
			atomic_store_explicit(c->bounce, 0,
					      memory_order_relaxed);
			buf_put(&c->map, bidx);
		}
		/* A queue that stays full may belong to a dead peer. */
		check_peers(ep, false);
		return c->dead ? -FI_ECONNRESET : -FI_EAGAIN;
	}
	s->flags = (uint16_t)(hdr->flags |
			      (hdr->op == UTIL_RDM_TAGGED ? SHM_SLOT_TAGGED : 0));
	s->src = c->src_id;
	s->tag = hdr->tag;
	s->data = hdr->data;
	s->len = (uint32_t)hdr->len;
	if (inl) {
		s->op = SHM_OP_INLINE;
		/* A message that waits for its acknowledgement carries the
		 * whole id at the end of the slot. */
		if (hdr->flags & UTIL_RDM_ACK_REQ)
			memcpy(s->payload + SHM_INLINE_MAX - sizeof(hdr->tx_id),
			       &hdr->tx_id, sizeof(hdr->tx_id));
		/* A 0-byte message may name no buffer at all. */
		if (iov_count == 1 && hdr->len)
			memcpy(s->payload, iov[0].iov_base, hdr->len);
		else if (iov_count > 1)
			util_iov_copy_from(s->payload, iov, iov_count, 0, hdr->len);
	} else {
		struct shm_bounce *bb = shm_map_bounce_in(&c->map, bidx,
							  hdr->len);

		s->op = SHM_OP_BOUNCE;
		s->aux = bidx;
		memcpy(s->payload, &hdr->tx_id, sizeof(hdr->tx_id));
		util_iov_copy_from(bb->data, iov, iov_count, 0, hdr->len);
		bb->len = (uint32_t)hdr->len;
		/* The slot hands it over from here on. */
		atomic_store_explicit(c->bounce, 0, memory_order_relaxed);
	}
	conn_publish(c, s, pos);
	return 0;
}

static int shm_send_rndv(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_rts rts = { 0 };
	struct shm_conn *c;
	struct shm_slot *s;
	uint64_t pos;
	size_t i;
	int ret;

	ret = conn_of_peer_ready(ep, tx->peer, &c);
	if (ret)
		return ret;
	if (conn_held(c))
		return -FI_EAGAIN;
	s = slot_claim(c, &pos);
	if (!s)
		return -FI_EAGAIN;
	rts.tx_id = tx->hdr.tx_id;
	rts.msg_len = tx->hdr.len;
	rts.pid = weft_pid();
	rts.push = !c->cma || tx->hdr.len < shm_params.cma_min;
	rts.iov_count = (uint32_t)tx->iov_count;
	for (i = 0; i < tx->iov_count; i++) {
		rts.addr[i] = (uintptr_t)tx->iov[i].iov_base;
		rts.len[i] = tx->iov[i].iov_len;
	}
	s->op = SHM_OP_RTS;
	s->flags = (uint16_t)(tx->hdr.flags | (tx->hdr.op == UTIL_RDM_TAGGED ?
						       SHM_SLOT_TAGGED :
						       0));
	s->src = c->src_id;
	s->tag = tx->hdr.tag;
	s->data = tx->hdr.data;
	/* The RTS carries the whole length: messages may pass 4 GiB. */
	s->len = 0;
	s->aux = 0;
	memcpy(s->payload, &rts, sizeof(rts));
	conn_publish(c, s, pos);
	return 0;
}

static void cma_unavailable(struct shm_xp *ep, int err)
{
	if (ep->cma_warned)
		return;
	ep->cma_warned = true;
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"%s: process_vm_readv/writev %s: large transfers are copied "
		"through shared memory instead\n",
		ep->name, err ? strerror(err) : "is disabled");
}

/* Ask the sender to push the message through its bounce buffers. */
static int fetch_by_push(struct shm_xp *ep, const struct shm_rts *rts,
			 const struct iovec *iov, size_t iov_count, size_t len,
			 void *cookie)
{
	struct shm_rxpeer *rp = rxpeer_of(ep, rts->src);
	struct shm_pull *pull;
	int ret;

	if (!rp)
		return -FI_EIO;
	/* Its sender died after sending it: nobody will push. */
	if (rp->conn->dead)
		return -FI_ECONNRESET;
	pull = util_bufpool_get(ep->pulls);
	if (!pull)
		return -FI_ENOMEM;
	pull->cookie = cookie;
	pull->iov_count = iov_count;
	memcpy(pull->iov, iov, iov_count * sizeof(*iov));
	pull->len = len;
	pull->got = 0;
	pull->tx_id = rts->tx_id;
	pull->src = rts->src;
	pull->conn = rp->conn;
	ret = send_ctrl_data(ep, rp->conn, SHM_OP_CTS, rts->tx_id,
			     (uint32_t)util_bufpool_index(ep->pulls, pull), len,
			     0);
	if (!ret && rp->conn->dead) /* found dead on the way */
		ret = -FI_ECONNRESET;
	if (ret) {
		util_bufpool_put(ep->pulls, pull);
		return ret;
	}
	dlist_insert_tail(&pull->entry, &ep->pull_list);
	return -FI_EINPROGRESS;
}

static int shm_fetch(struct util_rdm_xport *xp, const void *stash,
		     const struct iovec *iov, void **desc, size_t iov_count,
		     size_t len, void *cookie)
{
	struct shm_xp *ep = shm_xp_of(xp);
	const struct shm_rts *rts = stash;
	struct iovec remote[UTIL_RDM_IOV_MAX];
	struct shm_rxpeer *rp;
	size_t i, nremote, left = len, got = 0;
	ssize_t n;
	int err = 0;

	if (rts->push || !ep->cma) {
		if (len)
			return fetch_by_push(ep, rts, iov, iov_count, len,
					     cookie);
		goto ack;
	}
	for (i = 0; i < rts->iov_count && i < UTIL_RDM_IOV_MAX; i++) {
		remote[i].iov_base = (void *)(uintptr_t)rts->addr[i];
		remote[i].iov_len = rts->len[i];
	}
	nremote = i;
	while (left) {
		struct iovec l[UTIL_RDM_IOV_MAX], r[UTIL_RDM_IOV_MAX];
		size_t nl = 0, nr = 0, skip, j;

		/* Describe what is left on both sides. */
		for (skip = got, j = 0; j < iov_count; j++) {
			if (skip >= iov[j].iov_len) {
				skip -= iov[j].iov_len;
				continue;
			}
			l[nl].iov_base = (char *)iov[j].iov_base + skip;
			l[nl++].iov_len = iov[j].iov_len - skip;
			skip = 0;
		}
		for (skip = got, j = 0; j < nremote; j++) {
			if (skip >= remote[j].iov_len) {
				skip -= remote[j].iov_len;
				continue;
			}
			r[nr].iov_base = (char *)remote[j].iov_base + skip;
			r[nr++].iov_len = remote[j].iov_len - skip;
			skip = 0;
		}
		n = process_vm_readv(rts->pid, l, nl, r, nr, 0);
		if (n < 0 && !got && (errno == EPERM || errno == ENOSYS)) {
			/* Denied (seccomp, ptrace rules): copy instead. */
			cma_unavailable(ep, errno);
			ep->cma = false;
			return fetch_by_push(ep, rts, iov, iov_count, len,
					     cookie);
		}
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			FI_WARN(&shm_prov, FI_LOG_EP_DATA,
				"process_vm_readv from pid %d: %s\n", rts->pid,
				strerror(err));
			break;
		}
		got += (size_t)n;
		left = got < len ? len - got : 0;
	}
ack:
	rp = rxpeer_of(ep, rts->src);
	if (rp)
		send_ctrl(ep, rp->conn, SHM_OP_ACK, rts->tx_id,
			  err ? FI_EIO : 0);
	return err ? -FI_EIO : 0;
}

/* Sending side: push what room allows; true when everything was sent. */
static bool push_continue(struct shm_xp *ep, struct shm_push *push)
{
	struct util_rdm_tx *tx = push->tx;

	/* Not while its region is not (or no longer) ours to write. */
	if (!push->conn->claimed || push->conn->dead || !push->conn->map.hdr)
		return false;
	while (push->sent < push->len) {
		size_t chunk = WEFT_MIN(push->len - push->sent,
					shm_params.push_chunk);
		struct shm_bounce *bb;
		struct shm_slot *s;
		uint32_t bidx;
		uint64_t pos;

		if (buf_get_out(ep, push->conn, &bidx))
			return false;
		s = slot_claim(push->conn, &pos);
		if (!s) {
			buf_put(&ep->own, bidx);
			return false;
		}
		bb = shm_map_bounce(&ep->own, bidx);
		util_iov_copy_from(bb->data, tx->iov, tx->iov_count, push->sent,
				   chunk);
		bb->len = (uint32_t)chunk;
		s->op = SHM_OP_DATA;
		s->flags = 0;
		s->src = push->conn->src_id;
		s->tag = push->pull_id;
		s->aux = bidx;
		s->data = push->sent;
		s->len = (uint32_t)chunk;
		conn_publish(push->conn, s, pos);
		push->sent += chunk;
	}
	return true;
}

static int pushes_continue(struct shm_xp *ep)
{
	struct dlist_entry *e, *tmp;
	int n = 0;

	dlist_foreach_safe(&ep->pushes, e, tmp) {
		struct shm_push *push = container_of(e, struct shm_push, entry);

		if (push_continue(ep, push)) {
			dlist_remove(e);
			util_bufpool_put(ep->push_pool, push);
			n++;
		}
	}
	return n;
}

/* The receiver is ready for a pushed message (its tx waits for the ACK). */
static void handle_cts(struct shm_xp *ep, struct shm_slot *s)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(ep->base.ep, s->tag);
	struct shm_rxpeer *rp = rxpeer_of(ep, s->src);
	struct shm_push *push;
	int ret;

	if (!tx || !rp)
		return;
	push = util_bufpool_get(ep->push_pool);
	if (!push) {
		util_rdm_tx_done(ep->base.ep, tx, FI_ENOMEM);
		return;
	}
	push->tx = tx;
	push->conn = rp->conn;
	push->pull_id = s->aux;
	push->len = WEFT_MIN(s->data, tx->hdr.len);
	push->sent = 0;
	ret = conn_ready(ep, push->conn);
	/*
	 * A peer found gone (its region marked gone, or its owner dead) had
	 * its transfers failed by conn_died, tx perhaps among them; nothing
	 * is pushed to it.  Only a peer not ready yet gets the push later.
	 */
	if (ret && (ret != -FI_EAGAIN ||
		    util_rdm_tx_of(ep->base.ep, s->tag) != tx)) {
		util_bufpool_put(ep->push_pool, push);
		return;
	}
	if (ret || !push_continue(ep, push))
		dlist_insert_tail(&push->entry, &ep->pushes);
	else
		util_bufpool_put(ep->push_pool, push);
}

/* Receiving side: pushed bytes arrived. */
static void handle_data(struct shm_xp *ep, struct shm_slot *s)
{
	struct shm_pull *pull = util_bufpool_at(ep->pulls, s->tag);
	struct shm_rxpeer *rp = rxpeer_of(ep, s->src);
	uint64_t off = s->data;
	uint32_t len = s->len;
	struct shm_bounce *bb;
	int err = 0;

	if (!rp || conn_map(ep, rp->conn))
		return;
	if (pull && pull->conn != rp->conn)
		pull = NULL; /* another sender's */
	bb = shm_map_bounce_out(&rp->conn->map, s->aux, len);
	if (!bb || (pull && (off > pull->len || len > pull->len - off))) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: pushed data from %s out of bounds\n", ep->name,
			rp->conn->name);
		err = FI_EIO;
	} else if (pull) {
		util_iov_copy_to(pull->iov, pull->iov_count, off, bb->data,
				 len);
		pull->got += len;
	}
	if (bb)
		buf_put(&rp->conn->map, s->aux);
	if (pull && (err || pull->got == pull->len)) {
		struct shm_conn *c = rp->conn;
		uint64_t tx_id = pull->tx_id;
		void *cookie = pull->cookie;

		/* Done with it before the answer: sending may find the
		 * sender dead, which fails every pull still listed. */
		dlist_remove(&pull->entry);
		util_bufpool_put(ep->pulls, pull);
		util_rdm_fetch_done(ep->base.ep, cookie, err);
		send_ctrl(ep, c, SHM_OP_ACK, tx_id, (uint32_t)err);
	}
}

static void shm_discard(struct util_rdm_xport *xp, const void *stash)
{
	struct shm_xp *ep = shm_xp_of(xp);
	const struct shm_rts *rts = stash;
	struct shm_rxpeer *rp = rxpeer_of(ep, rts->src);

	if (rp)
		send_ctrl(ep, rp->conn, SHM_OP_ACK, rts->tx_id, 0);
}

static int shm_ack(struct util_rdm_xport *xp, void *reply, uint64_t tx_id,
		   int err)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_rxpeer *rp = rxpeer_of(ep, (uint32_t)(uintptr_t)reply);

	if (!rp)
		return -FI_ENOTCONN;
	return send_ctrl(ep, rp->conn, SHM_OP_ACK, tx_id, (uint32_t)err);
}

/* ---- receiving ---------------------------------------------------------- */

/*
 * A message slot from sender rp (NULL: unknown); `copy`, for a held
 * BOUNCE message, is where its payload was moved.  -FI_EAGAIN when the
 * engine cannot take it now: it is held and offered again later (see
 * held_push).
 */
static int handle_msg(struct shm_xp *ep, struct shm_slot *s,
		      struct shm_rxpeer *rp, const void *copy)
{
	struct util_rdm_msg msg = {
		.op = (s->flags & SHM_SLOT_TAGGED) ? UTIL_RDM_TAGGED :
						     UTIL_RDM_MSG,
		.flags = s->flags & (UTIL_RDM_CQ_DATA | UTIL_RDM_ACK_REQ),
		.tag = s->tag,
		.data = s->data,
		.len = s->len,
		.src = FI_ADDR_NOTAVAIL,
		.reply = (void *)(uintptr_t)s->src,
	};
	struct shm_bounce *bb = NULL;
	struct shm_rts rts;
	uint16_t op = s->op;

	if (weft_unlikely(!rp)) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: message from an unknown peer entry %u dropped\n",
			ep->name, s->src & 0xffff);
		return 0;
	}
	msg.src = rxpeer_addr(ep, rp);
	msg.src_raw = rp->addr;
	msg.src_raw_len = rp->addr_len;

	switch (op) {
	case SHM_OP_INLINE:
		msg.payload = s->payload;
		if (msg.flags & UTIL_RDM_ACK_REQ) {
			memcpy(&msg.tx_id,
			       s->payload + SHM_INLINE_MAX - sizeof(msg.tx_id),
			       sizeof(msg.tx_id));
			if (msg.len > SHM_INLINE_MAX - sizeof(msg.tx_id))
				goto refuse;
		}
		if (msg.len > SHM_INLINE_MAX)
			goto refuse;
		break;
	case SHM_OP_BOUNCE:
		memcpy(&msg.tx_id, s->payload, sizeof(msg.tx_id));
		if (copy) {
			msg.payload = copy;
			break;
		}
		/* The sender filled one of our own inbound buffers. */
		bb = shm_map_bounce_in(&ep->own, s->aux, msg.len);
		if (!bb)
			goto refuse;
		msg.payload = bb->data;
		break;
	case SHM_OP_RTS:
		memcpy(&rts, s->payload, sizeof(rts));
		rts.src = s->src;
		msg.stash = &rts;
		msg.stash_len = sizeof(rts);
		msg.tx_id = rts.tx_id;
		msg.len = rts.msg_len;
		if (!rts_valid(&rts))
			goto refuse;
		/* A sender we may not read by CMA pushes. */
		if (!rts.push && !cma_allowed(ep, rp->conn, rts.pid))
			rts.push = 1;
		break;
	}
	if (util_rdm_msg_arrived(&ep->base, &msg) == -FI_EAGAIN)
		return -FI_EAGAIN;
	if (bb)
		buf_put(&ep->own, s->aux);
	return 0;

refuse:
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"%s: message from %s out of bounds dropped\n", ep->name,
		rp->conn->name);
	/* A sender that waits for an answer gets one. */
	if (op == SHM_OP_RTS || (msg.flags & UTIL_RDM_ACK_REQ))
		send_ctrl(ep, rp->conn, SHM_OP_ACK, msg.tx_id, FI_EIO);
	return 0;
}

static int handle_rma(struct shm_xp *ep, struct shm_slot *s,
		      struct shm_rxpeer *rp);
static void handle_rma_resp(struct shm_xp *ep, struct shm_slot *s);
static void handle_cts(struct shm_xp *ep, struct shm_slot *s);
static void handle_data(struct shm_xp *ep, struct shm_slot *s);
static int chunks_continue(struct shm_xp *ep);

/* The key map of the endpoint's domain: its registrations. */
static inline struct util_mr_map *xp_mr_map(struct shm_xp *ep)
{
	return &util_mr_domain_of(ep->base.ep->domain)->mr_map;
}

/*
 * A peer read or wrote our memory itself (rma_direct): it counts, on the
 * endpoint's remote counters and on those bound to the registration it
 * names.  What it says of a length we cannot check, so it brings no
 * completion (remote CQ data comes with a request we serve, whose ranges
 * we check); nor of the range, so a registration counts what its key was
 * named for.
 */
static void rma_event_in(struct shm_xp *ep, const struct shm_slot *s)
{
	struct util_mr_map *map = xp_mr_map(ep);
	uint32_t kind = (uint32_t)(s->data & 0xff);
	enum fi_op op = (enum fi_op)(s->data >> 8 & 0xff);
	struct fi_rma_iov r = { 0, s->len, s->tag };

	if ((s->aux & SHM_EVENT_CQ_DATA) || kind < UTIL_RDM_TX_WRITE ||
	    kind > UTIL_RDM_TX_COMPARE_ATOMIC || op >= WEFT_ATOMIC_OP_COUNT) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: a malformed RMA event dropped\n", ep->name);
		return;
	}
	if (s->aux & SHM_EVENT_EP)
		util_rdm_remote_event(ep->base.ep,
				      kind == UTIL_RDM_TX_READ ?
					      FI_REMOTE_READ :
					      FI_REMOTE_WRITE,
				      s->len, 0);
	if ((s->aux & SHM_EVENT_KEY) && util_mr_map_counting(map))
		util_mr_map_count(map, &r, 1, util_rdm_mr_events(kind, op));
}

/*
 * Answers to what this endpoint sent (acknowledgements, RMA responses, the
 * go-ahead to push, pushed data).  Returns false for any other op.
 */
static bool serve_answer(struct shm_xp *ep, struct shm_slot *s)
{
	switch (s->op) {
	case SHM_OP_ACK:
		util_rdm_tx_acked(ep->base.ep, s->tag, peer_status(s->aux));
		return true;
	case SHM_OP_RMA_RESP:
		handle_rma_resp(ep, s);
		return true;
	case SHM_OP_CTS:
		handle_cts(ep, s);
		return true;
	case SHM_OP_DATA:
		handle_data(ep, s);
		return true;
	case SHM_OP_RMA_EVENT:
		rma_event_in(ep, s);
		return true;
	default:
		return false;
	}
}

/* A message or RMA request from rp; -FI_EAGAIN when it must wait. */
static int serve_request(struct shm_xp *ep, struct shm_slot *s,
			 struct shm_rxpeer *rp, const void *copy)
{
	switch (s->op) {
	case SHM_OP_INLINE:
	case SHM_OP_BOUNCE:
	case SHM_OP_RTS:
		return handle_msg(ep, s, rp, copy);
	case SHM_OP_RMA:
		return handle_rma(ep, s, rp);
	default:
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: unknown slot op %u dropped\n", ep->name, s->op);
		return 0;
	}
}

/*
 * Held requests.  A message or RMA request that cannot be served yet (the
 * engine refuses an unexpected message past its bound; no buffer for RMA
 * results) leaves the queue for a record of ours, with what we know of its
 * sender, and so does every later request of that sender, so its order
 * holds.  The `hold` flag of the sender's peer entry then tells it to send
 * no requests (it gets -FI_EAGAIN) until its held ones are served.  Other
 * senders go on: a message that matches a posted receive is delivered,
 * whoever else waits.  The queue keeps flowing for answers, so our own
 * transfers complete too (the application may need them before it posts
 * the receives that make room).
 *
 * Records come from a pool that grows as needed: they number at most the
 * requests senders had under way when they were held back (each held
 * sender sends no more), and a request left in the queue for want of one
 * would stop the answers behind it.  A held eager message's payload moves out of
 * its bounce buffer into memory sized to it, so that our inbound pool stays
 * free for the senders we do not hold: at most bounce_count such payloads
 * can be under way when we start holding.
 */
static bool held_push(struct shm_xp *ep, const struct shm_slot *s,
		      const struct shm_rxpeer *rp)
{
	uint32_t idx = s->src & 0xffff;
	struct shm_held *h = util_bufpool_get(ep->held_pool);
	struct shm_bounce *bb;

	if (!h)
		return false;
	h->copy = NULL;
	bb = s->op == SHM_OP_BOUNCE ?
		     shm_map_bounce_in(&ep->own, s->aux, s->len) :
		     NULL;
	if (bb) {
		h->copy = malloc(s->len);
		if (!h->copy) {
			util_bufpool_put(ep->held_pool, h);
			return false;
		}
		memcpy(h->copy, bb->data, s->len);
		buf_put(&ep->own, s->aux);
	}
	memcpy(&h->slot, s, sizeof(*s));
	h->rp = *rp;
	dlist_insert_tail(&h->entry, &ep->held_list);
	if (!ep->rxpeers[idx].held++)
		atomic_store_explicit(&ep->own.peers[idx].hold, 1,
				      memory_order_relaxed);
	return true;
}

/* Serve held requests, oldest first, each sender's in its order. */
static int held_serve(struct shm_xp *ep)
{
	struct dlist_entry *e, *tmp;
	uint32_t pass = ++ep->held_pass;
	int n = 0;

	dlist_foreach_safe(&ep->held_list, e, tmp) {
		struct shm_held *h = container_of(e, struct shm_held, entry);
		uint32_t idx = h->slot.src & 0xffff;
		struct shm_rxpeer *rp = &ep->rxpeers[idx];

		if (rp->held_pass == pass)
			continue; /* an older one of this sender waits */
		if (serve_request(ep, &h->slot, &h->rp, h->copy) ==
		    -FI_EAGAIN) {
			rp->held_pass = pass;
			continue;
		}
		free(h->copy);
		dlist_remove(e);
		util_bufpool_put(ep->held_pool, h);
		n++;
		if (!--rp->held)
			atomic_store_explicit(&ep->own.peers[idx].hold,
					      0, memory_order_release);
	}
	return n;
}

/*
 * Whether what a dead peer sent is all offered: it sends nothing more, so
 * once our queue was empty and nothing is held, nothing of it waits.
 */
static bool shm_peer_drained(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct shm_xp *ep = shm_xp_of(xp);

	(void)peer;
	return !ep->own.queue ||
	       (!shm_queue_peek(ep->own.queue, ep->own.queue_slots) &&
		dlist_empty(&ep->held_list));
}

/* How long a claimed slot at our queue's head may stay unpublished
 * before its claimer is looked at. */
#define SHM_STALL_MS 10

/*
 * Our queue's head slot is claimed (tail is past it) but not published:
 * normally a sender between its claim and its publish, for a moment.  A
 * sender killed there would stop the queue for everyone behind it.  When
 * the same head has waited SHM_STALL_MS, the peer entry whose claim mark
 * names it tells who claimed it; if that holder is dead, the slot is
 * published as SHM_OP_SKIP on its behalf.  (A sender that died between
 * its claim and the mark, a few instructions, is not found.)
 */
/* Publish the slot at head, which p's dead holder claimed, as nothing. */
static void skip_dead_claim(struct shm_xp *ep, struct shm_slot *s,
			    uint64_t head, struct shm_peer *p)
{
	FI_WARN(&shm_prov, FI_LOG_EP_DATA,
		"%s: slot %llu was claimed by %.*s, which died before "
		"filling it: skipped\n",
		ep->name, (unsigned long long)head, (int)sizeof(p->name),
		p->name);
	s->op = SHM_OP_SKIP;
	atomic_store_explicit(&p->claim, 0, memory_order_relaxed);
	buf_mark_reclaim(&ep->own, p);
	shm_queue_publish(s, head);
}

static void queue_unstall(struct shm_xp *ep)
{
	struct shm_peer *claiming_dead = NULL;
	bool claiming_alive = false;
	struct shm_queue *q = ep->own.queue;
	uint32_t slots = ep->own.queue_slots, i;
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint64_t t = coarse_ms();
	struct shm_slot *s;

	if (atomic_load_explicit(&q->tail, memory_order_acquire) == head) {
		ep->stall_head = UINT64_MAX;
		return;
	}
	if (ep->stall_head != head) {
		ep->stall_head = head;
		ep->stall_ms = t;
		return;
	}
	if (t - ep->stall_ms < SHM_STALL_MS)
		return;
	ep->stall_ms = t;
	s = &q->slot[head & (slots - 1)];
	if (atomic_load_explicit(&s->seq, memory_order_acquire) == head + 1)
		return;
	/* The claimer is the entry marked with this slot; or, when none is,
	 * one that died marked as claiming, provided no live one is still
	 * between its mark and its claim (it may hold this slot). */
	for (i = 0; i < ep->own.max_peers; i++) {
		struct shm_peer *p = &ep->own.peers[i];
		uint64_t c = atomic_load_explicit(&p->claim,
						  memory_order_acquire);

		if (c == head + 1) {
			if (!peer_holder_dead(p))
				return; /* alive: it will publish */
			skip_dead_claim(ep, s, head, p);
			return;
		}
		if (c == SHM_CLAIMING) {
			if (!peer_holder_dead(p))
				claiming_alive = true;
			else if (!claiming_dead)
				claiming_dead = p;
		}
	}
	if (claiming_dead && !claiming_alive)
		skip_dead_claim(ep, s, head, claiming_dead);
}

static int shm_progress(struct util_rdm_xport *xp)
{
	struct shm_xp *ep = shm_xp_of(xp);
	struct shm_queue *q = ep->own.queue;
	uint32_t slots = ep->own.queue_slots;
	struct shm_rxpeer *rp;
	struct shm_slot *s;
	int n, n_done = 0;

	/* Inside another provider's endpoint whose region could not be
	 * made: nothing comes this way. */
	if (weft_unlikely(!q))
		return 0;
	/* Looking at the clock costs too: only every 256th call. */
	if (weft_unlikely((util_rdm_tx_waiting(xp->ep) ||
			   util_rdm_rx_directed(xp->ep) ||
			   !dlist_empty(&ep->pull_list)) &&
			  !(++ep->progress_calls & 255)))
		check_peers(ep, false);
	if (weft_unlikely(SHM_OWNER_HINT && shm_owner_died(q)))
		owner_relock(ep);
	if (weft_unlikely(!slist_empty(&ep->pending)))
		flush_pending(ep);
	if (weft_unlikely(!dlist_empty(&ep->pushes)))
		n_done = pushes_continue(ep);
	if (weft_unlikely(!dlist_empty(&ep->chunked)))
		n_done += chunks_continue(ep);
	if (weft_unlikely(!dlist_empty(&ep->held_list)))
		n_done += held_serve(ep);
	for (n = 0; n < SHM_PROGRESS_BATCH && (s = shm_queue_peek(q, slots));
	     n++) {
		switch (s->op) {
		case SHM_OP_INLINE:
		case SHM_OP_BOUNCE:
		case SHM_OP_RTS:
		case SHM_OP_RMA:
			rp = rxpeer_of(ep, s->src);
			if (weft_unlikely(rp && rp->held)) {
				/* Behind its sender's held ones. */
				if (!held_push(ep, s, rp))
					goto out;
			} else if (weft_unlikely(serve_request(ep, s, rp,
							       NULL) ==
						 -FI_EAGAIN) &&
				   !held_push(ep, s, rp)) {
				goto out; /* no record: wait in the queue */
			}
			break;
		case SHM_OP_SKIP:
			break;
		default:
			if (!serve_answer(ep, s))
				FI_WARN(&shm_prov, FI_LOG_EP_DATA,
					"%s: unknown slot op %u dropped\n",
					ep->name, s->op);
			break;
		}
		shm_queue_release(q, slots, s);
	}
	/* Nothing to read: now and then, is a dead sender's claim in the
	 * way? */
	if (weft_unlikely(!n && !(++ep->empty_calls & 255)))
		queue_unstall(ep);
out:
	return n + n_done;
}

/* ---- RMA and atomics ---------------------------------------------------- */

/*
 * The pieces of bytes [skip, skip + len) of an operation's remote ranges,
 * into out; returns how many.  *mask gets bit k set when out[k]'s
 * registration counts the operation in this part (util_mr_map_count):
 * out[k] holds the last byte of the operation's last range in that
 * registration.  Empty ranges count nothing: they change and show nothing.
 */
static size_t rma_piece(const struct fi_rma_iov *rma, size_t count, size_t skip,
			size_t len, struct fi_rma_iov *out, uint8_t *mask)
{
	size_t i, j, n = 0;

	*mask = 0;
	for (i = 0; i < count && len; i++) {
		size_t take;

		if (skip >= rma[i].len) {
			skip -= rma[i].len;
			continue;
		}
		take = WEFT_MIN(rma[i].len - skip, len);
		if (take == rma[i].len - skip) {
			/* This part ends range i: count here unless a
			 * later range lies in the same registration. */
			for (j = i + 1; j < count; j++)
				if (rma[j].len && rma[j].key == rma[i].key)
					break;
			if (j == count)
				*mask |= (uint8_t)(1u << n);
		}
		out[n].addr = rma[i].addr + skip;
		out[n].len = take;
		out[n++].key = rma[i].key;
		len -= take;
		skip = 0;
	}
	return n;
}

/*
 * Send the request for bytes [off, off+len) of an RMA or atomic tx.  Data
 * goes through a bounce buffer when the op is an atomic, when it is small,
 * or when the transfer is chunked (no CMA); otherwise the target moves it
 * with process_vm_readv/writev.  `last` marks the part whose completion at
 * the target counts as the operation's remote event.
 */
static int rma_issue(struct shm_xp *ep, struct util_rdm_tx *tx,
		     struct shm_conn *c, size_t off, size_t len, bool chunked,
		     bool last)
{
	bool atomic = tx->kind >= UTIL_RDM_TX_ATOMIC;
	struct shm_rma_req req = { 0 };
	struct iovec piece[UTIL_RDM_IOV_MAX];
	uint32_t bidx = SHM_NO_BOUNCE;
	struct shm_bounce *bb;
	struct shm_slot *s;
	size_t i, n;
	uint64_t pos;

	if (conn_held(c))
		return -FI_EAGAIN;
	if (atomic || (tx->kind == UTIL_RDM_TX_WRITE &&
		       (chunked || len <= shm_params.bounce_size))) {
		if (buf_get_out(ep, c, &bidx))
			return -FI_EAGAIN;
	}
	s = slot_claim(c, &pos);
	if (!s) {
		if (bidx != SHM_NO_BOUNCE)
			buf_put(&ep->own, bidx);
		return -FI_EAGAIN;
	}

	n = util_iov_slice(tx->iov, tx->iov_count, off, len, piece);
	if (bidx != SHM_NO_BOUNCE) {
		bb = shm_map_bounce(&ep->own, bidx);
		util_iov_copy_from(bb->data, piece, n, 0, len);
		if (tx->cmp_count)
			util_iov_copy_from(bb->data + len, tx->cmp_iov,
					   tx->cmp_count, 0, len);
		bb->len = (uint32_t)len;
	}
	req.reply_bounce = tx->kind == UTIL_RDM_TX_FETCH_ATOMIC ||
			   tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC ||
			   (tx->kind == UTIL_RDM_TX_READ && (chunked || !c->cma));
	req.tx_id = tx->hdr.tx_id;
	req.len = len;
	req.pid = weft_pid();
	req.bounce = bidx;
	req.kind = (uint8_t)tx->kind;
	req.iov_count = (uint8_t)n;
	req.rma_count = (uint8_t)rma_piece(tx->rma_iov, tx->rma_count, off,
					   len, req.rma, &req.count);
	req.datatype = (uint8_t)tx->datatype;
	req.op = (uint8_t)tx->atomic_op;
	req.last = last;
	for (i = 0; i < n; i++) {
		req.laddr[i] = (uintptr_t)piece[i].iov_base;
		req.llen[i] = piece[i].iov_len;
	}

	s->op = SHM_OP_RMA;
	s->flags = (uint16_t)(last ? tx->hdr.flags & UTIL_RDM_CQ_DATA : 0);
	s->src = c->src_id;
	s->tag = tx->hdr.tx_id;
	s->data = tx->hdr.data;
	s->len = 0;
	s->aux = 0;
	memcpy(s->payload, &req, sizeof(req));
	conn_publish(c, s, pos);
	c->rma_queued++;
	return 0;
}

/* Issue the next part of a chunked transfer; false if it must wait. */
static bool chunk_issue(struct shm_xp *ep, struct shm_rma_chunked *ch)
{
	size_t total = ch->tx->hdr.len;
	size_t len = WEFT_MIN(total - ch->off, shm_params.bounce_size);

	if (rma_issue(ep, ch->tx, ch->conn, ch->off, len, true,
		      ch->off + len == total))
		return false;
	ch->inflight = len;
	return true;
}

/* ---- one-sided: the initiator moves the data itself --------------------- */

/* The peer's registration table, mapped once per mapping of its region;
 * NULL when it has none (no CMA there, or the table is unusable). */
static struct shm_mrt_map *conn_mrt(struct shm_xp *ep, struct shm_conn *c)
{
	char name[SHM_NAME_MAX];
	int ret;

	if (weft_likely(c->mrt_tried))
		return c->mrt.hdr ? &c->mrt : NULL;
	c->mrt_tried = true;
	memcpy(name, c->map.hdr->mrt, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (!name[0])
		return NULL;
	ret = shm_mrt_map(name, c->map.hdr->pid, &c->mrt);
	if (ret) {
		FI_INFO(&shm_prov, FI_LOG_EP_DATA,
			"%s: registration table of %s unusable (%s): its RMA "
			"goes through its progress\n",
			ep->name, c->name, fi_strerror(-ret));
		return NULL;
	}
	return &c->mrt;
}

/* What the target must grant, as handle_rma checks it. */
static uint64_t rma_access(int kind)
{
	switch (kind) {
	case UTIL_RDM_TX_WRITE:
	case UTIL_RDM_TX_ATOMIC:
		return FI_REMOTE_WRITE;
	case UTIL_RDM_TX_READ:
		return FI_REMOTE_READ;
	default:
		return FI_REMOTE_READ | FI_REMOTE_WRITE;
	}
}

/*
 * A CMA call toward the target moved `n` of `want` bytes: 0, 1 when CMA
 * is refused (fall back to the target's progress; nothing was moved), or
 * -FI_EIO.
 */
static int cma_result(struct shm_xp *ep, struct shm_conn *c, ssize_t n,
		      size_t want)
{
	if (n == (ssize_t)want)
		return 0;
	if (n < 0 && (errno == EPERM || errno == ENOSYS)) {
		cma_unavailable(ep, errno);
		c->cma = false;
		return 1;
	}
	if (n < 0 && errno == ESRCH)
		return 1; /* gone: the queue path finds out and says so */
	return -FI_EIO;
}

/*
 * An atomic on the target's memory `remote` (n ranges, whole elements
 * each), under the target's atomic lock: read the old values, apply, write
 * the new ones back, and hand fetched values to the initiator.
 */
static int atomic_direct(struct shm_xp *ep, struct shm_conn *c,
			 struct shm_mrt_map *m, struct util_rdm_tx *tx,
			 const struct iovec *remote, size_t n)
{
	size_t len = tx->hdr.len, elem = util_atomic_dt_size(tx->datatype);
	bool fetch = tx->kind != UTIL_RDM_TX_ATOMIC;
	uint8_t *buf, *src = NULL, *cmp = NULL, *res = NULL;
	/* Old values, operands, compare values and results: on the stack
	 * for the usual few elements, no allocation per atomic. */
	uint64_t small[4 * 16];
	struct iovec tgt;
	ssize_t got;
	size_t i;
	int ret;

	if (!elem)
		return -FI_EINVAL;
	for (i = 0; i < n; i++)
		if (remote[i].iov_len % elem)
			return -FI_EINVAL;
	buf = 4 * len <= sizeof(small) ? (uint8_t *)small : malloc(4 * len);
	if (!buf)
		return -FI_ENOMEM;
	tgt.iov_base = buf;
	tgt.iov_len = len;
	if (tx->atomic_op != FI_ATOMIC_READ) {
		src = buf + len;
		util_iov_copy_from(src, tx->iov, tx->iov_count, 0, len);
	}
	if (tx->kind == UTIL_RDM_TX_COMPARE_ATOMIC) {
		cmp = buf + 2 * len;
		util_iov_copy_from(cmp, tx->cmp_iov, tx->cmp_count, 0, len);
	}
	if (fetch)
		res = buf + 3 * len;

	ret = shm_mrt_lock(m);
	if (ret) {
		if (buf != (uint8_t *)small)
			free(buf);
		return ret;
	}
	got = process_vm_readv(m->pid, &tgt, 1, remote, n, 0);
	ret = cma_result(ep, c, got, len);
	if (!ret)
		ret = util_rdm_target_atomic(tx->atomic_op, tx->datatype, &tgt,
					     1, src, cmp, res);
	if (!ret && tx->atomic_op != FI_ATOMIC_READ) {
		got = process_vm_writev(m->pid, &tgt, 1, remote, n, 0);
		ret = cma_result(ep, c, got, len);
		if (ret > 0)
			ret = -FI_EIO; /* read but not written: no retry */
	}
	shm_mrt_unlock(m);
	if (!ret && fetch)
		util_iov_copy_to(tx->res_iov, tx->res_count, 0, res, len);
	if (buf != (uint8_t *)small)
		free(buf);
	return ret;
}

/*
 * Tell the target what happened to its memory, after the data is in
 * place: once for its endpoint's remote counters (its region says it
 * counts), and once per registration of the operation whose counters
 * count it (events[i]: what the table said of rma_iov[i]'s, as pinned).
 * Remote CQ data never comes this way (rma_direct).  Out of line: most
 * targets count nothing, and rma_direct does not call it then.
 */
static __attribute__((noinline)) void
rma_direct_event(struct shm_xp *ep, struct shm_conn *c, struct util_rdm_tx *tx,
		 const uint64_t *events)
{
	uint64_t ev = util_rdm_mr_events(tx->kind, tx->atomic_op);
	uint64_t what = SHM_EVENT_KIND(tx->kind, tx->atomic_op);
	uint32_t aux = 0;
	size_t i, j;

	if (c->map.hdr->flags & SHM_REGION_RMA_EVENT)
		aux = SHM_EVENT_EP;
	for (i = 0; i < tx->rma_count; i++) {
		if (!(events[i] & ev) || !tx->rma_iov[i].len)
			continue;
		for (j = 0; j < i; j++)
			if (tx->rma_iov[j].len &&
			    tx->rma_iov[j].key == tx->rma_iov[i].key)
				break;
		if (j < i)
			continue; /* that registration is told already */
		send_ctrl_data(ep, c, SHM_OP_RMA_EVENT, tx->rma_iov[i].key,
			       aux | SHM_EVENT_KEY, what,
			       (uint32_t)WEFT_MIN(tx->hdr.len, UINT32_MAX));
		aux = 0; /* the endpoint counts it once */
	}
	if (aux)
		send_ctrl_data(ep, c, SHM_OP_RMA_EVENT, 0, aux, what,
			       (uint32_t)WEFT_MIN(tx->hdr.len, UINT32_MAX));
}

/*
 * RMA or an atomic without the target's help: look the keys up in its
 * registration table, pin the entries, move the data with
 * process_vm_readv/writev, unpin, and complete.  Returns 0 (done, tx
 * completed, in error or not), or 1 when the target must serve it (no
 * table, key not published, CMA refused, our earlier messages or requests
 * still in its queue).
 */
static int rma_direct(struct shm_xp *ep, struct shm_conn *c,
		      struct util_rdm_tx *tx)
{
	_Atomic int32_t *pin[UTIL_RDM_IOV_MAX];
	struct iovec remote[UTIL_RDM_IOV_MAX];
	uint64_t events[UTIL_RDM_IOV_MAX], counted = 0;
	uint64_t access = rma_access(tx->kind), raddr;
	struct shm_mrt_map *m;
	size_t i, n = 0;
	ssize_t got;
	int ret = 0;

	/* Behind our messages and requests the peer has not served yet, in
	 * its queue, when the endpoint keeps RMA in order (shm.h), or when
	 * the peer holds our requests back.  A write with remote CQ data
	 * goes to the target too: it must look to see the data anyway, and
	 * there it checks the ranges whose length its completion reports,
	 * which an event of ours could only claim. */
	if ((tx->hdr.flags & UTIL_RDM_CQ_DATA) || !c->cma || conn_held(c) ||
	    (ep->rma_order &&
	     (c->rma_queued ||
	      !shm_queue_consumed(c->map.queue, c->order_pos))) ||
	    !(m = conn_mrt(ep, c)))
		return 1;
	for (i = 0; i < tx->rma_count; i++) {
		ret = shm_mrt_pin(m, tx->rma_iov[i].key, tx->rma_iov[i].addr,
				  tx->rma_iov[i].len, access, &raddr, &pin[n],
				  &events[n]);
		if (ret)
			break;
		counted |= events[n];
		remote[n].iov_base = (void *)(uintptr_t)raddr;
		remote[n++].iov_len = tx->rma_iov[i].len;
	}
	if (!ret) {
		switch (tx->kind) {
		case UTIL_RDM_TX_WRITE:
			got = process_vm_writev(m->pid, tx->iov, tx->iov_count,
						remote, n, 0);
			ret = cma_result(ep, c, got, tx->hdr.len);
			break;
		case UTIL_RDM_TX_READ:
			got = process_vm_readv(m->pid, tx->iov, tx->iov_count,
					       remote, n, 0);
			ret = cma_result(ep, c, got, tx->hdr.len);
			break;
		default:
			ret = atomic_direct(ep, c, m, tx, remote, n);
			break;
		}
	}
	for (i = 0; i < n; i++)
		shm_mrt_unpin(pin[i]);
	if (ret > 0)
		return 1;
	if (weft_unlikely(counted) ||
	    weft_unlikely(c->map.hdr->flags & SHM_REGION_RMA_EVENT)) {
		if (!ret)
			rma_direct_event(ep, c, tx, events);
	}
	util_rdm_tx_done(ep->base.ep, tx, -ret);
	return 0;
}

static int shm_rma(struct util_rdm_xport *xp, struct util_rdm_tx *tx)
{
	struct shm_xp *ep = shm_xp_of(xp);
	bool atomic = tx->kind >= UTIL_RDM_TX_ATOMIC;
	size_t len = tx->hdr.len;
	struct shm_rma_chunked *ch;
	struct shm_conn *c;
	int ret;

	ret = conn_of_peer_ready(ep, tx->peer, &c);
	if (ret)
		return ret;
	if (atomic && len * (tx->cmp_count ? 2 : 1) > shm_params.bounce_size)
		return -FI_EINVAL;
	if (!rma_direct(ep, c, tx))
		return 0;
	if (atomic)
		return rma_issue(ep, tx, c, 0, len, false, true);
	if (c->cma || len <= shm_params.bounce_size)
		return rma_issue(ep, tx, c, 0, len, false, true);

	/* No CMA: a part per bounce buffer, one at a time. */
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -FI_ENOMEM;
	ch->tx = tx;
	ch->conn = c;
	if (!chunk_issue(ep, ch)) {
		free(ch);
		return -FI_EAGAIN;
	}
	dlist_insert_tail(&ch->entry, &ep->chunked);
	return 0;
}

/* Chunked transfers whose next part found no room: try again. */
static int chunks_continue(struct shm_xp *ep)
{
	struct dlist_entry *e;
	int n = 0;

	dlist_foreach(&ep->chunked, e) {
		struct shm_rma_chunked *ch =
			container_of(e, struct shm_rma_chunked, entry);

		if (!ch->inflight && chunk_issue(ep, ch))
			n++;
	}
	return n;
}

/* Target side: translate the request's remote ranges into local memory. */
static int rma_local(struct shm_xp *ep, const struct shm_rma_req *req,
		     uint64_t access, struct iovec *local, size_t *nlocal)
{
	return util_rdm_target_iov(&util_mr_domain_of(ep->base.ep->domain)->mr_map, req->rma, req->rma_count,
				   access, local, UTIL_RDM_IOV_MAX * 2, nlocal);
}

static ssize_t cma_copy(pid_t pid, const struct iovec *local, size_t nlocal,
			const struct shm_rma_req *req, bool write_remote)
{
	struct iovec remote[UTIL_RDM_IOV_MAX];
	size_t i;

	for (i = 0; i < req->iov_count; i++) {
		remote[i].iov_base = (void *)(uintptr_t)req->laddr[i];
		remote[i].iov_len = req->llen[i];
	}
	/* Either way `local` is ours and `remote` the initiator's. */
	return write_remote ?
		       process_vm_writev(pid, local, nlocal, remote, i, 0) :
		       process_vm_readv(pid, local, nlocal, remote, i, 0);
}

/* A request served: count it on the counters bound to the registrations
 * the initiator marked for this part (shm_rma_req.count). */
static void rma_count_local(struct util_mr_map *map,
			    const struct shm_rma_req *req)
{
	struct fi_rma_iov r[SHM_IOV_MAX];
	size_t i, n = 0;

	for (i = 0; i < req->rma_count; i++)
		if (req->count & (1u << i))
			r[n++] = req->rma[i];
	util_mr_map_count(map, r, n, util_rdm_mr_events(req->kind, req->op));
}

/*
 * Serve one request.  Returns -FI_EAGAIN when it must wait for a free
 * bounce buffer of ours (the slot stays in the queue).
 */
static int handle_rma(struct shm_xp *ep, struct shm_slot *s,
		      struct shm_rxpeer *rp)
{
	struct iovec local[UTIL_RDM_IOV_MAX * 2] = { { 0 } };
	struct shm_bounce *ib = NULL, *tb = NULL;
	struct shm_rma_req req;
	uint32_t tidx = 0;
	uint64_t access, ev;
	size_t nlocal = 0;
	ssize_t n;
	int ret;

	memcpy(&req, s->payload, sizeof(req));
	if (!rp)
		return 0;
	ret = rma_req_check(ep, rp->conn, &req, &ib);
	if (ret) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: RMA request from %s out of bounds refused\n",
			ep->name, rp->conn->name);
		goto reply;
	}
	if (req.reply_bounce) {
		ret = buf_get_out(ep, rp->conn, &tidx);
		if (ret)
			return ret;
		tb = shm_map_bounce(&ep->own, tidx);
	}
	switch (req.kind) {
	case UTIL_RDM_TX_WRITE:
		access = FI_REMOTE_WRITE;
		ev = FI_REMOTE_WRITE;
		break;
	case UTIL_RDM_TX_READ:
		access = FI_REMOTE_READ;
		ev = FI_REMOTE_READ;
		break;
	case UTIL_RDM_TX_ATOMIC:
		access = FI_REMOTE_WRITE;
		ev = FI_REMOTE_WRITE;
		break;
	default:
		access = FI_REMOTE_READ | FI_REMOTE_WRITE;
		ev = FI_REMOTE_WRITE;
		break;
	}
	ret = rma_local(ep, &req, access, local, &nlocal);
	if (ret)
		goto reply;

	switch (req.kind) {
	case UTIL_RDM_TX_WRITE:
		if (ib) {
			util_iov_copy_to(local, nlocal, 0, ib->data, req.len);
		} else {
			n = cma_copy(req.pid, local, nlocal, &req, false);
			ret = n == (ssize_t)req.len ? 0 : -FI_EIO;
		}
		break;
	case UTIL_RDM_TX_READ:
		if (tb) {
			util_iov_copy_from(tb->data, local, nlocal, 0, req.len);
		} else {
			n = cma_copy(req.pid, local, nlocal, &req, true);
			ret = n == (ssize_t)req.len ? 0 : -FI_EIO;
		}
		break;
	default:
		ret = util_mr_map_atomic_lock(
			&util_mr_domain_of(ep->base.ep->domain)->mr_map);
		if (ret)
			break;
		ret = util_rdm_target_atomic(req.op, req.datatype, local, nlocal,
				       ib && req.op != FI_ATOMIC_READ ?
					       ib->data :
					       NULL,
				       ib && req.kind ==
						       UTIL_RDM_TX_COMPARE_ATOMIC ?
					       ib->data + req.len :
					       NULL,
				       tb ? tb->data : NULL);
		util_mr_map_atomic_unlock(
			&util_mr_domain_of(ep->base.ep->domain)->mr_map);
		break;
	}
	if (!ret && req.count && util_mr_map_counting(xp_mr_map(ep)))
		rma_count_local(xp_mr_map(ep), &req);
	/* Remote CQ data comes with writes alone (fi_rma(3)), as in tcp. */
	if (!ret && req.last)
		util_rdm_remote_event(ep->base.ep,
				      ev | ((s->flags & UTIL_RDM_CQ_DATA) &&
							    req.kind ==
								    UTIL_RDM_TX_WRITE ?
						    FI_REMOTE_CQ_DATA :
						    0),
				      req.len, s->data);
reply:
	if (ib)
		buf_put(&rp->conn->map, req.bounce);
	if (tb && ret)
		buf_put(&ep->own, tidx);
	else if (tb)
		tb->len = (uint32_t)req.len;
	send_ctrl_data(ep, rp->conn, SHM_OP_RMA_RESP, req.tx_id,
		       ret ? (uint32_t)-ret : 0, tb && !ret ? tidx + 1 : 0,
		       (uint32_t)req.len);
	return 0;
}

static struct shm_rma_chunked *chunk_of(struct shm_xp *ep,
					 struct util_rdm_tx *tx)
{
	struct dlist_entry *e;

	dlist_foreach(&ep->chunked, e) {
		struct shm_rma_chunked *ch =
			container_of(e, struct shm_rma_chunked, entry);

		if (ch->tx == tx)
			return ch;
	}
	return NULL;
}

/* Initiator side: the target answered (for the whole op or one part). */
static void handle_rma_resp(struct shm_xp *ep, struct shm_slot *s)
{
	struct util_rdm_tx *tx = util_rdm_tx_of(ep->base.ep, s->tag);
	struct shm_rxpeer *rp = rxpeer_of(ep, s->src);
	struct shm_rma_chunked *ch = NULL;
	struct shm_bounce *tb = NULL;
	uint64_t bidx = s->data;
	uint32_t err = (uint32_t)peer_status(s->aux);
	size_t off = 0, len = 0;

	if (tx) {
		struct shm_conn *tc = conn_of_peer(ep, tx->peer);

		if (tc->rma_queued)
			tc->rma_queued--;
		ch = chunk_of(ep, tx);
	}
	if (ch) {
		off = ch->off;
		len = ch->inflight;
	} else if (tx) {
		len = tx->hdr.len;
	}
	if (bidx && rp && !conn_map(ep, rp->conn))
		tb = shm_map_bounce_out(&rp->conn->map, bidx - 1, len);
	if (bidx && !tb && !err) {
		FI_WARN(&shm_prov, FI_LOG_EP_DATA,
			"%s: RMA answer names a bounce buffer out of bounds\n",
			ep->name);
		err = FI_EIO;
	}
	if (tx && tb && !err) {
		if (tx->kind == UTIL_RDM_TX_READ) {
			util_iov_copy_to(tx->iov, tx->iov_count, off, tb->data,
					 len);
		} else {
			util_iov_copy_to(tx->res_iov, tx->res_count, 0,
					 tb->data, len);
		}
	}
	if (tb)
		buf_put(&rp->conn->map, (uint32_t)(s->data - 1));
	if (!tx)
		return;
	if (ch) {
		ch->off += ch->inflight;
		ch->inflight = 0;
		if (!err && ch->off < tx->hdr.len) {
			chunk_issue(ep, ch);
			return;
		}
		dlist_remove(&ch->entry);
		free(ch);
	}
	util_rdm_tx_done(ep->base.ep, tx, (int)err);
}

/* Sleeping: the bell wakes us when a slot arrives. */
static int shm_wait_fd(struct util_rdm_xport *xp)
{
	return shm_xp_of(xp)->wait_fd;
}

/*
 * About to sleep: empty the bell, and say so in the queue, unless a slot
 * came meanwhile or work of ours needs polling (transfers under way, whose
 * peers may die; slots, or transmits the engine queued, that found a
 * queue full: nobody rings us when it has room again; requests held
 * back).
 */
static int shm_arm(struct util_rdm_xport *xp)
{
	struct shm_xp *ep = shm_xp_of(xp);
	char buf[64];

	if (!ep->own.queue)
		return 0; /* no region: nothing comes this way */
	if (ep->bell_fd < 0)
		return 1; /* no bell to wake us: poll */
	while (read(ep->bell_fd, buf, sizeof(buf)) > 0)
		;
	if (util_rdm_tx_waiting(xp->ep) || !dlist_empty(&ep->pull_list) ||
	    !slist_empty(&ep->pending) || !dlist_empty(&ep->pushes) ||
	    !dlist_empty(&ep->chunked) || !dlist_empty(&ep->held_list) ||
	    util_rdm_tx_queued(xp->ep, xp))
		return 1;
	return shm_queue_sleep(ep->own.queue) ? 0 : 1;
}

const struct util_rdm_transport shm_transport = {
	.reaches = shm_reaches,
	.peer_drained = shm_peer_drained,
	.wait_fd = shm_wait_fd,
	.arm = shm_arm,
	.peer_size = sizeof(struct shm_conn),
	.peer_init = shm_peer_init,
	.peer_fini = shm_peer_fini,
	.send_eager = shm_send_eager,
	.send_rndv = shm_send_rndv,
	.fetch = shm_fetch,
	.discard = shm_discard,
	.ack = shm_ack,
	.rma = shm_rma,
	.progress = shm_progress,
};

/* ---- fid ops ------------------------------------------------------------ */

static int shm_ep_close(struct fid *fid)
{
	struct shm_ep *sep = container_of(fid, struct shm_ep, rdm.ep_fid.fid);

	/* Injects its peers could not take yet still go (util_rdm.h). */
	util_rdm_ep_linger(&sep->rdm);
	shm_xp_closing(&sep->x);
	util_rdm_ep_fini(&sep->rdm);
	shm_xp_fini(&sep->x);
	free(sep);
	return 0;
}

void shm_xp_closing(struct shm_xp *ep)
{
	/* Peers stop sending here, and look for a successor of the name. */
	if (ep->own.hdr)
		atomic_store_explicit(&ep->own.hdr->gone, 1,
				      memory_order_release);
}

static void xp_mrt_put(struct shm_xp *ep);

void shm_xp_fini(struct shm_xp *ep)
{
	struct dlist_entry *e, *tmp;
	struct slist_entry *p;

	dlist_foreach_safe(&ep->pushes, e, tmp) {
		dlist_remove(e);
		util_bufpool_put(ep->push_pool,
				 container_of(e, struct shm_push, entry));
	}
	util_bufpool_destroy(ep->push_pool);
	dlist_foreach_safe(&ep->chunked, e, tmp) {
		dlist_remove(e);
		free(container_of(e, struct shm_rma_chunked, entry));
	}
	util_bufpool_destroy(ep->pulls);
	while ((p = slist_remove_head(&ep->pending)))
		free(container_of(p, struct shm_pending, entry));
	bell_remove(ep);
	if (ep->wait_fd >= 0)
		close(ep->wait_fd);
	ep->wait_fd = -1;
	if (ep->own.hdr)
		owner_unmap(ep);
	xp_mrt_put(ep);
	shm_name_release(ep);
	free(ep->rxpeers);
	free(ep->out_reader);
	if (ep->held_pool) {
		while (!dlist_empty(&ep->held_list)) {
			struct shm_held *h = container_of(ep->held_list.next,
							  struct shm_held,
							  entry);

			dlist_remove(&h->entry);
			free(h->copy);
			util_bufpool_put(ep->held_pool, h);
		}
		util_bufpool_destroy(ep->held_pool);
	}
}

/*
 * Create the endpoint's region under its name, which shm_name_hold made
 * unique in this process.  A drawn name whose file is taken (another
 * user's file, another process's endpoint) draws again; a chosen name
 * taken so is refused.  fi_getname reports the name the region got.
 */
static int region_create_named(struct shm_xp *ep,
			       const struct shm_region_attr *attr)
{
	int ret, tries;

	ret = shm_name_hold(ep);
	if (ret)
		return ret;
	for (tries = 0;; tries++) {
		ret = shm_region_create(ep->name, attr, &ep->own);
		if (ret != -FI_EADDRINUSE || !shm_name_drawn(ep->name) ||
		    ep->name_fixed || tries == 16)
			break;
		ret = shm_name_redraw_held(ep);
		if (ret)
			break;
	}
	if (ret)
		shm_name_release(ep);
	return ret;
}

static int shm_ep_control(struct fid *fid, int command, void *arg)
{
	struct shm_ep *sep = container_of(fid, struct shm_ep, rdm.ep_fid.fid);
	int ret;

	if (command != FI_ENABLE)
		return util_rdm_ep_control(fid, command, arg);
	if (sep->x.own.hdr)
		return 0;
	ret = shm_xp_start(&sep->x);
	if (ret)
		return ret;
	ret = util_rdm_ep_control(fid, command, arg);
	if (ret)
		shm_xp_stop(&sep->x);
	return ret;
}

int shm_xp_start(struct shm_xp *ep)
{
	struct shm_region_attr attr;
	int ret;

	pthread_once(&sweep_once, shm_region_sweep);
	attr.queue_slots = (uint32_t)shm_params.queue_slots;
	attr.max_peers = (uint32_t)shm_params.max_peers;
	attr.bounce_count = (uint32_t)shm_params.bounce_count;
	attr.bounce_size = (uint32_t)shm_params.bounce_size;
	/* As many small buffers as slots: a queue full of injects fits.
	 * Bounce buffers no larger than an inject serve on their own. */
	attr.small_size = (uint32_t)shm_inject_size();
	attr.small_count = shm_params.bounce_size > attr.small_size ?
				   (uint32_t)shm_params.queue_slots :
				   0;
	attr.flags = ep->cma ? SHM_REGION_CMA : 0;
	/* A scalable endpoint's pair starts before its receive context
	 * binds counters: it asks for the events whenever it may. */
	if (ep->base.ep->rem_write_cntr || ep->base.ep->rem_read_cntr ||
	    (ep->base.ep->sep && (ep->base.ep->caps & FI_RMA_EVENT)))
		attr.flags |= SHM_REGION_RMA_EVENT;
	attr.mrt = NULL;
	/* With CMA, peers reach registered memory through the domain's
	 * table; without one they ask us (and still can). */
	if (ep->cma && !ep->mrt &&
	    shm_mrt_get(&util_mr_domain_of(ep->base.ep->domain)->mr_map,
			&ep->mrt))
		ep->mrt = NULL;
	if (ep->mrt)
		attr.mrt = ep->mrt->name;
	/* Kept from an enable that failed: fi_close frees it. */
	if (!ep->rxpeers)
		ep->rxpeers = calloc(attr.max_peers, sizeof(*ep->rxpeers));
	if (!ep->rxpeers)
		return -FI_ENOMEM;
	if (!ep->out_reader)
		ep->out_reader = calloc(attr.bounce_count,
					sizeof(*ep->out_reader));
	if (!ep->out_reader)
		return -FI_ENOMEM;
	if (!ep->held_pool) {
		struct util_bufpool_attr pattr = {
			.name = "shm held",
			.size = sizeof(struct shm_held),
		};

		ret = util_bufpool_create(&pattr, &ep->held_pool);
		if (ret)
			return ret;
	}
	ret = region_create_named(ep, &attr);
	if (ret) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"cannot create the region of %s: %s\n", ep->name,
			fi_strerror(-ret));
		return ret;
	}
	ret = owner_lock(ep);
	if (ret) {
		shm_region_unmap(&ep->own);
		shm_name_release(ep);
		return ret;
	}
	bell_make(ep);
	return 0;
}

static void xp_mrt_put(struct shm_xp *ep)
{
	if (ep->mrt)
		shm_mrt_put(ep->mrt);
	ep->mrt = NULL;
}

void shm_xp_stop(struct shm_xp *ep)
{
	xp_mrt_put(ep);
	bell_remove(ep);
	pthread_mutex_unlock(&ep->own.queue->owner.lock);
	shm_region_unmap(&ep->own);
	shm_name_release(ep);
}

static struct fi_ops shm_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = shm_ep_close,
	.bind = util_rdm_ep_bind,
	.control = shm_ep_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static int shm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct shm_ep *sep = container_of(fid, struct shm_ep, rdm.ep_fid.fid);
	struct shm_xp *ep = &sep->x;
	char buf[SHM_ADDRLEN];
	size_t len;

	if (!addrlen)
		return -FI_EINVAL;
	snprintf(buf, sizeof(buf), SHM_PREFIX "%s", ep->name);
	len = strlen(buf) + 1;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, buf, len);
	*addrlen = len;
	return 0;
}

static int shm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct shm_ep *sep = container_of(fid, struct shm_ep, rdm.ep_fid.fid);
	struct shm_xp *ep = &sep->x;
	char name[SHM_NAME_MAX];

	if (shm_name_from_addr(addr, addrlen, name))
		return -FI_EINVAL;
	if (ep->own.hdr)
		return -FI_EOPBADSTATE; /* the region is named already */
	memcpy(ep->name, name, sizeof(name));
	return 0;
}

static struct fi_ops_cm shm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = shm_setname,
	.getname = shm_getname,
	.getpeer = weft_no_getpeer,
	.connect = weft_no_connect,
	.listen = weft_no_listen,
	.accept = weft_no_accept,
	.reject = weft_no_reject,
	.shutdown = weft_no_shutdown,
	.join = weft_no_join,
};

/* An endpoint named `name` (NULL: src_addr's, else drawn). */
static int ep_make(struct util_domain *domain, const struct fi_info *info,
		   const char *name, struct shm_ep **out, void *context)
{
	struct util_rdm_ep_attr attr = {
		.unexp_inline = SHM_INLINE_MAX,
		.peer_addr_len = SHM_ADDRLEN,
	};
	struct shm_ep *sep;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	shm_params_init();
	attr.unexp_max = shm_params.unexp_max;
	attr.inject_max = shm_inject_size();
	attr.atomic_max = shm_params.bounce_size / 2;

	sep = calloc(1, sizeof(*sep));
	if (!sep)
		return -FI_ENOMEM;
	/* fi_getinfo gave the name in src_addr; without one, draw it.  One
	 * that names no region is refused, never replaced. */
	if (name) {
		snprintf(sep->x.name, sizeof(sep->x.name), "%s", name);
		sep->x.name_fixed = true;
	} else if (info->src_addr && info->src_addrlen) {
		if (shm_name_from_addr(info->src_addr, info->src_addrlen,
				       sep->x.name)) {
			free(sep);
			return -FI_EINVAL;
		}
	} else {
		ret = shm_name_draw(sep->x.name, "");
		if (ret) {
			free(sep);
			return ret;
		}
	}
	ret = shm_xp_init(&sep->x, &shm_own_naming, SHM_ADDRLEN);
	if (ret) {
		free(sep);
		return ret;
	}
	sep->x.rma_order = !info->tx_attr || !info->rx_attr ||
			   ((info->tx_attr->msg_order |
			     info->rx_attr->msg_order) & SHM_ORDER_RMA);
	attr.xport = &sep->x.base;
	ret = util_rdm_ep_init(&sep->rdm, domain, info, &attr, context);
	if (ret) {
		shm_xp_fini(&sep->x);
		free(sep);
		return ret;
	}
	sep->rdm.ep_fid.fid.ops = &shm_ep_fi_ops;
	sep->rdm.ep_fid.cm = &shm_cm_ops;
	*out = sep;
	return 0;
}

int shm_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		struct fid_ep **ep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct shm_ep *sep;
	int ret;

	ret = ep_make(domain, info, NULL, &sep, context);
	if (ret)
		return ret;
	*ep_fid = &sep->rdm.ep_fid;
	return 0;
}

/* ---- scalable endpoints -------------------------------------------------- */

/* One name; context pair i is the endpoint named name#i (shm.h). */
struct shm_sep {
	struct util_rdm_sep sep;
	char name[SHM_NAME_MAX];
};

static struct shm_sep *shm_sep_of(struct util_rdm_sep *sep)
{
	return container_of(sep, struct shm_sep, sep);
}

static int shm_sep_pair_open(struct util_rdm_sep *usep, uint32_t index,
			     struct util_rdm_ep **out)
{
	struct shm_sep *s = shm_sep_of(usep);
	char name[SHM_NAME_MAX];
	struct shm_ep *ep;
	int ret;

	ret = shm_name_ctx(name, s->name, index);
	if (ret)
		return ret;
	ret = ep_make(usep->domain, usep->info, name, &ep, NULL);
	if (ret)
		return ret;
	*out = &ep->rdm;
	return 0;
}

static int shm_sep_getname(struct util_rdm_sep *usep, void *addr,
			   size_t *addrlen)
{
	struct shm_sep *s = shm_sep_of(usep);
	char buf[SHM_ADDRLEN];
	size_t len;

	if (!addrlen)
		return -FI_EINVAL;
	snprintf(buf, sizeof(buf), SHM_PREFIX "%s", s->name);
	len = strlen(buf) + 1;
	if (!addr || *addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, buf, len);
	*addrlen = len;
	return 0;
}

/* Room for every context's suffix after the name. */
static bool sep_name_fits(const char *name)
{
	return strlen(name) + SHM_CTX_SUFFIX_MAX < SHM_NAME_MAX;
}

static int shm_sep_setname(struct util_rdm_sep *usep, const void *addr,
			   size_t addrlen)
{
	struct shm_sep *s = shm_sep_of(usep);
	char name[SHM_NAME_MAX];

	if (shm_name_from_addr(addr, addrlen, name) || !sep_name_fits(name))
		return -FI_EINVAL;
	memcpy(s->name, name, sizeof(name));
	return 0;
}

static void shm_sep_release(struct util_rdm_sep *usep)
{
	free(shm_sep_of(usep));
}

static const struct util_rdm_sep_ops shm_sep_ops = {
	.pair_open = shm_sep_pair_open,
	.getname = shm_sep_getname,
	.setname = shm_sep_setname,
	.release = shm_sep_release,
	.max_ctx = SHM_MAX_CTX,
};

int shm_sep_open(struct fid_domain *domain_fid, struct fi_info *info,
		 struct fid_ep **sep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct shm_sep *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	if (info && info->src_addr && info->src_addrlen) {
		if (shm_name_from_addr(info->src_addr, info->src_addrlen,
				       s->name) ||
		    !sep_name_fits(s->name)) {
			free(s);
			return -FI_EINVAL;
		}
		/* fi_getinfo drew it, and may give the same info to others:
		 * this endpoint's pairs need a name of their own. */
		ret = shm_name_drawn(s->name) ? shm_name_redraw(s->name) : 0;
		if (ret) {
			free(s);
			return ret;
		}
	} else {
		ret = shm_name_draw(s->name, "");
		if (ret) {
			free(s);
			return ret;
		}
	}
	ret = util_rdm_sep_init(&s->sep, domain, info, &shm_sep_ops, sep_fid,
				context);
	if (ret)
		free(s);
	return ret;
}

/* shm's own addresses: "fi_shm://NAME", NUL-padded to SHM_ADDRLEN. */
static int own_name_of(const struct shm_xp *x, const void *addr,
		       char name[SHM_NAME_MAX])
{
	(void)x;
	return shm_name_from_addr(addr, SHM_ADDRLEN, name);
}

static int own_addr_of(const struct shm_xp *x, const char *name, void *addr)
{
	(void)x;
	memset(addr, 0, SHM_ADDRLEN);
	snprintf(addr, SHM_ADDRLEN, SHM_PREFIX "%s", name);
	return (int)strlen(addr) + 1;
}

const struct shm_naming shm_own_naming = {
	.name_of = own_name_of,
	.addr_of = own_addr_of,
};

int shm_xp_init(struct shm_xp *ep, const struct shm_naming *naming,
		size_t addr_len)
{
	int ret;

	shm_params_init();
	ep->base.ops = &shm_transport;
	ep->base.eager_max = shm_params.bounce_size;
	ep->naming = naming;
	ep->addr_len = addr_len;
	ep->bell_fd = -1;
	ep->wait_fd = epoll_create1(EPOLL_CLOEXEC);
	ep->cma = shm_cma_probe();
	ep->rma_order = true; /* another provider's endpoint: its orders */
	slist_init(&ep->pending);
	dlist_init(&ep->pushes);
	dlist_init(&ep->chunked);
	dlist_init(&ep->pull_list);
	dlist_init(&ep->held_list);
	{
		struct util_bufpool_attr pattr = {
			.name = "shm pulls",
			.size = sizeof(struct shm_pull),
		};

		ret = util_bufpool_create(&pattr, &ep->pulls);
		if (ret)
			return ret;
		pattr.name = "shm pushes";
		pattr.size = sizeof(struct shm_push);
		ret = util_bufpool_create(&pattr, &ep->push_pool);
		if (ret) {
			util_bufpool_destroy(ep->pulls);
			ep->pulls = NULL;
			return ret;
		}
	}
	if (!ep->cma)
		cma_unavailable(ep, 0);
	return 0;
}
