/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive matching: posted receives against incoming messages, with the
 * queue of unexpected messages, for one class of receive (untagged FI_MSG
 * or tagged FI_TAGGED).  A receive context holds two struct util_match, one
 * per class; they never see each other's entries.
 *
 * The matcher knows nothing of transports or buffers.  The RDM engine
 * embeds struct util_rx_entry in its receive request and struct
 * util_unexp_entry in its record of an unexpected message (which keeps the
 * transport's handle to the payload: inline bytes, a rendezvous descriptor).
 * Entries are allocated by the caller (typically from a util_bufpool); the
 * matcher only links them into its queues and never allocates after
 * util_match_init.
 *
 * Semantics (fi_msg(3), fi_tagged(3), fi_endpoint(3), fi_cq(3)):
 *  - tags match when (msg tag & ~ignore) == (recv tag & ~ignore); an
 *    untagged queue ignores tags altogether;
 *  - with UTIL_MATCH_DIRECTED (the FI_DIRECTED_RECV capability) a receive
 *    posted with a source address other than FI_ADDR_UNSPEC matches only
 *    messages from that address; without it every receive takes any source;
 *  - an arriving message takes the earliest posted receive that matches;
 *    a posted receive takes the earliest arrived unexpected message that
 *    matches, so messages from one source are taken in their arrival order;
 *  - FI_MULTI_RECV: one receive takes successive messages at increasing
 *    offsets, stays at its place in the posted order, and is released once
 *    the space left drops below the min_multi_recv in force when it was
 *    posted (FI_OPT_MIN_MULTI_RECV);
 *  - FI_PEEK, FI_PEEK | FI_CLAIM, FI_CLAIM, FI_DISCARD and cancel, below.
 *
 * Complexity.  Posted receives from any source sit on one list; directed
 * receives sit on per-source hash buckets.  Unexpected messages sit on one
 * list in arrival order and, when directed receive is enabled, also on a
 * per-source bucket.  So:
 *  - arrival: first match in the any-source list plus first match in the
 *    source's bucket (skipped in O(1) when empty); the common case, a
 *    waiting receive from any source whose tag matches, is O(1);
 *  - posting: an any-source receive scans unexpected messages in arrival
 *    order until a match, a directed one scans only its source's bucket;
 *    with no unexpected message it is O(1);
 *  - cancel and claim scan linearly (rare operations).
 * Nothing on these paths allocates, locks or makes a system call.
 *
 * Use by the RDM engine (sketch):
 *   recv:    util_rx_entry_init(&req->rx, ...);
 *            while (util_match_post_recv(q, &req->rx, &res) == 1) {
 *                    deliver(res.unexp's payload -> buffer + res.offset,
 *                            res.len); free the unexpected record;
 *                    when the data is in place: complete(req, res,
 *                            util_match_rx_complete(&req->rx));
 *                    if (!(req->rx.flags & FI_MULTI_RECV) || res.released)
 *                            break;
 *            }
 *   header:  if (util_match_msg_arrived(q, src, tag, len, &res))
 *                    copy inline data or start the rendezvous fetch into
 *                    res.rx's buffer at res.offset; complete as above;
 *            else
 *                    util_unexp_entry_init(&rec->ue, src, tag, len);
 *                    keep the payload handle in rec;
 *                    util_match_add_unexp(q, &rec->ue);
 *   A completion with res.olen != 0 is an error completion FI_ETRUNC with
 *   olen = res.olen; a multi-recv completion reports buf = buffer +
 *   res.offset and ORs in the flags util_match_rx_complete returns.
 *
 * Concurrency: not thread-safe.  The receive context's lock (the
 * endpoint's, or the shared receive context's) must be held across every
 * call, and across a util_match_msg_arrived that reports no match and the
 * util_match_add_unexp that follows it.
 */
#ifndef WEFT_UTIL_MATCH_H
#define WEFT_UTIL_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"

/* Flags of struct util_match_attr. */
#define UTIL_MATCH_TAGGED (1u << 0)   /* compare tags (FI_TAGGED queue) */
#define UTIL_MATCH_DIRECTED (1u << 1) /* honour receive source addresses */

struct util_match_attr {
	unsigned int flags; /* UTIL_MATCH_* */
	/*
	 * Per-source buckets when UTIL_MATCH_DIRECTED: a power of two, 0 for
	 * the default (64).  More buckets than peers is wasted memory; fewer
	 * mixes sources in a bucket, costing scan length, never correctness.
	 */
	size_t buckets;
	size_t min_multi_recv; /* initial FI_OPT_MIN_MULTI_RECV */
};

/*
 * A posted receive, embedded in the caller's request.  The caller fills it
 * with util_rx_entry_init before posting; after that the fields belong to
 * the matcher until the entry comes back to the caller (see the ownership
 * notes at each function) and may be read, not written.
 */
struct util_rx_entry {
	struct dlist_entry list; /* posted queue link (matcher) */
	fi_addr_t addr;		 /* source, FI_ADDR_UNSPEC for any */
	uint64_t tag;
	uint64_t ignore;
	uint64_t flags; /* FI_MULTI_RECV, FI_CLAIM, ... as posted */
	void *context;	/* application context: cancel, claim key */
	size_t len;	/* buffer length */
	/* Matcher state. */
	uint64_t seq;	  /* post order */
	size_t offset;	  /* multi-recv: bytes handed out so far */
	size_t min_free;  /* multi-recv: release below this much space */
	uint32_t pending; /* multi-recv: slices not yet completed */
	uint32_t state;	  /* UTIL_RX_* */
};

/* rx->state bits. */
#define UTIL_RX_QUEUED (1u << 0)   /* on a posted queue */
#define UTIL_RX_RELEASED (1u << 1) /* multi-recv buffer used up */

/*
 * An unexpected message, embedded in the caller's record of it.  The
 * caller sets addr, tag and len (util_unexp_entry_init) before
 * util_match_add_unexp; the matcher owns the links until it hands the
 * entry back.
 */
struct util_unexp_entry {
	struct dlist_entry list;     /* arrival order, or the claimed list */
	struct dlist_entry src_list; /* per-source bucket (directed) */
	fi_addr_t addr;		     /* source, FI_ADDR_NOTAVAIL if unknown */
	uint64_t tag;
	size_t len;	     /* full message length */
	void *claim_context; /* set while claimed by FI_PEEK | FI_CLAIM */
};

/* One class of receive: posted receives and unexpected messages. */
struct util_match {
	unsigned int flags;
	size_t min_multi_recv;
	uint64_t next_seq;

	struct dlist_entry posted_any;	/* receives from any source */
	struct dlist_entry *posted_src; /* [nbuckets], directed receives */
	size_t posted_directed;		/* entries on posted_src buckets */

	struct dlist_entry unexp;      /* all unexpected, arrival order */
	struct dlist_entry *unexp_src; /* [nbuckets], per source */
	struct dlist_entry claimed;    /* claimed by FI_PEEK | FI_CLAIM */

	size_t nbuckets; /* 0 unless directed */

	size_t nposted;
	size_t nunexp;
};

/*
 * The outcome of a match: which receive and which message met, and where
 * the payload goes.  The caller copies or fetches min(message, space)
 * bytes to rx's buffer at `offset`.
 */
struct util_match_result {
	struct util_rx_entry *rx;
	struct util_unexp_entry *unexp; /* NULL when matched on arrival */
	size_t offset; /* into rx's buffer (non-zero only for multi-recv) */
	size_t len;    /* bytes to deliver */
	size_t olen;   /* bytes that do not fit: complete with -FI_ETRUNC */
	bool released; /* multi-recv buffer released by this match */
};

/*
 * Set up a queue.  Called when the receive context is created; allocates
 * the bucket arrays (when directed) and may block in the allocator.
 * Returns 0, -FI_EINVAL (buckets not a power of two) or -FI_ENOMEM.
 */
int util_match_init(struct util_match *q, const struct util_match_attr *attr);

/*
 * Tear a queue down.  The caller first drains it with util_match_pop_posted
 * and util_match_pop_unexp (reporting or freeing what it gets back).
 * Returns 0, or -FI_EBUSY if entries were left (they are unlinked; the
 * caller still owns their memory).
 */
int util_match_fini(struct util_match *q);

/*
 * FI_OPT_MIN_MULTI_RECV.  Applies to receives posted afterwards (a buffer
 * keeps the threshold it was posted with).
 */
static inline void util_match_set_min_multi_recv(struct util_match *q,
						 size_t min)
{
	q->min_multi_recv = min;
}

/* Prepare a receive for posting, peeking or claiming. */
static inline void util_rx_entry_init(struct util_rx_entry *rx, fi_addr_t addr,
				      uint64_t tag, uint64_t ignore,
				      uint64_t flags, void *context, size_t len)
{
	dlist_init(&rx->list);
	rx->addr = addr;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->flags = flags;
	rx->context = context;
	rx->len = len;
	rx->seq = 0;
	rx->offset = 0;
	rx->min_free = 0;
	rx->pending = 0;
	rx->state = 0;
}

/* Describe an unexpected message before util_match_add_unexp. */
static inline void util_unexp_entry_init(struct util_unexp_entry *ue,
					 fi_addr_t addr, uint64_t tag,
					 size_t len)
{
	dlist_init(&ue->list);
	dlist_init(&ue->src_list);
	ue->addr = addr;
	ue->tag = tag;
	ue->len = len;
	ue->claim_context = NULL;
}

/*
 * Post a receive (fi_recv, fi_trecv without FI_PEEK or FI_CLAIM).
 *
 * Looks for the earliest unexpected message the receive matches.  Found:
 * the message is unlinked and handed back in res (res->unexp; the caller
 * owns it again, delivers its payload into res->rx at res->offset and
 * frees it), and 1 is returned; the receive is NOT queued.  Not found: the
 * receive joins the posted queue and 0 is returned.
 *
 * A multi-recv receive (FI_MULTI_RECV in rx->flags) takes one message per
 * call: while 1 is returned and !res->released, call again with the same
 * entry to keep filling it from the unexpected queue; the call that
 * returns 0 queues it with the space left.  Every slice handed out this way
 * must later go through util_match_rx_complete.
 *
 * A non-multi-recv receive that returns 1 is the caller's again.  One that
 * was queued belongs to the matcher until a match, cancel or pop returns
 * it.  Never blocks, never allocates.
 */
int util_match_post_recv(struct util_match *q, struct util_rx_entry *rx,
			 struct util_match_result *res);

/*
 * A message arrived (the engine read its header): find the earliest posted
 * receive that takes it.
 *
 * Found: returns 1 with res filled (res->unexp is NULL).  A plain receive
 * is unlinked and the caller's again; a multi-recv receive stays queued
 * unless res->released, and gives the slice [res->offset, +res->len).
 * res->olen is the part of the message that does not fit (truncation).
 * Not found: returns 0, and the caller records the message with
 * util_match_add_unexp before it releases the lock.
 */
int util_match_msg_arrived(struct util_match *q, fi_addr_t addr, uint64_t tag,
			   size_t len, struct util_match_result *res);

/*
 * Queue a message that util_match_msg_arrived found no receive for.  ue
 * must have been set up with util_unexp_entry_init; it belongs to the
 * matcher until a receive, a peek with FI_DISCARD, a claim or a pop hands
 * it back.  O(1).
 */
void util_match_add_unexp(struct util_match *q, struct util_unexp_entry *ue);

/*
 * Called when the data of a slice handed out by a match has been placed
 * and its completion is about to be written.  Returns the completion flags
 * the matcher adds: FI_MULTI_RECV on the completion after which a released
 * multi-recv buffer has no slice outstanding (the last one to complete,
 * which is not always the last one matched when rendezvous fetches finish
 * out of order); the caller may then reuse the entry.  0 otherwise, and
 * always 0 for a plain receive.
 */
uint64_t util_match_rx_complete(struct util_rx_entry *rx);

/*
 * FI_PEEK: find the earliest unexpected message that rx (set up with
 * util_rx_entry_init: addr, tag, ignore, flags, context) would match,
 * without taking it.  rx is never queued.
 *
 * flags of rx decide what happens to the message found:
 *  FI_PEEK               it stays where it is;
 *  FI_PEEK | FI_CLAIM    it leaves matching and is kept claimed for a later
 *                        FI_CLAIM receive carrying rx->context;
 *  FI_PEEK | FI_DISCARD  it is unlinked and handed back for the caller to
 *                        free (the peek still completes successfully).
 * Returns 0 with *ue set (valid until the lock is dropped for a plain
 * peek), or -FI_ENOMSG when nothing matches: the caller writes an error
 * completion with err FI_ENOMSG.
 */
int util_match_peek(struct util_match *q, struct util_rx_entry *rx,
		    struct util_unexp_entry **ue);

/*
 * FI_CLAIM receive (with or without FI_DISCARD): take the message that an
 * earlier FI_PEEK | FI_CLAIM claimed with the same context.  Returns 1 with
 * res filled as for util_match_post_recv (res->len 0 with FI_DISCARD, the
 * message being dropped) and the message unlinked and the caller's, or
 * -FI_ENOMSG if no message is claimed under rx->context.  rx is never
 * queued.  Linear in the number of claimed messages.
 */
int util_match_claim(struct util_match *q, struct util_rx_entry *rx,
		     struct util_match_result *res);

/*
 * fi_cancel: unlink the earliest-posted receive whose context is `context`.
 * Returns it (the caller's again) or NULL if none is queued.  The caller
 * writes an FI_ECANCELED error completion for it, except for a multi-recv
 * buffer with slices still outstanding (rx->pending): the matcher marks it
 * released and the last util_match_rx_complete returns FI_MULTI_RECV
 * instead.  Linear in the number of posted receives.
 */
struct util_rx_entry *util_match_cancel(struct util_match *q, void *context);

/*
 * Name the senders of unexpected messages that arrived from an unknown
 * source (addr FI_ADDR_NOTAVAIL), e.g. before the sender's address was
 * inserted into the AV: resolve() returns the address of each such entry
 * or FI_ADDR_NOTAVAIL (still unknown).  Each per-source bucket keeps
 * arrival order, so a directed receive takes the renamed messages before
 * those that came later from the same sender.  Returns how many remain
 * unknown.  O(unexpected messages + buckets) when any was renamed.
 */
size_t util_match_resolve_unexp(struct util_match *q,
				fi_addr_t (*resolve)(void *ctx,
						     struct util_unexp_entry *ue),
				void *ctx);

/*
 * Drain at close: return and unlink any one posted receive (then the
 * caller reports FI_ECANCELED or drops it), or NULL when none is left.  A
 * multi-recv buffer with slices outstanding is handled as by cancel.
 */
struct util_rx_entry *util_match_pop_posted(struct util_match *q);

/*
 * A source that can send nothing more (its process died): return and
 * unlink the oldest receive posted for addr alone (FI_DIRECTED_RECV), or
 * NULL when none is left.  The caller completes it in error.  A
 * multi-recv buffer with slices outstanding is left to them.
 */
struct util_rx_entry *util_match_pop_from(struct util_match *q,
					  fi_addr_t addr);

/*
 * Drain at close: return and unlink any one unexpected or claimed message,
 * or NULL when none is left.
 */
struct util_unexp_entry *util_match_pop_unexp(struct util_match *q);

/*
 * Return and unlink the oldest unexpected or claimed message that pick
 * says yes to, or NULL when none is left (a shared receive context drops
 * what came by an endpoint that closes).
 */
struct util_unexp_entry *util_match_pop_unexp_if(
	struct util_match *q, bool (*pick)(void *ctx, struct util_unexp_entry *ue),
	void *ctx);

#endif /* WEFT_UTIL_MATCH_H */
