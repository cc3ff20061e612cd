/* SPDX-License-Identifier: BSD-2-Clause */
/* Wait objects, wait sets and fi_trywait (weft/util_wait.h). */
#include "weft/util_wait.h"
#include "weft/stubs.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

static bool util_wait_has_fds(enum fi_wait_obj wait_obj)
{
	return wait_obj == FI_WAIT_FD || wait_obj == FI_WAIT_POLLFD ||
	       wait_obj == FI_WAIT_MUTEX_COND;
}

uint64_t util_wait_deadline(int timeout_ms)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return weft_now_ns() + (uint64_t)timeout_ms * 1000000ull;
}

int util_wait_remaining(uint64_t deadline_ns)
{
	uint64_t ns;

	if (deadline_ns == UINT64_MAX)
		return -1;
	ns = weft_now_ns();
	if (ns >= deadline_ns)
		return 0;
	/* Round up so that a wait never ends before the deadline. */
	ns = (deadline_ns - ns + 999999ull) / 1000000ull;
	return ns > INT32_MAX ? INT32_MAX : (int)ns;
}

/* Rebuild the pollfd array from the fd list; called with wait->lock held. */
static int util_wait_rebuild_pollfds(struct util_wait *wait)
{
	struct dlist_entry *item;
	struct pollfd *pfds;
	size_t n = wait->signal_fd >= 0 ? 1 : 0;
	size_t i = 0;

	dlist_foreach(&wait->fds, item) n++;
	pfds = calloc(n ? n : 1, sizeof(*pfds));
	if (!pfds)
		return -FI_ENOMEM;
	if (wait->signal_fd >= 0) {
		pfds[i].fd = wait->signal_fd;
		pfds[i].events = POLLIN;
		i++;
	}
	dlist_foreach(&wait->fds, item)
	{
		struct util_wait_fd *wfd =
		    container_of(item, struct util_wait_fd, entry);

		pfds[i].fd = wfd->fd;
		pfds[i].events = (short)wfd->events;
		i++;
	}
	free(wait->pollfds);
	wait->pollfds = pfds;
	wait->npollfds = n;
	wait->change_index++;
	return 0;
}

int util_wait_init(struct util_wait *wait, struct util_fabric *fabric,
		   const struct fi_provider *prov, enum fi_wait_obj wait_obj)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int ret;

	memset(wait, 0, sizeof(*wait));
	switch (wait_obj) {
	case FI_WAIT_UNSPEC:
		wait_obj = FI_WAIT_FD;
		break;
	case FI_WAIT_NONE:
	case FI_WAIT_FD:
	case FI_WAIT_POLLFD:
	case FI_WAIT_YIELD:
	case FI_WAIT_MUTEX_COND:
		break;
	default:
		return -FI_EINVAL;
	}
	wait->wait_obj = wait_obj;
	wait->fabric = fabric;
	wait->prov = prov ? prov : &weft_core_prov;
	wait->signal_fd = -1;
	wait->epoll_fd = -1;
	dlist_init(&wait->fds);
	dlist_init(&wait->members);
	atomic_init(&wait->waiters, 0);
	atomic_init(&wait->fd_drained, false);
	atomic_init(&wait->exported, false);
	atomic_init(&wait->seq, 0);
	atomic_init(&wait->ref, 0);

	ret = pthread_mutex_init(&wait->lock, NULL);
	if (ret)
		return weft_errno(ret);
	ret = pthread_mutex_init(&wait->mutex, NULL);
	if (ret) {
		ret = weft_errno(ret);
		goto err_destroy_lock;
	}
	ret = pthread_cond_init(&wait->cond, NULL);
	if (ret) {
		ret = weft_errno(ret);
		goto err_destroy_mutex;
	}
	if (wait_obj == FI_WAIT_NONE)
		return 0;

	if (util_wait_has_fds(wait_obj)) {
		wait->signal_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (wait->signal_fd < 0) {
			ret = weft_errno(errno);
			goto err_destroy_cond;
		}
		atomic_store(&wait->fd_drained, true);
	}
	/* Every kind but NONE blocks on (or, for YIELD, peeks at) an epoll
	 * set of the signal fd and the fds providers add. */
	wait->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (wait->epoll_fd < 0) {
		ret = weft_errno(errno);
		goto err_close_signal;
	}
	if (wait->signal_fd >= 0) {
		ev.data.ptr = NULL;
		if (epoll_ctl(wait->epoll_fd, EPOLL_CTL_ADD, wait->signal_fd,
			      &ev)) {
			ret = weft_errno(errno);
			goto err_close_epoll;
		}
	}
	ret = util_wait_rebuild_pollfds(wait);
	if (ret)
		goto err_close_epoll;
	return 0;

err_close_epoll:
	close(wait->epoll_fd);
	wait->epoll_fd = -1;
err_close_signal:
	if (wait->signal_fd >= 0)
		close(wait->signal_fd);
	wait->signal_fd = -1;
err_destroy_cond:
	pthread_cond_destroy(&wait->cond);
err_destroy_mutex:
	pthread_mutex_destroy(&wait->mutex);
err_destroy_lock:
	pthread_mutex_destroy(&wait->lock);
	return ret;
}

void util_wait_fini(struct util_wait *wait)
{
	struct dlist_entry *item, *tmp;

	dlist_foreach_safe(&wait->fds, item, tmp)
	{
		dlist_remove(item);
		free(container_of(item, struct util_wait_fd, entry));
	}
	free(wait->pollfds);
	wait->pollfds = NULL;
	if (wait->epoll_fd >= 0)
		close(wait->epoll_fd);
	if (wait->signal_fd >= 0)
		close(wait->signal_fd);
	wait->epoll_fd = wait->signal_fd = -1;
	pthread_cond_destroy(&wait->cond);
	pthread_mutex_destroy(&wait->mutex);
	pthread_mutex_destroy(&wait->lock);
}

void util_wait_signal_slow(struct util_wait *wait)
{
	static const uint64_t one = 1;

	atomic_fetch_add_explicit(&wait->seq, 1, memory_order_release);
	if (wait->signal_fd >= 0 &&
	    (atomic_exchange(&wait->fd_drained, false) ||
	     atomic_load_explicit(&wait->waiters, memory_order_relaxed))) {
		/* EAGAIN: the counter is saturated, the fd is readable. */
		if (write(wait->signal_fd, &one, sizeof(one)) < 0 &&
		    errno != EAGAIN)
			FI_WARN(wait->prov, FI_LOG_CORE,
				"wait object signal failed: %d\n", errno);
	}
	if (wait->wait_obj == FI_WAIT_MUTEX_COND &&
	    atomic_load_explicit(&wait->exported, memory_order_relaxed)) {
		pthread_mutex_lock(&wait->mutex);
		pthread_cond_broadcast(&wait->cond);
		pthread_mutex_unlock(&wait->mutex);
	}
}

/*
 * Empty the eventfd, then mark it drained: a producer that sees the mark
 * writes it again.  The order (read first) keeps "not drained" meaning
 * "readable or about to be written", so a signal is never lost.
 */
static void util_wait_drain(struct util_wait *wait)
{
	uint64_t val;

	if (wait->signal_fd < 0)
		return;
	while (read(wait->signal_fd, &val, sizeof(val)) == sizeof(val))
		;
	atomic_store(&wait->fd_drained, true);
}

void util_wait_arm(struct util_wait *wait, unsigned int *ticket)
{
	*ticket = atomic_load_explicit(&wait->seq, memory_order_acquire);
	/* Only the first waiter drains: draining under the feet of a thread
	 * already asleep in poll() would swallow its wake-up. */
	if (atomic_fetch_add(&wait->waiters, 1) == 0)
		util_wait_drain(wait);
	atomic_thread_fence(memory_order_seq_cst);
}

void util_wait_disarm(struct util_wait *wait)
{
	atomic_fetch_sub(&wait->waiters, 1);
}

static int util_wait_block_yield(struct util_wait *wait, unsigned int ticket,
				 int timeout_ms)
{
	uint64_t deadline = util_wait_deadline(timeout_ms);
	struct pollfd pfd = {.fd = wait->epoll_fd, .events = POLLIN};
	bool has_fds = wait->npollfds > 0;

	for (;;) {
		if (atomic_load_explicit(&wait->seq, memory_order_acquire) !=
		    ticket)
			return 0;
		if (has_fds && poll(&pfd, 1, 0) > 0)
			return 0;
		if (!util_wait_remaining(deadline))
			return -FI_ETIMEDOUT;
		sched_yield();
	}
}

int util_wait_block(struct util_wait *wait, unsigned int ticket, int timeout_ms)
{
	struct pollfd pfd = {.fd = wait->epoll_fd, .events = POLLIN};
	int ret;

	if (atomic_load_explicit(&wait->seq, memory_order_acquire) != ticket) {
		ret = 0;
		goto out;
	}
	switch (wait->wait_obj) {
	case FI_WAIT_YIELD:
		ret = util_wait_block_yield(wait, ticket, timeout_ms);
		break;
	case FI_WAIT_FD:
	case FI_WAIT_POLLFD:
	case FI_WAIT_MUTEX_COND:
		ret = poll(&pfd, 1, timeout_ms);
		if (ret > 0)
			ret = 0;
		else if (ret == 0)
			ret = -FI_ETIMEDOUT;
		else
			ret = errno == EINTR ? 0 : weft_errno(errno);
		break;
	default:
		ret = -FI_EINVAL;
		break;
	}
out:
	atomic_fetch_sub(&wait->waiters, 1);
	return ret;
}

int util_wait_add_fd(struct util_wait *wait, int fd, uint32_t events,
		     void *context)
{
	struct epoll_event ev = {.events = events};
	struct util_wait_fd *wfd;
	struct dlist_entry *item;
	int ret;

	if (wait->wait_obj != FI_WAIT_FD && wait->wait_obj != FI_WAIT_POLLFD &&
	    wait->wait_obj != FI_WAIT_YIELD)
		return -FI_ENOSYS;
	wfd = calloc(1, sizeof(*wfd));
	if (!wfd)
		return -FI_ENOMEM;
	wfd->fd = fd;
	wfd->events = events;
	wfd->context = context;
	ev.data.ptr = context;

	pthread_mutex_lock(&wait->lock);
	/* Added again (several endpoints of one domain share its fd): count
	 * it, so that it stays until the last of them deletes it. */
	ret = -FI_EALREADY;
	dlist_foreach(&wait->fds, item)
	{
		struct util_wait_fd *have =
			container_of(item, struct util_wait_fd, entry);

		if (have->fd == fd) {
			have->refs++;
			goto err_unlock;
		}
	}
	wfd->refs = 1;
	if (epoll_ctl(wait->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		ret = weft_errno(errno);
		goto err_unlock;
	}
	dlist_insert_tail(&wfd->entry, &wait->fds);
	ret = util_wait_rebuild_pollfds(wait);
	if (ret)
		goto err_remove;
	pthread_mutex_unlock(&wait->lock);
	/* Wake blocked threads so that they pick up the new fd. */
	util_wait_signal_slow(wait);
	return 0;

err_remove:
	dlist_remove(&wfd->entry);
	epoll_ctl(wait->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
err_unlock:
	pthread_mutex_unlock(&wait->lock);
	free(wfd);
	return ret;
}

int util_wait_del_fd(struct util_wait *wait, int fd)
{
	struct dlist_entry *item;
	struct util_wait_fd *wfd;
	int ret = -FI_ENOENT;

	pthread_mutex_lock(&wait->lock);
	dlist_foreach(&wait->fds, item)
	{
		wfd = container_of(item, struct util_wait_fd, entry);
		if (wfd->fd != fd)
			continue;
		ret = 0;
		if (--wfd->refs)
			break;
		epoll_ctl(wait->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
		dlist_remove(item);
		free(wfd);
		/* On allocation failure the old array stays: a stale fd in
		 * it only causes spurious wake-ups. */
		util_wait_rebuild_pollfds(wait);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&wait->lock);
	return ret;
}

static int util_wait_get_pollfd(struct util_wait *wait,
				struct fi_wait_pollfd *pfd)
{
	int ret = 0;

	pthread_mutex_lock(&wait->lock);
	if (pfd->nfds < wait->npollfds || !pfd->fd) {
		ret = pfd->nfds < wait->npollfds ? -FI_ETOOSMALL : -FI_EINVAL;
	} else {
		memcpy(pfd->fd, wait->pollfds,
		       wait->npollfds * sizeof(*wait->pollfds));
	}
	pfd->nfds = wait->npollfds;
	pfd->change_index = wait->change_index;
	pthread_mutex_unlock(&wait->lock);
	return ret;
}

int util_wait_control(struct util_wait *wait, int command, void *arg)
{
	struct fi_mutex_cond *mc;

	if (!arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = wait->wait_obj;
		return 0;
	case FI_GETWAIT:
		break;
	default:
		return -FI_ENOSYS;
	}
	switch (wait->wait_obj) {
	case FI_WAIT_FD:
		*(int *)arg = wait->epoll_fd;
		return 0;
	case FI_WAIT_POLLFD:
		return util_wait_get_pollfd(wait, arg);
	case FI_WAIT_MUTEX_COND:
		mc = arg;
		mc->mutex = &wait->mutex;
		mc->cond = &wait->cond;
		atomic_store(&wait->exported, true);
		return 0;
	default:
		return -FI_EINVAL;
	}
}

/* ---- wait sets ---------------------------------------------------------- */

static struct util_wait *util_wait_from_fid(struct fid *fid)
{
	return container_of(fid, struct util_wait, wait_fid.fid);
}

/*
 * Any attached object with data?  Called with set->lock held.  *polled
 * tells whether a member can only be polled (sleeping could miss it).
 */
static bool util_wait_set_has_data(struct util_wait *set, bool *polled)
{
	struct dlist_entry *item;

	*polled = false;
	dlist_foreach(&set->members, item)
	{
		struct util_waitable *w =
		    container_of(item, struct util_waitable, member_entry);

		if (w->has_data(w))
			return true;
		if (atomic_load_explicit(&w->polled, memory_order_relaxed))
			*polled = true;
	}
	/* Nothing: about to sleep, so arm what must be armed. */
	dlist_foreach(&set->members, item)
	{
		struct util_waitable *w =
		    container_of(item, struct util_waitable, member_entry);

		if (w->arm && w->arm(w))
			return true;
	}
	return false;
}

static int util_wait_set_wait(struct fid_wait *wait_fid, int timeout)
{
	struct util_wait *set = util_wait_from_fid(&wait_fid->fid);
	uint64_t deadline = util_wait_deadline(timeout);
	unsigned int ticket;
	bool ready, polled;
	int ret, rem;

	for (;;) {
		util_wait_arm(set, &ticket);
		pthread_mutex_lock(&set->lock);
		ready = util_wait_set_has_data(set, &polled);
		pthread_mutex_unlock(&set->lock);
		if (ready) {
			util_wait_disarm(set);
			return 0;
		}
		rem = util_wait_remaining(deadline);
		if (polled) {
			util_wait_disarm(set);
			if (!rem)
				return -FI_ETIMEDOUT;
			sched_yield();
			continue;
		}
		ret = util_wait_block(set, ticket, rem);
		if (ret)
			return ret;
	}
}

static int util_wait_set_close(struct fid *fid)
{
	struct util_wait *set = util_wait_from_fid(fid);

	if (atomic_load(&set->ref))
		return -FI_EBUSY;
	if (set->fabric)
		atomic_fetch_sub(&set->fabric->ref, 1);
	util_wait_fini(set);
	free(set);
	return 0;
}

static int util_wait_set_control(struct fid *fid, int command, void *arg)
{
	return util_wait_control(util_wait_from_fid(fid), command, arg);
}

static const struct fi_ops util_wait_set_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = util_wait_set_close,
    .bind = weft_no_bind,
    .control = util_wait_set_control,
    .ops_open = weft_no_ops_open,
    .tostr = weft_no_tostr,
    .ops_set = weft_no_ops_set,
};

static const struct fi_ops_wait util_wait_set_ops = {
    .size = sizeof(struct fi_ops_wait),
    .wait = util_wait_set_wait,
};

int util_wait_open(struct fid_fabric *fabric_fid, struct fi_wait_attr *attr,
		   struct fid_wait **waitset)
{
	struct util_fabric *fabric =
	    fabric_fid
		? container_of(fabric_fid, struct util_fabric, fabric_fid)
		: NULL;
	struct util_wait *set;
	int ret;

	if (!attr || attr->flags || !waitset)
		return -FI_EINVAL;
	if (fabric && FI_VERSION_GE(fabric->fabric_fid.api_version,
				    FI_VERSION(2, 0))) {
		FI_WARN(fabric->prov, FI_LOG_CORE,
			"wait sets are gone from API 2.0: wait on the CQ, "
			"counter or EQ itself\n");
		return -FI_ENOSYS;
	}
	if (attr->wait_obj == FI_WAIT_NONE || attr->wait_obj == FI_WAIT_SET)
		return -FI_EINVAL;
	set = calloc(1, sizeof(*set));
	if (!set)
		return -FI_ENOMEM;
	ret = util_wait_init(set, fabric, fabric ? fabric->prov : NULL,
			     attr->wait_obj);
	if (ret)
		goto err_free;
	set->is_set = true;
	set->wait_fid.fid.fclass = FI_CLASS_WAIT;
	set->wait_fid.fid.context = NULL;
	/* The public tables are not const; weft never writes through them. */
	set->wait_fid.fid.ops = (struct fi_ops *)&util_wait_set_fi_ops;
	set->wait_fid.ops = (struct fi_ops_wait *)&util_wait_set_ops;
	if (fabric)
		atomic_fetch_add(&fabric->ref, 1);
	*waitset = &set->wait_fid;
	return 0;

err_free:
	free(set);
	return ret;
}

/* ---- waitables ---------------------------------------------------------- */

int util_waitable_init(struct util_waitable *waitable,
		       struct util_fabric *fabric,
		       const struct fi_provider *prov,
		       enum fi_wait_obj wait_obj, struct fid_wait *wait_set,
		       struct fid *owner, util_waitable_has_data_fn has_data)
{
	struct util_wait *set;
	int ret;

	memset(waitable, 0, sizeof(*waitable));
	waitable->owner = owner;
	waitable->has_data = has_data;
	waitable->wait_obj = wait_obj;
	dlist_init(&waitable->member_entry);
	atomic_init(&waitable->poll_ref, 0);
	atomic_init(&waitable->polled, false);
	if (!has_data)
		return -FI_EINVAL;

	if (wait_obj == FI_WAIT_SET) {
		if (!wait_set || wait_set->fid.fclass != FI_CLASS_WAIT ||
		    wait_set->fid.ops != &util_wait_set_fi_ops)
			return -FI_EINVAL;
		set = util_wait_from_fid(&wait_set->fid);
		pthread_mutex_lock(&set->lock);
		dlist_insert_tail(&waitable->member_entry, &set->members);
		atomic_fetch_add(&set->ref, 1);
		pthread_mutex_unlock(&set->lock);
		waitable->wait = set;
		return 0;
	}
	ret = util_wait_init(&waitable->own, fabric, prov, wait_obj);
	if (ret)
		return ret;
	waitable->wait_obj = waitable->own.wait_obj;
	waitable->wait = wait_obj == FI_WAIT_NONE ? NULL : &waitable->own;
	return 0;
}

void util_waitable_fini(struct util_waitable *waitable)
{
	struct util_wait *set;

	if (waitable->wait_obj == FI_WAIT_SET) {
		set = waitable->wait;
		pthread_mutex_lock(&set->lock);
		dlist_remove(&waitable->member_entry);
		atomic_fetch_sub(&set->ref, 1);
		pthread_mutex_unlock(&set->lock);
	} else {
		util_wait_fini(&waitable->own);
	}
	waitable->wait = NULL;
}

int util_waitable_control(struct util_waitable *waitable, int command,
			  void *arg)
{
	switch (command) {
	case UTIL_CTRL_WAITABLE:
		if (!arg)
			return -FI_EINVAL;
		*(struct util_waitable **)arg = waitable;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = waitable->wait_obj;
		return 0;
	case FI_GETWAIT:
		if (!waitable->wait || waitable->wait_obj == FI_WAIT_SET)
			return -FI_EINVAL;
		return util_wait_control(waitable->wait, command, arg);
	default:
		return -FI_ENOSYS;
	}
}

struct util_waitable *util_waitable_of(struct fid *fid)
{
	struct util_waitable *waitable = NULL;

	if (!fid || !fid->ops || !fid->ops->control)
		return NULL;
	switch (fid->fclass) {
	case FI_CLASS_CQ:
	case FI_CLASS_CNTR:
	case FI_CLASS_EQ:
		break;
	default:
		return NULL;
	}
	if (fid->ops->control(fid, UTIL_CTRL_WAITABLE, &waitable))
		return NULL;
	return waitable;
}

int util_waitable_trywait(struct util_waitable *waitable)
{
	struct util_wait *wait = waitable->wait;

	if (!wait)
		return -FI_EINVAL;
	/* Drain first, then look: an event published after the look finds
	 * the fd drained and makes it readable again. */
	util_wait_drain(wait);
	atomic_thread_fence(memory_order_seq_cst);
	if (waitable->has_data(waitable))
		return -FI_EAGAIN;
	if (waitable->arm && waitable->arm(waitable))
		return -FI_EAGAIN;
	/* Events only polling finds would never make the fd readable. */
	return atomic_load(&waitable->polled) ? -FI_EAGAIN : 0;
}

static int util_wait_set_trywait(struct util_wait *set)
{
	bool ready, polled;

	util_wait_drain(set);
	atomic_thread_fence(memory_order_seq_cst);
	pthread_mutex_lock(&set->lock);
	ready = util_wait_set_has_data(set, &polled);
	pthread_mutex_unlock(&set->lock);
	/* A member that must be polled would leave a native wait hanging. */
	return ready || polled ? -FI_EAGAIN : 0;
}

int util_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	struct util_waitable *waitable;
	int i, ret;

	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (fids[i] && fids[i]->fclass == FI_CLASS_WAIT &&
		    fids[i]->ops == &util_wait_set_fi_ops) {
			ret =
			    util_wait_set_trywait(util_wait_from_fid(fids[i]));
		} else {
			waitable = util_waitable_of(fids[i]);
			ret = waitable ? util_waitable_trywait(waitable)
				       : -FI_EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}
