/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the functional tests, on top of fabtests/common/ft.h.
 *
 * ft.h's setup fits the benchmarks: one endpoint, fixed CQ format, enabled
 * before the program sees it.  The functional tests need other things (a
 * tagged CQ format, options set before fi_enable, counters with selective
 * completion, several endpoints per process, endpoints opened in child
 * processes), so they set up their own endpoints here and keep from ft.h
 * the option parsing, the side channel, the watchdog and the data pattern.
 *
 * Completions are read into a backlog per CQ, so that driving progress while
 * an operation is retried never loses a completion the test checks later.
 */
#ifndef FN_H
#define FN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft.h"

#define FN_BACKLOG 1024

struct fn_comp {
	int err;				/* 0, or the positive FI_Exxx */
	struct fi_cq_tagged_entry ent;		/* valid when !err */
	struct fi_cq_err_entry errent;		/* valid when err */
};

struct fn_cq {
	struct fid_cq *cq;
	struct fn_comp q[FN_BACKLOG];
	unsigned head, tail;
};

/* What a test asks of fn_setup. */
struct fn_cfg {
	uint64_t caps;		/* required */
	uint64_t opt_caps;	/* used when both peers get them */
	bool cq_data;		/* requires cq_data_size >= 4 */
	bool counters;		/* counters, CQs with FI_SELECTIVE_COMPLETION */
	size_t buf_size;	/* registered buffer (default 1 MiB) */
	/* MSG client: the server's listening address */
	const void *dest_addr;
	size_t dest_len;
	uint32_t addr_format;
	/*
	 * Endpoint options, set right after fi_enable (the man page allows it
	 * for receives posted afterwards; Debian's 1.17 shm crashes on
	 * FI_OPT_MIN_MULTI_RECV before fi_enable).  May return -FI_ENODATA.
	 */
	int (*set_opts)(struct fid_ep *ep);
};

struct fn_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fn_cq tx, rx;
	struct fid_cntr *txcntr, *rxcntr;
	struct fid_mr *mr;
	void *desc;
	char *buf;
	size_t buf_size;
	uint64_t caps;		/* what both peers got */
	char name[256];
	size_t name_len;
	fi_addr_t peer;
	uint64_t rkey, raddr;	/* the peer's registered buffer */
};

/* fi_getinfo with hints from the options and cfg, for this side only. */
int fn_getinfo_local(const struct fn_cfg *cfg, struct fi_info **info,
		     uint64_t *caps);
/* The same on both peers, which agree on the outcome and the caps. */
int fn_getinfo(const struct fn_cfg *cfg, struct fi_info **info,
	       uint64_t *caps);
/* Open fabric (unless e->fabric is set) .. endpoint on info (which e
 * takes over) and enable it. */
int fn_open(struct fn_ep *e, const struct fn_cfg *cfg, struct fi_info *info);
/* Swap names, buffer address and key over the side channel; insert the
 * peer in the AV as e->peer. */
int fn_exchange(struct fn_ep *e);
void fn_close(struct fn_ep *e);

/* Side channel, fn_getinfo, fn_open and fn_exchange for an RDM/DGRAM test. */
int fn_setup(struct fn_ep *e, const struct fn_cfg *cfg);

/* Both peers swap their status; the worse one wins. */
int fn_agree(int ret);
/* End of main(): agree with the peer, close, map to an exit status. */
int fn_exit(struct fn_ep *e, int ret);

/* Read what both CQs hold into their backlogs. */
int fn_poll(struct fn_ep *e);
/* Next completion of a CQ, waiting up to -T seconds. */
int fn_next(struct fn_ep *e, struct fn_cq *cq, struct fn_comp *c);
/* Wait for a successful completion with this context. */
int fn_wait_ctx(struct fn_ep *e, struct fn_cq *cq, void *ctx,
		struct fn_comp *c);
/* 0 when the CQ has nothing for at least ms milliseconds of polling. */
int fn_cq_quiet(struct fn_ep *e, struct fn_cq *cq, int ms);
/* Drive progress for ms milliseconds without consuming anything. */
int fn_spin(struct fn_ep *e, int ms);

/* Retry a post while it returns -FI_EAGAIN, driving progress; -T bounded. */
#define FN_POST(e, what, call) ({					\
	ssize_t fn_r_;							\
	double fn_t_ = ft_now();					\
	for (;;) {							\
		fn_r_ = (call);						\
		if (fn_r_ != -FI_EAGAIN)				\
			break;						\
		fn_r_ = fn_poll(e);					\
		if (fn_r_)						\
			break;						\
		if (ft_now() - fn_t_ > ft.opts.timeout) {		\
			fn_r_ = -FI_ETIMEDOUT;				\
			break;						\
		}							\
	}								\
	if (fn_r_)							\
		FT_ERR(what, fn_r_);					\
	(int)fn_r_;							\
})

/* Fail with a message: returns -FI_EIO from the enclosing function. */
#define FN_CHECK(cond, ...) do {					\
	if (!(cond)) {							\
		ft_err(__VA_ARGS__);					\
		return -FI_EIO;						\
	}								\
} while (0)

/* Side-channel bytes: a one-byte note and an integer. */
int fn_note(char c);
int fn_wait_note(struct fn_ep *e, char want);

#endif /* FN_H */
