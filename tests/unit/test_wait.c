/* SPDX-License-Identifier: BSD-2-Clause */
/* Wait objects, wait sets and fi_trywait (prov/util/util_wait.c). */
#include <criterion/criterion.h>

#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_eq.h>

#include "weft/stubs.h"
#include "weft/util_wait.h"
#include "weft/util_domain.h"

/* A minimal event object: a counter of pending events behind a waitable. */
struct fake_obj {
	struct fid fid;
	struct util_waitable waitable;
	atomic_int pending;
};

static bool fake_has_data(struct util_waitable *w)
{
	struct fake_obj *o = container_of(w, struct fake_obj, waitable);

	return atomic_load(&o->pending) > 0;
}

static int fake_control(struct fid *fid, int command, void *arg)
{
	struct fake_obj *o = container_of(fid, struct fake_obj, fid);

	return util_waitable_control(&o->waitable, command, arg);
}

static struct fi_ops fake_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = weft_no_close,
    .bind = weft_no_bind,
    .control = fake_control,
    .ops_open = weft_no_ops_open,
    .tostr = weft_no_tostr,
    .ops_set = weft_no_ops_set,
};

static void fake_open(struct fake_obj *o, enum fi_wait_obj wait_obj,
		      struct fid_wait *set)
{
	memset(o, 0, sizeof(*o));
	o->fid.fclass = FI_CLASS_CNTR;
	o->fid.ops = &fake_fi_ops;
	o->fid.context = o;
	cr_assert_eq(util_waitable_init(&o->waitable, NULL, NULL, wait_obj, set,
					&o->fid, fake_has_data),
		     0);
}

static void fake_post(struct fake_obj *o)
{
	atomic_fetch_add(&o->pending, 1);
	util_waitable_signal(&o->waitable);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

Test(wait, unspec_resolves_to_fd)
{
	struct util_wait w;
	enum fi_wait_obj obj;
	int fd = -1;

	cr_assert_eq(util_wait_init(&w, NULL, NULL, FI_WAIT_UNSPEC), 0);
	cr_assert_eq(util_wait_control(&w, FI_GETWAITOBJ, &obj), 0);
	cr_assert_eq(obj, FI_WAIT_FD);
	cr_assert_eq(util_wait_control(&w, FI_GETWAIT, &fd), 0);
	cr_assert_geq(fd, 0);
	util_wait_fini(&w);
	cr_assert_eq(util_wait_init(&w, NULL, NULL, FI_WAIT_SET), -FI_EINVAL);
}

static void check_block_timeout(enum fi_wait_obj obj)
{
	struct util_wait w;
	unsigned int ticket;
	double t0, dt;

	cr_assert_eq(util_wait_init(&w, NULL, NULL, obj), 0);
	util_wait_arm(&w, &ticket);
	t0 = now_ms();
	cr_assert_eq(util_wait_block(&w, ticket, 50), -FI_ETIMEDOUT);
	dt = now_ms() - t0;
	cr_assert_geq(dt, 45.0, "returned after %.1f ms", dt);
	/* A signal between arm and block is not lost. */
	util_wait_arm(&w, &ticket);
	util_wait_signal(&w);
	cr_assert_eq(util_wait_block(&w, ticket, 5000), 0);
	/* Zero timeout never blocks. */
	util_wait_arm(&w, &ticket);
	cr_assert_eq(util_wait_block(&w, ticket, 0), -FI_ETIMEDOUT);
	cr_assert_eq(atomic_load(&w.waiters), 0);
	util_wait_fini(&w);
}

Test(wait, block_timeout_fd)
{
	check_block_timeout(FI_WAIT_FD);
}

Test(wait, block_timeout_pollfd)
{
	check_block_timeout(FI_WAIT_POLLFD);
}

Test(wait, block_timeout_mutex_cond)
{
	check_block_timeout(FI_WAIT_MUTEX_COND);
}

Test(wait, block_timeout_yield)
{
	check_block_timeout(FI_WAIT_YIELD);
}

struct waker {
	struct fake_obj *obj;
	int delay_ms;
};

static void *waker_main(void *arg)
{
	struct waker *wk = arg;

	usleep(wk->delay_ms * 1000);
	fake_post(wk->obj);
	return NULL;
}

static void check_cross_thread_wake(enum fi_wait_obj obj)
{
	struct fake_obj o;
	struct waker wk = {.obj = &o, .delay_ms = 50};
	unsigned int ticket;
	pthread_t thr;
	int ret;

	fake_open(&o, obj, NULL);
	cr_assert_eq(pthread_create(&thr, NULL, waker_main, &wk), 0);
	for (;;) {
		util_wait_arm(o.waitable.wait, &ticket);
		if (fake_has_data(&o.waitable)) {
			util_wait_disarm(o.waitable.wait);
			break;
		}
		ret = util_wait_block(o.waitable.wait, ticket, 10000);
		cr_assert_eq(ret, 0, "woken by the post, not by timeout");
	}
	pthread_join(thr, NULL);
	util_waitable_fini(&o.waitable);
}

Test(wait, cross_thread_wake_fd)
{
	check_cross_thread_wake(FI_WAIT_FD);
}

Test(wait, cross_thread_wake_mutex_cond)
{
	check_cross_thread_wake(FI_WAIT_MUTEX_COND);
}

Test(wait, cross_thread_wake_yield)
{
	check_cross_thread_wake(FI_WAIT_YIELD);
}

Test(wait, fd_readable_after_signal_and_trywait)
{
	struct fake_obj o;
	struct fid *fids[1];
	struct pollfd pfd;
	int fd;

	fake_open(&o, FI_WAIT_FD, NULL);
	fids[0] = &o.fid;
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &fd), 0);
	pfd.fd = fd;
	pfd.events = POLLIN;
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0, "no event: not readable");
	fake_post(&o);
	cr_assert_eq(poll(&pfd, 1, 1000), 1, "readable after an event");
	cr_assert_eq(util_trywait(NULL, fids, 1), -FI_EAGAIN);
	atomic_store(&o.pending, 0);
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0, "trywait re-armed the fd");
	fake_post(&o);
	cr_assert_eq(poll(&pfd, 1, 1000), 1, "readable again");
	util_waitable_fini(&o.waitable);
}

Test(wait, pollfd_getwait)
{
	struct fake_obj o;
	struct pollfd fds[4];
	struct fi_wait_pollfd pw = {.nfds = 0, .fd = fds};
	int pipefd[2];
	uint64_t idx;

	fake_open(&o, FI_WAIT_POLLFD, NULL);
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &pw), -FI_ETOOSMALL);
	cr_assert_eq(pw.nfds, 1);
	pw.nfds = 4;
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &pw), 0);
	cr_assert_eq(pw.nfds, 1);
	idx = pw.change_index;

	cr_assert_eq(pipe(pipefd), 0);
	cr_assert_eq(util_wait_add_fd(o.waitable.wait, pipefd[0], POLLIN, NULL),
		     0);
	cr_assert_eq(util_wait_add_fd(o.waitable.wait, pipefd[0], POLLIN, NULL),
		     -FI_EALREADY);
	pw.nfds = 4;
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &pw), 0);
	cr_assert_eq(pw.nfds, 2);
	cr_assert_neq(pw.change_index, idx);
	cr_assert_eq(fds[1].fd, pipefd[0]);

	fake_post(&o);
	cr_assert_eq(poll(fds, pw.nfds, 1000), 1);
	cr_assert(fds[0].revents & POLLIN);

	/* Added twice: it stays until the second delete. */
	cr_assert_eq(util_wait_del_fd(o.waitable.wait, pipefd[0]), 0);
	pw.nfds = 4;
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &pw), 0);
	cr_assert_eq(pw.nfds, 2);
	cr_assert_eq(util_wait_del_fd(o.waitable.wait, pipefd[0]), 0);
	pw.nfds = 4;
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &pw), 0);
	cr_assert_eq(pw.nfds, 1);
	cr_assert_eq(util_wait_del_fd(o.waitable.wait, pipefd[0]), -FI_ENOENT);
	util_waitable_fini(&o.waitable);
	close(pipefd[0]);
	close(pipefd[1]);
}

Test(wait, provider_fd_wakes_block)
{
	struct util_wait w;
	unsigned int ticket;
	int pipefd[2];
	char c = 'x';

	cr_assert_eq(util_wait_init(&w, NULL, NULL, FI_WAIT_FD), 0);
	cr_assert_eq(pipe(pipefd), 0);
	cr_assert_eq(util_wait_add_fd(&w, pipefd[0], POLLIN, NULL), 0);
	util_wait_arm(&w, &ticket);
	cr_assert_eq(util_wait_block(&w, ticket, 20), -FI_ETIMEDOUT);
	cr_assert_eq(write(pipefd[1], &c, 1), 1);
	util_wait_arm(&w, &ticket);
	cr_assert_eq(util_wait_block(&w, ticket, 5000), 0);
	util_wait_fini(&w);
	close(pipefd[0]);
	close(pipefd[1]);
}

Test(wait, mutex_cond_getwait)
{
	struct fake_obj o;
	struct fi_mutex_cond mc = {0};

	fake_open(&o, FI_WAIT_MUTEX_COND, NULL);
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &mc), 0);
	cr_assert_not_null(mc.mutex);
	cr_assert_not_null(mc.cond);
	util_waitable_fini(&o.waitable);
}

Test(wait, none_has_no_wait_object)
{
	struct fake_obj o;
	struct fid *fids[1] = {&o.fid};
	int fd;

	fake_open(&o, FI_WAIT_NONE, NULL);
	cr_assert_null(o.waitable.wait);
	cr_assert_eq(fi_control(&o.fid, FI_GETWAIT, &fd), -FI_EINVAL);
	cr_assert_eq(util_trywait(NULL, fids, 1), -FI_EINVAL);
	fake_post(&o); /* signalling nothing is harmless */
	util_waitable_fini(&o.waitable);
}

static void check_wait_set(enum fi_wait_obj obj)
{
	struct fi_wait_attr attr = {.wait_obj = obj};
	struct fid_wait *set;
	struct fake_obj a, b;
	struct waker wk = {.obj = &b, .delay_ms = 50};
	struct fid *fids[1];
	pthread_t thr;
	double t0;

	cr_assert_eq(util_wait_open(NULL, &attr, &set), 0);
	fake_open(&a, FI_WAIT_SET, set);
	fake_open(&b, FI_WAIT_SET, set);
	cr_assert_eq(fi_close(&set->fid), -FI_EBUSY);

	t0 = now_ms();
	cr_assert_eq(fi_wait(set, 30), -FI_ETIMEDOUT);
	cr_assert_geq(now_ms() - t0, 25.0);

	fids[0] = &set->fid;
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	fake_post(&a);
	cr_assert_eq(util_trywait(NULL, fids, 1), -FI_EAGAIN);
	cr_assert_eq(fi_wait(set, 0), 0);
	atomic_store(&a.pending, 0);

	cr_assert_eq(pthread_create(&thr, NULL, waker_main, &wk), 0);
	cr_assert_eq(fi_wait(set, 10000), 0);
	cr_assert_eq(atomic_load(&b.pending), 1);
	pthread_join(thr, NULL);

	util_waitable_fini(&a.waitable);
	util_waitable_fini(&b.waitable);
	cr_assert_eq(fi_close(&set->fid), 0);
}

Test(wait, set_fd)
{
	check_wait_set(FI_WAIT_FD);
}

Test(wait, set_unspec)
{
	check_wait_set(FI_WAIT_UNSPEC);
}

Test(wait, set_mutex_cond)
{
	check_wait_set(FI_WAIT_MUTEX_COND);
}

Test(wait, set_yield)
{
	check_wait_set(FI_WAIT_YIELD);
}

Test(wait, set_pollfd)
{
	check_wait_set(FI_WAIT_POLLFD);
}

Test(wait, set_fd_getwait_readable)
{
	struct fi_wait_attr attr = {.wait_obj = FI_WAIT_FD};
	struct fid_wait *set;
	struct fake_obj a;
	struct fid *fids[1];
	struct pollfd pfd = {.events = POLLIN};

	cr_assert_eq(util_wait_open(NULL, &attr, &set), 0);
	fake_open(&a, FI_WAIT_SET, set);
	cr_assert_eq(fi_control(&set->fid, FI_GETWAIT, &pfd.fd), 0);
	/* Members on a set have no wait object of their own. */
	cr_assert_eq(fi_control(&a.fid, FI_GETWAIT, &pfd.fd), -FI_EINVAL);
	fids[0] = &set->fid;
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	fake_post(&a);
	cr_assert_eq(poll(&pfd, 1, 1000), 1);
	util_waitable_fini(&a.waitable);
	cr_assert_eq(fi_close(&set->fid), 0);
}

/* Wait sets are gone from API 2.0: refused to a fabric opened for 2.x,
 * kept for 1.x. */
Test(wait, gone_from_api_2_0)
{
	struct fi_wait_attr attr = {.wait_obj = FI_WAIT_FD};
	struct fi_fabric_attr fattr = {.api_version = FI_VERSION(2, 0)};
	struct util_fabric fabric;
	struct fid_wait *set;

	cr_assert_eq(util_fabric_init(&fabric, &weft_core_prov, &fattr, NULL),
		     0);
	cr_assert_eq(util_wait_open(&fabric.fabric_fid, &attr, &set),
		     -FI_ENOSYS);
	fabric.fabric_fid.api_version = FI_VERSION(1, 22);
	cr_assert_eq(util_wait_open(&fabric.fabric_fid, &attr, &set), 0);
	cr_assert_eq(fi_close(&set->fid), 0);
	cr_assert_eq(util_fabric_fini(&fabric), 0);
}

Test(wait, open_rejects_bad_attr)
{
	struct fi_wait_attr attr = {.wait_obj = FI_WAIT_FD, .flags = 1};
	struct fid_wait *set;
	struct fake_obj o;

	cr_assert_eq(util_wait_open(NULL, &attr, &set), -FI_EINVAL);
	attr.flags = 0;
	attr.wait_obj = FI_WAIT_SET;
	cr_assert_eq(util_wait_open(NULL, &attr, &set), -FI_EINVAL);
	memset(&o, 0, sizeof(o));
	cr_assert_eq(util_waitable_init(&o.waitable, NULL, NULL, FI_WAIT_SET,
					NULL, &o.fid, fake_has_data),
		     -FI_EINVAL);
}
