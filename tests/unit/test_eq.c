/* SPDX-License-Identifier: BSD-2-Clause */
/* Event queues: prov/util/util_eq.c against fi_eq(3). */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>

#include "weft/core.h"
#include "weft/util_domain.h"
#include "weft/util_eq.h"

static struct fi_provider test_prov = {
    .version = FI_VERSION(1, 0),
    .fi_version = FI_VERSION(1, 17),
    .name = "eqtest",
};

static struct util_fabric fabric;

static void fabric_setup(uint32_t api_version)
{
	struct fi_fabric_attr attr = {.api_version = api_version};

	cr_assert_eq(util_fabric_init(&fabric, &test_prov, &attr, NULL), 0);
}

static void setup(void)
{
	fabric_setup(FI_VERSION(1, 17));
}

static void teardown(void)
{
	cr_assert_eq(util_fabric_fini(&fabric), 0,
		     "an EQ leaked its fabric reference");
}

static struct fid_eq *eq_open(enum fi_wait_obj wait_obj)
{
	struct fi_eq_attr attr = {
	    .size = 16, .wait_obj = wait_obj, .flags = FI_WRITE};
	struct fid_eq *eq = NULL;

	cr_assert_eq(util_eq_open(&fabric, &attr, &eq, NULL), 0);
	cr_assert_not_null(eq);
	return eq;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* An fi_eq_cm_entry followed by private data, as providers write it. */
struct cm_event {
	struct fi_eq_cm_entry cm;
	uint8_t data[16];
};

TestSuite(eq, .init = setup, .fini = teardown);

Test(eq, events_in_order_with_contents)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	struct util_eq *ueq = util_eq_of(eq);
	struct fi_eq_entry e1 = {
	    .fid = &eq->fid, .context = (void *)0x11, .data = 42};
	struct fi_eq_entry e2 = {
	    .fid = &eq->fid, .context = (void *)0x22, .data = 7};
	struct cm_event cm = {.cm.fid = &eq->fid};
	struct cm_event got;
	uint32_t event = 99;
	ssize_t ret;

	memcpy(cm.data, "hello", 5);
	cr_assert_eq(util_eq_write(ueq, FI_MR_COMPLETE, &e1, sizeof(e1), 0),
		     (ssize_t)sizeof(e1));
	cr_assert_eq(
	    util_eq_write(ueq, FI_CONNECTED, &cm, sizeof(cm.cm) + 5, 0),
	    (ssize_t)(sizeof(cm.cm) + 5));
	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &e2, sizeof(e2), 0),
		     (ssize_t)sizeof(e2));

	memset(&got, 0, sizeof(got));
	ret = fi_eq_read(eq, &event, &got, sizeof(got), 0);
	cr_assert_eq(ret, (ssize_t)sizeof(e1));
	cr_assert_eq(event, FI_MR_COMPLETE);
	cr_assert_eq(memcmp(&got, &e1, sizeof(e1)), 0);

	memset(&got, 0, sizeof(got));
	ret = fi_eq_read(eq, &event, &got, sizeof(got), 0);
	cr_assert_eq(ret, (ssize_t)(sizeof(cm.cm) + 5), "got %zd", ret);
	cr_assert_eq(event, FI_CONNECTED);
	cr_assert_eq(got.cm.fid, &eq->fid);
	cr_assert_eq(memcmp(got.cm.data, "hello", 5), 0);

	ret = fi_eq_read(eq, &event, &got, sizeof(got), 0);
	cr_assert_eq(ret, (ssize_t)sizeof(e2));
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_eq(((struct fi_eq_entry *)&got)->data, 7);

	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0), -FI_EAGAIN);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, connreq_hands_over_info_and_private_data)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	struct cm_event cm = {.cm.fid = &eq->fid};
	struct cm_event got;
	uint32_t event;

	cm.cm.info = fi_allocinfo();
	cr_assert_not_null(cm.cm.info);
	memcpy(cm.data, "0123456789abcdef", 16);
	cr_assert_eq(
	    util_eq_write(util_eq_of(eq), FI_CONNREQ, &cm, sizeof(cm), 0),
	    (ssize_t)sizeof(cm));
	/* Private data is copied up to the space provided ... */
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got.cm) + 4, FI_PEEK),
		     (ssize_t)(sizeof(got.cm) + 4));
	cr_assert_eq(memcmp(got.data, "0123", 4), 0);
	/* ... but the cm entry itself must fit. */
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got.cm) - 1, 0),
		     -FI_ETOOSMALL);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0),
		     (ssize_t)sizeof(cm));
	cr_assert_eq(event, FI_CONNREQ);
	cr_assert_eq(got.cm.info, cm.cm.info);
	cr_assert_eq(memcmp(got.data, "0123456789abcdef", 16), 0);
	fi_freeinfo(got.cm.info);

	/* A CM event shorter than its entry is refused. */
	cr_assert_eq(util_eq_write(util_eq_of(eq), FI_SHUTDOWN, &cm,
				   sizeof(cm.cm) - 1, 0),
		     -FI_EINVAL);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

static void connreq_cycle(void)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	struct fi_eq_cm_entry cm = {.fid = &eq->fid};

	cm.info = fi_allocinfo();
	cr_assert_not_null(cm.info);
	cr_assert_eq(
	    util_eq_write(util_eq_of(eq), FI_CONNREQ, &cm, sizeof(cm), 0),
	    (ssize_t)sizeof(cm));
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/*
 * "Any events which remain on the EQ when it is closed are lost": lost to
 * the application, but the fi_info of a FI_CONNREQ must not leak.  malloc
 * counts chunks parked in its per-thread caches as in use, a bounded
 * amount; a leak grows with the number of EQs (about 600 bytes each).
 */
Test(eq, unread_connreq_is_freed_at_close)
{
	size_t before, after;
	int i;

	connreq_cycle(); /* warm up lazily allocated state */
	before = mallinfo2().uordblks;
	for (i = 0; i < 200; i++)
		connreq_cycle();
	after = mallinfo2().uordblks;
	cr_assert_lt(after > before ? after - before : 0, 32 * 1024,
		     "%zu bytes leaked over 200 EQs", after - before);
}

Test(eq, too_small_leaves_the_event)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	struct fi_eq_entry e = {.data = 1234};
	struct fi_eq_entry got = {0};
	uint32_t event = 0;

	cr_assert_eq(fi_eq_write(eq, FI_AV_COMPLETE, &e, sizeof(e), 0),
		     (ssize_t)sizeof(e));
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got) - 1, 0),
		     -FI_ETOOSMALL);
	cr_assert_eq(fi_eq_read(eq, &event, &got, 0, 0), -FI_ETOOSMALL);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0),
		     (ssize_t)sizeof(got));
	cr_assert_eq(event, FI_AV_COMPLETE);
	cr_assert_eq(got.data, 1234);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, peek_does_not_consume)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	struct fi_eq_entry a = {.data = 1}, b = {.data = 2}, got;
	uint32_t event;
	int i;

	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &a, sizeof(a), 0),
		     (ssize_t)sizeof(a));
	cr_assert_eq(fi_eq_write(eq, FI_JOIN_COMPLETE, &b, sizeof(b), 0),
		     (ssize_t)sizeof(b));
	for (i = 0; i < 3; i++) {
		got.data = 0;
		event = 99;
		cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), FI_PEEK),
			     (ssize_t)sizeof(got));
		cr_assert_eq(event, FI_NOTIFY);
		cr_assert_eq(got.data, 1);
	}
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0),
		     (ssize_t)sizeof(got));
	cr_assert_eq(got.data, 1);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0),
		     (ssize_t)sizeof(got));
	cr_assert_eq(event, FI_JOIN_COMPLETE);
	cr_assert_eq(got.data, 2);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), FI_PEEK),
		     -FI_EAGAIN);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, error_makes_read_eavail_then_readerr_copies)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	struct fi_eq_entry e = {.data = 5}, got;
	char detail[] = "rejected by peer";
	struct fi_eq_err_entry err = {
	    .fid = &eq->fid,
	    .context = (void *)0x77,
	    .data = 9,
	    .err = FI_ECONNREFUSED,
	    .prov_errno = 1234,
	    .err_data = detail,
	    .err_data_size = sizeof(detail),
	};
	struct fi_eq_err_entry out;
	char small[8];
	uint32_t event;

	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0),
		     (ssize_t)sizeof(e));
	cr_assert_eq(util_eq_write_err(util_eq_of(eq), &err), 0);
	memset(detail, 'x', sizeof(detail)); /* the EQ kept its own copy */

	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0), -FI_EAVAIL);

	/* Application buffer: copied up to err_data_size, which is set. */
	memset(&out, 0, sizeof(out));
	out.err_data = small;
	out.err_data_size = sizeof(small);
	cr_assert_eq(fi_eq_readerr(eq, &out, FI_PEEK), (ssize_t)sizeof(out));
	cr_assert_eq(out.err_data, small);
	cr_assert_eq(out.err_data_size, sizeof(small));
	cr_assert_eq(memcmp(small, "rejected", 8), 0);

	/* err_data_size 0: the EQ lends its buffer until the next read. */
	memset(&out, 0, sizeof(out));
	cr_assert_eq(fi_eq_readerr(eq, &out, 0), (ssize_t)sizeof(out));
	cr_assert_eq(out.fid, &eq->fid);
	cr_assert_eq(out.context, (void *)0x77);
	cr_assert_eq(out.data, 9);
	cr_assert_eq(out.err, FI_ECONNREFUSED);
	cr_assert_eq(out.prov_errno, 1234);
	cr_assert_eq(out.err_data_size, sizeof("rejected by peer"));
	cr_assert_not_null(out.err_data);
	cr_assert_str_eq(out.err_data, "rejected by peer");
	cr_assert_not_null(
	    fi_eq_strerror(eq, out.prov_errno, out.err_data, NULL, 0));

	cr_assert_eq(fi_eq_readerr(eq, &out, 0), -FI_EAGAIN);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0),
		     (ssize_t)sizeof(got));
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_eq(got.data, 5);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, errors_keep_their_order)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	struct fi_eq_err_entry err = {.err = FI_EIO}, out;
	int i;

	for (i = 1; i <= 3; i++) {
		err.data = i;
		cr_assert_eq(util_eq_write_err(util_eq_of(eq), &err), 0);
	}
	for (i = 1; i <= 3; i++) {
		memset(&out, 0, sizeof(out));
		cr_assert_eq(fi_eq_readerr(eq, &out, 0), (ssize_t)sizeof(out));
		cr_assert_eq(out.data, (uint64_t)i);
		cr_assert_eq(out.err, FI_EIO);
		cr_assert_eq(out.err_data_size, 0);
	}
	err.err = 0;
	cr_assert_eq(util_eq_write_err(util_eq_of(eq), &err), -FI_EINVAL);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/* Applications of API 1.4 know fi_eq_err_entry without err_data_size. */
Test(eq_old_api, readerr_without_err_data_size)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_NONE};
	struct fi_eq_err_entry err = {.err = FI_ETIMEDOUT};
	struct fi_eq_err_entry out;
	struct fid_eq *eq;
	char detail[4] = "abc";

	fabric_setup(FI_VERSION(1, 4));
	cr_assert_eq(util_eq_open(&fabric, &attr, &eq, NULL), 0);
	err.err_data = detail;
	err.err_data_size = sizeof(detail);
	cr_assert_eq(util_eq_write_err(util_eq_of(eq), &err), 0);
	memset(&out, 0, sizeof(out));
	out.err_data_size = 0x5a5a;
	cr_assert_eq(fi_eq_readerr(eq, &out, 0),
		     (ssize_t)offsetof(struct fi_eq_err_entry, err_data_size));
	cr_assert_eq(out.err, FI_ETIMEDOUT);
	cr_assert_eq(out.err_data_size, 0x5a5a, "wrote past the 1.4 struct");
	cr_assert_str_eq(out.err_data, "abc");
	cr_assert_eq(fi_close(&eq->fid), 0);
	teardown();
}

Test(eq, sread_times_out)
{
	struct fid_eq *eq = eq_open(FI_WAIT_UNSPEC);
	struct fi_eq_entry got;
	uint32_t event;
	uint64_t start = now_ms();
	ssize_t ret;

	ret = fi_eq_sread(eq, &event, &got, sizeof(got), 100, 0);
	cr_assert_eq(ret, -FI_EAGAIN, "got %zd", ret);
	cr_assert_geq(now_ms() - start, 80, "returned before the timeout");
	cr_assert_eq(fi_eq_sread(eq, &event, &got, sizeof(got), 0, 0),
		     -FI_EAGAIN);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

struct writer_arg {
	struct util_eq *eq;
	int delay_ms;
	bool error;
};

static void *writer(void *p)
{
	struct writer_arg *arg = p;
	struct fi_eq_entry e = {.data = 0xfeed};
	struct fi_eq_err_entry err = {.err = FI_EIO};

	usleep(arg->delay_ms * 1000);
	if (arg->error)
		util_eq_write_err(arg->eq, &err);
	else
		util_eq_write(arg->eq, FI_NOTIFY, &e, sizeof(e), 0);
	return NULL;
}

static void sread_woken_by_writer(enum fi_wait_obj wait_obj, bool error)
{
	struct fid_eq *eq = eq_open(wait_obj);
	struct writer_arg arg = {util_eq_of(eq), 100, error};
	struct fi_eq_entry got = {0};
	pthread_t thread;
	uint64_t start;
	uint32_t event;
	ssize_t ret;

	start = now_ms();
	cr_assert_eq(pthread_create(&thread, NULL, writer, &arg), 0);
	ret = fi_eq_sread(eq, &event, &got, sizeof(got), 20000, 0);
	pthread_join(thread, NULL);
	if (error) {
		cr_assert_eq(ret, -FI_EAVAIL, "got %zd", ret);
	} else {
		cr_assert_eq(ret, (ssize_t)sizeof(got), "got %zd", ret);
		cr_assert_eq(event, FI_NOTIFY);
		cr_assert_eq(got.data, 0xfeed);
	}
	cr_assert_lt(now_ms() - start, 15000, "slept through the write");
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, thread_write_wakes_sread_unspec)
{
	sread_woken_by_writer(FI_WAIT_UNSPEC, false);
}

Test(eq, thread_write_wakes_sread_fd)
{
	sread_woken_by_writer(FI_WAIT_FD, false);
}

Test(eq, thread_write_wakes_sread_mutex_cond)
{
	sread_woken_by_writer(FI_WAIT_MUTEX_COND, false);
}

Test(eq, thread_write_wakes_sread_yield)
{
	sread_woken_by_writer(FI_WAIT_YIELD, false);
}

Test(eq, thread_error_wakes_sread)
{
	sread_woken_by_writer(FI_WAIT_UNSPEC, true);
}

Test(eq, getwait_fd_readable_after_write)
{
	struct fid_eq *eq = eq_open(FI_WAIT_FD);
	struct fi_eq_entry e = {.data = 1}, got;
	enum fi_wait_obj obj = FI_WAIT_NONE;
	struct fid *fids[1] = {&eq->fid};
	struct pollfd pfd;
	uint32_t event;
	int fd = -1;

	cr_assert_eq(fi_control(&eq->fid, FI_GETWAITOBJ, &obj), 0);
	cr_assert_eq(obj, FI_WAIT_FD);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	cr_assert_geq(fd, 0);

	/* Nothing queued: trywait allows blocking, the fd is quiet. */
	cr_assert_eq(util_trywait(&fabric.fabric_fid, fids, 1), 0);
	pfd = (struct pollfd){.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 0), 0);

	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0),
		     (ssize_t)sizeof(e));
	pfd.revents = 0;
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "fd not readable after a write");
	cr_assert(pfd.revents & POLLIN);
	cr_assert_eq(util_trywait(&fabric.fabric_fid, fids, 1), -FI_EAGAIN);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0),
		     (ssize_t)sizeof(got));
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, getwait_mutex_cond)
{
	struct fid_eq *eq = eq_open(FI_WAIT_MUTEX_COND);
	struct fi_mutex_cond mc = {0};

	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &mc), 0);
	cr_assert_not_null(mc.mutex);
	cr_assert_not_null(mc.cond);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, bound_objects_keep_it_open)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);

	util_eq_get(util_eq_of(eq));
	cr_assert_eq(fi_close(&eq->fid), -FI_EBUSY);
	util_eq_put(util_eq_of(eq));
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, bad_attrs_and_flags)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_SET};
	struct fid_eq *eq;
	struct fi_eq_entry e = {0};
	uint32_t event;

	cr_assert_eq(util_eq_open(&fabric, &attr, &eq, NULL), -FI_EINVAL);
	eq = eq_open(FI_WAIT_NONE);
	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), FI_PEEK),
		     -FI_EINVAL);
	cr_assert_eq(fi_eq_read(eq, &event, &e, sizeof(e), FI_SEND),
		     -FI_EINVAL);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/* A provider's CM source for the manual-progress tests. */
struct fake_cm {
	struct util_eq *eq;
	struct util_progress progress;
	int calls;
	int ready_at; /* polled source: event appears on this call */
	int pipe[2];  /* fd source: a byte means an event */
};

static struct fake_cm the_cm;

static struct fake_cm *fake_cm_of(struct util_progress *p)
{
	struct fake_cm *cm = container_of(p, struct fake_cm, progress);

	cr_assert_eq(cm, &the_cm);
	return cm;
}

static void polled_progress(struct util_progress *p)
{
	struct fake_cm *cm = fake_cm_of(p);
	struct fi_eq_entry e = {.data = 0xc0};

	if (++cm->calls == cm->ready_at)
		util_eq_write(cm->eq, FI_NOTIFY, &e, sizeof(e), 0);
}

/* Install one of the fake sources on the_cm's EQ. */
static void cm_progress(void (*fn)(struct util_progress *), bool polled)
{
	the_cm.progress.progress = fn;
	the_cm.progress.polled = polled;
	util_eq_set_progress(the_cm.eq, &the_cm.progress);
}

Test(eq, sread_polls_progress_without_fd)
{
	struct fid_eq *eq = eq_open(FI_WAIT_UNSPEC);
	struct fi_eq_entry got = {0};
	uint32_t event;

	the_cm = (struct fake_cm){.eq = util_eq_of(eq), .ready_at = 50};
	cm_progress(polled_progress, true);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0), -FI_EAGAIN);
	cr_assert_eq(the_cm.calls, 1, "read did not run progress");
	cr_assert_eq(fi_eq_sread(eq, &event, &got, sizeof(got), 20000, 0),
		     (ssize_t)sizeof(got));
	cr_assert_eq(got.data, 0xc0);
	cr_assert_geq(the_cm.calls, 50);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

static void fd_progress(struct util_progress *p)
{
	struct fake_cm *cm = fake_cm_of(p);
	struct fi_eq_entry e = {.data = 0xfd};
	char c;

	cm->calls++;
	while (read(cm->pipe[0], &c, 1) == 1)
		util_eq_write(cm->eq, FI_NOTIFY, &e, sizeof(e), 0);
}

static void *pipe_writer(void *p)
{
	struct fake_cm *cm = p;

	usleep(100 * 1000);
	cr_assert_eq(write(cm->pipe[1], "x", 1), 1);
	return NULL;
}

Test(eq, sread_wakes_on_provider_fd)
{
	struct fid_eq *eq = eq_open(FI_WAIT_FD);
	struct fi_eq_entry got = {0};
	pthread_t thread;
	uint64_t start = now_ms();
	uint32_t event;

	the_cm = (struct fake_cm){.eq = util_eq_of(eq)};
	cr_assert_eq(pipe(the_cm.pipe), 0);
	cr_assert_eq(fcntl(the_cm.pipe[0], F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(util_wait_add_fd(util_eq_wait(util_eq_of(eq)),
				      the_cm.pipe[0], POLLIN, NULL),
		     0);
	cm_progress(fd_progress, false);
	cr_assert_eq(pthread_create(&thread, NULL, pipe_writer, &the_cm), 0);
	cr_assert_eq(fi_eq_sread(eq, &event, &got, sizeof(got), 20000, 0),
		     (ssize_t)sizeof(got));
	pthread_join(thread, NULL);
	cr_assert_eq(got.data, 0xfd);
	cr_assert_lt(now_ms() - start, 15000);
	/* Blocked, not spun: a handful of progress rounds at most. */
	cr_assert_lt(the_cm.calls, 20, "%d progress calls", the_cm.calls);
	cr_assert_eq(
	    util_wait_del_fd(util_eq_wait(util_eq_of(eq)), the_cm.pipe[0]), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
	close(the_cm.pipe[0]);
	close(the_cm.pipe[1]);
}

Test(eq, wait_set_wakes_on_write)
{
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_SET};
	struct fid_wait *set;
	struct fid_eq *eq;
	struct writer_arg arg;
	struct fi_eq_entry got = {0};
	pthread_t thread;
	uint64_t start;
	uint32_t event;
	int fd;

	cr_assert_eq(util_wait_open(&fabric.fabric_fid, &wattr, &set), 0);
	attr.wait_set = set;
	cr_assert_eq(util_eq_open(&fabric, &attr, &eq, NULL), 0);
	cr_assert_eq(fi_close(&set->fid), -FI_EBUSY);
	/* The wait object belongs to the set: ask the set for it. */
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_EINVAL);
	cr_assert_eq(fi_wait(set, 0), -FI_ETIMEDOUT);

	arg = (struct writer_arg){util_eq_of(eq), 100, false};
	start = now_ms();
	cr_assert_eq(pthread_create(&thread, NULL, writer, &arg), 0);
	cr_assert_eq(fi_wait(set, 20000), 0);
	pthread_join(thread, NULL);
	cr_assert_lt(now_ms() - start, 15000);
	/* The set reports, the EQ still holds the event. */
	cr_assert_eq(fi_wait(set, 0), 0);
	cr_assert_eq(fi_eq_read(eq, &event, &got, sizeof(got), 0),
		     (ssize_t)sizeof(got));
	cr_assert_eq(got.data, 0xfeed);
	cr_assert_eq(fi_wait(set, 0), -FI_ETIMEDOUT);

	cr_assert_eq(fi_close(&eq->fid), 0);
	cr_assert_eq(fi_close(&set->fid), 0);
}

Test(eq, open_op_takes_the_fabric_fid)
{
	struct fi_eq_attr attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fid_eq *eq = NULL;
	int ctx;

	cr_assert_eq(util_eq_open_op(&fabric.fabric_fid, &attr, &eq, &ctx), 0);
	cr_assert_eq(eq->fid.fclass, FI_CLASS_EQ);
	cr_assert_eq(eq->fid.context, &ctx);
	cr_assert_eq(util_eq_of(eq)->fabric, &fabric);
	cr_assert_eq(util_fabric_fini(&fabric), -FI_EBUSY,
		     "fabric released under an open EQ");
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(eq, trywait_refuses_polled_progress)
{
	struct fid_eq *eq = eq_open(FI_WAIT_FD);
	struct fid *fids[1] = {&eq->fid};

	the_cm = (struct fake_cm){.eq = util_eq_of(eq), .ready_at = -1};
	cr_assert_eq(util_trywait(&fabric.fabric_fid, fids, 1), 0);
	cm_progress(polled_progress, true);
	cr_assert_eq(util_trywait(&fabric.fabric_fid, fids, 1), -FI_EAGAIN,
		     "native wait allowed on a source that cannot wake it");
	util_eq_set_progress(util_eq_of(eq), NULL);
	cr_assert_eq(util_trywait(&fabric.fabric_fid, fids, 1), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

static const char *reject_text(struct fid_eq *eq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	return prov_errno == 28 ? "consumer defined reject" : "other";
}

Test(eq, strerror_default_and_provider)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE);
	char buf[8];

	cr_assert_str_eq(fi_eq_strerror(eq, FI_ETIMEDOUT, NULL, NULL, 0),
			 fi_strerror(FI_ETIMEDOUT));
	cr_assert_eq(fi_eq_strerror(eq, FI_ETIMEDOUT, NULL, buf, sizeof(buf)),
		     buf);
	cr_assert_eq(strncmp(buf, fi_strerror(FI_ETIMEDOUT), sizeof(buf) - 1),
		     0);
	cr_assert_eq(strlen(buf), sizeof(buf) - 1);
	util_eq_of(eq)->strerror = reject_text;
	cr_assert_str_eq(fi_eq_strerror(eq, 28, NULL, NULL, 0),
			 "consumer defined reject");
	cr_assert_eq(fi_close(&eq->fid), 0);
}
