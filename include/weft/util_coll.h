/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Collectives (fi_collective(3)) for every endpoint built on the RDM
 * engine: address-vector sets and their set operations, joining a group
 * (fi_join_collective), and the operations on it, each completing with
 * one entry on the endpoint's transmit CQ.
 *
 * A group (struct fid_mc) is the members of an AV set in the set's order:
 * member i has rank i, and every member must build its set naming the
 * same peers in the same order (an AV filled in the same order and
 * fi_av_set over it, as fabtests and MPI-like clients do).  The group's
 * identity on the wire is a 24-bit hash of the members' addresses and of
 * how many groups of the same members the endpoint joined before.
 *
 * Traffic.  Each step of an algorithm is a message of the engine's own
 * class (UTIL_RDM_COLL, util_rdm_coll_send / util_rdm_coll_recv): it is
 * matched in a queue of its own by an exact 64-bit tag (group 24 bits,
 * the operation's sequence number in the group 16, the step 8, the
 * sender's rank 16), never by the application's receives, and the
 * application's tags keep all their bits.  What arrives before the step
 * that takes it is posted waits in that queue as any unexpected message
 * does (copied, or stashed at its transport).  Operations of one group
 * take sequence numbers in the order they are posted, so several may be
 * in flight on one group, and several groups on one endpoint.
 *
 * Algorithms (n members; log = ceil(log2 n), p the largest power of two
 * not above n; messages a member sends):
 *   join, barrier     dissemination: log rounds, log messages of 0 bytes
 *   broadcast         binomial tree: n - 1 messages in all
 *   allreduce         recursive doubling, the n - p extra ranks folded
 *                     into their neighbours first and served last:
 *                     log2 p messages (+1 for a folded pair)
 *   reduce_scatter    the allreduce of the n blocks, then each keeps its own
 *   reduce            binomial tree: n - 1 messages in all
 *   allgather         Bruck's: log rounds, log messages
 *   alltoall          pairwise exchange: n - 1 messages
 *   scatter, gather   binomial tree: n - 1 messages in all, each carrying
 *                     the blocks of the subtree below its receiver
 *
 * Locking: every entry point takes the endpoint's lock; the engine calls
 * util_coll_xfer_done and util_coll_retry with it held.
 */
#ifndef WEFT_UTIL_COLL_H
#define WEFT_UTIL_COLL_H

#include "weft/ofi.h"

struct util_rdm_ep;

/* Members a group may have (ranks travel in 16 bits). */
#define UTIL_COLL_MAX_MEMBERS 65535
/* Bytes one member's buffer of an operation may hold. */
#define UTIL_COLL_MAX_BYTES ((size_t)1 << 30)

/* The engine endpoint's fi_ops_collective (ep_fid.collective). */
extern struct fi_ops_collective util_coll_ops;

/* fi_ops_cm.join of the engine's endpoints: FI_COLLECTIVE joins. */
int util_coll_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		   struct fid_mc **mc, void *context);

/* fi_ops_domain.query_collective of the engine's providers. */
int util_coll_query(struct fid_domain *domain, enum fi_collective_op coll,
		    struct fi_collective_attr *attr, uint64_t flags);

/* fi_ops_av.av_set (util_av.c). */
int util_av_set_open(struct fid_av *av, struct fi_av_set_attr *attr,
		     struct fid_av_set **set, void *context);

/* The engine: a collective's transfer (ctx as posted) ended (err 0 or a
 * positive FI_E* code: FI_ETRUNC for a longer message than the step
 * takes, FI_EINVAL for a shorter one). */
void util_coll_xfer_done(struct util_rdm_ep *ep, void *ctx, int err);
/* The engine: the peer at addr is gone and nothing more of it will
 * arrive (progress, lock held): the steps that wait for it fail. */
void util_coll_peer_gone(struct util_rdm_ep *ep, fi_addr_t addr);
/* Progress, when ep->coll_retry: post the steps that waited for room.
 * How many operations moved. */
int util_coll_retry(struct util_rdm_ep *ep);
/* The endpoint closes (lock held, its transfers over): groups and
 * operations go. */
void util_coll_ep_fini(struct util_rdm_ep *ep);

#endif /* WEFT_UTIL_COLL_H */
