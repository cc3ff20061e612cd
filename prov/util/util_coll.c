/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Collectives (weft/util_coll.h): AV sets, groups, and the operations as
 * schedules of rounds over the engine's own messages.
 */
#include "weft/util_coll.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "weft/util_atomic.h"
#include "weft/util_av.h"
#include "weft/util_eq.h"
#include "weft/stubs.h"
#include "weft/util_rdm.h"

/* ---- AV sets -------------------------------------------------------------- */

/* What fi_av_set_addr and fi_mc_addr answer: no AV names such values
 * (their slot index and generation fit in 48 bits). */
#define COLL_SET_ADDR (0x7c02ULL << 48)
#define COLL_MC_ADDR (0x7c01ULL << 48)
#define COLL_ADDR_KIND(a) ((a) & (0xffffULL << 48))

struct coll_set {
	struct fid_av_set set_fid;
	struct util_av *av;
	fi_addr_t *addr; /* members, in order */
	size_t n, cap;
};

static struct coll_set *set_of(const struct fid_av_set *s)
{
	return container_of(s, struct coll_set, set_fid);
}

static ssize_t set_find(const struct coll_set *s, fi_addr_t a)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->addr[i] == a)
			return (ssize_t)i;
	return -1;
}

static int set_add(struct coll_set *s, fi_addr_t a)
{
	fi_addr_t *p;
	size_t cap;

	if (s->n == s->cap) {
		cap = s->cap ? 2 * s->cap : 16;
		p = realloc(s->addr, cap * sizeof(*p));
		if (!p)
			return -FI_ENOMEM;
		s->addr = p;
		s->cap = cap;
	}
	s->addr[s->n++] = a;
	return 0;
}

/* Keep the members for which keep() says so, in order. */
static void set_filter(struct coll_set *s, const struct coll_set *o,
		       bool in_o)
{
	size_t i, k = 0;

	for (i = 0; i < s->n; i++)
		if ((set_find(o, s->addr[i]) >= 0) == in_o)
			s->addr[k++] = s->addr[i];
	s->n = k;
}

static int set_pair_check(struct fid_av_set *dst, const struct fid_av_set *src)
{
	if (!dst || !src || set_of(dst)->av != set_of(src)->av)
		return -FI_EINVAL;
	return 0;
}

static int set_union(struct fid_av_set *dst, const struct fid_av_set *src)
{
	struct coll_set *d = set_of(dst);
	const struct coll_set *s;
	size_t i, n;
	int ret = set_pair_check(dst, src);

	if (ret)
		return ret;
	s = set_of(src);
	n = s->n; /* (dst may be src) */
	for (i = 0; i < n; i++) {
		if (set_find(d, s->addr[i]) >= 0)
			continue;
		ret = set_add(d, s->addr[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int set_intersect(struct fid_av_set *dst, const struct fid_av_set *src)
{
	int ret = set_pair_check(dst, src);

	if (!ret)
		set_filter(set_of(dst), set_of(src), true);
	return ret;
}

static int set_diff(struct fid_av_set *dst, const struct fid_av_set *src)
{
	int ret = set_pair_check(dst, src);

	if (ret)
		return ret;
	if (dst == src)
		set_of(dst)->n = 0;
	else
		set_filter(set_of(dst), set_of(src), false);
	return 0;
}

static int set_insert(struct fid_av_set *set, fi_addr_t addr)
{
	struct coll_set *s = set_of(set);

	if (!util_av_slot_get(s->av, addr) || set_find(s, addr) >= 0)
		return -FI_EINVAL;
	return set_add(s, addr);
}

static int set_remove(struct fid_av_set *set, fi_addr_t addr)
{
	struct coll_set *s = set_of(set);
	ssize_t i = set_find(s, addr);

	if (i < 0)
		return -FI_EINVAL;
	memmove(s->addr + i, s->addr + i + 1,
		(s->n - (size_t)i - 1) * sizeof(*s->addr));
	s->n--;
	return 0;
}

static int set_addr(struct fid_av_set *set, fi_addr_t *coll_addr)
{
	if (!coll_addr)
		return -FI_EINVAL;
	*coll_addr = COLL_SET_ADDR;
	(void)set;
	return 0;
}

static int set_close(struct fid *fid)
{
	struct coll_set *s = container_of(fid, struct coll_set, set_fid.fid);

	free(s->addr);
	free(s);
	return 0;
}

static struct fi_ops_av_set coll_set_ops = {
	.size = sizeof(struct fi_ops_av_set),
	.set_union = set_union,
	.intersect = set_intersect,
	.diff = set_diff,
	.insert = set_insert,
	.remove = set_remove,
	.addr = set_addr,
};

static int mc_close(struct fid *fid);

/* The fi_ops of sets and groups: only fi_close, by class. */
static int coll_obj_close(struct fid *fid)
{
	return fid->fclass == FI_CLASS_MC ? mc_close(fid) : set_close(fid);
}

static struct fi_ops coll_obj_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = coll_obj_close,
	.bind = weft_no_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
};

/* The live entries of the AV, in slot order (FI_UNIVERSE). */
static int set_fill_universe(struct coll_set *s)
{
	struct util_av *av = s->av;
	struct util_av_slot *slot;
	uint32_t i, end;
	int ret = 0;

	weft_lock(&av->lock);
	end = av->next_idx;
	for (i = 0; i < end && !ret; i++) {
		slot = util_av_slot_at(av, i);
		if (!slot || !slot->used)
			continue;
		ret = set_add(s, (fi_addr_t)i |
				     (av->type == FI_AV_MAP ?
					      (fi_addr_t)slot->gen << 32 :
					      0));
	}
	weft_unlock(&av->lock);
	return ret;
}

int util_av_set_open(struct fid_av *av_fid, struct fi_av_set_attr *attr,
		     struct fid_av_set **set, void *context)
{
	struct util_av *av = util_av_from_fid(av_fid);
	struct coll_set *s;
	fi_addr_t a;
	int ret = 0;

	if (!attr || !set)
		return -FI_EINVAL;
	/* A range needs FI_AV_TABLE, an end not before its start and a
	 * stride (fi_av_set(3)); communication keys (comm_key) are not
	 * used: members are named by address. */
	if (attr->start_addr != FI_ADDR_NOTAVAIL &&
	    !(attr->flags & FI_UNIVERSE) &&
	    (av->type != FI_AV_TABLE || attr->end_addr == FI_ADDR_NOTAVAIL ||
	     attr->end_addr < attr->start_addr || !attr->stride))
		return -FI_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->av = av;
	s->set_fid.fid.fclass = FI_CLASS_AV_SET;
	s->set_fid.fid.context = context;
	s->set_fid.fid.ops = &coll_obj_fi_ops;
	s->set_fid.ops = &coll_set_ops;
	if (attr->flags & FI_UNIVERSE) {
		ret = set_fill_universe(s);
	} else if (attr->start_addr != FI_ADDR_NOTAVAIL) {
		for (a = attr->start_addr; a <= attr->end_addr && !ret;
		     a += attr->stride) {
			if (util_av_slot_get(av, a))
				ret = set_add(s, a);
			if (attr->end_addr - a < attr->stride)
				break;
		}
	}
	if (ret) {
		set_close(&s->set_fid.fid);
		return ret;
	}
	*set = &s->set_fid;
	return 0;
}

/* ---- groups and operations ---------------------------------------------- */

struct coll_op;

/* One transfer of a round: to or from rank peer, step labelling it.  Its
 * address is the engine's context for it. */
struct coll_xfer {
	struct coll_op *op;
	bool send;
	bool done; /* posted and ended */
	uint8_t step;
	uint32_t peer;
	void *buf;
	size_t len;
};

/* What a round does once its transfers are over. */
enum coll_act {
	ACT_NONE,
	ACT_REDUCE, /* dst = dst op src, count elements */
	ACT_COPY,   /* count bytes from src to dst */
};

struct coll_round {
	size_t first, n; /* its transfers */
	enum coll_act act;
	void *dst;
	const void *src;
	size_t count;
};

struct coll_mc;

struct coll_op {
	struct dlist_entry entry; /* on the endpoint's retry list, or none */
	struct dlist_entry mc_entry; /* on its group's ops, once started */
	struct coll_mc *mc;
	bool join;
	void *context;
	uint16_t seq;
	enum fi_datatype dt;
	enum fi_op rop;
	bool cq_reserved;
	struct coll_round *rounds;
	size_t nrounds, cap_rounds, cur;
	struct coll_xfer *xfers;
	size_t nxfers, cap_xfers;
	size_t posted;	/* of the current round */
	size_t pending; /* posted, not ended */
	int err;	/* first error, positive */
	/* After an error: the next transfer whose receiver is told of it
	 * (coll_tell), once the telling began. */
	bool telling;
	size_t tell_at;
	bool busy;	/* advance runs: calls from inside it only count */
	void *tmp;	/* scratch, freed with the op */
};

struct coll_mc {
	struct fid_mc mc_fid;
	struct util_rdm_ep *ep;
	uint32_t slot; /* in the endpoint's table */
	uint32_t n, rank;
	uint32_t gid; /* 24 bits */
	uint16_t seq; /* the next operation's */
	size_t inflight;
	struct dlist_entry ops; /* started, not finished */
	bool joined; /* FI_JOIN_COMPLETE reported */
	fi_addr_t *addr; /* members by rank */
};

/* A group hash and how many groups of it the endpoint joined. */
struct coll_seen {
	uint64_t hash;
	uint32_t count;
};

struct util_coll_ep {
	struct coll_mc **mc;
	size_t nmc;
	struct dlist_entry retry; /* coll_op.entry */
	struct coll_seen *seen;
	size_t nseen;
};

/* Operations one group may have in flight (sequence numbers: 16 bits). */
#define COLL_MAX_INFLIGHT 4096

static uint64_t coll_tag(const struct coll_mc *mc, uint16_t seq, uint8_t step,
			 uint32_t src)
{
	return (uint64_t)mc->gid << 40 | (uint64_t)seq << 24 |
	       (uint64_t)step << 16 | (src & 0xffff);
}

/* ---- building schedules --------------------------------------------------- */

static struct coll_round *round_new(struct coll_op *op)
{
	struct coll_round *r;

	if (op->nrounds == op->cap_rounds) {
		size_t cap = op->cap_rounds ? 2 * op->cap_rounds : 8;

		r = realloc(op->rounds, cap * sizeof(*r));
		if (!r)
			return NULL;
		op->rounds = r;
		op->cap_rounds = cap;
	}
	r = &op->rounds[op->nrounds++];
	memset(r, 0, sizeof(*r));
	r->first = op->nxfers;
	return r;
}

static int xfer_add(struct coll_op *op, bool send, uint32_t peer,
		    uint8_t step, void *buf, size_t len)
{
	struct coll_xfer *x;

	if (op->nxfers == op->cap_xfers) {
		size_t cap = op->cap_xfers ? 2 * op->cap_xfers : 8;

		x = realloc(op->xfers, cap * sizeof(*x));
		if (!x)
			return -FI_ENOMEM;
		op->xfers = x;
		op->cap_xfers = cap;
	}
	x = &op->xfers[op->nxfers++];
	x->op = op;
	x->done = false;
	x->send = send;
	x->peer = peer;
	x->step = step;
	x->buf = buf;
	x->len = len;
	op->rounds[op->nrounds - 1].n++;
	return 0;
}

/* A round of transfers (recv from rfrom into rbuf, send to sto from
 * sbuf; UINT32_MAX for none), then an action. */
static int round_xchg(struct coll_op *op, uint8_t step, uint32_t rfrom,
		      void *rbuf, size_t rlen, uint32_t sto, const void *sbuf,
		      size_t slen)
{
	int ret = 0;

	if (!round_new(op))
		return -FI_ENOMEM;
	if (rfrom != UINT32_MAX)
		ret = xfer_add(op, false, rfrom, step, rbuf, rlen);
	if (!ret && sto != UINT32_MAX)
		ret = xfer_add(op, true, sto, step, (void *)sbuf, slen);
	return ret;
}

static void round_act(struct coll_op *op, enum coll_act act, void *dst,
		      const void *src, size_t count)
{
	struct coll_round *r = &op->rounds[op->nrounds - 1];

	r->act = act;
	r->dst = dst;
	r->src = src;
	r->count = count;
}

/* A round of no transfer that copies len bytes. */
static int round_copy(struct coll_op *op, void *dst, const void *src,
		      size_t len)
{
	if (!len || dst == src)
		return 0;
	if (!round_new(op))
		return -FI_ENOMEM;
	round_act(op, ACT_COPY, dst, src, len);
	return 0;
}

#define NONE UINT32_MAX

static uint32_t ceil_log2(uint32_t n)
{
	uint32_t k = 0;

	while (((uint64_t)1 << k) < n)
		k++;
	return k;
}

/* Dissemination: in round k, a message to rank + 2^k, one from
 * rank - 2^k. */
static int sched_barrier(struct coll_op *op)
{
	uint32_t n = op->mc->n, r = op->mc->rank, k, d;
	int ret = 0;

	for (k = 0, d = 1; d < n && !ret; k++, d <<= 1)
		ret = round_xchg(op, (uint8_t)k, (r + n - d) % n, NULL, 0,
				 (r + d) % n, NULL, 0);
	return ret;
}

/* Ranks relative to the root, and back. */
static uint32_t vrank(const struct coll_mc *mc, uint32_t root)
{
	return (mc->rank + mc->n - root) % mc->n;
}

static uint32_t real_rank(const struct coll_mc *mc, uint32_t root,
			  uint32_t v)
{
	return (v + root) % mc->n;
}

/* In a binomial tree over ranks relative to the root, the subtree of v
 * spans v .. v + span(v) - 1 (cut at n); its parent is v - lowbit(v),
 * its children v + 2^k for 2^k < span(v). */
static uint32_t tree_span(uint32_t v, uint32_t n)
{
	if (!v)
		return n > 1 ? 1u << ceil_log2(n) : 1;
	return v & -v;
}

static uint32_t tree_size(uint32_t v, uint32_t n)
{
	uint32_t s = tree_span(v, n);

	return WEFT_MIN(s, n - v);
}

/*
 * Down a binomial tree from root: a round receiving the member's part
 * from its parent, then one sending each child its part.  A broadcast's
 * part is the whole buffer (b bytes at base) for everyone; a scatter's
 * (blocks) is the blocks of the subtree, b bytes each, the child v + d's
 * at base + d * b.
 */
static int sched_down(struct coll_op *op, char *base, size_t b, bool blocks,
		      uint32_t root)
{
	struct coll_mc *mc = op->mc;
	uint32_t n = mc->n, v = vrank(mc, root), span = tree_span(v, n), d;
	int ret;

	if (!round_new(op))
		return -FI_ENOMEM;
	if (v) {
		ret = xfer_add(op, false, real_rank(mc, root, v - span), 0,
			       base, blocks ? tree_size(v, n) * b : b);
		if (ret)
			return ret;
	}
	if (!round_new(op))
		return -FI_ENOMEM;
	for (d = span >> 1; d; d >>= 1) {
		if (v + d >= n)
			continue;
		ret = xfer_add(op, true, real_rank(mc, root, v + d), 0,
			       blocks ? base + d * b : base,
			       blocks ? tree_size(v + d, n) * b : b);
		if (ret)
			return ret;
	}
	return 0;
}

/* Recursive doubling on acc (len bytes, count elements), with scratch
 * tmp: the first 2 * (n - p) ranks fold pairwise first (the even one
 * hands its data to the odd one and gets the result back at the end). */
static int sched_allreduce(struct coll_op *op, void *acc, void *tmp,
			   size_t len, size_t count)
{
	struct coll_mc *mc = op->mc;
	uint32_t n = mc->n, r = mc->rank, p = 1, rem, nr, mask, pn, pr;
	uint8_t step = 1, last;
	int ret;

	while (p * 2 <= n)
		p *= 2;
	rem = n - p;
	last = (uint8_t)(ceil_log2(p) + 1);
	if (r < 2 * rem) {
		if (!(r & 1)) {
			ret = round_xchg(op, 0, NONE, NULL, 0, r + 1, acc, len);
			if (!ret)
				ret = round_xchg(op, last, r + 1, acc, len, NONE,
						 NULL, 0);
			return ret;
		}
		ret = round_xchg(op, 0, r - 1, tmp, len, NONE, NULL, 0);
		if (ret)
			return ret;
		round_act(op, ACT_REDUCE, acc, tmp, count);
		nr = r / 2;
	} else {
		nr = r - rem;
	}
	for (mask = 1; mask < p; mask <<= 1, step++) {
		pn = nr ^ mask;
		pr = pn < rem ? pn * 2 + 1 : pn + rem;
		ret = round_xchg(op, step, pr, tmp, len, pr, acc, len);
		if (ret)
			return ret;
		round_act(op, ACT_REDUCE, acc, tmp, count);
	}
	if (r < 2 * rem)
		return round_xchg(op, last, NONE, NULL, 0, r - 1, acc, len);
	return 0;
}

/* Binomial reduction toward root into acc, children's data into tmp. */
static int sched_reduce(struct coll_op *op, void *acc, void *tmp, size_t len,
			size_t count, uint32_t root)
{
	struct coll_mc *mc = op->mc;
	uint32_t n = mc->n, v = vrank(mc, root), span = tree_span(v, n), d;
	int ret;

	for (d = 1; d < span; d <<= 1) {
		if (v + d >= n)
			break;
		ret = round_xchg(op, 0, real_rank(mc, root, v + d), tmp, len,
				 NONE, NULL, 0);
		if (ret)
			return ret;
		round_act(op, ACT_REDUCE, acc, tmp, count);
	}
	if (v)
		return round_xchg(op, 0, NONE, NULL, 0,
				  real_rank(mc, root, v - span), acc, len);
	return 0;
}

/* Bruck's allgather: tmp holds blocks rank, rank + 1, ... (mod n); in
 * round k a member sends its first min(2^k, n - 2^k) blocks to rank -
 * 2^k and appends as many from rank + 2^k; then result is tmp rotated. */
static int sched_allgather(struct coll_op *op, void *result, char *tmp,
			   size_t b)
{
	struct coll_mc *mc = op->mc;
	uint32_t n = mc->n, r = mc->rank, d, k, cnt;
	int ret = 0;

	for (k = 0, d = 1; d < n && !ret; k++, d <<= 1) {
		cnt = WEFT_MIN(d, n - d);
		ret = round_xchg(op, (uint8_t)k, (r + d) % n, tmp + d * b,
				 cnt * b, (r + n - d) % n, tmp, cnt * b);
	}
	if (!ret)
		ret = round_copy(op, (char *)result + r * b, tmp, (n - r) * b);
	if (!ret)
		ret = round_copy(op, result, tmp + (n - r) * b, r * b);
	return ret;
}

/* Every pair exchanges once, all in one round: block j of buf to rank
 * j, block j of result from rank j. */
static int sched_alltoall(struct coll_op *op, const char *buf, char *result,
			  size_t b)
{
	struct coll_mc *mc = op->mc;
	uint32_t n = mc->n, r = mc->rank, k, to, from;
	int ret = 0;

	if (!round_new(op))
		return -FI_ENOMEM;
	for (k = 1; k < n && !ret; k++) {
		from = (r + n - k) % n;
		ret = xfer_add(op, false, from, 0, result + from * b, b);
	}
	for (k = 1; k < n && !ret; k++) {
		to = (r + k) % n;
		ret = xfer_add(op, true, to, 0, (void *)(buf + to * b), b);
	}
	if (!ret)
		ret = round_copy(op, result + r * b, buf + r * b, b);
	return ret;
}

/* Scatter down a binomial tree: tmp holds the blocks of the member's
 * subtree in relative rank order (the root's: buf rotated). */
static int sched_scatter(struct coll_op *op, char *tmp, void *result,
			 size_t b, uint32_t root)
{
	int ret = sched_down(op, tmp, b, true, root);

	return ret ? ret : round_copy(op, result, tmp, b);
}

/* Gather up a binomial tree: tmp collects the subtree's blocks (the
 * member's own first); the root's are rotated into result. */
static int sched_gather(struct coll_op *op, char *tmp, char *result,
			size_t b, uint32_t root)
{
	struct coll_mc *mc = op->mc;
	uint32_t n = mc->n, v = vrank(mc, root), span = tree_span(v, n), d;
	int ret;

	if (!round_new(op))
		return -FI_ENOMEM;
	for (d = 1; d < span; d <<= 1) {
		if (v + d >= n)
			break;
		ret = xfer_add(op, false, real_rank(mc, root, v + d), 0,
			       tmp + d * b, tree_size(v + d, n) * b);
		if (ret)
			return ret;
	}
	if (v)
		return round_xchg(op, 0, NONE, NULL, 0,
				  real_rank(mc, root, v - span), tmp,
				  tree_size(v, n) * b);
	ret = round_copy(op, result + root * b, tmp, (n - root) * b);
	if (!ret)
		ret = round_copy(op, result, tmp + (n - root) * b, root * b);
	return ret;
}

/* ---- running operations --------------------------------------------------- */

static void op_free(struct coll_op *op)
{
	free(op->rounds);
	free(op->xfers);
	free(op->tmp);
	free(op);
}

/* The operation is over: its one report, on the CQ or (a join) the EQ. */
static void op_finish(struct coll_op *op)
{
	struct coll_mc *mc = op->mc;
	struct util_rdm_ep *ep = mc->ep;

	mc->inflight--;
	dlist_remove(&op->mc_entry);
	if (op->join) {
		struct fi_eq_entry e = {
			.fid = &mc->mc_fid.fid,
			.context = op->context,
		};

		if (!op->err)
			mc->joined = true;
		if (ep->base.eq && !op->err) {
			util_eq_write(ep->base.eq, FI_JOIN_COMPLETE, &e,
				      sizeof(e), 0);
		} else if (ep->base.eq) {
			struct fi_eq_err_entry ee = {
				.fid = &mc->mc_fid.fid,
				.context = op->context,
				.err = op->err,
				.prov_errno = -op->err,
			};

			util_eq_write_err(ep->base.eq, &ee);
		}
	} else if (!op->err) {
		util_ep_tx_success(&ep->base, op->cq_reserved, op->context,
				   FI_COLLECTIVE, NULL);
	} else {
		struct fi_cq_err_entry e = {
			.op_context = op->context,
			.flags = FI_COLLECTIVE,
			.err = op->err,
			.prov_errno = -op->err,
		};

		util_ep_tx_error(&ep->base, op->cq_reserved, true, &e, NULL);
	}
	op_free(op);
}

static void op_wait_room(struct coll_op *op)
{
	struct util_rdm_ep *ep = op->mc->ep;

	if (dlist_empty(&op->entry))
		dlist_insert_tail(&op->entry, &ep->coll->retry);
	ep->coll_retry = true;
}

/* Take back the current round's receives still waiting (from rank from
 * alone, or all: UINT32_MAX); whether one was. */
static bool coll_cancel_recvs(struct coll_op *op, uint32_t from)
{
	struct util_rdm_ep *ep = op->mc->ep;
	struct coll_round *r;
	struct coll_xfer *x;
	bool any = false;
	size_t k;

	if (op->cur >= op->nrounds)
		return false;
	r = &op->rounds[op->cur];
	for (k = 0; k < op->posted; k++) {
		x = &op->xfers[r->first + k];
		if (x->send || x->done || (from != UINT32_MAX && x->peer != from))
			continue;
		if (util_rdm_coll_cancel(ep, x)) {
			x->done = true;
			op->pending--;
			any = true;
		}
	}
	return any;
}

/*
 * The operation failed: each send it has not made yet goes as an empty
 * message carrying the error, so that the member waiting for it fails
 * too and tells those waiting for it in turn, and no member waits for
 * ever for data that will not come.  Members that need nothing of this
 * one finish as they would.  Returns false when a transmit must be
 * waited for (op_wait_room).
 */
static bool coll_tell(struct coll_op *op)
{
	struct coll_mc *mc = op->mc;
	struct coll_xfer *x;
	int ret;

	if (!op->telling) {
		op->telling = true;
		op->tell_at = op->cur < op->nrounds ?
				      op->rounds[op->cur].first + op->posted :
				      op->nxfers;
	}
	for (; op->tell_at < op->nxfers; op->tell_at++) {
		x = &op->xfers[op->tell_at];
		if (!x->send)
			continue;
		ret = util_rdm_coll_send(mc->ep, mc->addr[x->peer],
					 coll_tag(mc, op->seq, x->step,
						  mc->rank),
					 NULL, 0, op->err, NULL);
		if (ret == -FI_EAGAIN)
			return false;
		/* Another error: that member is gone, or cannot be told. */
	}
	return true;
}

/* Post what the current round still has to post, run the rounds whose
 * transfers are over, finish.  Called again by each transfer's end; a
 * call from inside (a transfer that ends while it is posted) only
 * counts. */
static void op_advance(struct coll_op *op)
{
	struct coll_mc *mc = op->mc;
	struct util_rdm_ep *ep = mc->ep;
	struct coll_round *r;
	struct coll_xfer *x;
	uint64_t tag;
	int ret;

	if (op->busy)
		return;
	op->busy = true;
	while (!op->err && op->cur < op->nrounds) {
		r = &op->rounds[op->cur];
		while (op->posted < r->n && !op->err) {
			x = &op->xfers[r->first + op->posted];
			tag = coll_tag(mc, op->seq, x->step,
				       x->send ? mc->rank : x->peer);
			op->pending++; /* (it may end inside the call) */
			ret = x->send ? util_rdm_coll_send(ep,
							   mc->addr[x->peer],
							   tag, x->buf, x->len,
							   0, x) :
					util_rdm_coll_recv(ep,
							   mc->addr[x->peer],
							   tag, x->buf, x->len,
							   x);
			if (ret) {
				op->pending--;
				if (ret == -FI_EAGAIN) {
					op_wait_room(op);
					op->busy = false;
					return;
				}
				op->err = -ret;
				break;
			}
			op->posted++;
		}
		if (op->err || op->pending)
			break;
		if (r->act == ACT_REDUCE)
			util_atomic_apply(op->rop, op->dt, r->dst, r->src, NULL,
					  NULL, r->count);
		else if (r->act == ACT_COPY)
			memmove(r->dst, r->src, r->count);
		op->cur++;
		op->posted = 0;
	}
	if (op->err) {
		/* A failed step: what waits for a message will wait for
		 * ever, and the members this one would send to next learn
		 * of the error instead. */
		coll_cancel_recvs(op, UINT32_MAX);
		if (!coll_tell(op)) {
			op_wait_room(op);
			op->busy = false;
			return;
		}
	}
	op->busy = false;
	if (!op->pending && (op->err || op->cur == op->nrounds)) {
		if (!dlist_empty(&op->entry))
			dlist_remove(&op->entry);
		op_finish(op);
	}
}

void util_coll_xfer_done(struct util_rdm_ep *ep, void *ctx, int err)
{
	struct coll_xfer *x = ctx;
	struct coll_op *op;

	(void)ep;
	if (!x) /* telling a member of an error (coll_tell) */
		return;
	x->done = true;
	op = x->op;
	op->pending--;
	if (err && !op->err)
		op->err = err;
	op_advance(op);
}

void util_coll_peer_gone(struct util_rdm_ep *ep, fi_addr_t addr)
{
	struct util_coll_ep *c = ep->coll;
	struct dlist_entry *e, *tmp;
	struct coll_mc *mc;
	struct coll_op *op;
	uint32_t r;
	size_t i;

	for (i = 0; i < c->nmc; i++) {
		mc = c->mc[i];
		if (!mc)
			continue;
		for (r = 0; r < mc->n && mc->addr[r] != addr; r++)
			;
		if (r == mc->n || r == mc->rank)
			continue;
		dlist_foreach_safe(&mc->ops, e, tmp) {
			op = container_of(e, struct coll_op, mc_entry);
			if (op->busy || !coll_cancel_recvs(op, r))
				continue;
			if (!op->err)
				op->err = FI_ECONNRESET;
			op_advance(op);
		}
	}
}

int util_coll_retry(struct util_rdm_ep *ep)
{
	struct dlist_entry list, *e;
	int n = 0;

	ep->coll_retry = false;
	dlist_init(&list);
	while ((e = dlist_pop_front(&ep->coll->retry))) {
		dlist_init(e);
		dlist_insert_tail(e, &list);
	}
	while ((e = dlist_pop_front(&list))) {
		dlist_init(e);
		op_advance(container_of(e, struct coll_op, entry));
		n++;
	}
	return n;
}

/* ---- groups --------------------------------------------------------------- */

/* The endpoint's joined group at coll_addr, or NULL (another
 * endpoint's group included). */
static struct coll_mc *mc_of(struct util_rdm_ep *ep, fi_addr_t coll_addr)
{
	size_t i;

	if (!ep->coll || COLL_ADDR_KIND(coll_addr) != COLL_MC_ADDR)
		return NULL;
	for (i = 0; i < ep->coll->nmc; i++) {
		struct coll_mc *mc = ep->coll->mc[i];

		if (mc && mc->mc_fid.fi_addr == coll_addr)
			return mc->joined ? mc : NULL;
	}
	return NULL;
}

/* Its operations go; the endpoint lets go of it. */
static void mc_detach(struct coll_mc *mc)
{
	struct dlist_entry *e;

	while ((e = dlist_pop_front(&mc->ops)))
		op_free(container_of(e, struct coll_op, mc_entry));
	mc->ep->coll->mc[mc->slot] = NULL;
	mc->ep = NULL;
}

static void mc_free(struct coll_mc *mc)
{
	if (mc->ep)
		mc_detach(mc);
	free(mc->addr);
	free(mc);
}

static int mc_close(struct fid *fid)
{
	struct coll_mc *mc = container_of(fid, struct coll_mc, mc_fid.fid);
	struct util_rdm_ep *ep = mc->ep;

	if (!ep) { /* its endpoint closed first */
		mc_free(mc);
		return 0;
	}
	util_ep_lock(&ep->base);
	if (mc->inflight) {
		util_ep_unlock(&ep->base);
		return -FI_EBUSY;
	}
	mc_free(mc);
	util_ep_unlock(&ep->base);
	return 0;
}

static int coll_ep_get(struct util_rdm_ep *ep)
{
	if (ep->coll)
		return 0;
	ep->coll = calloc(1, sizeof(*ep->coll));
	if (!ep->coll)
		return -FI_ENOMEM;
	dlist_init(&ep->coll->retry);
	return 0;
}

void util_coll_ep_fini(struct util_rdm_ep *ep)
{
	struct util_coll_ep *c = ep->coll;
	size_t i;

	if (!c)
		return;
	/* Operations still running wait for messages that will not come:
	 * they go unreported.  The groups are the application's until it
	 * closes them. */
	for (i = 0; i < c->nmc; i++)
		if (c->mc[i])
			mc_detach(c->mc[i]);
	free(c->mc);
	free(c->seen);
	free(c);
	ep->coll = NULL;
	ep->coll_retry = false;
}

/* How many groups of this hash the endpoint joined before; counts this
 * one. */
static int seen_count(struct util_coll_ep *c, uint64_t hash, uint32_t *count)
{
	struct coll_seen *s;
	size_t i;

	for (i = 0; i < c->nseen; i++) {
		if (c->seen[i].hash == hash) {
			*count = c->seen[i].count++;
			return 0;
		}
	}
	s = realloc(c->seen, (c->nseen + 1) * sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	c->seen = s;
	s[c->nseen].hash = hash;
	s[c->nseen++].count = 1;
	*count = 0;
	return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* This endpoint's own address in the AV's stored form (av->addrlen
 * bytes at buf). */
static int own_addr(struct util_rdm_ep *ep, void *buf)
{
	struct util_av *av = ep->base.av;
	char name[512] = { 0 };
	size_t len = sizeof(name);
	int ret;

	if (av->addrlen > sizeof(name))
		return -FI_EINVAL;
	ret = ep->base.ep_fid.cm->getname(&ep->base.ep_fid.fid, name, &len);
	if (ret)
		return ret;
	if (len < av->addrlen)
		memset(name + len, 0, av->addrlen - len);
	return av->ops.normalize(av, name, buf);
}

static atomic_uint_fast64_t mc_ids;

static int mc_slot(struct util_coll_ep *c, struct coll_mc *mc)
{
	struct coll_mc **p;
	size_t i;

	for (i = 0; i < c->nmc; i++)
		if (!c->mc[i])
			goto found;
	p = realloc(c->mc, (c->nmc + 1) * sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	c->mc = p;
	i = c->nmc++;
found:
	c->mc[i] = mc;
	mc->slot = (uint32_t)i;
	/* Unique in the process, so that no endpoint takes another's. */
	mc->mc_fid.fi_addr = COLL_MC_ADDR |
			     (atomic_fetch_add(&mc_ids, 1) & 0xffffffffffffULL);
	return 0;
}

static struct coll_op *op_new(struct coll_mc *mc, void *context)
{
	struct coll_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	dlist_init(&op->entry);
	dlist_init(&op->mc_entry);
	op->mc = mc;
	op->context = context;
	op->seq = mc->seq;
	return op;
}

/* Start a scheduled operation: it takes its sequence number now. */
static void op_start(struct coll_op *op)
{
	op->mc->seq++;
	op->mc->inflight++;
	dlist_insert_tail(&op->mc_entry, &op->mc->ops);
	op_advance(op);
}

static int mc_new(struct util_rdm_ep *ep, const struct coll_set *s,
		  struct coll_mc **out)
{
	struct util_av *av = ep->base.av;
	struct coll_mc *mc;
	uint64_t h = 0xcbf29ce484222325ULL;
	uint32_t i, k;
	char *mine;
	const void *a;
	int ret;

	if (!s->n || s->n > UTIL_COLL_MAX_MEMBERS)
		return -FI_EINVAL;
	mine = calloc(1, av->addrlen);
	mc = calloc(1, sizeof(*mc));
	if (!mine || !mc) {
		ret = -FI_ENOMEM;
		goto err;
	}
	mc->addr = malloc(s->n * sizeof(*mc->addr));
	if (!mc->addr) {
		ret = -FI_ENOMEM;
		goto err;
	}
	ret = own_addr(ep, mine);
	if (ret)
		goto err;
	mc->n = (uint32_t)s->n;
	mc->rank = UINT32_MAX;
	for (i = 0; i < mc->n; i++) {
		mc->addr[i] = s->addr[i];
		a = util_av_addr(av, s->addr[i]);
		if (!a) { /* removed from the AV since */
			ret = -FI_EINVAL;
			goto err;
		}
		if (mc->rank == UINT32_MAX && !memcmp(a, mine, av->addrlen))
			mc->rank = i;
		h = fnv(h, a, av->addrlen);
	}
	if (mc->rank == UINT32_MAX) {
		FI_WARN(ep->base.domain->prov, FI_LOG_EP_CTRL,
			"join: this endpoint is not a member of the set\n");
		ret = -FI_EINVAL;
		goto err;
	}
	ret = seen_count(ep->coll, h, &k);
	if (ret)
		goto err;
	h = fnv(h, &k, sizeof(k));
	mc->gid = (uint32_t)((h ^ h >> 24 ^ h >> 48) & 0xffffff);
	ret = mc_slot(ep->coll, mc);
	if (ret)
		goto err;
	mc->ep = ep;
	dlist_init(&mc->ops);
	mc->mc_fid.fid.fclass = FI_CLASS_MC;
	mc->mc_fid.fid.ops = &coll_obj_fi_ops;
	free(mine);
	*out = mc;
	return 0;

err:
	if (mc)
		free(mc->addr);
	free(mc);
	free(mine);
	return ret;
}

int util_coll_join(struct fid_ep *ep_fid, const void *addr, uint64_t flags,
		   struct fid_mc **mcp, void *context)
{
	const struct fi_collective_addr *ca = addr;
	struct util_rdm_ep *ep;
	struct coll_mc *mc;
	struct coll_op *op;
	int ret;

	if (!(flags & FI_COLLECTIVE))
		return -FI_ENOSYS; /* multicast */
	if (!ep_fid || !ca || !mcp)
		return -FI_EINVAL;
	ep = util_rdm_ep_of(ep_fid);
	if (!(ep->base.caps & FI_COLLECTIVE))
		return -FI_EOPNOTSUPP;
	/* Joining by the address of a group already made (no set) is not
	 * offered. */
	if (!ca->set)
		return -FI_EOPNOTSUPP;
	util_ep_lock(&ep->base);
	if (!ep->base.enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	if (!ep->base.eq) {
		ret = -FI_ENOEQ;
		goto out;
	}
	if (ep->rxq != &ep->own_rxq || !ep->base.av ||
	    set_of(ca->set)->av != ep->base.av) {
		ret = ep->rxq != &ep->own_rxq ? -FI_EOPNOTSUPP : -FI_EINVAL;
		goto out;
	}
	ret = coll_ep_get(ep);
	if (ret)
		goto out;
	ret = mc_new(ep, set_of(ca->set), &mc);
	if (ret)
		goto out;
	mc->mc_fid.fid.context = context;
	op = op_new(mc, context);
	if (!op) {
		mc_free(mc);
		ret = -FI_ENOMEM;
		goto out;
	}
	op->join = true;
	ret = sched_barrier(op);
	if (ret) {
		op_free(op);
		mc_free(mc);
		goto out;
	}
	*mcp = &mc->mc_fid;
	op_start(op);
out:
	util_ep_unlock(&ep->base);
	return ret;
}

/* ---- the operations ------------------------------------------------------- */

/* Whether op reduces datatype dt (fi_query_collective reports these):
 * 0, -FI_EINVAL outside the enums, -FI_EOPNOTSUPP for a pair that is no
 * reduction of fi_atomic(3). */
static int reduction_check(enum fi_op op, enum fi_datatype dt)
{
	if (!util_atomic_dt_size(dt) || (unsigned int)op >= FI_ATOMIC_OP_LAST)
		return -FI_EINVAL;
	if (op > FI_BXOR || !util_atomic_valid(op, dt, UTIL_ATOMIC_BASE))
		return -FI_EOPNOTSUPP;
	return 0;
}

enum coll_kind_flags {
	K_REDUCE = 1, /* takes an op */
	K_ROOT = 2,   /* takes a root */
};

/* An operation as posted, checked and scheduled. */
struct coll_call {
	enum fi_collective_op coll;
	const void *buf;
	size_t count;
	void *result;
	fi_addr_t coll_addr, root_addr;
	enum fi_datatype dt;
	enum fi_op op;
	uint64_t flags;
	void *context;
};

static int root_rank(const struct coll_mc *mc, fi_addr_t root,
		     uint32_t *rank)
{
	uint32_t i;

	for (i = 0; i < mc->n; i++) {
		if (mc->addr[i] == root) {
			*rank = i;
			return 0;
		}
	}
	return -FI_EINVAL;
}

/* Scratch of len bytes for op (freed with it). */
static void *op_tmp(struct coll_op *op, size_t len)
{
	op->tmp = malloc(len ? len : 1);
	return op->tmp;
}

static int coll_schedule(struct coll_op *op, const struct coll_call *c,
			 size_t dsize, uint32_t root)
{
	struct coll_mc *mc = op->mc;
	size_t b = c->count * dsize, n = mc->n;
	char *tmp;

	switch (c->coll) {
	case FI_BARRIER:
		return sched_barrier(op);
	case FI_BROADCAST:
		return sched_down(op, (char *)c->buf, b, false, root);
	case FI_ALLREDUCE:
		if (!op_tmp(op, b))
			return -FI_ENOMEM;
		if (c->buf != c->result)
			memcpy(c->result, c->buf, b);
		return sched_allreduce(op, c->result, op->tmp, b, c->count);
	case FI_REDUCE_SCATTER:
		/* acc: n blocks, then their scratch */
		tmp = op_tmp(op, 2 * n * b);
		if (!tmp)
			return -FI_ENOMEM;
		memcpy(tmp, c->buf, n * b);
		if (sched_allreduce(op, tmp, tmp + n * b, n * b, n * c->count))
			return -FI_ENOMEM;
		return round_copy(op, c->result, tmp + mc->rank * b, b);
	case FI_REDUCE:
		tmp = op_tmp(op, 2 * b);
		if (!tmp)
			return -FI_ENOMEM;
		if (mc->rank == root) {
			if (c->buf != c->result)
				memcpy(c->result, c->buf, b);
			return sched_reduce(op, c->result, tmp, b, c->count,
					    root);
		}
		memcpy(tmp, c->buf, b);
		return sched_reduce(op, tmp, tmp + b, b, c->count, root);
	case FI_ALLGATHER:
		tmp = op_tmp(op, n * b);
		if (!tmp)
			return -FI_ENOMEM;
		memcpy(tmp, c->buf, b);
		return sched_allgather(op, c->result, tmp, b);
	case FI_ALLTOALL:
		if (c->buf == c->result) { /* in place: send from a copy */
			tmp = op_tmp(op, n * b);
			if (!tmp)
				return -FI_ENOMEM;
			memcpy(tmp, c->buf, n * b);
			return sched_alltoall(op, tmp, c->result, b);
		}
		return sched_alltoall(op, c->buf, c->result, b);
	case FI_SCATTER: {
		uint32_t v = vrank(mc, root);
		size_t i;

		tmp = op_tmp(op, tree_size(v, mc->n) * b);
		if (!tmp)
			return -FI_ENOMEM;
		if (!v)
			for (i = 0; i < n; i++)
				memcpy(tmp + i * b,
				       (const char *)c->buf + ((i + root) % n) * b,
				       b);
		return sched_scatter(op, tmp, c->result, b, root);
	}
	case FI_GATHER:
		tmp = op_tmp(op, tree_size(vrank(mc, root), mc->n) * b);
		if (!tmp)
			return -FI_ENOMEM;
		memcpy(tmp, c->buf, b);
		return sched_gather(op, tmp, c->result, b, root);
	default:
		return -FI_ENOSYS;
	}
}

/* Which arguments each operation takes. */
static unsigned int coll_kind(enum fi_collective_op coll)
{
	switch (coll) {
	case FI_ALLREDUCE:
	case FI_REDUCE_SCATTER:
		return K_REDUCE;
	case FI_REDUCE:
		return K_REDUCE | K_ROOT;
	case FI_BROADCAST:
	case FI_SCATTER:
	case FI_GATHER:
		return K_ROOT;
	default:
		return 0;
	}
}

/* Whether the buffers c needs are there: result for what returns one
 * (on the root only for reduce and gather), buf unless the member sends
 * nothing (a scatter's non-root). */
static bool coll_bufs_ok(const struct coll_call *c, bool is_root)
{
	bool need_buf, need_res;

	switch (c->coll) {
	case FI_BARRIER:
		return true;
	case FI_BROADCAST:
		return c->buf || !c->count;
	case FI_SCATTER:
		need_buf = is_root;
		need_res = true;
		break;
	case FI_REDUCE:
	case FI_GATHER:
		need_buf = true;
		need_res = is_root;
		break;
	default:
		need_buf = need_res = true;
		break;
	}
	return !c->count || ((!need_buf || c->buf) && (!need_res || c->result));
}

static ssize_t coll_post(struct fid_ep *ep_fid, const struct coll_call *c)
{
	struct util_rdm_ep *ep = util_rdm_ep_of(ep_fid);
	unsigned int kind = coll_kind(c->coll);
	uint32_t root = 0;
	struct coll_mc *mc;
	struct coll_op *op;
	size_t dsize = 1;
	uint64_t flags;
	bool comp;
	ssize_t ret;

	if (c->coll != FI_BARRIER) {
		dsize = util_atomic_dt_size(c->dt);
		if (!dsize)
			return -FI_EINVAL;
	}
	if (kind & K_REDUCE) {
		ret = reduction_check(c->op, c->dt);
		if (ret)
			return ret;
	}
	util_ep_lock(&ep->base);
	mc = mc_of(ep, c->coll_addr);
	if (!mc) {
		ret = -FI_EINVAL;
		goto out;
	}
	if ((kind & K_ROOT) && root_rank(mc, c->root_addr, &root)) {
		ret = -FI_EINVAL;
		goto out;
	}
	/* Every buffer of the operation within the bound, n blocks too. */
	if (c->count > UTIL_COLL_MAX_BYTES / dsize / mc->n ||
	    !coll_bufs_ok(c, mc->rank == root)) {
		ret = -FI_EINVAL;
		goto out;
	}
	if (mc->inflight >= COLL_MAX_INFLIGHT) {
		ret = -FI_EAGAIN;
		goto out;
	}
	flags = c->flags | ep->base.tx_op_flags;
	comp = !ep->base.tx_selective || (flags & FI_COMPLETION);
	if (comp) {
		ret = util_ep_cq_reserve(ep->base.tx_cq);
		if (ret)
			goto out;
	}
	op = op_new(mc, c->context);
	if (!op) {
		ret = -FI_ENOMEM;
		goto err_unreserve;
	}
	op->cq_reserved = comp;
	op->dt = c->dt;
	op->rop = c->op;
	ret = coll_schedule(op, c, dsize, root);
	if (ret) {
		op_free(op);
		goto err_unreserve;
	}
	op_start(op);
	goto out;

err_unreserve:
	if (comp)
		util_ep_cq_unreserve(ep->base.tx_cq);
out:
	util_ep_unlock(&ep->base);
	return ret;
}

static ssize_t coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
			     uint64_t flags, void *context)
{
	struct coll_call c = {
		.coll = FI_BARRIER,
		.coll_addr = coll_addr,
		.flags = flags,
		.context = context,
	};

	return coll_post(ep, &c);
}

static ssize_t coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
			    void *context)
{
	return coll_barrier2(ep, coll_addr, 0, context);
}

static ssize_t coll_broadcast(struct fid_ep *ep, void *buf, size_t count,
			      void *desc, fi_addr_t coll_addr,
			      fi_addr_t root_addr, enum fi_datatype datatype,
			      uint64_t flags, void *context)
{
	struct coll_call c = {
		.coll = FI_BROADCAST,
		.buf = buf,
		.count = count,
		.result = buf,
		.coll_addr = coll_addr,
		.root_addr = root_addr,
		.dt = datatype,
		.flags = flags,
		.context = context,
	};

	(void)desc;
	return coll_post(ep, &c);
}

/* The operations with a send and a result buffer. */
static ssize_t coll_data(struct fid_ep *ep, enum fi_collective_op coll,
			 const void *buf, size_t count, void *result,
			 fi_addr_t coll_addr, fi_addr_t root_addr,
			 enum fi_datatype datatype, enum fi_op op,
			 uint64_t flags, void *context)
{
	struct coll_call c = {
		.coll = coll,
		.buf = buf,
		.count = count,
		.result = result,
		.coll_addr = coll_addr,
		.root_addr = root_addr,
		.dt = datatype,
		.op = op,
		.flags = flags,
		.context = context,
	};

	return coll_post(ep, &c);
}

/* The entry points that differ only by the operation they name: with a
 * send and a result buffer (PLAIN), an op too (REDUCING), a root too
 * (ROOTED).  Memory descriptors are not needed. */
#define COLL_PLAIN(fn, coll)                                                   \
	static ssize_t fn(struct fid_ep *ep, const void *buf, size_t count,    \
			  void *desc, void *result, void *result_desc,         \
			  fi_addr_t coll_addr, enum fi_datatype datatype,      \
			  uint64_t flags, void *context)                       \
	{                                                                      \
		(void)desc;                                                    \
		(void)result_desc;                                             \
		return coll_data(ep, coll, buf, count, result, coll_addr, 0,   \
				 datatype, FI_NOOP, flags, context);           \
	}
#define COLL_REDUCING(fn, coll)                                                \
	static ssize_t fn(struct fid_ep *ep, const void *buf, size_t count,    \
			  void *desc, void *result, void *result_desc,         \
			  fi_addr_t coll_addr, enum fi_datatype datatype,      \
			  enum fi_op op, uint64_t flags, void *context)        \
	{                                                                      \
		(void)desc;                                                    \
		(void)result_desc;                                             \
		return coll_data(ep, coll, buf, count, result, coll_addr, 0,   \
				 datatype, op, flags, context);                \
	}
#define COLL_ROOTED(fn, coll)                                                  \
	static ssize_t fn(struct fid_ep *ep, const void *buf, size_t count,    \
			  void *desc, void *result, void *result_desc,         \
			  fi_addr_t coll_addr, fi_addr_t root_addr,            \
			  enum fi_datatype datatype, uint64_t flags,           \
			  void *context)                                       \
	{                                                                      \
		(void)desc;                                                    \
		(void)result_desc;                                             \
		return coll_data(ep, coll, buf, count, result, coll_addr,      \
				 root_addr, datatype, FI_NOOP, flags,          \
				 context);                                     \
	}

COLL_PLAIN(coll_alltoall, FI_ALLTOALL)
COLL_PLAIN(coll_allgather, FI_ALLGATHER)
COLL_REDUCING(coll_allreduce, FI_ALLREDUCE)
COLL_REDUCING(coll_reduce_scatter, FI_REDUCE_SCATTER)
COLL_ROOTED(coll_scatter, FI_SCATTER)
COLL_ROOTED(coll_gather, FI_GATHER)

static ssize_t coll_reduce(struct fid_ep *ep, const void *buf, size_t count,
			   void *desc, void *result, void *result_desc,
			   fi_addr_t coll_addr, fi_addr_t root_addr,
			   enum fi_datatype datatype, enum fi_op op,
			   uint64_t flags, void *context)
{
	(void)desc;
	(void)result_desc;
	return coll_data(ep, FI_REDUCE, buf, count, result, coll_addr,
			 root_addr, datatype, op, flags, context);
}

/* fi_collectivemsg: one buffer each way (fi_ioc: its count is the
 * operation's). */
static ssize_t coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
			struct fi_ioc *resultv, void **result_desc,
			size_t result_count, uint64_t flags)
{
	(void)result_desc;
	if (!msg || msg->iov_count > 1 || result_count > 1 ||
	    (msg->iov_count && !msg->msg_iov) || (result_count && !resultv))
		return -FI_EINVAL;
	if (msg->coll == FI_BARRIER)
		return coll_barrier2(ep, msg->coll_addr, flags, msg->context);
	if (!msg->iov_count)
		return -FI_EINVAL;
	if (msg->coll == FI_BROADCAST)
		return coll_broadcast(ep, msg->msg_iov[0].addr,
				      msg->msg_iov[0].count, NULL,
				      msg->coll_addr, msg->root_addr,
				      msg->datatype, flags, msg->context);
	return coll_data(ep, msg->coll, msg->msg_iov[0].addr,
			 msg->msg_iov[0].count,
			 result_count ? resultv[0].addr : NULL, msg->coll_addr,
			 msg->root_addr, msg->datatype, msg->op, flags,
			 msg->context);
}

struct fi_ops_collective util_coll_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = coll_barrier,
	.broadcast = coll_broadcast,
	.alltoall = coll_alltoall,
	.allreduce = coll_allreduce,
	.allgather = coll_allgather,
	.reduce_scatter = coll_reduce_scatter,
	.reduce = coll_reduce,
	.scatter = coll_scatter,
	.gather = coll_gather,
	.msg = coll_msg,
	.barrier2 = coll_barrier2,
};

/* ---- fi_query_collective -------------------------------------------------- */

int util_coll_query(struct fid_domain *domain, enum fi_collective_op coll,
		    struct fi_collective_attr *attr, uint64_t flags)
{
	size_t size;
	int ret;

	(void)domain;
	(void)flags;
	if (!attr)
		return -FI_EINVAL;
	switch (coll) {
	case FI_BARRIER:
		size = 0;
		break;
	case FI_ALLREDUCE:
	case FI_REDUCE_SCATTER:
	case FI_REDUCE:
		ret = reduction_check(attr->op, attr->datatype);
		if (ret)
			return ret == -FI_EINVAL ? -FI_EOPNOTSUPP : ret;
		size = util_atomic_dt_size(attr->datatype);
		break;
	case FI_BROADCAST:
	case FI_ALLTOALL:
	case FI_ALLGATHER:
	case FI_SCATTER:
	case FI_GATHER:
		/* Data moved, not combined: any datatype, no op. */
		if (attr->op != FI_NOOP)
			return -FI_EOPNOTSUPP;
		size = util_atomic_dt_size(attr->datatype);
		if (!size)
			return -FI_EOPNOTSUPP;
		break;
	default:
		return -FI_EOPNOTSUPP;
	}
	attr->datatype_attr.size = size;
	attr->datatype_attr.count = size ? UTIL_COLL_MAX_BYTES / size : 0;
	attr->max_members = UTIL_COLL_MAX_MEMBERS;
	attr->mode = 0;
	return 0;
}
