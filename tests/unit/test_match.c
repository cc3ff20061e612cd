/* SPDX-License-Identifier: BSD-2-Clause */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "weft/util_match.h"

#define CTX(n) ((void *)(uintptr_t)(n))

static void q_init(struct util_match *q, unsigned int flags, size_t buckets,
		   size_t min)
{
	struct util_match_attr attr = {
	    .flags = flags,
	    .buckets = buckets,
	    .min_multi_recv = min,
	};

	cr_assert_eq(util_match_init(q, &attr), 0);
}

static void q_fini(struct util_match *q)
{
	cr_assert_eq(q->nposted, 0, "receives left: %zu", q->nposted);
	cr_assert_eq(q->nunexp, 0, "messages left: %zu", q->nunexp);
	cr_assert_eq(util_match_fini(q), 0);
}

/* Post a plain receive that must be queued. */
static void post_queued(struct util_match *q, struct util_rx_entry *rx,
			fi_addr_t addr, uint64_t tag, uint64_t ignore,
			void *ctx, size_t len)
{
	struct util_match_result res;

	util_rx_entry_init(rx, addr, tag, ignore, 0, ctx, len);
	cr_assert_eq(util_match_post_recv(q, rx, &res), 0);
}

/* A message arrives and must match rx; returns the result. */
static struct util_match_result arrive_match(struct util_match *q,
					     fi_addr_t src, uint64_t tag,
					     size_t len,
					     struct util_rx_entry *want)
{
	struct util_match_result res;

	memset(&res, 0, sizeof(res));
	cr_assert_eq(util_match_msg_arrived(q, src, tag, len, &res), 1,
		     "message src %llu tag %#llx found no receive",
		     (unsigned long long)src, (unsigned long long)tag);
	cr_assert_eq(res.rx, want);
	cr_assert_null(res.unexp);
	return res;
}

/* A message arrives, must not match, and is queued as ue. */
static void arrive_unexp(struct util_match *q, struct util_unexp_entry *ue,
			 fi_addr_t src, uint64_t tag, size_t len)
{
	struct util_match_result res;

	cr_assert_eq(util_match_msg_arrived(q, src, tag, len, &res), 0,
		     "message src %llu tag %#llx matched unexpectedly",
		     (unsigned long long)src, (unsigned long long)tag);
	util_unexp_entry_init(ue, src, tag, len);
	util_match_add_unexp(q, ue);
}

Test(match, bad_buckets)
{
	struct util_match q;
	struct util_match_attr attr = {.flags = UTIL_MATCH_DIRECTED,
				       .buckets = 12};

	cr_assert_eq(util_match_init(&q, &attr), -FI_EINVAL);
}

Test(match, posted_order)
{
	struct util_match q;
	struct util_rx_entry r[3];

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	post_queued(&q, &r[0], FI_ADDR_UNSPEC, 5, 0, CTX(1), 64);
	post_queued(&q, &r[1], FI_ADDR_UNSPEC, 6, 0, CTX(2), 64);
	post_queued(&q, &r[2], FI_ADDR_UNSPEC, 5, 0, CTX(3), 64);
	cr_assert_eq(q.nposted, 3);

	arrive_match(&q, 1, 5, 8, &r[0]);
	arrive_match(&q, 1, 5, 8, &r[2]);
	arrive_match(&q, 1, 6, 8, &r[1]);
	q_fini(&q);
}

Test(match, unexpected_order)
{
	struct util_match q;
	struct util_unexp_entry u[4];
	struct util_rx_entry rx;
	struct util_match_result res;
	int i;

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	arrive_unexp(&q, &u[0], 1, 7, 10);
	arrive_unexp(&q, &u[1], 2, 8, 11);
	arrive_unexp(&q, &u[2], 1, 7, 12);
	arrive_unexp(&q, &u[3], 2, 7, 13);
	cr_assert_eq(q.nunexp, 4);

	/* Tag 7: arrival order u0, u2, u3. */
	for (i = 0; i < 3; i++) {
		util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 7, 0, 0, NULL, 100);
		cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
		cr_assert_eq(res.rx, &rx);
		cr_assert_eq(res.unexp, &u[i == 0 ? 0 : i == 1 ? 2 : 3]);
		cr_assert_eq(res.len, res.unexp->len);
		cr_assert_eq(res.olen, 0);
	}
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 8, 0, 0, NULL, 100);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[1]);
	cr_assert_eq(q.nposted, 0);
	q_fini(&q);
}

Test(match, ignore_mask)
{
	struct util_match q;
	struct util_rx_entry r[2];
	struct util_unexp_entry u;

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	post_queued(&q, &r[0], FI_ADDR_UNSPEC, 0x10, 0x0f, CTX(1), 8);
	arrive_unexp(&q, &u, 1, 0x20, 8);    /* bit 5 differs: no match */
	arrive_match(&q, 1, 0x1a, 8, &r[0]); /* low bits ignored */

	/* Ignore bits in the receive tag itself do not matter either. */
	post_queued(&q, &r[1], FI_ADDR_UNSPEC, 0xffff0000, 0xffff, CTX(2), 8);
	arrive_match(&q, 1, 0xffff1234, 8, &r[1]);

	/* A receive ignoring every bit takes the waiting message. */
	struct util_match_result res;
	util_rx_entry_init(&r[0], FI_ADDR_UNSPEC, 0, ~0ULL, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &r[0], &res), 1);
	cr_assert_eq(res.unexp, &u);
	q_fini(&q);
}

Test(match, exact_tag_high_bits)
{
	struct util_match q;
	struct util_rx_entry rx;
	struct util_unexp_entry u;

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	post_queued(&q, &rx, FI_ADDR_UNSPEC, 1ULL << 63, 0, NULL, 8);
	arrive_unexp(&q, &u, 1, 0, 8);
	arrive_match(&q, 1, 1ULL << 63, 8, &rx);
	cr_assert_eq(util_match_pop_unexp(&q), &u);
	q_fini(&q);
}

Test(match, untagged_ignores_tags)
{
	struct util_match q;
	struct util_rx_entry r[2];

	q_init(&q, 0, 0, 0);
	post_queued(&q, &r[0], FI_ADDR_UNSPEC, 1, 0, NULL, 8);
	post_queued(&q, &r[1], FI_ADDR_UNSPEC, 2, 0, NULL, 8);
	arrive_match(&q, 1, 99, 8, &r[0]);
	arrive_match(&q, 1, 0, 8, &r[1]);
	q_fini(&q);
}

Test(match, truncation)
{
	struct util_match q;
	struct util_rx_entry rx;
	struct util_unexp_entry u;
	struct util_match_result res;

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	post_queued(&q, &rx, FI_ADDR_UNSPEC, 1, 0, NULL, 10);
	res = arrive_match(&q, 3, 1, 25, &rx);
	cr_assert_eq(res.offset, 0);
	cr_assert_eq(res.len, 10);
	cr_assert_eq(res.olen, 15);
	cr_assert_eq(util_match_rx_complete(&rx), 0);

	/* Same from the unexpected side; an exact fit does not truncate. */
	arrive_unexp(&q, &u, 3, 1, 40);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 1, 0, 0, NULL, 32);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.len, 32);
	cr_assert_eq(res.olen, 8);
	post_queued(&q, &rx, FI_ADDR_UNSPEC, 1, 0, NULL, 32);
	res = arrive_match(&q, 3, 1, 32, &rx);
	cr_assert_eq(res.len, 32);
	cr_assert_eq(res.olen, 0);
	q_fini(&q);
}

Test(match, directed_receive)
{
	struct util_match q;
	struct util_rx_entry r[3];
	struct util_unexp_entry u;

	q_init(&q, UTIL_MATCH_TAGGED | UTIL_MATCH_DIRECTED, 0, 0);
	post_queued(&q, &r[0], 2, 1, 0, NULL, 8);
	arrive_unexp(&q, &u, 1, 1, 8); /* wrong source */
	arrive_match(&q, 2, 1, 8, &r[0]);
	cr_assert_eq(util_match_pop_unexp(&q), &u);

	/* Any-source posted first wins over a later directed receive... */
	post_queued(&q, &r[1], FI_ADDR_UNSPEC, 1, 0, NULL, 8);
	post_queued(&q, &r[2], 2, 1, 0, NULL, 8);
	arrive_match(&q, 2, 1, 8, &r[1]);
	/* ...and a directed receive posted first wins over a later any. */
	post_queued(&q, &r[1], FI_ADDR_UNSPEC, 1, 0, NULL, 8);
	arrive_match(&q, 2, 1, 8, &r[2]);
	arrive_match(&q, 2, 1, 8, &r[1]);
	q_fini(&q);
}

Test(match, directed_unexpected)
{
	struct util_match q;
	struct util_unexp_entry u[5];
	struct util_rx_entry rx;
	struct util_match_result res;

	/* One bucket: every source collides, filtering must still work. */
	q_init(&q, UTIL_MATCH_TAGGED | UTIL_MATCH_DIRECTED, 1, 0);
	arrive_unexp(&q, &u[0], 1, 4, 8);
	arrive_unexp(&q, &u[1], 2, 4, 8);
	arrive_unexp(&q, &u[2], 1, 4, 8);
	arrive_unexp(&q, &u[3], 2, 5, 8);
	arrive_unexp(&q, &u[4], 2, 4, 8);

	util_rx_entry_init(&rx, 2, 4, 0, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[1]);
	util_rx_entry_init(&rx, 2, 4, 0, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[4]);
	/* Source 3 has nothing: the receive is queued. */
	util_rx_entry_init(&rx, 3, 4, 0, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 0);
	cr_assert_eq(util_match_cancel(&q, NULL), &rx);
	/* Any source, tag 4: the earliest left, u0, then u2. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 4, 0, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[0]);
	util_rx_entry_init(&rx, 1, 4, 0, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[2]);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, ~0ULL, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[3]);
	q_fini(&q);
}

Test(match, directed_pointer_addresses)
{
	/* FI_AV_MAP addresses look like pointers: aligned, high bits set. */
	struct util_match q;
	struct util_rx_entry r[8];
	struct util_unexp_entry u;
	fi_addr_t base = 0x7f1234560000ULL;
	int i;

	q_init(&q, UTIL_MATCH_TAGGED | UTIL_MATCH_DIRECTED, 8, 0);
	for (i = 0; i < 8; i++)
		post_queued(&q, &r[i], base + 0x1000 * (fi_addr_t)i, 1, 0, NULL,
			    8);
	arrive_unexp(&q, &u, base + 0x800, 1, 8);
	for (i = 7; i >= 0; i--)
		arrive_match(&q, base + 0x1000 * (fi_addr_t)i, 1, 8, &r[i]);
	cr_assert_eq(util_match_pop_unexp(&q), &u);
	q_fini(&q);
}

Test(match, source_ignored_without_directed)
{
	struct util_match q;
	struct util_rx_entry rx;

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	post_queued(&q, &rx, 2, 1, 0, NULL, 8);
	arrive_match(&q, 7, 1, 8, &rx);
	q_fini(&q);
}

Test(match, peek)
{
	struct util_match q;
	struct util_unexp_entry u[2], *ue = NULL;
	struct util_rx_entry rx;
	struct util_match_result res;

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 9, 0, FI_PEEK, CTX(1), 0);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), -FI_ENOMSG);

	arrive_unexp(&q, &u[0], 1, 9, 100);
	arrive_unexp(&q, &u[1], 1, 9, 200);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), 0);
	cr_assert_eq(ue, &u[0]);
	/* A plain peek leaves the message in place, repeatable. */
	cr_assert_eq(util_match_peek(&q, &rx, &ue), 0);
	cr_assert_eq(ue, &u[0]);
	cr_assert_eq(q.nposted, 0);
	cr_assert_eq(q.nunexp, 2);

	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 9, 0, 0, NULL, 100);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[0]);

	/* Peek with FI_DISCARD drops the message found. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 9, 0, FI_PEEK | FI_DISCARD,
			   CTX(1), 0);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), 0);
	cr_assert_eq(ue, &u[1]);
	cr_assert_eq(q.nunexp, 0);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 9, 0, FI_PEEK, CTX(1), 0);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), -FI_ENOMSG);
	q_fini(&q);
}

Test(match, peek_claim)
{
	struct util_match q;
	struct util_unexp_entry u[3], *ue = NULL;
	struct util_rx_entry rx;
	struct util_match_result res;
	struct fi_context ctx_a, ctx_b;

	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	arrive_unexp(&q, &u[0], 1, 3, 50);
	arrive_unexp(&q, &u[1], 1, 3, 60);
	arrive_unexp(&q, &u[2], 1, 4, 70);

	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 3, 0, FI_PEEK | FI_CLAIM,
			   &ctx_a, 0);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), 0);
	cr_assert_eq(ue, &u[0]);
	cr_assert_eq(ue->claim_context, &ctx_a);

	/* Claimed: no longer seen by peeks or receives. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 3, 0, FI_PEEK | FI_CLAIM,
			   &ctx_b, 0);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), 0);
	cr_assert_eq(ue, &u[1]);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 3, 0, FI_PEEK, NULL, 0);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), -FI_ENOMSG);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 3, 0, 0, NULL, 8);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 0);
	cr_assert_eq(util_match_cancel(&q, NULL), &rx);

	/* Claim under an unknown context finds nothing. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_CLAIM, CTX(77), 8);
	cr_assert_eq(util_match_claim(&q, &rx, &res), -FI_ENOMSG);

	/* Claims pair by context, in any order; data is truncated to fit. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_CLAIM, &ctx_b, 40);
	cr_assert_eq(util_match_claim(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[1]);
	cr_assert_eq(res.rx, &rx);
	cr_assert_eq(res.len, 40);
	cr_assert_eq(res.olen, 20);
	cr_assert_eq(util_match_claim(&q, &rx, &res), -FI_ENOMSG);

	/* FI_CLAIM | FI_DISCARD drops the message, no data. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_CLAIM | FI_DISCARD,
			   &ctx_a, 1000);
	cr_assert_eq(util_match_claim(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[0]);
	cr_assert_eq(res.len, 0);
	cr_assert_eq(res.olen, 0);

	/* Claim requires a context. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 4, 0, FI_PEEK | FI_CLAIM, NULL,
			   0);
	cr_assert_eq(util_match_peek(&q, &rx, &ue), -FI_EINVAL);

	cr_assert_eq(q.nunexp, 1);
	cr_assert_eq(util_match_pop_unexp(&q), &u[2]);
	q_fini(&q);
}

Test(match, cancel)
{
	struct util_match q;
	struct util_rx_entry r[4];

	q_init(&q, UTIL_MATCH_TAGGED | UTIL_MATCH_DIRECTED, 0, 0);
	post_queued(&q, &r[0], FI_ADDR_UNSPEC, 1, 0, CTX(10), 8);
	post_queued(&q, &r[1], FI_ADDR_UNSPEC, 1, 0, CTX(11), 8);
	post_queued(&q, &r[2], 5, 1, 0, CTX(12), 8);
	post_queued(&q, &r[3], 5, 1, 0, CTX(10), 8);

	cr_assert_null(util_match_cancel(&q, CTX(99)));
	cr_assert_eq(util_match_cancel(&q, CTX(11)), &r[1]);
	cr_assert_null(util_match_cancel(&q, CTX(11)));
	/* Two receives share a context: the earlier posted goes first. */
	cr_assert_eq(util_match_cancel(&q, CTX(10)), &r[0]);
	cr_assert_eq(util_match_cancel(&q, CTX(12)), &r[2]);
	cr_assert_eq(q.nposted, 1);
	arrive_match(&q, 5, 1, 8, &r[3]);
	q_fini(&q);
}

Test(match, multi_recv_slices_and_release)
{
	struct util_match q;
	struct util_rx_entry rx, tail;
	struct util_match_result res[3];
	int i;

	q_init(&q, 0, 0, 16);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, CTX(1),
			   100);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res[0]), 0);
	post_queued(&q, &tail, FI_ADDR_UNSPEC, 0, 0, CTX(2), 100);

	for (i = 0; i < 3; i++) {
		res[i] = arrive_match(&q, 1, 0, 30, &rx);
		cr_assert_eq(res[i].offset, (size_t)i * 30);
		cr_assert_eq(res[i].len, 30);
		cr_assert_eq(res[i].olen, 0);
		/* 70, 40 left: stays; 10 left < 16: released. */
		cr_assert_eq(res[i].released, i == 2);
	}
	cr_assert_eq(util_match_rx_complete(&rx), 0);
	cr_assert_eq(util_match_rx_complete(&rx), 0);
	cr_assert_eq(util_match_rx_complete(&rx), FI_MULTI_RECV);

	/* Released: the next message goes to the next receive. */
	arrive_match(&q, 1, 0, 30, &tail);
	q_fini(&q);
}

Test(match, multi_recv_keeps_post_order)
{
	struct util_match q;
	struct util_rx_entry a, b;
	struct util_match_result res;

	q_init(&q, 0, 0, 1);
	util_rx_entry_init(&a, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 10);
	cr_assert_eq(util_match_post_recv(&q, &a, &res), 0);
	util_rx_entry_init(&b, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 10);
	cr_assert_eq(util_match_post_recv(&q, &b, &res), 0);
	/* a stays first until it is used up. */
	res = arrive_match(&q, 1, 0, 4, &a);
	res = arrive_match(&q, 1, 0, 4, &a);
	res = arrive_match(&q, 1, 0, 4, &a);
	cr_assert_eq(res.offset, 8);
	cr_assert_eq(res.len, 2);
	cr_assert_eq(res.olen, 2);
	cr_assert(res.released);
	res = arrive_match(&q, 1, 0, 10, &b);
	cr_assert(res.released, "exactly full, min 1: released");
	q_fini(&q);
}

Test(match, multi_recv_last_completion_carries_flag)
{
	struct util_match q;
	struct util_rx_entry rx;
	struct util_match_result res;

	/* Rendezvous slices can complete out of order. */
	q_init(&q, 0, 0, 8);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 64);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 0);
	arrive_match(&q, 1, 0, 20, &rx);
	arrive_match(&q, 1, 0, 20, &rx);
	res = arrive_match(&q, 1, 0, 20, &rx);
	cr_assert(res.released);
	cr_assert_eq(rx.pending, 3);
	/* The slice matched last completes first: not the last one. */
	cr_assert_eq(util_match_rx_complete(&rx), 0);
	cr_assert_eq(util_match_rx_complete(&rx), 0);
	cr_assert_eq(util_match_rx_complete(&rx), FI_MULTI_RECV);
	q_fini(&q);
}

Test(match, multi_recv_truncation)
{
	struct util_match q;
	struct util_rx_entry rx;
	struct util_match_result res;

	q_init(&q, 0, 0, 10);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 100);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 0);
	res = arrive_match(&q, 1, 0, 60, &rx);
	cr_assert_eq(res.len, 60);
	cr_assert_not(res.released);
	res = arrive_match(&q, 1, 0, 60, &rx);
	cr_assert_eq(res.offset, 60);
	cr_assert_eq(res.len, 40);
	cr_assert_eq(res.olen, 20);
	cr_assert(res.released);
	cr_assert_eq(util_match_rx_complete(&rx), 0);
	cr_assert_eq(util_match_rx_complete(&rx), FI_MULTI_RECV);
	q_fini(&q);
}

Test(match, multi_recv_from_unexpected)
{
	struct util_match q;
	struct util_unexp_entry u[3];
	struct util_rx_entry rx;
	struct util_match_result res;

	q_init(&q, 0, 0, 15);
	arrive_unexp(&q, &u[0], 1, 0, 20);
	arrive_unexp(&q, &u[1], 2, 0, 20);
	arrive_unexp(&q, &u[2], 1, 0, 20);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 50);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[0]);
	cr_assert_eq(res.offset, 0);
	cr_assert_not(res.released);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[1]);
	cr_assert_eq(res.offset, 20);
	cr_assert(res.released, "10 left < 15");
	cr_assert_eq(q.nposted, 0);
	cr_assert_eq(util_match_rx_complete(&rx), 0);
	cr_assert_eq(util_match_rx_complete(&rx), FI_MULTI_RECV);

	/* A fresh buffer takes the last one and is then queued. */
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 50);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 1);
	cr_assert_eq(res.unexp, &u[2]);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 0);
	cr_assert_eq(q.nposted, 1);
	res = arrive_match(&q, 1, 0, 20, &rx);
	cr_assert_eq(res.offset, 20);
	cr_assert(res.released);
	cr_assert_eq(util_match_rx_complete(&rx), 0);
	cr_assert_eq(util_match_rx_complete(&rx), FI_MULTI_RECV);
	q_fini(&q);
}

Test(match, min_multi_recv_applies_to_later_posts)
{
	struct util_match q;
	struct util_rx_entry a, b;
	struct util_match_result res;

	q_init(&q, 0, 0, 4);
	util_rx_entry_init(&a, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 40);
	cr_assert_eq(util_match_post_recv(&q, &a, &res), 0);
	util_match_set_min_multi_recv(&q, 30);
	util_rx_entry_init(&b, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, NULL, 40);
	cr_assert_eq(util_match_post_recv(&q, &b, &res), 0);

	res = arrive_match(&q, 1, 0, 20, &a);
	cr_assert_not(res.released, "a keeps its threshold of 4");
	cr_assert_eq(util_match_cancel(&q, NULL), &a);
	cr_assert_eq(util_match_rx_complete(&a), FI_MULTI_RECV);
	res = arrive_match(&q, 1, 0, 20, &b);
	cr_assert(res.released, "b: 20 left < 30");
	cr_assert_eq(util_match_rx_complete(&b), FI_MULTI_RECV);
	q_fini(&q);
}

Test(match, cancel_multi_recv)
{
	struct util_match q;
	struct util_rx_entry rx;
	struct util_match_result res;

	q_init(&q, 0, 0, 1);
	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0, FI_MULTI_RECV, CTX(5),
			   100);
	cr_assert_eq(util_match_post_recv(&q, &rx, &res), 0);
	arrive_match(&q, 1, 0, 10, &rx);
	cr_assert_eq(util_match_cancel(&q, CTX(5)), &rx);
	/* A slice is outstanding: its completion releases the buffer. */
	cr_assert_eq(rx.pending, 1);
	cr_assert_eq(util_match_rx_complete(&rx), FI_MULTI_RECV);
	cr_assert_eq(util_match_msg_arrived(&q, 1, 0, 10, &res), 0);
	q_fini(&q);
}

Test(match, drain_and_fini)
{
	struct util_match q;
	struct util_rx_entry r[3];
	struct util_unexp_entry u[2], *ue = NULL;
	struct util_rx_entry peek;
	int n = 0;

	q_init(&q, UTIL_MATCH_TAGGED | UTIL_MATCH_DIRECTED, 4, 0);
	post_queued(&q, &r[0], FI_ADDR_UNSPEC, 1, 0, NULL, 8);
	post_queued(&q, &r[1], 3, 1, 0, NULL, 8);
	post_queued(&q, &r[2], 9, 1, 0, NULL, 8);
	arrive_unexp(&q, &u[0], 4, 2, 8);
	arrive_unexp(&q, &u[1], 4, 2, 8);
	util_rx_entry_init(&peek, FI_ADDR_UNSPEC, 2, 0, FI_PEEK | FI_CLAIM,
			   CTX(1), 0);
	cr_assert_eq(util_match_peek(&q, &peek, &ue), 0);

	while (util_match_pop_posted(&q))
		n++;
	cr_assert_eq(n, 3);
	n = 0;
	while (util_match_pop_unexp(&q))
		n++;
	cr_assert_eq(n, 2);
	q_fini(&q);

	/* Fini with entries left reports it. */
	q_init(&q, UTIL_MATCH_TAGGED, 0, 0);
	post_queued(&q, &r[0], FI_ADDR_UNSPEC, 1, 0, NULL, 8);
	cr_assert_eq(util_match_fini(&q), -FI_EBUSY);
}

/* ---- randomized comparison with a naive model ------------------------- */

#define NRX 48
#define NUE 48
#define NSRC 6

struct model_rx {
	int id;
	fi_addr_t addr;
	uint64_t tag, ignore;
	bool multi;
	size_t len, offset, min_free;
	void *ctx;
};

struct model_ue {
	int id;
	fi_addr_t addr;
	uint64_t tag;
	size_t len;
	void *claim;
};

struct world {
	struct util_match q;
	unsigned int flags;
	size_t min;
	unsigned int seed;

	struct util_rx_entry rx[NRX];
	bool rx_busy[NRX];
	struct util_unexp_entry ue[NUE];
	bool ue_busy[NUE];

	/* the model */
	struct model_rx posted[NRX]; /* in post order */
	int nposted;
	struct model_ue unexp[NUE]; /* in arrival order */
	int nunexp;
	int pending[NRX]; /* outstanding slices per rx */
	bool released[NRX];
	bool claimed_ctx[16];

	/* slices waiting for util_match_rx_complete */
	int slices[4 * NRX];
	int nslices;
};

static unsigned int rnd(struct world *w, unsigned int n)
{
	return (unsigned int)rand_r(&w->seed) % n;
}

static bool model_tag(const struct world *w, uint64_t rtag, uint64_t ignore,
		      uint64_t tag)
{
	return !(w->flags & UTIL_MATCH_TAGGED) || !((rtag ^ tag) & ~ignore);
}

static bool model_src(const struct world *w, fi_addr_t raddr, fi_addr_t src)
{
	return !(w->flags & UTIL_MATCH_DIRECTED) || raddr == FI_ADDR_UNSPEC ||
	       raddr == src;
}

static int find_free(bool *busy, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!busy[i])
			return i;
	return -1;
}

/* The earliest unclaimed message the receive matches, index or -1. */
static int model_find_unexp(const struct world *w, const struct model_rx *m)
{
	int i;

	for (i = 0; i < w->nunexp; i++) {
		const struct model_ue *u = &w->unexp[i];

		if (!u->claim && model_src(w, m->addr, u->addr) &&
		    model_tag(w, m->tag, m->ignore, u->tag))
			return i;
	}
	return -1;
}

static void model_del_unexp(struct world *w, int i)
{
	memmove(&w->unexp[i], &w->unexp[i + 1],
		(size_t)(w->nunexp - i - 1) * sizeof(w->unexp[0]));
	w->nunexp--;
}

static void model_del_posted(struct world *w, int i)
{
	memmove(&w->posted[i], &w->posted[i + 1],
		(size_t)(w->nposted - i - 1) * sizeof(w->posted[0]));
	w->nposted--;
}

/* Expected outcome of m taking a message of len bytes. */
static void model_take(struct world *w, struct model_rx *m, size_t len,
		       size_t *off, size_t *dlen, size_t *olen, bool *rel)
{
	size_t space = m->len - m->offset;

	*off = m->offset;
	*dlen = len < space ? len : space;
	*olen = len - *dlen;
	*rel = false;
	if (m->multi) {
		m->offset += *dlen;
		w->pending[m->id]++;
		w->slices[w->nslices++] = m->id;
		if (m->len - m->offset < m->min_free) {
			*rel = true;
			w->released[m->id] = true;
		}
	}
}

static void check_res(const struct util_match_result *res, size_t off,
		      size_t dlen, size_t olen, bool rel, long step)
{
	cr_assert_eq(res->offset, off, "step %ld", step);
	cr_assert_eq(res->len, dlen, "step %ld", step);
	cr_assert_eq(res->olen, olen, "step %ld", step);
	cr_assert_eq(res->released, rel, "step %ld", step);
}

static void free_rx_if_done(struct world *w, int id)
{
	if (!w->pending[id])
		w->rx_busy[id] = false;
}

static void op_post(struct world *w, long step)
{
	struct util_match_result res;
	struct model_rx m;
	size_t off, dlen, olen;
	bool rel = false;
	int id = find_free(w->rx_busy, NRX), i, ret;

	if (id < 0)
		return;
	m.id = id;
	m.addr = rnd(w, 2) ? FI_ADDR_UNSPEC : rnd(w, NSRC);
	m.tag = rnd(w, 4);
	m.ignore = (uint64_t[]){0, 0, 1, 2, ~0ULL}[rnd(w, 5)];
	m.multi = !rnd(w, 4);
	m.len = rnd(w, 4) ? rnd(w, 64) : rnd(w, 8);
	m.offset = 0;
	m.min_free = w->min ? w->min : 1;
	m.ctx = CTX(1 + rnd(w, 8));
	w->rx_busy[id] = true;
	w->pending[id] = 0;
	w->released[id] = false;
	util_rx_entry_init(&w->rx[id], m.addr, m.tag, m.ignore,
			   m.multi ? FI_MULTI_RECV : 0, m.ctx, m.len);

	for (;;) {
		ret = util_match_post_recv(&w->q, &w->rx[id], &res);
		i = model_find_unexp(w, &m);
		if (i < 0) {
			cr_assert_eq(ret, 0, "step %ld: post matched", step);
			w->posted[w->nposted++] = m;
			return;
		}
		cr_assert_eq(ret, 1, "step %ld: post did not match", step);
		cr_assert_eq(res.rx, &w->rx[id]);
		cr_assert_eq(res.unexp, &w->ue[w->unexp[i].id],
			     "step %ld: post took the wrong message", step);
		model_take(w, &m, w->unexp[i].len, &off, &dlen, &olen, &rel);
		check_res(&res, off, dlen, olen, rel, step);
		w->ue_busy[w->unexp[i].id] = false;
		model_del_unexp(w, i);
		if (!m.multi) {
			w->rx_busy[id] = false;
			return;
		}
		if (rel)
			return;
	}
}

static void op_arrive(struct world *w, long step)
{
	struct util_match_result res;
	fi_addr_t src = rnd(w, 8) ? rnd(w, NSRC) : FI_ADDR_NOTAVAIL;
	uint64_t tag = rnd(w, 4);
	size_t len = rnd(w, 48), off, dlen, olen;
	bool rel, multi;
	int i, ret, id;

	ret = util_match_msg_arrived(&w->q, src, tag, len, &res);
	for (i = 0; i < w->nposted; i++) {
		struct model_rx *m = &w->posted[i];

		if (model_src(w, m->addr, src) &&
		    model_tag(w, m->tag, m->ignore, tag))
			break;
	}
	if (i == w->nposted) {
		cr_assert_eq(ret, 0, "step %ld: arrival matched", step);
		id = find_free(w->ue_busy, NUE);
		cr_assert_geq(id, 0);
		w->ue_busy[id] = true;
		util_unexp_entry_init(&w->ue[id], src, tag, len);
		util_match_add_unexp(&w->q, &w->ue[id]);
		w->unexp[w->nunexp++] =
		    (struct model_ue){id, src, tag, len, NULL};
		return;
	}
	cr_assert_eq(ret, 1, "step %ld: arrival found no receive", step);
	cr_assert_eq(res.rx, &w->rx[w->posted[i].id],
		     "step %ld: arrival took the wrong receive", step);
	cr_assert_null(res.unexp);
	id = w->posted[i].id;
	multi = w->posted[i].multi;
	model_take(w, &w->posted[i], len, &off, &dlen, &olen, &rel);
	check_res(&res, off, dlen, olen, rel, step);
	if (!multi) {
		model_del_posted(w, i);
		w->rx_busy[id] = false;
	} else if (rel) {
		/* Freed by the completion of its last slice. */
		model_del_posted(w, i);
	}
}

static void op_complete(struct world *w, long step)
{
	int k, id;
	uint64_t flags;

	if (!w->nslices)
		return;
	k = (int)rnd(w, (unsigned int)w->nslices);
	id = w->slices[k];
	w->slices[k] = w->slices[--w->nslices];
	flags = util_match_rx_complete(&w->rx[id]);
	w->pending[id]--;
	if (!w->pending[id] && w->released[id]) {
		cr_assert_eq(flags, FI_MULTI_RECV, "step %ld", step);
		free_rx_if_done(w, id);
	} else {
		cr_assert_eq(flags, 0, "step %ld", step);
	}
}

static void op_cancel(struct world *w, long step)
{
	void *ctx = CTX(1 + rnd(w, 8));
	struct util_rx_entry *got = util_match_cancel(&w->q, ctx);
	int i, id;

	for (i = 0; i < w->nposted; i++)
		if (w->posted[i].ctx == ctx)
			break;
	if (i == w->nposted) {
		cr_assert_null(got, "step %ld: cancel found one", step);
		return;
	}
	id = w->posted[i].id;
	cr_assert_eq(got, &w->rx[id], "step %ld: cancelled the wrong one",
		     step);
	model_del_posted(w, i);
	w->released[id] = true;
	free_rx_if_done(w, id);
}

static void op_peek(struct world *w, long step)
{
	static const uint64_t kinds[] = {FI_PEEK, FI_PEEK | FI_CLAIM,
					 FI_PEEK | FI_DISCARD};
	struct util_unexp_entry *got = NULL;
	struct util_rx_entry rx;
	struct model_rx m = {0};
	uint64_t flags = kinds[rnd(w, 3)];
	int c = (int)rnd(w, 16), i, ret;

	if ((flags & FI_CLAIM) && w->claimed_ctx[c])
		flags = FI_PEEK;
	m.addr = rnd(w, 2) ? FI_ADDR_UNSPEC : rnd(w, NSRC);
	m.tag = rnd(w, 4);
	m.ignore = rnd(w, 3) ? 0 : 3;
	util_rx_entry_init(&rx, m.addr, m.tag, m.ignore, flags, CTX(100 + c),
			   0);
	ret = util_match_peek(&w->q, &rx, &got);
	i = model_find_unexp(w, &m);
	if (i < 0) {
		cr_assert_eq(ret, -FI_ENOMSG, "step %ld", step);
		return;
	}
	cr_assert_eq(ret, 0, "step %ld: peek missed", step);
	cr_assert_eq(got, &w->ue[w->unexp[i].id], "step %ld: peek", step);
	if (flags & FI_DISCARD) {
		w->ue_busy[w->unexp[i].id] = false;
		model_del_unexp(w, i);
	} else if (flags & FI_CLAIM) {
		w->unexp[i].claim = CTX(100 + c);
		w->claimed_ctx[c] = true;
	}
}

static void op_claim(struct world *w, long step)
{
	struct util_match_result res;
	struct util_rx_entry rx;
	int c = (int)rnd(w, 16), i, ret;
	bool discard = !rnd(w, 3);
	size_t len = rnd(w, 48);

	util_rx_entry_init(&rx, FI_ADDR_UNSPEC, 0, 0,
			   FI_CLAIM | (discard ? FI_DISCARD : 0), CTX(100 + c),
			   len);
	ret = util_match_claim(&w->q, &rx, &res);
	for (i = 0; i < w->nunexp; i++)
		if (w->unexp[i].claim == CTX(100 + c))
			break;
	if (i == w->nunexp) {
		cr_assert_eq(ret, -FI_ENOMSG, "step %ld", step);
		return;
	}
	cr_assert_eq(ret, 1, "step %ld: claim missed", step);
	cr_assert_eq(res.unexp, &w->ue[w->unexp[i].id], "step %ld", step);
	if (discard) {
		cr_assert_eq(res.len, 0);
	} else {
		cr_assert_eq(res.len, WEFT_MIN(len, w->unexp[i].len));
		cr_assert_eq(res.olen, w->unexp[i].len - res.len);
	}
	w->claimed_ctx[c] = false;
	w->ue_busy[w->unexp[i].id] = false;
	model_del_unexp(w, i);
}

static void run_random(unsigned int flags, size_t buckets, unsigned int seed,
		       long steps)
{
	struct world *w = calloc(1, sizeof(*w));
	long step;
	unsigned int op;

	cr_assert_not_null(w);
	w->flags = flags;
	w->seed = seed;
	w->min = 8;
	q_init(&w->q, flags, buckets, w->min);

	for (step = 0; step < steps; step++) {
		op = rnd(w, 100);
		if (op < 30)
			op_post(w, step);
		else if (op < 65 && w->nunexp < NUE)
			op_arrive(w, step);
		else if (op < 78)
			op_complete(w, step);
		else if (op < 84)
			op_cancel(w, step);
		else if (op < 92)
			op_peek(w, step);
		else if (op < 97)
			op_claim(w, step);
		else if (op < 98) {
			w->min = rnd(w, 24);
			util_match_set_min_multi_recv(&w->q, w->min);
		}
		cr_assert_eq(w->q.nposted, (size_t)w->nposted, "step %ld",
			     step);
		cr_assert_eq(w->q.nunexp, (size_t)w->nunexp, "step %ld", step);
	}

	while (w->nslices)
		op_complete(w, steps);
	while (util_match_pop_posted(&w->q))
		;
	while (util_match_pop_unexp(&w->q))
		;
	q_fini(&w->q);
	free(w);
}

Test(match_random, tagged_directed_collisions)
{
	run_random(UTIL_MATCH_TAGGED | UTIL_MATCH_DIRECTED, 2, 1, 40000);
}

Test(match_random, tagged_directed_wide)
{
	run_random(UTIL_MATCH_TAGGED | UTIL_MATCH_DIRECTED, 64, 2, 40000);
}

Test(match_random, tagged_any_source)
{
	run_random(UTIL_MATCH_TAGGED, 0, 3, 40000);
}

Test(match_random, untagged_directed)
{
	run_random(UTIL_MATCH_DIRECTED, 1, 4, 40000);
}

Test(match_random, untagged)
{
	run_random(0, 0, 5, 40000);
}
