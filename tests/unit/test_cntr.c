/* SPDX-License-Identifier: BSD-2-Clause */
/* Counters: prov/util/util_cntr.c against fi_cntr(3). */
#include <criterion/criterion.h>

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "weft/core.h"
#include "weft/util_cntr.h"
#include "weft/util_domain.h"
#include "weft/util_poll.h"

static struct util_domain domain;

static void setup(void)
{
	cr_assert_eq(util_domain_init(&domain, NULL, NULL, NULL), 0);
}

static void teardown(void)
{
	cr_assert_eq(util_domain_fini(&domain), 0,
		     "a counter leaked its domain reference");
}

TestSuite(cntr, .init = setup, .fini = teardown);

static struct fid_cntr *cntr_open(enum fi_wait_obj wait_obj)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = wait_obj};
	struct fid_cntr *cntr = NULL;

	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, NULL), 0);
	cr_assert_not_null(cntr);
	return cntr;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

Test(cntr, add_set_read)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_NONE);

	cr_assert_eq(fi_cntr_read(cntr), 0);
	cr_assert_eq(fi_cntr_add(cntr, 5), 0);
	cr_assert_eq(fi_cntr_add(cntr, 7), 0);
	cr_assert_eq(fi_cntr_read(cntr), 12);
	util_cntr_inc(util_cntr_of(cntr));
	util_cntr_add_n(util_cntr_of(cntr), 10);
	cr_assert_eq(fi_cntr_read(cntr), 23);
	cr_assert_eq(fi_cntr_set(cntr, 3), 0);
	cr_assert_eq(fi_cntr_read(cntr), 3);
	cr_assert_eq(fi_cntr_set(cntr, UINT64_MAX - 1), 0);
	util_cntr_inc(util_cntr_of(cntr));
	cr_assert_eq(fi_cntr_read(cntr), UINT64_MAX);
	cr_assert_eq(fi_cntr_readerr(cntr), 0, "success counts leaked");
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, error_count_is_separate)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_NONE);

	cr_assert_eq(fi_cntr_adderr(cntr, 2), 0);
	util_cntr_inc_err(util_cntr_of(cntr));
	cr_assert_eq(fi_cntr_readerr(cntr), 3);
	cr_assert_eq(fi_cntr_read(cntr), 0);
	cr_assert_eq(fi_cntr_seterr(cntr, 100), 0);
	cr_assert_eq(fi_cntr_readerr(cntr), 100);
	cr_assert_eq(fi_cntr_set(cntr, 1), 0);
	cr_assert_eq(fi_cntr_readerr(cntr), 100);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, wait_returns_at_once_when_reached)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_UNSPEC);

	cr_assert_eq(fi_cntr_add(cntr, 4), 0);
	cr_assert_eq(fi_cntr_wait(cntr, 4, 0), 0);
	cr_assert_eq(fi_cntr_wait(cntr, 3, -1), 0);
	cr_assert_eq(fi_cntr_wait(cntr, 5, 0), -FI_ETIMEDOUT);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, wait_times_out)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_UNSPEC);
	uint64_t start = now_ms();

	cr_assert_eq(fi_cntr_wait(cntr, 1, 100), -FI_ETIMEDOUT);
	cr_assert_geq(now_ms() - start, 80, "returned before the timeout");
	cr_assert_eq(fi_cntr_readerr(cntr), 0, "timeout changed errors");
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

struct bump_arg {
	struct util_cntr *cntr;
	int delay_ms;
	int n;
	bool error;
};

static void *bumper(void *p)
{
	struct bump_arg *arg = p;
	int i;

	for (i = 0; i < arg->n; i++) {
		usleep(arg->delay_ms * 1000);
		if (arg->error)
			util_cntr_inc_err(arg->cntr);
		else
			util_cntr_inc(arg->cntr);
	}
	return NULL;
}

static void wait_reaches_threshold(enum fi_wait_obj wait_obj)
{
	struct fid_cntr *cntr = cntr_open(wait_obj);
	struct bump_arg arg = {util_cntr_of(cntr), 10, 10, false};
	pthread_t thread;
	uint64_t start = now_ms();
	int ret;

	cr_assert_eq(pthread_create(&thread, NULL, bumper, &arg), 0);
	ret = fi_cntr_wait(cntr, 10, 20000);
	cr_assert_eq(ret, 0, "got %d", ret);
	cr_assert_geq(fi_cntr_read(cntr), 10);
	cr_assert_lt(now_ms() - start, 15000, "slept through increments");
	pthread_join(thread, NULL);
	cr_assert_eq(fi_cntr_read(cntr), 10);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, wait_threshold_from_thread_unspec)
{
	wait_reaches_threshold(FI_WAIT_UNSPEC);
}

Test(cntr, wait_threshold_from_thread_fd)
{
	wait_reaches_threshold(FI_WAIT_FD);
}

Test(cntr, wait_threshold_from_thread_mutex_cond)
{
	wait_reaches_threshold(FI_WAIT_MUTEX_COND);
}

Test(cntr, wait_threshold_from_thread_yield)
{
	wait_reaches_threshold(FI_WAIT_YIELD);
}

Test(cntr, wait_threshold_from_thread_none)
{
	wait_reaches_threshold(FI_WAIT_NONE);
}

Test(cntr, wait_interrupted_by_error)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_UNSPEC);
	struct bump_arg arg = {util_cntr_of(cntr), 100, 1, true};
	pthread_t thread;
	uint64_t start = now_ms();
	int ret;

	/* Errors from before the wait do not end it. */
	cr_assert_eq(fi_cntr_adderr(cntr, 1), 0);
	cr_assert_eq(pthread_create(&thread, NULL, bumper, &arg), 0);
	ret = fi_cntr_wait(cntr, 1000, 20000);
	pthread_join(thread, NULL);
	cr_assert_eq(ret, -FI_EAVAIL, "got %d", ret);
	cr_assert_lt(now_ms() - start, 15000, "slept through the error");
	cr_assert_eq(fi_cntr_readerr(cntr), 2);
	cr_assert_eq(fi_cntr_read(cntr), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

#define INC_THREADS 4
#define INC_EACH 200000

static void *incrementer(void *p)
{
	struct util_cntr *cntr = p;
	int i;

	for (i = 0; i < INC_EACH; i++) {
		if (i % 1000 == 999)
			fi_cntr_add(&cntr->cntr_fid, 1);
		else
			util_cntr_inc(cntr);
		if (i % 4096 == 0)
			util_cntr_inc_err(cntr);
	}
	return NULL;
}

Test(cntr, concurrent_increments_sum_exactly)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_UNSPEC);
	pthread_t threads[INC_THREADS];
	uint64_t expect_err = INC_THREADS * ((INC_EACH + 4095) / 4096);
	int i, ret;

	for (i = 0; i < INC_THREADS; i++)
		cr_assert_eq(pthread_create(&threads[i], NULL, incrementer,
					    util_cntr_of(cntr)),
			     0);
	/* A waiter during the storm exercises the signalling path. */
	ret = fi_cntr_wait(cntr, (uint64_t)INC_THREADS * INC_EACH, 60000);
	for (i = 0; i < INC_THREADS; i++)
		pthread_join(threads[i], NULL);
	cr_assert(ret == 0 || ret == -FI_EAVAIL, "got %d", ret);
	cr_assert_eq(fi_cntr_read(cntr), (uint64_t)INC_THREADS * INC_EACH);
	cr_assert_eq(fi_cntr_readerr(cntr), expect_err);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, getwait_fd_readable_after_increment)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_FD);
	enum fi_wait_obj obj = FI_WAIT_NONE;
	struct pollfd pfd;
	int fd = -1;

	cr_assert_eq(fi_control(&cntr->fid, FI_GETWAITOBJ, &obj), 0);
	cr_assert_eq(obj, FI_WAIT_FD);
	cr_assert_eq(fi_control(&cntr->fid, FI_GETWAIT, &fd), 0);
	cr_assert_geq(fd, 0);
	util_cntr_inc(util_cntr_of(cntr));
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "fd not readable");
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, opsflag_control)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_NONE);
	uint64_t flags = FI_TRANSMIT;

	cr_assert_eq(fi_control(&cntr->fid, FI_SETOPSFLAG, &flags), 0);
	flags = 0;
	cr_assert_eq(fi_control(&cntr->fid, FI_GETOPSFLAG, &flags), 0);
	cr_assert_eq(flags, FI_TRANSMIT);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

struct fake_ep {
	struct util_cntr *cntr;
	int pending; /* completions the "hardware" holds */
	int calls;
	struct util_progress progress;
};

static void fake_progress(struct util_progress *p)
{
	struct fake_ep *ep = container_of(p, struct fake_ep, progress);

	ep->calls++;
	if (ep->pending) {
		ep->pending--;
		util_cntr_inc(ep->cntr);
	}
}

Test(cntr, manual_progress_runs_on_read_and_wait)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_UNSPEC);
	struct fake_ep ep = {util_cntr_of(cntr), 3, 0,
			     {.progress = fake_progress, .polled = true}};
	uint64_t start = now_ms();

	cr_assert_eq(util_cntr_add_progress(ep.cntr, &ep.progress),
		     0);
	cr_assert_eq(fi_cntr_read(cntr), 1);
	cr_assert_eq(ep.calls, 1);
	/* Only progress can deliver the rest: wait must keep calling it. */
	cr_assert_eq(fi_cntr_wait(cntr, 3, 20000), 0);
	cr_assert_lt(now_ms() - start, 15000);
	cr_assert_eq(fi_cntr_read(cntr), 3);
	cr_assert_eq(fi_cntr_wait(cntr, 4, 50), -FI_ETIMEDOUT);

	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY,
		     "closed with a progress callback registered");
	cr_assert_eq(util_cntr_del_progress(ep.cntr, &ep.progress), 0);
	cr_assert_eq(util_cntr_del_progress(ep.cntr, &ep.progress),
		     -FI_ENOENT);
	ep.calls = 0;
	fi_cntr_read(cntr);
	cr_assert_eq(ep.calls, 0, "removed callback still runs");
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, bound_objects_keep_it_open)
{
	struct fid_cntr *cntr = cntr_open(FI_WAIT_NONE);

	util_cntr_get(util_cntr_of(cntr));
	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY);
	util_cntr_put(util_cntr_of(cntr));
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

Test(cntr, bad_attrs)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP, .flags = 1};
	struct fid_cntr *cntr;

	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, NULL), -FI_EINVAL);
	attr.flags = 0;
	attr.events = 7;
	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, NULL), -FI_EINVAL);
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.wait_obj = FI_WAIT_SET;
	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, NULL), -FI_EINVAL);
	cr_assert_eq(util_cntr_open(&domain, NULL, &cntr, NULL), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

/* Wait sets report a counter when a value changed since they last looked
 * (fi_poll(3)); the application's own fi_cntr_add/set do not count. */
Test(cntr, wait_set_reports_changes)
{
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP,
				    .wait_obj = FI_WAIT_SET};
	struct bump_arg arg;
	struct fid_wait *set;
	struct fid_cntr *cntr;
	pthread_t thread;
	uint64_t start;

	cr_assert_eq(util_wait_open(NULL, &wattr, &set), 0);
	attr.wait_set = set;
	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, NULL), 0);
	cr_assert_eq(fi_close(&set->fid), -FI_EBUSY);
	cr_assert_eq(fi_wait(set, 0), -FI_ETIMEDOUT);

	cr_assert_eq(fi_cntr_add(cntr, 3), 0);
	cr_assert_eq(fi_wait(set, 0), -FI_ETIMEDOUT, "own add reported");

	arg = (struct bump_arg){util_cntr_of(cntr), 100, 1, false};
	start = now_ms();
	cr_assert_eq(pthread_create(&thread, NULL, bumper, &arg), 0);
	cr_assert_eq(fi_wait(set, 20000), 0);
	pthread_join(thread, NULL);
	cr_assert_lt(now_ms() - start, 15000);
	cr_assert_eq(fi_cntr_read(cntr), 4);
	cr_assert_eq(fi_wait(set, 0), -FI_ETIMEDOUT, "reported twice");

	util_cntr_inc_err(util_cntr_of(cntr));
	cr_assert_eq(fi_wait(set, 0), 0, "error change not reported");

	/* fi_cntr_wait still works on a counter of a set. */
	util_cntr_inc(util_cntr_of(cntr));
	cr_assert_eq(fi_cntr_wait(cntr, 5, 1000), 0);

	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&set->fid), 0);
}

Test(cntr, open_op_takes_the_domain_fid)
{
	struct fi_cntr_attr attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fid_cntr *cntr = NULL;
	int ctx;

	cr_assert_eq(util_cntr_open_op(&domain.domain_fid, &attr, &cntr, &ctx),
		     0);
	cr_assert_eq(cntr->fid.fclass, FI_CLASS_CNTR);
	cr_assert_eq(cntr->fid.context, &ctx);
	cr_assert_eq(util_cntr_of(cntr)->domain, &domain);
	cr_assert_eq(util_domain_fini(&domain), -FI_EBUSY,
		     "domain released under an open counter");
	cr_assert_eq(fi_close(&cntr->fid), 0);
}

/* fi_poll(3): a counter's context comes back when its success or error
 * value changed since the last fi_poll, fi_cntr_set or fi_cntr_add. */
Test(cntr, poll_set_reports_changes_once)
{
	struct fid_cntr *cntr;
	struct fi_cntr_attr attr = {.wait_obj = FI_WAIT_NONE};
	struct fid_poll *pollset;
	void *ctx[4] = {NULL};
	int mine;

	cr_assert_eq(util_poll_open(&domain.domain_fid, NULL, &pollset), 0);
	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, &mine), 0);
	cr_assert_eq(fi_poll_add(pollset, &cntr->fid, 0), 0);
	cr_assert_eq(fi_close(&cntr->fid), -FI_EBUSY,
		     "closed while in a poll set");

	cr_assert_eq(fi_poll(pollset, ctx, 4), 0);
	util_cntr_inc(util_cntr_of(cntr));
	cr_assert_eq(fi_poll(pollset, ctx, 4), 1);
	cr_assert_eq(ctx[0], &mine);
	cr_assert_eq(fi_poll(pollset, ctx, 4), 0, "reported twice");

	cr_assert_eq(fi_cntr_add(cntr, 2), 0);
	cr_assert_eq(fi_cntr_set(cntr, 10), 0);
	cr_assert_eq(fi_poll(pollset, ctx, 4), 0, "own add/set reported");

	util_cntr_inc_err(util_cntr_of(cntr));
	cr_assert_eq(fi_poll(pollset, ctx, 4), 1, "error not reported");

	cr_assert_eq(fi_poll_del(pollset, &cntr->fid, 0), 0);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&pollset->fid), 0);
}

/* A progress source without an fd: the wait set must poll it. */
Test(cntr, wait_set_polls_polled_progress)
{
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cntr_attr attr = {.wait_obj = FI_WAIT_SET};
	struct fid_wait *set;
	struct fid_cntr *cntr;
	struct fake_ep ep;

	cr_assert_eq(util_wait_open(NULL, &wattr, &set), 0);
	attr.wait_set = set;
	cr_assert_eq(util_cntr_open(&domain, &attr, &cntr, NULL), 0);
	ep = (struct fake_ep){util_cntr_of(cntr), 1, 0,
			      {.progress = fake_progress, .polled = true}};
	cr_assert_eq(util_cntr_add_progress(ep.cntr, &ep.progress),
		     0);
	cr_assert(atomic_load(&ep.cntr->waitable.polled));
	cr_assert_eq(fi_wait(set, 20000), 0);
	cr_assert_eq(ep.pending, 0);
	cr_assert_eq(util_cntr_del_progress(ep.cntr, &ep.progress), 0);
	cr_assert(!atomic_load(&ep.cntr->waitable.polled));
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&set->fid), 0);
}
