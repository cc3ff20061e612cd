/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider conformance suite: one program, run once per provider, that
 * checks the behaviour the OFI man pages promise over the public API only.
 *
 * Every case runs in a process of its own, forked by the driver, so a case
 * that fails simply reports and exits: cf_fail() never returns, and nothing
 * a failed case leaves behind can disturb the next one.  Cases that need a
 * second process fork and exec this same binary in a peer role.
 */
#ifndef WEFT_TESTS_CONFORMANCE_H
#define WEFT_TESTS_CONFORMANCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

/* Exit codes of a case process, as automake counts them. */
#define CF_EXIT_PASS 0
#define CF_EXIT_FAIL 1
#define CF_EXIT_SKIP 77

/* How long one wait for a completion may take before the case fails. */
#define CF_WAIT_MS 20000

#define CF_MAX_EP 3
#define CF_MAX_NAME 256
/* CF_CONTEXTS=sep (contexts.c): contexts of each kind per endpoint. */
#define CF_SEP_CTX 4
#define CF_SEP_CTX_BITS 2

/* One harvested completion, successful or not, in a format-free form. */
struct cf_comp {
	void *ctx;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	fi_addr_t src;
	int err; /* positive FI_E* code; 0 for a successful entry */
	int prov_errno;
	size_t olen;
	uint8_t err_data[128];
	size_t err_data_size;
};

/* Completions read from a CQ but not yet claimed by the case. */
struct cf_queue {
	struct cf_comp *v;
	size_t n;
	size_t cap;
};

enum cf_cntr_kind {
	CF_CNTR_SEND,
	CF_CNTR_RECV,
	CF_CNTR_READ,
	CF_CNTR_WRITE,
	CF_CNTR_RREAD,
	CF_CNTR_RWRITE,
	CF_NCNTR,
};

struct cf_ep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_cntr *cntr[CF_NCNTR];
	fi_addr_t addr; /* this endpoint in the fixture's AV */
	uint8_t name[CF_MAX_NAME];
	size_t namelen;
	struct cf_queue q;
	struct fid_ep *srx; /* CF_CONTEXTS=srx: its own, closed after it */
	struct fid_eq *eq;  /* cf_opts.ep_eq: bound before fi_enable */
};

/* What a case asks of the provider. Zero fields mean "no requirement". */
struct cf_opts {
	enum fi_ep_type ep_type; /* 0 (FI_EP_UNSPEC): FI_EP_RDM */
	uint64_t caps;
	uint64_t mode; /* modes supported beyond FI_CONTEXT | FI_CONTEXT2 */
	uint64_t msg_order;
	enum fi_cq_format cq_format; /* 0: FI_CQ_FORMAT_TAGGED */
	enum fi_av_type av_type;
	enum fi_threading threading;
	uint64_t cq_bind_flags; /* e.g. FI_SELECTIVE_COMPLETION */
	bool no_tx_cq; /* the CQ takes receives only: transmits are counted */
	uint64_t tx_op_flags;
	uint64_t rx_op_flags;
	uint64_t cntr_mask;	  /* bit (1 << enum cf_cntr_kind) */
	enum fi_wait_obj cq_wait; /* 0: FI_WAIT_NONE */
	bool readfrom;		  /* read CQs with fi_cq_readfrom */
	int nep;		  /* 0: two endpoints */
	size_t min_multi_recv;	  /* set FI_OPT_MIN_MULTI_RECV if > 0 */
	bool min_multi_recv_late; /* ... after fi_enable, not before */
	bool no_insert;		  /* leave the AV empty */
	const char *av_name;	  /* a named (shared) AV: fi_av_attr.name */
	uint64_t av_flags;	  /* fi_av_attr.flags (FI_READ) */
	const void *name;	  /* fi_setname of endpoint 0 before enable */
	size_t namelen;
	uint64_t mr_mode;	  /* hints' mr_mode; 0: every mode the suite handles */
	bool mr_mode_none;	  /* hints' mr_mode 0 itself (no mode bits) */
	size_t cq_size;		  /* 0: 4096 */
	enum fi_resource_mgmt resource_mgmt; /* 0: the provider's choice */
	uint32_t addr_format;		     /* 0: the provider's choice */
	enum fi_progress data_progress; /* 0 (FI_PROGRESS_UNSPEC): any */
	size_t tx_size; /* hints' tx_attr->size; 0: the provider's default */
	/* Peers outside the fixture are plain endpoints, whatever
	 * CF_CONTEXTS says (contexts.c addresses them as they are). */
	bool plain_peers;
	/* An EQ (FI_WAIT_UNSPEC) bound to every endpoint before enable:
	 * the join events of collectives. */
	bool eq;
	/* Waits give the CPU up between empty polls (cf_nap): for cases
	 * whose processes outnumber the cores and wait on each other, and
	 * must not starve what runs beside them. */
	bool nap;
	/* An EQ of each endpoint's own, bound before fi_enable (fi_join of
	 * a multicast group): cf_ep.eq. */
	bool ep_eq;
};

struct cf_fix {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_stx *stx; /* CF_CONTEXTS=stx: every endpoint's */
	struct fid_eq *eq; /* o.eq */
	struct cf_ep ep[CF_MAX_EP];
	int nep;
	struct cf_opts o;
};

/* A registered buffer, with what a peer needs to reach it by RMA. */
struct cf_mem {
	uint8_t *p;
	size_t len;
	struct fid_mr *mr;
	void *desc;
	uint64_t key;
	uint64_t raddr; /* address a peer names: VA or offset 0 */
};

struct cf_case {
	const char *name;
	const char *what;
	int (*run)(const char *prov);
};

/* contexts.c: every case over scalable endpoints' contexts. */
bool cf_contexts(void);
/* CF_EP_TYPE=dgram: the RDM cases over datagram endpoints. */
bool cf_dgram_env(void);
/* CF_CONTEXTS=stx: every fixture endpoint is opened with tx_ctx_cnt
 * FI_SHARED_CONTEXT and bound to the fixture's one shared transmit
 * context. */
bool cf_stx(void);
/* CF_CONTEXTS=srx: every fixture endpoint is opened with rx_ctx_cnt
 * FI_SHARED_CONTEXT and bound to a shared receive context of its own,
 * which its receives go to. */
bool cf_srx(void);
void cf_sep_open(struct cf_fix *f, int i);
struct fid_ep *cf_sep_of(struct fid_ep *ep);

extern const char *cf_prov;
extern const char *cf_case_name;
extern const char *cf_self_exe;
extern const struct cf_case cf_cases_msg[];
extern const struct cf_case cf_cases_rma[];
extern const struct cf_case cf_cases_atomic[];
extern const struct cf_case cf_cases_misc[];
extern const struct cf_case cf_cases_proc[];
extern const struct cf_case cf_cases_kill[];
extern const struct cf_case cf_cases_inject[];
extern const struct cf_case cf_cases_cm[];
extern const struct cf_case cf_cases_wait[];
extern const struct cf_case cf_cases_err[];
extern const struct cf_case cf_cases_getinfo[];
extern const struct cf_case cf_cases_mr_cntr[];
extern const struct cf_case cf_cases_ctx[];
extern const struct cf_case cf_cases_trigger[];
extern const struct cf_case cf_cases_coll[];
extern const struct cf_case cf_cases_dgram[];
extern const struct cf_case cf_cases_fence[];
extern const struct cf_case cf_cases_shared_av[];

/* CF_DENY_CMA: deny process_vm_readv/writev (EPERM) to this process and
 * its children by a seccomp filter, checked; -1 (said why) if it cannot. */
int cf_deny_cma(void);

/* The peer side of two-process cases (conformance -p PROV -R ROLE ...). */
int cf_peer_main(const char *role, int argc, char **argv);

/* Report and end the case process. */
void cf_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
void cf_skip(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void cf_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A check that fails the case but lets it go on, so one wrong field does not
 * hide what the rest of the case would have found.
 */
void cf_expect_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define cf_expect(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			cf_expect_at(__FILE__, __LINE__, __VA_ARGS__);         \
	} while (0)

#define cf_fail(...) cf_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/*
 * The call in progress, so a case stuck inside the provider can say where
 * when its alarm fires.  Every thread of a case marks its calls: atomics,
 * so that they do not race (the three may then come from two threads).
 */
extern const char *_Atomic cf_cur_call;
extern const char *_Atomic cf_cur_file;
extern _Atomic int cf_cur_line;
static inline void cf_mark_at(const char *what, const char *file, int line)
{
	atomic_store_explicit(&cf_cur_call, what, memory_order_relaxed);
	atomic_store_explicit(&cf_cur_file, file, memory_order_relaxed);
	atomic_store_explicit(&cf_cur_line, line, memory_order_relaxed);
}
#define cf_mark(what) cf_mark_at((what), __FILE__, __LINE__)
#define cf_assert(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			cf_fail_at(__FILE__, __LINE__, __VA_ARGS__);           \
	} while (0)
/* A call that must return 0 (or, for data calls, may not fail). */
#define cf_ok(call)                                                            \
	do {                                                                   \
		long cf_ret_;                                                  \
		cf_mark(#call);                                                \
		cf_ret_ = (long)(call);                                        \
		if (cf_ret_)                                                   \
			cf_fail_at(__FILE__, __LINE__, "%s: %ld (%s)", #call,  \
				   cf_ret_, fi_strerror((int)-cf_ret_));       \
	} while (0)

/* Fixture: fabric, domain, one AV and one or two endpoints, each with its CQ.
 */
struct fi_info *cf_getinfo(const char *prov, const struct cf_opts *o, int *ret);
void cf_open(struct cf_fix *f, const char *prov, const struct cf_opts *o);
void cf_close(struct cf_fix *f);
void cf_ep_open(struct cf_fix *f, int i);
/*
 * An FI_EP_MSG pair (cases_cm.c): ep[1] listening and accepting, ep[0]
 * connected to it, both with a CQ; caps as asked.  Skips the case if the
 * provider has no such endpoint.  cf_msg_pair_close ends it all.
 */
struct cf_fix *cf_msg_pair_open(const char *prov, uint64_t caps);
void cf_msg_pair_close(struct cf_fix *f);

/* Drive progress on every endpoint and harvest their CQs. */
void cf_progress(struct cf_fix *f);
/* The oldest unclaimed completion of endpoint i; fails after CF_WAIT_MS. */
struct cf_comp cf_wait_at(const char *file, int line, struct cf_fix *f, int i);
#define cf_wait(f, i)                                                          \
	(cf_mark("waiting for a completion"),                                  \
	 cf_wait_at(__FILE__, __LINE__, f, i))
/* The completion of endpoint i whose op_context is ctx. */
struct cf_comp cf_wait_ctx_at(const char *file, int line, struct cf_fix *f,
			      int i, void *ctx);
#define cf_wait_ctx(f, i, ctx)                                                 \
	(cf_mark("waiting for a completion"),                                  \
	 cf_wait_ctx_at(__FILE__, __LINE__, f, i, ctx))
/* Like cf_wait but returns false on timeout_ms instead of failing. */
bool cf_poll(struct cf_fix *f, int i, struct cf_comp *c, int timeout_ms);
/* Progress for ms and fail if endpoint i gets any completion. */
void cf_expect_none(struct cf_fix *f, int i, int ms);
/* Wait until counter k of endpoint i reads at least want. */
void cf_wait_cntr(struct cf_fix *f, int i, enum cf_cntr_kind k, uint64_t want);

/* Post with retry on -FI_EAGAIN, driving progress in between, for at most
 * CF_WAIT_MS. */
#define cf_post(f, call)                                                       \
	do {                                                                   \
		uint64_t cf_end_ = cf_now_ms() + CF_WAIT_MS;                   \
		ssize_t cf_p_;                                                 \
		cf_mark(#call);                                                \
		while ((cf_p_ = (call)) == -FI_EAGAIN) {                       \
			cf_progress(f);                                        \
			cf_assert(cf_now_ms() < cf_end_,                       \
				  "%s: -FI_EAGAIN for %d ms", #call,           \
				  CF_WAIT_MS);                                 \
		}                                                              \
		cf_assert(cf_p_ == 0, "%s: %zd (%s)", #call, cf_p_,            \
			  fi_strerror((int)-cf_p_));                           \
	} while (0)

void cf_mem_reg(struct cf_fix *f, int i, struct cf_mem *m, size_t len,
		uint64_t access);
/* The same with fi_mr_reg flags (FI_RMA_PMEM). */
void cf_mem_reg_flags(struct cf_fix *f, int i, struct cf_mem *m, size_t len,
		      uint64_t access, uint64_t flags);
void cf_mem_free(struct cf_mem *m);
void cf_mem_close(struct cf_mem *m);

/* Deterministic data: byte j of a buffer filled with seed s. */
void cf_fill(void *buf, size_t len, unsigned int seed);
/* Fail, naming the first differing byte, unless buf holds cf_fill(seed). */
void cf_check_fill(const void *buf, size_t len, unsigned int seed,
		   const char *what);

/* Bytes of one element of an fi_datatype, as this build lays it out (0:
 * none). */
size_t cf_dt_size(int dt);
bool cf_is_sockaddr(uint32_t fmt);
bool cf_iwarp(const struct cf_fix *f);
uint64_t cf_now_ms(void);
void cf_sleep_ms(int ms);
/* 20 microseconds off the CPU (an empty poll of a cf_opts.nap fixture). */
void cf_nap(void);
const char *cf_flags_str(uint64_t flags);
/* Check a completion's flags contain want and none of the bits in deny. */
void cf_check_flags(const struct cf_comp *c, uint64_t want, const char *what);

#endif
