/* SPDX-License-Identifier: BSD-2-Clause */
/* Completion queues (prov/util/util_cq.c). */
#include <criterion/criterion.h>

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "weft/util_cq.h"
#include "weft/util_domain.h"

static struct util_domain domain;
static struct fi_domain_attr domain_attr;
static struct fi_info info;

static void open_domain_rm(enum fi_threading threading,
			   enum fi_resource_mgmt rm)
{
	memset(&domain_attr, 0, sizeof(domain_attr));
	memset(&info, 0, sizeof(info));
	domain_attr.threading = threading;
	domain_attr.resource_mgmt = rm;
	info.domain_attr = &domain_attr;
	cr_assert_eq(util_domain_init(&domain, NULL, &info, NULL), 0);
}

static void open_domain(enum fi_threading threading)
{
	open_domain_rm(threading, FI_RM_UNSPEC);
}

static void setup_safe(void)
{
	open_domain(FI_THREAD_SAFE);
}

/* Without resource management an overflow is the application's fault,
 * and the CQ reports it (FI_EOVERRUN). */
static void setup_rm_off(void)
{
	open_domain_rm(FI_THREAD_SAFE, FI_RM_DISABLED);
}

static void setup_domain(void)
{
	open_domain(FI_THREAD_DOMAIN);
}

static void teardown(void)
{
	cr_assert_eq(util_domain_fini(&domain), 0, "every CQ was closed");
}

TestSuite(cq, .init = setup_safe, .fini = teardown);
TestSuite(cq_domain, .init = setup_domain, .fini = teardown);
TestSuite(cq_rm_off, .init = setup_rm_off, .fini = teardown);

static struct util_cq *open_cq(enum fi_cq_format format, size_t size,
			       enum fi_wait_obj wait_obj)
{
	struct fi_cq_attr attr = {
	    .size = size,
	    .format = format,
	    .wait_obj = wait_obj,
	};
	struct util_cq *cq;

	cr_assert_eq(util_cq_open(&domain, &attr, &cq, &domain), 0);
	return cq;
}

static void close_cq(struct util_cq *cq)
{
	cr_assert_eq(fi_close(&cq->cq_fid.fid), 0);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define CTX(i) ((void *)(uintptr_t)(0x1000 + (i)))

static void write_n(struct util_cq *cq, int first, int n)
{
	for (int i = first; i < first + n; i++)
		cr_assert_eq(util_cq_write(cq, CTX(i), FI_RECV | FI_MSG,
					   (size_t)i, NULL, (uint64_t)i,
					   (uint64_t)i, FI_ADDR_NOTAVAIL),
			     0);
}

/* ---- formats ------------------------------------------------------------ */

Test(cq, format_context)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 8, FI_WAIT_NONE);
	struct fi_cq_entry e[2];

	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 2), -FI_EAGAIN);
	util_cq_write(cq, CTX(1), FI_SEND, 1, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 2), 1);
	cr_assert_eq(e[0].op_context, CTX(1));
	close_cq(cq);
}

Test(cq, format_unspec_is_context)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_UNSPEC, 8, FI_WAIT_NONE);

	cr_assert_eq(cq->format, FI_CQ_FORMAT_CONTEXT);
	cr_assert_eq(cq->entry_size, sizeof(struct fi_cq_entry));
	close_cq(cq);
}

Test(cq, format_msg)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	struct fi_cq_msg_entry e[2];

	util_cq_write(cq, CTX(7), FI_RECV | FI_MSG, 4242, NULL, 0, 0,
		      FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 2), 1);
	cr_assert_eq(e[0].op_context, CTX(7));
	cr_assert_eq(e[0].flags, FI_RECV | FI_MSG);
	cr_assert_eq(e[0].len, 4242);
	close_cq(cq);
}

Test(cq, format_data)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_DATA, 8, FI_WAIT_NONE);
	struct fi_cq_data_entry e[2];
	char buf[4];

	util_cq_write(cq, CTX(3), FI_RECV | FI_REMOTE_CQ_DATA, 17, buf,
		      0xdeadbeefcafeull, 99, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 2), 1);
	cr_assert_eq(e[0].op_context, CTX(3));
	cr_assert_eq(e[0].flags, FI_RECV | FI_REMOTE_CQ_DATA);
	cr_assert_eq(e[0].len, 17);
	cr_assert_eq(e[0].buf, buf);
	cr_assert_eq(e[0].data, 0xdeadbeefcafeull);
	close_cq(cq);
}

Test(cq, format_tagged)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_TAGGED, 8, FI_WAIT_NONE);
	struct fi_cq_tagged_entry e[3];
	char buf[4];

	util_cq_write(cq, CTX(5), FI_RECV | FI_TAGGED, 33, buf, 7,
		      0x123456789abcdefull, FI_ADDR_NOTAVAIL);
	util_cq_write(cq, CTX(6), FI_SEND | FI_TAGGED, 0, NULL, 0, 0,
		      FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 3), 2);
	cr_assert_eq(e[0].op_context, CTX(5));
	cr_assert_eq(e[0].flags, FI_RECV | FI_TAGGED);
	cr_assert_eq(e[0].len, 33);
	cr_assert_eq(e[0].buf, buf);
	cr_assert_eq(e[0].data, 7);
	cr_assert_eq(e[0].tag, 0x123456789abcdefull);
	cr_assert_eq(e[1].op_context, CTX(6));
	cr_assert_eq(e[1].flags, FI_SEND | FI_TAGGED);
	close_cq(cq);
}

Test(cq, bad_attrs)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_MSG};
	struct util_cq *cq;

	attr.flags = FI_AFFINITY;
	attr.signaling_vector = 3;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), 0,
		     "FI_AFFINITY is a hint");
	close_cq(cq);
	attr.flags = FI_SEND;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), -FI_EBADFLAGS);
	attr.flags = 0;
	attr.format = 99;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), -FI_EINVAL);
	attr.format = FI_CQ_FORMAT_MSG;
	attr.wait_obj = FI_WAIT_SET;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), -FI_EINVAL,
		     "FI_WAIT_SET needs a wait set");
	attr.wait_obj = FI_WAIT_NONE;
	attr.wait_cond = 7;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_cond = FI_CQ_COND_NONE;
	attr.size = 5;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), 0);
	cr_assert_eq(util_cq_capacity(cq), 8, "rounded to a power of two");
	close_cq(cq);
	cr_assert_eq(util_cq_open(&domain, NULL, &cq, NULL), 0);
	cr_assert_eq(util_cq_capacity(cq), UTIL_CQ_DEFAULT_SIZE);
	close_cq(cq);
}

Test(cq, open_op_and_context)
{
	struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_DATA};
	struct fid_cq *cq_fid;
	int ctx;

	cr_assert_eq(util_cq_open_op(&domain.domain_fid, &attr, &cq_fid, &ctx),
		     0);
	cr_assert_eq(cq_fid->fid.fclass, FI_CLASS_CQ);
	cr_assert_eq(cq_fid->fid.context, &ctx);
	cr_assert_eq(util_domain_fini(&domain), -FI_EBUSY,
		     "the CQ holds the domain");
	cr_assert_eq(fi_close(&cq_fid->fid), 0);
}

/* ---- order, src_addr ---------------------------------------------------- */

Test(cq, readfrom_src_addr)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	struct fi_cq_msg_entry e[4];
	fi_addr_t src[4] = {0};

	util_cq_write(cq, CTX(0), FI_RECV, 1, NULL, 0, 0, 42);
	util_cq_write(cq, CTX(1), FI_RECV, 1, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	util_cq_write(cq, CTX(2), FI_RECV, 1, NULL, 0, 0, 7);
	cr_assert_eq(fi_cq_readfrom(&cq->cq_fid, e, 4, src), 3);
	cr_assert_eq(src[0], 42);
	cr_assert_eq(src[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(src[2], 7);
	cr_assert_eq(e[2].op_context, CTX(2));
	close_cq(cq);
}

Test(cq, order_across_wraparound)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_DATA, 8, FI_WAIT_NONE);
	struct fi_cq_data_entry e[5];
	int next_write = 0, next_read = 0;
	ssize_t ret;

	while (next_read < 1000) {
		int room = (int)util_cq_writer_free(cq);

		if (room > 3)
			room = 3;
		write_n(cq, next_write, room);
		next_write += room;
		ret = fi_cq_read(&cq->cq_fid, e, 5);
		cr_assert_gt(ret, 0);
		for (int i = 0; i < ret; i++, next_read++) {
			cr_assert_eq(e[i].op_context, CTX(next_read));
			cr_assert_eq(e[i].data, (uint64_t)next_read);
		}
	}
	cr_assert_eq(atomic_load(&cq->overrun_pending), false);
	close_cq(cq);
}

Test(cq, count_zero_drives_progress_only)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 8, FI_WAIT_NONE);
	struct fi_cq_entry e;

	cr_assert_eq(fi_cq_read(&cq->cq_fid, NULL, 0), -FI_EAGAIN);
	write_n(cq, 0, 1);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, NULL, 0), 0);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), 1, "entry not consumed");
	close_cq(cq);
}

/* ---- errors ------------------------------------------------------------- */

static void write_error(struct util_cq *cq, void *ctx, int err, int prov_errno,
			const void *data, size_t size)
{
	struct fi_cq_err_entry e = {
	    .op_context = ctx,
	    .flags = FI_RECV,
	    .len = 3,
	    .tag = 11,
	    .olen = 5,
	    .err = err,
	    .prov_errno = prov_errno,
	    .err_data = (void *)data,
	    .err_data_size = size,
	};

	cr_assert_eq(util_cq_write_err(cq, &e), 0);
}

Test(cq, error_entries_in_order)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_TAGGED, 16, FI_WAIT_NONE);
	struct fi_cq_tagged_entry e[8];
	struct fi_cq_err_entry err = {0};

	write_n(cq, 0, 2);
	write_error(cq, CTX(100), FI_ETRUNC, -12, NULL, 0);
	write_n(cq, 2, 1);

	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), -FI_EAGAIN,
		     "the next entry is not an error");
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), 2);
	cr_assert_eq(e[1].op_context, CTX(1));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), -FI_EAVAIL);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), -FI_EAVAIL,
		     "reading does not skip the error");
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.op_context, CTX(100));
	cr_assert_eq(err.err, FI_ETRUNC);
	cr_assert_eq(err.prov_errno, -12);
	cr_assert_eq(err.flags, FI_RECV);
	cr_assert_eq(err.len, 3);
	cr_assert_eq(err.tag, 11);
	cr_assert_eq(err.olen, 5);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), 1);
	cr_assert_eq(e[0].op_context, CTX(2));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), -FI_EAGAIN);
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), -FI_EAGAIN);
	close_cq(cq);
}

Test(cq, error_rejects_zero_err)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	struct fi_cq_err_entry e = {.op_context = CTX(1)};

	cr_assert_eq(util_cq_write_err(cq, &e), -FI_EINVAL);
	close_cq(cq);
}

Test(cq, err_data_copied_into_user_buffer)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	const char blob[] = "provider detail";
	struct fi_cq_err_entry err = {0};
	char user[6];

	write_error(cq, CTX(1), FI_EIO, 1, blob, sizeof(blob));
	write_error(cq, CTX(2), FI_EIO, 2, blob, sizeof(blob));

	memset(user, 0, sizeof(user));
	err.err_data = user;
	err.err_data_size = sizeof(user);
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.err_data, user, "the caller's buffer is kept");
	cr_assert_eq(err.err_data_size, sizeof(user), "truncated copy");
	cr_assert_eq(memcmp(user, blob, sizeof(user)), 0);

	/* err_data_size 0: the CQ lends its own buffer. */
	memset(&err, 0, sizeof(err));
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.prov_errno, 2);
	cr_assert_not_null(err.err_data);
	cr_assert_eq(err.err_data_size, sizeof(blob));
	cr_assert_str_eq(err.err_data, blob);
	close_cq(cq);
}

Test(cq, err_data_before_1_5)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	const char blob[] = "old api";
	struct fi_cq_err_entry err;
	char user[32];

	cq->api_version = FI_VERSION(1, 4);
	write_error(cq, CTX(1), FI_EIO, 1, blob, sizeof(blob));
	memset(&err, 0, sizeof(err));
	err.err_data = user;
	/* Past the end of a 1.4 entry: must stay untouched. */
	err.err_data_size = 0x5555;
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_neq(err.err_data, user, "before 1.5 input is ignored");
	cr_assert_str_eq(err.err_data, blob);
	cr_assert_eq(err.err_data_size, 0x5555);
	close_cq(cq);
}

/*
 * 1.20 appended src_addr to fi_cq_err_entry: a 1.20 caller gets
 * FI_ADDR_NOTAVAIL there (weft has no FI_AV_AUTH_KEY); the entry of an
 * older caller ends before it and the bytes past it stay as they were.
 */
Test(cq, err_src_addr_from_1_20)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	struct {
		struct fi_cq_err_entry e; /* 1.17 headers: ends at 80 */
		fi_addr_t src_addr;	  /* where 1.20 put it */
	} err;

	cr_assert_eq(sizeof(err.e), 80);
	cq->api_version = FI_VERSION(1, 17);
	write_error(cq, CTX(1), FI_EIO, 1, NULL, 0);
	memset(&err, 0, sizeof(err));
	err.src_addr = 0x5555;
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err.e, 0), 1);
	cr_assert_eq(err.src_addr, 0x5555, "past a 1.17 entry: untouched");

	cq->api_version = FI_VERSION(1, 20);
	write_error(cq, CTX(2), FI_EIO, 1, NULL, 0);
	memset(&err, 0, sizeof(err));
	err.src_addr = 0x5555;
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err.e, 0), 1);
	cr_assert_eq(err.e.op_context, CTX(2));
	cr_assert_eq(err.src_addr, FI_ADDR_NOTAVAIL);
	close_cq(cq);
}

Test(cq, strerror)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	char buf[64];
	const char *s;

	s = fi_cq_strerror(&cq->cq_fid, FI_ETRUNC, NULL, buf, sizeof(buf));
	cr_assert_eq(s, buf);
	cr_assert_str_eq(buf, fi_strerror(FI_ETRUNC));
	s = fi_cq_strerror(&cq->cq_fid, FI_EIO, NULL, NULL, 0);
	cr_assert_str_eq(s, fi_strerror(FI_EIO));
	close_cq(cq);
}

/* ---- overrun and reservations ------------------------------------------- */

Test(cq_rm_off, overrun_keeps_everything_then_reports)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_DATA, 4, FI_WAIT_NONE);
	struct fi_cq_data_entry e[3];
	struct fi_cq_err_entry err = {0};
	int next = 0;
	ssize_t ret;

	write_n(cq, 0, 10);
	cr_assert_eq(util_cq_pending(cq), 11, "10 entries + the report");
	cr_assert_eq(util_cq_reserve(cq, 1), -FI_EAGAIN,
		     "no promises while overrun");
	while ((ret = fi_cq_read(&cq->cq_fid, e, 3)) > 0) {
		for (int i = 0; i < ret; i++, next++)
			cr_assert_eq(e[i].data, (uint64_t)next);
		/* Writes during the drain stay behind the parked ones. */
		if (next == 6)
			write_n(cq, 10, 2);
	}
	cr_assert_eq(next, 12, "nothing lost, nothing duplicated");
	cr_assert_eq(ret, -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.err, FI_EOVERRUN);
	cr_assert_geq(err.data, 6, "parked entries counted");
	cr_assert_eq(err.olen, 0, "none lost");
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 3), -FI_EAGAIN);
	/* Back to normal. */
	write_n(cq, 0, 4);
	cr_assert_eq(atomic_load(&cq->overflow_count), 0);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 3), 3);
	close_cq(cq);
}

Test(cq_rm_off, overrun_keeps_error_order)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 2, FI_WAIT_NONE);
	struct fi_cq_entry e[8];
	struct fi_cq_err_entry err = {0};

	write_n(cq, 0, 3);
	write_error(cq, CTX(50), FI_EIO, 0, NULL, 0);
	write_n(cq, 3, 1);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), 3);
	cr_assert_eq(e[2].op_context, CTX(2));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.op_context, CTX(50));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), 1);
	cr_assert_eq(e[0].op_context, CTX(3));
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), -FI_EAVAIL);
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
	cr_assert_eq(err.err, FI_EOVERRUN);
	close_cq(cq);
}

Test(cq, reservations_push_back)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 4, FI_WAIT_NONE);
	struct fi_cq_entry e[4];

	cr_assert_eq(util_cq_reserve(cq, 3), 0);
	cr_assert_eq(util_cq_reserve(cq, 2), -FI_EAGAIN);
	cr_assert_eq(util_cq_reserve(cq, 1), 0);
	cr_assert_eq(util_cq_reserve(cq, 1), -FI_EAGAIN, "all promised");
	util_cq_unreserve(cq, 1);
	cr_assert_eq(util_cq_reserve(cq, 1), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(util_cq_write_reserved(cq, CTX(i), 0, 0, NULL, 0,
						    0, FI_ADDR_NOTAVAIL),
			     0);
	cr_assert_eq(atomic_load(&cq->overrun_pending), false,
		     "reserved writes never overrun");
	cr_assert_eq(util_cq_reserve(cq, 1), -FI_EAGAIN, "ring full");
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 2), 2);
	cr_assert_eq(util_cq_reserve(cq, 2), 0, "freed by the reader");
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 4), 2);
	cr_assert_eq(e[1].op_context, CTX(3));
	util_cq_unreserve(cq, 2);
	close_cq(cq);
}

Test(cq_rm_off, unsolicited_does_not_take_promised_slots)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 2, FI_WAIT_NONE);
	struct fi_cq_entry e[4];

	cr_assert_eq(util_cq_reserve(cq, 1), 0);
	write_n(cq, 0, 2); /* one fits, one parks */
	cr_assert_eq(atomic_load(&cq->overrun_pending), true);
	cr_assert_eq(util_cq_write_reserved(cq, CTX(9), 0, 0, NULL, 0, 0,
					    FI_ADDR_NOTAVAIL),
		     0);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 4), 3);
	cr_assert_eq(e[0].op_context, CTX(0));
	cr_assert_eq(e[1].op_context, CTX(1));
	cr_assert_eq(e[2].op_context, CTX(9), "order kept");
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 4), -FI_EAVAIL, "overrun");
	close_cq(cq);
}

/*
 * Under resource management (FI_RM_UNSPEC means the provider's default,
 * enabled) the parking is hidden: every entry comes out in order and no
 * FI_EOVERRUN report follows, which an application would take for the
 * failure of an operation of its own (it has no op_context).  An MPI
 * library posting more receives than its CQ has slots does just that.
 */
Test(cq, overflow_hidden_under_resource_management)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_DATA, 4, FI_WAIT_NONE);
	struct fi_cq_data_entry e[3];
	struct fi_cq_err_entry err = {0};
	int next = 0;
	ssize_t ret;

	cr_assert_eq(util_cq_reserve(cq, 1), 0);
	write_n(cq, 0, 10);
	cr_assert_eq(atomic_load(&cq->overrun_pending), false);
	cr_assert_eq(util_cq_pending(cq), 10, "10 entries, no report");
	cr_assert_eq(util_cq_reserve(cq, 1), -FI_EAGAIN,
		     "no promises while entries are parked");
	cr_assert_eq(util_cq_write_reserved(cq, NULL, 0, 0, NULL, 10, 0,
					    FI_ADDR_NOTAVAIL),
		     0);
	while ((ret = fi_cq_read(&cq->cq_fid, e, 3)) > 0) {
		for (int i = 0; i < ret; i++, next++)
			cr_assert_eq(e[i].data, (uint64_t)next);
		if (next == 6)
			write_n(cq, 11, 2);
	}
	cr_assert_eq(next, 13, "nothing lost, nothing duplicated");
	cr_assert_eq(ret, -FI_EAGAIN, "no report owed");
	cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), -FI_EAGAIN);
	cr_assert_eq(util_cq_reserve(cq, 1), 0, "promises again");
	util_cq_unreserve(cq, 1);
	close_cq(cq);
}

/* ---- progress and binding ---------------------------------------------- */

struct fake_ep {
	struct util_progress progress;
	struct util_cq *cq;
	int calls;
	int to_complete;
};

static void fake_ep_progress(struct util_progress *p)
{
	struct fake_ep *ep = container_of(p, struct fake_ep, progress);

	ep->calls++;
	if (ep->to_complete) {
		ep->to_complete--;
		util_cq_write(ep->cq, CTX(ep->calls), FI_SEND, 0, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
	}
}

Test(cq, manual_progress_and_bind_count)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 8, FI_WAIT_NONE);
	struct fake_ep ep = {.cq = cq, .to_complete = 1};
	struct fi_cq_entry e;

	ep.progress.progress = fake_ep_progress;
	cr_assert_eq(util_cq_bind(cq, &ep.progress), 0);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), 1,
		     "progress ran before the look");
	cr_assert_eq(ep.calls, 1);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), -FI_EAGAIN);
	cr_assert_eq(ep.calls, 2);
	cr_assert_eq(fi_close(&cq->cq_fid.fid), -FI_EBUSY);
	util_cq_unbind(cq, &ep.progress);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), -FI_EAGAIN);
	cr_assert_eq(ep.calls, 2, "unbound");
	cr_assert_eq(util_cq_bind(cq, NULL), 0);
	cr_assert_eq(fi_close(&cq->cq_fid.fid), -FI_EBUSY);
	util_cq_unbind(cq, NULL);
	close_cq(cq);
}

Test(cq, sread_polls_polled_progress)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 8, FI_WAIT_FD);
	struct fake_ep ep = {.cq = cq};
	struct fi_cq_entry e;

	ep.progress.progress = fake_ep_progress;
	ep.progress.polled = true;
	util_cq_bind(cq, &ep.progress);
	ep.to_complete = 0;
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, &e, 1, NULL, 30), -FI_EAGAIN);
	cr_assert_gt(ep.calls, 1, "polled while waiting");
	/* Completes on the next progress call: sread must find it. */
	ep.calls = 0;
	ep.to_complete = 1;
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, &e, 1, NULL, 10000), 1);
	util_cq_unbind(cq, &ep.progress);
	close_cq(cq);
}

struct slow_ep {
	struct util_progress progress;
	struct util_cq *cq;
	int calls;
	int complete_at;
};

static void slow_ep_progress(struct util_progress *p)
{
	struct slow_ep *ep = container_of(p, struct slow_ep, progress);

	if (++ep->calls == ep->complete_at)
		util_cq_write(ep->cq, CTX(ep->calls), FI_SEND, 0, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
}

Test(cq, polled_progress_on_wait_set_and_trywait)
{
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_FD};
	struct fi_cq_attr attr = {
	    .format = FI_CQ_FORMAT_CONTEXT,
	    .wait_obj = FI_WAIT_SET,
	};
	struct slow_ep ep = {.complete_at = 5};
	struct util_cq *cq, *fdcq;
	struct fid *fids[1];
	struct fi_cq_entry e;
	struct fid_wait *set;

	cr_assert_eq(util_wait_open(NULL, &wattr, &set), 0);
	attr.wait_set = set;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), 0);
	ep.cq = cq;
	ep.progress.progress = slow_ep_progress;
	ep.progress.polled = true;
	util_cq_bind(cq, &ep.progress);
	/* Only polling makes the completion appear: fi_wait must poll. */
	cr_assert_eq(fi_wait(set, 10000), 0);
	cr_assert_geq(ep.calls, 5);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), 1);
	fids[0] = &set->fid;
	cr_assert_eq(util_trywait(NULL, fids, 1), -FI_EAGAIN,
		     "a native wait could hang on a polled source");
	util_cq_unbind(cq, &ep.progress);
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	close_cq(cq);
	cr_assert_eq(fi_close(&set->fid), 0);

	fdcq = open_cq(FI_CQ_FORMAT_CONTEXT, 8, FI_WAIT_FD);
	ep.cq = fdcq;
	ep.calls = 0;
	ep.complete_at = 1000000;
	util_cq_bind(fdcq, &ep.progress);
	fids[0] = &fdcq->cq_fid.fid;
	cr_assert_eq(util_trywait(NULL, fids, 1), -FI_EAGAIN);
	util_cq_unbind(fdcq, &ep.progress);
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	close_cq(fdcq);
}

/* ---- blocking reads ----------------------------------------------------- */

struct writer_arg {
	struct util_cq *cq;
	int delay_ms;
	int count;
};

static void *delayed_writer(void *p)
{
	struct writer_arg *w = p;

	usleep(w->delay_ms * 1000);
	for (int i = 0; i < w->count; i++)
		util_cq_write(w->cq, CTX(i), FI_RECV, (size_t)i, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
	return NULL;
}

static void check_sread(enum fi_wait_obj wait_obj)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 64, wait_obj);
	struct writer_arg w = {.cq = cq, .delay_ms = 50, .count = 1};
	struct fi_cq_msg_entry e[4];
	pthread_t thr;
	double t0, dt;

	t0 = now_ms();
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, e, 4, NULL, 0), -FI_EAGAIN);
	t0 = now_ms();
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, e, 4, NULL, 100), -FI_EAGAIN);
	dt = now_ms() - t0;
	cr_assert_geq(dt, 90.0, "timeout honoured (%.1f ms)", dt);

	cr_assert_eq(pthread_create(&thr, NULL, delayed_writer, &w), 0);
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, e, 4, NULL, -1), 1);
	cr_assert_eq(e[0].op_context, CTX(0));
	pthread_join(thr, NULL);

	write_n(cq, 0, 2);
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, e, 4, NULL, 1000), 2,
		     "available entries return at once");
	write_error(cq, CTX(9), FI_EIO, 0, NULL, 0);
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, e, 4, NULL, 1000), -FI_EAVAIL);
	close_cq(cq);
}

Test(cq, sread_fd)
{
	check_sread(FI_WAIT_FD);
}

Test(cq, sread_unspec)
{
	check_sread(FI_WAIT_UNSPEC);
}

Test(cq, sread_pollfd)
{
	check_sread(FI_WAIT_POLLFD);
}

Test(cq, sread_mutex_cond)
{
	check_sread(FI_WAIT_MUTEX_COND);
}

Test(cq, sread_yield)
{
	check_sread(FI_WAIT_YIELD);
}

Test(cq, sread_without_wait_object)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_NONE);
	struct fi_cq_msg_entry e;
	int fd;

	cr_assert_eq(fi_cq_sread(&cq->cq_fid, &e, 1, NULL, 0), -FI_EINVAL);
	cr_assert_eq(fi_cq_signal(&cq->cq_fid), -FI_EINVAL);
	cr_assert_eq(fi_control(&cq->cq_fid.fid, FI_GETWAIT, &fd), -FI_EINVAL);
	close_cq(cq);
}

struct sread_arg {
	struct util_cq *cq;
	ssize_t ret;
	double elapsed;
};

static void *blocked_reader(void *p)
{
	struct sread_arg *a = p;
	struct fi_cq_msg_entry e;
	double t0 = now_ms();

	/* Long but finite, so that a lost wake-up fails instead of hanging. */
	a->ret = fi_cq_sread(&a->cq->cq_fid, &e, 1, NULL, 20000);
	a->elapsed = now_ms() - t0;
	return NULL;
}

static void check_signal(enum fi_wait_obj wait_obj)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, wait_obj);
	struct sread_arg a = {.cq = cq, .ret = 1};
	pthread_t thr;

	cr_assert_eq(pthread_create(&thr, NULL, blocked_reader, &a), 0);
	usleep(50 * 1000);
	cr_assert_eq(fi_cq_signal(&cq->cq_fid), 0);
	pthread_join(thr, NULL);
	cr_assert_eq(a.ret, -FI_EAGAIN, "woken by fi_cq_signal: %zd", a.ret);
	cr_assert_lt(a.elapsed, 15000.0, "woken, not timed out");
	close_cq(cq);
}

Test(cq, signal_wakes_sread_fd)
{
	check_signal(FI_WAIT_FD);
}

Test(cq, signal_wakes_sread_mutex_cond)
{
	check_signal(FI_WAIT_MUTEX_COND);
}

Test(cq, signal_wakes_sread_yield)
{
	check_signal(FI_WAIT_YIELD);
}

Test(cq, threshold)
{
	struct fi_cq_attr attr = {
	    .size = 16,
	    .format = FI_CQ_FORMAT_CONTEXT,
	    .wait_obj = FI_WAIT_FD,
	    .wait_cond = FI_CQ_COND_THRESHOLD,
	};
	struct writer_arg w = {.delay_ms = 30, .count = 3};
	struct fi_cq_entry e[8];
	size_t threshold = 4;
	struct util_cq *cq;
	pthread_t thr;
	double t0;

	cr_assert_eq(util_cq_open(&domain, &attr, &cq, NULL), 0);
	w.cq = cq;
	write_n(cq, 0, 1);
	/* One entry, threshold 4: waits for the timeout, then returns it. */
	t0 = now_ms();
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, e, 8, &threshold, 60), 1);
	cr_assert_geq(now_ms() - t0, 50.0);
	/* Four entries arriving: returns them all. */
	write_n(cq, 0, 1);
	cr_assert_eq(pthread_create(&thr, NULL, delayed_writer, &w), 0);
	cr_assert_eq(fi_cq_sread(&cq->cq_fid, e, 8, &threshold, 10000), 4);
	pthread_join(thr, NULL);
	close_cq(cq);
}

/* ---- FI_GETWAIT, trywait ------------------------------------------------ */

Test(cq, getwait_fd_readable_after_write)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_MSG, 8, FI_WAIT_FD);
	struct fid *fids[1] = {&cq->cq_fid.fid};
	struct fi_cq_msg_entry e;
	struct pollfd pfd = {.events = POLLIN};
	enum fi_wait_obj obj;

	cr_assert_eq(fi_control(&cq->cq_fid.fid, FI_GETWAITOBJ, &obj), 0);
	cr_assert_eq(obj, FI_WAIT_FD);
	cr_assert_eq(fi_control(&cq->cq_fid.fid, FI_GETWAIT, &pfd.fd), 0);
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	write_n(cq, 0, 1);
	cr_assert_eq(poll(&pfd, 1, 1000), 1, "fd readable after a completion");
	cr_assert_eq(util_trywait(NULL, fids, 1), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, &e, 1), 1);
	cr_assert_eq(util_trywait(NULL, fids, 1), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	write_error(cq, CTX(1), FI_EIO, 0, NULL, 0);
	cr_assert_eq(poll(&pfd, 1, 1000), 1, "errors signal too");
	close_cq(cq);
}

Test(cq, cq_on_wait_set)
{
	struct fi_wait_attr wattr = {.wait_obj = FI_WAIT_FD};
	struct fi_cq_attr attr = {
	    .format = FI_CQ_FORMAT_MSG,
	    .wait_obj = FI_WAIT_SET,
	};
	struct writer_arg w = {.delay_ms = 40, .count = 1};
	struct util_cq *cq1, *cq2;
	struct fi_cq_msg_entry e;
	struct fid_wait *set;
	pthread_t thr;
	int fd;

	cr_assert_eq(util_wait_open(NULL, &wattr, &set), 0);
	attr.wait_set = set;
	cr_assert_eq(util_cq_open(&domain, &attr, &cq1, NULL), 0);
	cr_assert_eq(util_cq_open(&domain, &attr, &cq2, NULL), 0);
	cr_assert_eq(fi_cq_sread(&cq1->cq_fid, &e, 1, NULL, 0), -FI_EINVAL);
	cr_assert_eq(fi_control(&cq1->cq_fid.fid, FI_GETWAIT, &fd), -FI_EINVAL);
	cr_assert_eq(fi_wait(set, 20), -FI_ETIMEDOUT);

	w.cq = cq2;
	cr_assert_eq(pthread_create(&thr, NULL, delayed_writer, &w), 0);
	cr_assert_eq(fi_wait(set, 10000), 0);
	pthread_join(thr, NULL);
	cr_assert_eq(fi_cq_read(&cq1->cq_fid, &e, 1), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(&cq2->cq_fid, &e, 1), 1);
	cr_assert_eq(fi_close(&set->fid), -FI_EBUSY);
	close_cq(cq1);
	close_cq(cq2);
	cr_assert_eq(fi_close(&set->fid), 0);
}

/* ---- producer / consumer stress ----------------------------------------- */

#define STRESS_N 200000

struct stress {
	struct util_cq *cq;
	bool reserve;
};

static void *stress_writer(void *p)
{
	struct stress *s = p;

	for (int i = 0; i < STRESS_N; i++) {
		if (s->reserve) {
			while (util_cq_reserve(s->cq, 1) == -FI_EAGAIN)
				sched_yield();
			util_cq_write_reserved(s->cq, CTX(i), FI_RECV,
					       (size_t)i, NULL, (uint64_t)i,
					       ~(uint64_t)i, (fi_addr_t)i);
		} else {
			while (!util_cq_writer_free(s->cq))
				sched_yield();
			util_cq_write(s->cq, CTX(i), FI_RECV, (size_t)i, NULL,
				      (uint64_t)i, ~(uint64_t)i, (fi_addr_t)i);
		}
	}
	return NULL;
}

static void run_stress(enum fi_wait_obj wait_obj, bool reserve, bool blocking)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_TAGGED, 64, wait_obj);
	struct stress s = {.cq = cq, .reserve = reserve};
	struct fi_cq_tagged_entry e[16];
	fi_addr_t src[16];
	pthread_t thr;
	int next = 0;
	ssize_t ret;

	cr_assert_eq(pthread_create(&thr, NULL, stress_writer, &s), 0);
	while (next < STRESS_N) {
		if (blocking)
			ret = fi_cq_sreadfrom(&cq->cq_fid, e, 16, src, NULL,
					      10000);
		else
			ret = fi_cq_readfrom(&cq->cq_fid, e, 16, src);
		if (ret == -FI_EAGAIN) {
			cr_assert(!blocking, "sread timed out at %d", next);
			continue;
		}
		cr_assert_gt(ret, 0, "read failed: %zd", ret);
		for (int i = 0; i < ret; i++, next++) {
			if (e[i].op_context != CTX(next) ||
			    e[i].data != (uint64_t)next ||
			    e[i].tag != ~(uint64_t)next ||
			    e[i].len != (size_t)next ||
			    src[i] != (fi_addr_t)next)
				cr_assert_fail(
				    "entry %d out of order or corrupt", next);
		}
	}
	pthread_join(thr, NULL);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 16), -FI_EAGAIN,
		     "no duplicates");
	cr_assert_eq(atomic_load(&cq->overrun_pending), false);
	close_cq(cq);
}

Test(cq, stress_polling_reserved)
{
	run_stress(FI_WAIT_NONE, true, false);
}

Test(cq, stress_polling_unsolicited)
{
	run_stress(FI_WAIT_NONE, false, false);
}

Test(cq, stress_sread_fd)
{
	run_stress(FI_WAIT_FD, true, true);
}

Test(cq, stress_sread_mutex_cond)
{
	run_stress(FI_WAIT_MUTEX_COND, false, true);
}

Test(cq_domain, stress_no_lock)
{
	cr_assert_eq(domain.threading, FI_THREAD_DOMAIN);
	run_stress(FI_WAIT_NONE, true, false);
}

Test(cq_domain, stress_sread_yield)
{
	run_stress(FI_WAIT_YIELD, true, true);
}

static void *flood_writer(void *p)
{
	struct stress *s = p;

	for (int i = 0; i < STRESS_N; i++) {
		/* Mix promised and unsolicited completions, never waiting. */
		if ((i & 7) == 0 && util_cq_reserve(s->cq, 1) == 0)
			util_cq_write_reserved(s->cq, CTX(i), FI_RECV,
					       (size_t)i, NULL, (uint64_t)i,
					       ~(uint64_t)i, (fi_addr_t)i);
		else
			cr_assert_eq(util_cq_write(s->cq, CTX(i), FI_RECV,
						   (size_t)i, NULL, (uint64_t)i,
						   ~(uint64_t)i, (fi_addr_t)i),
				     0);
	}
	return NULL;
}

Test(cq_rm_off, stress_overflow_keeps_order)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_TAGGED, 16, FI_WAIT_NONE);
	struct stress s = {.cq = cq};
	struct fi_cq_tagged_entry e[7];
	struct fi_cq_err_entry err;
	uint64_t parked = 0;
	int next = 0, reports = 0;
	pthread_t thr;
	ssize_t ret;

	cr_assert_eq(pthread_create(&thr, NULL, flood_writer, &s), 0);
	while (next < STRESS_N) {
		ret = fi_cq_read(&cq->cq_fid, e, 7);
		if (ret == -FI_EAGAIN)
			continue;
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
			cr_assert_eq(err.err, FI_EOVERRUN);
			cr_assert_eq(err.olen, 0);
			parked += err.data;
			reports++;
			continue;
		}
		cr_assert_gt(ret, 0, "read failed: %zd", ret);
		for (int i = 0; i < ret; i++, next++) {
			if (e[i].op_context != CTX(next) ||
			    e[i].tag != ~(uint64_t)next)
				cr_assert_fail("entry %d out of order", next);
		}
	}
	pthread_join(thr, NULL);
	while ((ret = fi_cq_read(&cq->cq_fid, e, 7)) == -FI_EAVAIL) {
		cr_assert_eq(fi_cq_readerr(&cq->cq_fid, &err, 0), 1);
		parked += err.data;
		reports++;
	}
	cr_assert_eq(ret, -FI_EAGAIN, "no duplicates");
	cr_assert_gt(reports, 0, "a flood into 16 slots overran");
	cr_assert_leq(parked, STRESS_N);
	close_cq(cq);
}

struct multi_writer {
	struct util_cq *cq;
	int id;
};

#define MULTI_N 50000

static void *locked_writer(void *p)
{
	struct multi_writer *w = p;

	for (int i = 0; i < MULTI_N; i++) {
		util_cq_writer_lock(w->cq);
		while (util_cq_reserve(w->cq, 1)) {
			util_cq_writer_unlock(w->cq);
			sched_yield();
			util_cq_writer_lock(w->cq);
		}
		util_cq_write_reserved(w->cq, NULL, 0, 0, NULL, (uint64_t)i,
				       (uint64_t)w->id, FI_ADDR_NOTAVAIL);
		util_cq_writer_unlock(w->cq);
	}
	return NULL;
}

Test(cq, two_writers_under_the_writer_lock)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_TAGGED, 32, FI_WAIT_NONE);
	struct multi_writer w[2] = {{cq, 0}, {cq, 1}};
	struct fi_cq_tagged_entry e[8];
	uint64_t next[2] = {0, 0};
	pthread_t thr[2];
	ssize_t ret;

	cr_assert(cq->write_lock.needed, "FI_THREAD_SAFE locks writers");
	for (int i = 0; i < 2; i++)
		cr_assert_eq(
		    pthread_create(&thr[i], NULL, locked_writer, &w[i]), 0);
	while (next[0] + next[1] < 2 * MULTI_N) {
		ret = fi_cq_read(&cq->cq_fid, e, 8);
		if (ret == -FI_EAGAIN)
			continue;
		cr_assert_gt(ret, 0);
		for (int i = 0; i < ret; i++) {
			cr_assert_lt(e[i].tag, 2);
			if (e[i].data != next[e[i].tag])
				cr_assert_fail("writer %d: got %d, want %d",
					       (int)e[i].tag, (int)e[i].data,
					       (int)next[e[i].tag]);
			next[e[i].tag]++;
		}
	}
	for (int i = 0; i < 2; i++)
		pthread_join(thr[i], NULL);
	cr_assert_eq(fi_cq_read(&cq->cq_fid, e, 8), -FI_EAGAIN);
	cr_assert_eq(atomic_load(&cq->overrun_pending), false);
	close_cq(cq);
}

Test(cq_domain, no_locks_under_thread_domain)
{
	struct util_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT, 8, FI_WAIT_FD);

	cr_assert_not(cq->lock.needed);
	cr_assert_not(cq->write_lock.needed);
	close_cq(cq);
}
