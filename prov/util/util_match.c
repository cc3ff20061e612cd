/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive matching.  See include/weft/util_match.h for the contract.
 *
 * Posted receives: posted_any holds receives from any source in post order;
 * posted_src[] holds directed receives, hashed by source, each bucket in
 * post order.  An arriving message compares the first match of each of the
 * two lists it can meet by post sequence number, so mixing any-source and
 * directed receives keeps the global post order.
 *
 * Unexpected messages: unexp holds every message in arrival order; with
 * directed receive enabled each message also sits on unexp_src[] by source,
 * so a directed receive scans only messages that may be from its source.
 * Claimed messages move to the claimed list and leave both.
 */
#include <assert.h>
#include <stdlib.h>

#include "weft/util_match.h"

#define UTIL_MATCH_DEF_BUCKETS 64
#define UTIL_MATCH_MAX_BUCKETS (1u << 20)

/* Internal rx->state bit: the entry was posted at least once. */
#define UTIL_RX_STARTED (1u << 8)

static inline size_t util_match_bucket(const struct util_match *q,
				       fi_addr_t addr)
{
	/* Fibonacci hashing: fi_addr_t values are small indices or pointers. */
	return (size_t)(((uint64_t)addr * 0x9e3779b97f4a7c15ULL) >> 40) &
	       (q->nbuckets - 1);
}

static inline bool util_match_tag(const struct util_match *q,
				  const struct util_rx_entry *rx, uint64_t tag)
{
	return !(q->flags & UTIL_MATCH_TAGGED) ||
	       !((tag ^ rx->tag) & ~rx->ignore);
}

/* Whether a receive is restricted to one source in this queue. */
static inline bool util_match_directed(const struct util_match *q,
				       const struct util_rx_entry *rx)
{
	return (q->flags & UTIL_MATCH_DIRECTED) && rx->addr != FI_ADDR_UNSPEC;
}

int util_match_init(struct util_match *q, const struct util_match_attr *attr)
{
	size_t i, n = attr->buckets ? attr->buckets : UTIL_MATCH_DEF_BUCKETS;

	if (n & (n - 1) || n > UTIL_MATCH_MAX_BUCKETS)
		return -FI_EINVAL;

	q->flags = attr->flags;
	q->min_multi_recv = attr->min_multi_recv;
	q->next_seq = 0;
	dlist_init(&q->posted_any);
	dlist_init(&q->unexp);
	dlist_init(&q->claimed);
	q->posted_directed = 0;
	q->nposted = 0;
	q->nunexp = 0;
	q->posted_src = NULL;
	q->unexp_src = NULL;
	q->nbuckets = 0;

	if (!(q->flags & UTIL_MATCH_DIRECTED))
		return 0;

	q->posted_src = calloc(2 * n, sizeof(*q->posted_src));
	if (!q->posted_src)
		return -FI_ENOMEM;
	q->unexp_src = q->posted_src + n;
	q->nbuckets = n;
	for (i = 0; i < n; i++) {
		dlist_init(&q->posted_src[i]);
		dlist_init(&q->unexp_src[i]);
	}
	return 0;
}

int util_match_fini(struct util_match *q)
{
	int ret = 0;

	if (q->nposted || q->nunexp) {
		while (util_match_pop_posted(q))
			;
		while (util_match_pop_unexp(q))
			;
		ret = -FI_EBUSY;
	}
	free(q->posted_src);
	q->posted_src = NULL;
	q->unexp_src = NULL;
	q->nbuckets = 0;
	return ret;
}

/* ---- posted queue ------------------------------------------------------ */

static void util_match_queue_rx(struct util_match *q, struct util_rx_entry *rx)
{
	rx->seq = q->next_seq++;
	rx->state |= UTIL_RX_QUEUED;
	if (util_match_directed(q, rx)) {
		dlist_insert_tail(
		    &rx->list, &q->posted_src[util_match_bucket(q, rx->addr)]);
		q->posted_directed++;
	} else {
		dlist_insert_tail(&rx->list, &q->posted_any);
	}
	q->nposted++;
}

static void util_match_unlink_rx(struct util_match *q, struct util_rx_entry *rx)
{
	assert(rx->state & UTIL_RX_QUEUED);
	dlist_remove(&rx->list);
	rx->state &= ~UTIL_RX_QUEUED;
	if (util_match_directed(q, rx))
		q->posted_directed--;
	q->nposted--;
}

/*
 * Hand out the part of rx that a message of msg_len bytes takes.  A
 * multi-recv buffer advances, counts the slice as pending, and is released
 * (and unlinked) when less than its threshold is left; a plain receive is
 * unlinked if queued.
 */
static void util_match_take(struct util_match *q, struct util_rx_entry *rx,
			    size_t msg_len, bool multi,
			    struct util_match_result *res)
{
	size_t space = rx->len - rx->offset;

	res->rx = rx;
	res->offset = rx->offset;
	res->len = WEFT_MIN(msg_len, space);
	res->olen = msg_len - res->len;
	res->released = false;

	if (multi) {
		rx->offset += res->len;
		rx->pending++;
		if (rx->len - rx->offset >= rx->min_free)
			return;
		rx->state |= UTIL_RX_RELEASED;
		res->released = true;
	}
	if (rx->state & UTIL_RX_QUEUED)
		util_match_unlink_rx(q, rx);
}

int util_match_msg_arrived(struct util_match *q, fi_addr_t addr, uint64_t tag,
			   size_t len, struct util_match_result *res)
{
	struct util_rx_entry *rx, *best = NULL;
	struct dlist_entry *head, *it;

	for (it = q->posted_any.next; it != &q->posted_any; it = it->next) {
		rx = container_of(it, struct util_rx_entry, list);
		if (util_match_tag(q, rx, tag)) {
			best = rx;
			break;
		}
	}

	if (q->posted_directed) {
		head = &q->posted_src[util_match_bucket(q, addr)];
		for (it = head->next; it != head; it = it->next) {
			rx = container_of(it, struct util_rx_entry, list);
			/* Posted later than the any-source match: it wins. */
			if (best && rx->seq > best->seq)
				break;
			if (rx->addr == addr && util_match_tag(q, rx, tag)) {
				best = rx;
				break;
			}
		}
	}

	if (!best)
		return 0;
	util_match_take(q, best, len, best->flags & FI_MULTI_RECV, res);
	res->unexp = NULL;
	return 1;
}

uint64_t util_match_rx_complete(struct util_rx_entry *rx)
{
	if (!(rx->flags & FI_MULTI_RECV))
		return 0;
	assert(rx->pending);
	if (--rx->pending == 0 && (rx->state & UTIL_RX_RELEASED))
		return FI_MULTI_RECV;
	return 0;
}

/* ---- unexpected queue -------------------------------------------------- */

void util_match_add_unexp(struct util_match *q, struct util_unexp_entry *ue)
{
	ue->claim_context = NULL;
	dlist_insert_tail(&ue->list, &q->unexp);
	if (q->flags & UTIL_MATCH_DIRECTED)
		dlist_insert_tail(
		    &ue->src_list,
		    &q->unexp_src[util_match_bucket(q, ue->addr)]);
	q->nunexp++;
}

/* Take a message off the matchable lists (arrival order and its bucket). */
static void util_match_unlink_unexp(struct util_match *q,
				    struct util_unexp_entry *ue)
{
	dlist_remove(&ue->list);
	if (q->flags & UTIL_MATCH_DIRECTED)
		dlist_remove(&ue->src_list);
}

size_t util_match_resolve_unexp(struct util_match *q,
				fi_addr_t (*resolve)(void *ctx,
						     struct util_unexp_entry *ue),
				void *ctx)
{
	struct util_unexp_entry *ue;
	struct dlist_entry *it;
	size_t unknown = 0, renamed = 0, i;
	fi_addr_t addr;

	for (it = q->unexp.next; it != &q->unexp; it = it->next) {
		ue = container_of(it, struct util_unexp_entry, list);
		if (ue->addr != FI_ADDR_NOTAVAIL)
			continue;
		addr = resolve(ctx, ue);
		if (addr == FI_ADDR_NOTAVAIL) {
			unknown++;
			continue;
		}
		ue->addr = addr;
		renamed++;
	}
	if (!renamed || !(q->flags & UTIL_MATCH_DIRECTED))
		return unknown;
	/* Rebuild the buckets from the arrival list: a renamed message goes
	 * before the later ones of its sender. */
	for (i = 0; i < q->nbuckets; i++)
		dlist_init(&q->unexp_src[i]);
	for (it = q->unexp.next; it != &q->unexp; it = it->next) {
		ue = container_of(it, struct util_unexp_entry, list);
		dlist_insert_tail(&ue->src_list,
				  &q->unexp_src[util_match_bucket(q, ue->addr)]);
	}
	return unknown;
}

/* The earliest-arrived unexpected message that rx matches, or NULL. */
static struct util_unexp_entry *
util_match_find_unexp(const struct util_match *q,
		      const struct util_rx_entry *rx)
{
	struct util_unexp_entry *ue;
	struct dlist_entry *head, *it;

	if (util_match_directed(q, rx)) {
		head = &q->unexp_src[util_match_bucket(q, rx->addr)];
		for (it = head->next; it != head; it = it->next) {
			ue =
			    container_of(it, struct util_unexp_entry, src_list);
			if (ue->addr == rx->addr &&
			    util_match_tag(q, rx, ue->tag))
				return ue;
		}
		return NULL;
	}

	for (it = q->unexp.next; it != &q->unexp; it = it->next) {
		ue = container_of(it, struct util_unexp_entry, list);
		if (util_match_tag(q, rx, ue->tag))
			return ue;
	}
	return NULL;
}

int util_match_post_recv(struct util_match *q, struct util_rx_entry *rx,
			 struct util_match_result *res)
{
	struct util_unexp_entry *ue;

	if (!(rx->state & UTIL_RX_STARTED)) {
		rx->state |= UTIL_RX_STARTED;
		rx->min_free = WEFT_MAX(q->min_multi_recv, (size_t)1);
	}
	assert(!(rx->state & (UTIL_RX_QUEUED | UTIL_RX_RELEASED)));

	ue = q->nunexp ? util_match_find_unexp(q, rx) : NULL;
	if (!ue) {
		util_match_queue_rx(q, rx);
		return 0;
	}

	util_match_unlink_unexp(q, ue);
	q->nunexp--;
	util_match_take(q, rx, ue->len, rx->flags & FI_MULTI_RECV, res);
	res->unexp = ue;
	return 1;
}

int util_match_peek(struct util_match *q, struct util_rx_entry *rx,
		    struct util_unexp_entry **uep)
{
	struct util_unexp_entry *ue;

	if ((rx->flags & FI_CLAIM) && !rx->context)
		return -FI_EINVAL;

	ue = util_match_find_unexp(q, rx);
	if (!ue)
		return -FI_ENOMSG;

	if (rx->flags & FI_DISCARD) {
		util_match_unlink_unexp(q, ue);
		q->nunexp--;
	} else if (rx->flags & FI_CLAIM) {
		util_match_unlink_unexp(q, ue);
		ue->claim_context = rx->context;
		dlist_insert_tail(&ue->list, &q->claimed);
	}
	*uep = ue;
	return 0;
}

int util_match_claim(struct util_match *q, struct util_rx_entry *rx,
		     struct util_match_result *res)
{
	struct util_unexp_entry *ue;
	struct dlist_entry *it;

	if (!rx->context)
		return -FI_EINVAL;

	for (it = q->claimed.next; it != &q->claimed; it = it->next) {
		ue = container_of(it, struct util_unexp_entry, list);
		if (ue->claim_context != rx->context)
			continue;

		dlist_remove(&ue->list);
		ue->claim_context = NULL;
		q->nunexp--;
		res->rx = rx;
		res->unexp = ue;
		res->offset = 0;
		res->released = false;
		if (rx->flags & FI_DISCARD) {
			res->len = 0;
			res->olen = 0;
		} else {
			util_match_take(q, rx, ue->len, false, res);
		}
		return 1;
	}
	return -FI_ENOMSG;
}

/* ---- cancel and drain -------------------------------------------------- */

/* A receive leaves the queue for good: cancel or close. */
static void util_match_retire_rx(struct util_match *q, struct util_rx_entry *rx)
{
	util_match_unlink_rx(q, rx);
	if (rx->flags & FI_MULTI_RECV)
		rx->state |= UTIL_RX_RELEASED;
}

static struct util_rx_entry *util_match_find_ctx(struct dlist_entry *head,
						 void *context,
						 struct util_rx_entry *best)
{
	struct util_rx_entry *rx;
	struct dlist_entry *it;

	for (it = head->next; it != head; it = it->next) {
		rx = container_of(it, struct util_rx_entry, list);
		if (best && rx->seq > best->seq)
			break;
		if (rx->context == context)
			return rx;
	}
	return best;
}

struct util_rx_entry *util_match_cancel(struct util_match *q, void *context)
{
	struct util_rx_entry *best;
	size_t i;

	best = util_match_find_ctx(&q->posted_any, context, NULL);
	for (i = 0; q->posted_directed && i < q->nbuckets; i++)
		best = util_match_find_ctx(&q->posted_src[i], context, best);
	if (best)
		util_match_retire_rx(q, best);
	return best;
}

struct util_rx_entry *util_match_pop_posted(struct util_match *q)
{
	struct dlist_entry *head = &q->posted_any;
	struct util_rx_entry *rx;
	size_t i;

	for (i = 0; dlist_empty(head) && i < q->nbuckets; i++)
		head = &q->posted_src[i];
	if (dlist_empty(head))
		return NULL;
	rx = container_of(head->next, struct util_rx_entry, list);
	util_match_retire_rx(q, rx);
	return rx;
}

struct util_rx_entry *util_match_pop_from(struct util_match *q,
					  fi_addr_t addr)
{
	struct dlist_entry *head, *it;
	struct util_rx_entry *rx;

	if (!q->posted_directed || addr == FI_ADDR_UNSPEC)
		return NULL;
	head = &q->posted_src[util_match_bucket(q, addr)];
	for (it = head->next; it != head; it = it->next) {
		rx = container_of(it, struct util_rx_entry, list);
		if (rx->addr != addr || rx->pending)
			continue;
		util_match_retire_rx(q, rx);
		return rx;
	}
	return NULL;
}

struct util_unexp_entry *util_match_pop_unexp(struct util_match *q)
{
	struct util_unexp_entry *ue;

	if (!dlist_empty(&q->unexp)) {
		ue = container_of(q->unexp.next, struct util_unexp_entry, list);
		util_match_unlink_unexp(q, ue);
	} else if (!dlist_empty(&q->claimed)) {
		ue = container_of(q->claimed.next, struct util_unexp_entry,
				  list);
		dlist_remove(&ue->list);
		ue->claim_context = NULL;
	} else {
		return NULL;
	}
	q->nunexp--;
	return ue;
}

struct util_unexp_entry *util_match_pop_unexp_if(
	struct util_match *q, bool (*pick)(void *ctx, struct util_unexp_entry *ue),
	void *ctx)
{
	struct dlist_entry *lists[] = { &q->unexp, &q->claimed };
	struct util_unexp_entry *ue;
	struct dlist_entry *it;
	size_t i;

	for (i = 0; i < 2; i++) {
		for (it = lists[i]->next; it != lists[i]; it = it->next) {
			ue = container_of(it, struct util_unexp_entry, list);
			if (!pick(ctx, ue))
				continue;
			if (i == 0) {
				util_match_unlink_unexp(q, ue);
			} else {
				dlist_remove(&ue->list);
				ue->claim_context = NULL;
			}
			q->nunexp--;
			return ue;
		}
	}
	return NULL;
}
