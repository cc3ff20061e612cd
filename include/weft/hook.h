/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hooks (FI_HOOK): one wrapping layer between the application and a
 * provider, into which small hooks (perf, trace, debug, noop) plug.
 *
 * When FI_HOOK names hooks, fi_fabric wraps the fabric the provider opened,
 * and every object opened from it is wrapped in turn: the application holds
 * the layer's fids (struct weft_hook_fid), each of which forwards to the
 * provider's (`inner`).  Every call made on a wrapped fid is described once
 * (struct weft_hook_call) and shown to each hook before and after the
 * provider runs it, outermost hook first on the way in.  Fids the provider
 * reports back (EQ entries) are mapped to the layer's; fids the application
 * passes in (binds, wait sets, poll sets, trywait) to the provider's.
 * When FI_HOOK is unset nothing is wrapped: the provider's fids reach the
 * application and no code of this layer runs after fi_fabric.
 *
 * A hook is a const struct weft_hook_ops; src/hook.c lists them by name.
 */
#ifndef WEFT_HOOK_H
#define WEFT_HOOK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/ofi.h"

/* Hooks one fabric may stack. */
#define WEFT_HOOK_MAX 8

/*
 * The family of a call: what perf counts a call under (one row of its
 * table) and what trace and debug dispatch on.
 */
enum weft_hook_kind {
	WEFT_HK_OTHER, /* control path: opens, binds, cm, av ... */
	WEFT_HK_SEND,
	WEFT_HK_INJECT,
	WEFT_HK_RECV,
	WEFT_HK_TSEND,
	WEFT_HK_TINJECT,
	WEFT_HK_TRECV,
	WEFT_HK_READ,
	WEFT_HK_WRITE,
	WEFT_HK_INJECT_WRITE,
	WEFT_HK_ATOMIC,
	WEFT_HK_FETCH_ATOMIC,
	WEFT_HK_COMPARE_ATOMIC,
	WEFT_HK_INJECT_ATOMIC,
	WEFT_HK_CQ_READ,
	WEFT_HK_CQ_READFROM,
	WEFT_HK_CQ_READERR,
	WEFT_HK_CQ_SREAD,
	WEFT_HK_CQ_SREADFROM,
	WEFT_HK_CNTR_READ,
	WEFT_HK_CNTR_READERR,
	WEFT_HK_CNTR_WAIT,
	WEFT_HK_EQ_READ,
	WEFT_HK_EQ_SREAD,
	WEFT_HK_EQ_READERR,
	WEFT_HK_CLOSE,
	WEFT_HK_BIND,
	WEFT_HK_COUNT
};

/* The name of a kind as perf prints it ("tsend", "cq_read"). */
const char *weft_hook_kind_name(enum weft_hook_kind kind);
/* The short name of an object's class ("ep", "cq", ...; "fid" if none),
 * as the hooks print it. */
const char *weft_hook_class_name(size_t fclass);

/* Which of struct weft_hook_call's argument fields a call has. */
enum {
	WEFT_HA_BUF = 1 << 0,	  /* buf, len */
	WEFT_HA_IOV = 1 << 1,	  /* iov, count; len is their total */
	WEFT_HA_ADDR = 1 << 2,	  /* addr */
	WEFT_HA_TAG = 1 << 3,	  /* tag, ignore */
	WEFT_HA_DATA = 1 << 4,	  /* data */
	WEFT_HA_FLAGS = 1 << 5,	  /* flags */
	WEFT_HA_CTX = 1 << 6,	  /* context */
	WEFT_HA_RMA = 1 << 7,	  /* raddr, rkey */
	WEFT_HA_FID = 1 << 8,	  /* arg: a fid passed in (bind, poll_add) */
	WEFT_HA_COUNT = 1 << 9,	  /* count: entries asked (cq, eq, av) */
	WEFT_HA_IVAL = 1 << 10,	  /* ival: a command, an option, a timeout */
	WEFT_HA_ATOMIC = 1 << 11, /* datatype, op */
};

struct weft_hook_fab;

/*
 * The layer's object: what the application holds.  Its first member is
 * the public struct of its class, so the application's fid is &u.fid.
 */
struct weft_hook_fid {
	union {
		struct fid fid;
		struct fid_fabric fabric;
		struct fid_domain domain;
		struct fid_ep ep;
		struct fid_pep pep;
		struct fid_cq cq;
		struct fid_cntr cntr;
		struct fid_eq eq;
		struct fid_av av;
		struct fid_mr mr;
		struct fid_wait wait;
		struct fid_poll poll;
		struct fid_stx stx;
	} u;
	struct fid *inner; /* the provider's object */
	/* what it was opened from: the fabric for a domain, passive
	 * endpoint, EQ or wait set; the domain for the domain's objects;
	 * the scalable endpoint for its contexts.  NULL for the fabric. */
	struct weft_hook_fid *parent;
	struct weft_hook_fab *fab;
	/* one for the application's handle, one per child still open: the
	 * memory stays until both the object and its children are closed */
	atomic_int refs;
	atomic_int children;
	bool closed;
	/* a CQ's format and size as opened (size 0: the provider's) */
	enum fi_cq_format cq_format;
	size_t cq_size;
	struct weft_hook_fid *map_next; /* the fabric's inner -> outer map */
	void *priv[WEFT_HOOK_MAX];	/* each hook's state, by slot */
};

/*
 * One call on a wrapped object, as the hooks see it.  `args` says which of
 * the argument fields are set; `ret` is the provider's answer (set before
 * the hooks' `after`).  Hooks may keep a word each in `scratch[slot]`
 * between `before` and `after`.
 */
struct weft_hook_call {
	const char *fn;		  /* the API call: "fi_tsend" */
	enum weft_hook_kind kind; /* its family */
	unsigned args;		  /* WEFT_HA_* */
	struct weft_hook_fid *hf; /* the object called */
	const void *buf;
	size_t len;
	const struct iovec *iov;
	size_t count;
	fi_addr_t addr;
	uint64_t tag, ignore, data, flags;
	uint64_t raddr, rkey;
	int datatype, op;
	void *context;
	struct fid *arg;   /* a fid the application passed (its own) */
	long ival;	   /* a command, option or timeout */
	void *entries;	   /* what a read returned: ret entries */
	fi_addr_t *src_addr;
	ssize_t ret;
	uint64_t scratch[WEFT_HOOK_MAX];
};

/*
 * A hook.  Every op is optional and may be called from any thread the
 * application calls from; none may block or make a system call per data
 * call.  `slot` is the hook's index in the fabric's stack (its priv and
 * scratch entry).
 *  open     an object was wrapped (after the provider opened it); may set
 *           hf->priv[slot].  Nonzero fails the open (the object is closed).
 *  before   a call is about to reach the provider.
 *  after    it returned: c->ret is its answer.  For fi_close (kind CLOSE),
 *           c->ret 0 means the provider's object is gone.
 *  release  the layer frees hf (every child closed too): free priv[slot].
 */
struct weft_hook_ops {
	const char *name;
	int (*open)(struct weft_hook_fid *hf, unsigned slot);
	void (*before)(struct weft_hook_call *c, unsigned slot);
	void (*after)(struct weft_hook_call *c, unsigned slot);
	void (*release)(struct weft_hook_fid *hf, unsigned slot);
};

extern const struct weft_hook_ops weft_hook_perf, weft_hook_trace,
	weft_hook_debug, weft_hook_noop;

/*
 * Wrap the fabric `inner` a provider just opened in the hooks FI_HOOK
 * names (comma- or semicolon-separated; "perf" or "ofi_hook_perf").
 * Unknown names are warned about through the log and skipped.  Returns 0
 * with *fabric the fabric the application gets (inner itself when no hook
 * is named), or -FI_ENOMEM having closed nothing.
 */
int weft_hook_fabric(struct fid_fabric *inner, struct fid_fabric **fabric);

/*
 * The name of hook i as FI_HOOK takes it ("perf"), or NULL past the last:
 * fi_getinfo's FI_PROV_ATTR_ONLY listing names each as 1.17 does
 * ("ofi_hook_perf").
 */
const char *weft_hook_name_at(size_t i);

/* The provider's fid behind `fid`, or fid itself if it is not wrapped. */
struct fid *weft_hook_inner(struct fid *fid);
/* Whether `fid` is one of the layer's objects. */
bool weft_hook_is_wrapped(const struct fid *fid);

/* The class of a wrapped object as the application sees it. */
static inline size_t weft_hook_fclass(const struct weft_hook_fid *hf)
{
	return hf->u.fid.fclass;
}

#endif /* WEFT_HOOK_H */
