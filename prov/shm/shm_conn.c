/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shm connections, the engine's peers: mapping a peer's region and
 * claiming an entry in its peer table, bells, our own queue's owner
 * mutex, peers that die, and the senders as the receiver sees them
 * (struct shm_rxpeer).
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
#include <time.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "shm_ep_priv.h"

/* ---- connections -------------------------------------------------------- */

/*
 * Connections are the engine's peers (util_peer.h), keyed by the address
 * as the AV stores it: "fi_shm://NAME", NUL-padded to SHM_ADDRLEN, on shm's
 * own endpoints; the owner's address form inside another provider's
 * (ep->naming says how names and addresses map).
 */
int shm_peer_init(struct util_rdm_xport *xp, struct util_peer *peer)
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

void shm_peer_fini(struct util_rdm_xport *xp, struct util_peer *peer)
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

	int ret;

	if (ep->naming->addr_of(ep, base, addr) < 0)
		return NULL;
	/* A peer made here sent to us through our region: shm_reaches
	 * takes it without mapping its region (a send maps it, if any). */
	ep->arriving = true;
	ret = util_peer_add(&ep->base.ep->peers, addr, ctx, &peer);
	ep->arriving = false;
	return ret ? NULL : conn_of_peer(ep, peer);
}

/* ---- bells -------------------------------------------------------------- */

/* The bell of the region called name: a FIFO in /dev/shm, per user. */
static void bell_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "/dev/shm/weft-bell.%u.%s", (unsigned)geteuid(),
		 name);
}

/* Make our bell (after the region, whose name we now hold). */
void bell_make(struct shm_xp *ep)
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

void bell_remove(struct shm_xp *ep)
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
void conn_ring(struct shm_conn *c)
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
bool peer_holder_dead(const struct shm_peer *p)
{
	if (kill(p->pid, 0) && errno == ESRCH)
		return true;
	return p->pid_start && shm_pid_start(p->pid) != p->pid_start;
}

/*
 * Give back the inbound buffer a dead (or replaced) holder of entry p had
 * taken and not handed over; the exchange makes sure only one finder
 * does.
 */
void buf_mark_reclaim(struct shm_map *m, struct shm_peer *p)
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
int conn_map(struct shm_xp *ep, struct shm_conn *c)
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
int conn_setup(struct shm_xp *ep, struct shm_conn *c, bool now)
{
	uint64_t t = weft_coarse_ms();
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
	t = weft_coarse_ms();
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
int owner_lock(struct shm_xp *ep)
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
void owner_relock(struct shm_xp *ep)
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
void owner_unmap(struct shm_xp *ep)
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
int conn_of_peer_ready_slow(struct shm_xp *ep, struct util_peer *peer,
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
 * reads come back through it).  A peer first met as a sender in our queue
 * is one (it has a region): it is taken as it is on shm's own endpoints,
 * its region mapped only when something is sent to it, so that a peer
 * that only sends costs no mapping.  Any other is looked for now: mapped,
 * and an entry claimed in its table, or it stays on the network.
 */
bool shm_reaches(struct util_rdm_xport *xp, struct util_peer *peer)
{
	struct shm_xp *ep = shm_xp_of(xp);

	if (!ep->own.hdr)
		return false;
	return ep->arriving || !conn_setup(ep, conn_of_peer(ep, peer), true);
}

/* ---- peers that die ---------------------------------------------------- */

/* How often peers with transfers in flight are checked for life. */
#define SHM_PEER_CHECK_MS 100

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
void check_peers(struct shm_xp *ep, bool now)
{
	uint64_t t = weft_coarse_ms();
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
		 * another process swept what it left, before we looked.
		 * So did any peer a scalable endpoint's receive pair waits
		 * for, as tcp's pairs find a peer that no longer listens;
		 * a plain endpoint waits for a peer that is not there yet. */
		if (!c->map.hdr && !c->dead &&
		    util_rdm_rx_directed(ep->base.ep) &&
		    conn_map(ep, c) == -FI_EAGAIN &&
		    (c->heard || ep->base.ep->sep)) {
			conn_died(ep, c);
			continue;
		}
		if (c->map.hdr && !c->dead &&
		    (c->map.hdr->gone || !shm_region_owner_alive(c->map.hdr)))
			conn_died(ep, c);
	}
}

/* ---- senders as the receiver sees them ---------------------------------- */

/* rxpeer_of when the cache does not know the slot's generation. */
struct shm_rxpeer *rxpeer_learn(struct shm_xp *ep, uint32_t src)
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
