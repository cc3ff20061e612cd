/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Poll sets (fi_poll_open, fi_poll, fi_poll_add, fi_poll_del): one call
 * that progresses a group of CQs and counters and names those with new
 * events.  Members are found through their waitable (weft/util_wait.h):
 * any CQ, counter or EQ whose control op answers UTIL_CTRL_WAITABLE can
 * join, and its has_data callback both drives its progress and answers.
 */
#ifndef WEFT_UTIL_POLL_H
#define WEFT_UTIL_POLL_H

#include <pthread.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/list.h"
#include "weft/util_domain.h"
#include "weft/util_wait.h"

struct util_poll_member {
	struct dlist_entry entry;
	struct fid *fid;
	struct util_waitable *waitable;
};

struct util_poll {
	struct fid_poll poll_fid;
	struct util_domain *domain; /* referenced while open; may be NULL */
	pthread_mutex_t lock;	    /* members; a real lock in every model */
	struct dlist_entry members; /* struct util_poll_member */
};

/*
 * fi_ops_domain.poll_open for a provider whose domain embeds struct
 * util_domain at domain_fid (domain may be NULL in tests).  attr->flags
 * must be 0 (attr may be NULL).  Takes a domain reference.  fi_close
 * returns -FI_EBUSY while members remain.
 *
 * The set's ops:
 *  poll_add  adds a CQ, counter or EQ (-FI_EINVAL for anything else,
 *            -FI_EALREADY if present); the object's fi_close then returns
 *            -FI_EBUSY until poll_del.  flags must be 0.
 *  poll_del  removes it; -FI_ENOENT if it is not a member.
 *  poll      runs every member's has_data (progress included) and writes
 *            the contexts of those with events, up to count; returns how
 *            many (0: none).  Never blocks.
 */
int util_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset);

#endif /* WEFT_UTIL_POLL_H */
