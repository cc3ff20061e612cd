/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Matching a provider's capabilities against fi_getinfo hints.
 *
 * A provider describes what it can do as a list of candidate fi_info
 * entries, best first: each lists every capability, mode, op flag and
 * limit it supports (caps including the modifier bits FI_SEND, FI_RECV, FI_READ ...;
 * mode the bits it requires; threading, progress, resource management the
 * strongest it offers; av_type FI_AV_UNSPEC when it offers both).
 * util_getinfo() checks each candidate against the hints as fi_getinfo(3)
 * describes, returns the matching ones narrowed to what was asked, and when
 * none matches, explains the first hint the closest candidate could not
 * meet (weft_explain), so fi_info and the log can say why.
 */
#ifndef WEFT_UTIL_GETINFO_H
#define WEFT_UTIL_GETINFO_H

#include "weft/ofi.h"

#include "weft/core.h"

struct util_prov;

/*
 * Resolve node/service (and FI_SOURCE) into out->src_addr / out->dest_addr
 * for one matching candidate.  Called by util_getinfo after the hints
 * matched; hint addresses have already been copied into out.  Returns 0,
 * -FI_ENODATA after weft_explain() when the address cannot be used with this
 * candidate, or another -FI_E* error.  May block on name resolution.
 */
typedef int (*util_resolve_fn)(const struct util_prov *uprov,
			       uint32_t version, const char *node,
			       const char *service, uint64_t flags,
			       const struct fi_info *hints,
			       struct fi_info *out);

struct util_prov {
	const struct fi_provider *prov;
	const struct fi_info *info; /* candidates, best first */
	util_resolve_fn resolve; /* NULL: node/service are not used */
	/*
	 * Candidates offering FI_PROGRESS_AUTO hand it out only to callers
	 * that ask for it, manual progress to the others (automatic
	 * progress costs the provider a thread).
	 */
	bool auto_on_request;
	/*
	 * A candidate's tx_attr->size and rx_attr->size are the most an
	 * endpoint takes when asked; a caller that asks no size is answered
	 * this many (when it is smaller), so that a peer which reads nothing
	 * holds no more than that by default.  0: the candidate's sizes.
	 */
	size_t size_default;
};

/*
 * The fi_provider.getinfo of a provider built on prov/util.  Returns 0 with
 * a list the caller frees with fi_freeinfo, or -FI_ENODATA having explained
 * why, or -FI_ENOMEM.
 */
int util_getinfo(const struct util_prov *uprov, uint32_t version,
		 const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info);

/*
 * Check one candidate against hints.  Returns 0 when it satisfies them;
 * otherwise -FI_ENODATA with the first unmet hint described in why (NUL
 * terminated, at most len bytes) and *depth set to how many checks passed
 * before it (to pick the closest candidate when explaining).
 */
int util_info_check(const struct fi_info *cand, const struct fi_info *hints,
		    uint32_t version, char *why, size_t len, int *depth);

/*
 * For a provider's fi_domain and fi_endpoint: whether one of its candidates
 * offers what the application's info asks (it may have changed what
 * fi_getinfo gave).  A domain: a threading model within the enum and no
 * stronger than offered, info->caps and domain_attr->caps.  An endpoint:
 * its type, info->caps, tx_attr->caps and rx_attr->caps.  Do not block.
 * Return 0, or -FI_ENODATA having logged at warn level what is not
 * offered.
 */
int util_prov_check_domain(const struct util_prov *uprov,
			   const struct fi_info *info);
int util_prov_check_ep(const struct util_prov *uprov,
		       const struct fi_info *info);

/*
 * Narrow a copy of a matching candidate to the hints: capabilities to those
 * requested (plus the modifiers they imply and harmless secondary ones),
 * modes to those the provider needs, threading/progress/av_type/mr_mode to
 * the requested values.  out is a weft_info_dup of the candidate.
 */
void util_info_narrow(struct fi_info *out, const struct fi_info *hints,
		      uint32_t version);

/* Capability classes of fi_getinfo(3). */
#define UTIL_PRIMARY_CAPS                                                      \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |              \
	 FI_NAMED_RX_CTX | FI_DIRECTED_RECV | FI_VARIABLE_MSG | FI_HMEM |      \
	 FI_COLLECTIVE)
#define UTIL_CAP_MODIFIERS                                                     \
	(FI_READ | FI_WRITE | FI_RECV | FI_SEND | FI_REMOTE_READ |             \
	 FI_REMOTE_WRITE)
#define UTIL_SECONDARY_CAPS                                                    \
	(FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT | FI_SHARED_AV |             \
	 FI_TRIGGER | FI_FENCE | FI_LOCAL_COMM | FI_REMOTE_COMM |              \
	 FI_SOURCE_ERR | FI_RMA_PMEM | FI_AV_USER_ID)
/*
 * The capabilities that apply to a transmit and to a receive context
 * (fi_endpoint(3)).  Other bits in tx_attr->caps or rx_attr->caps mean
 * nothing on that side and are ignored, as libfabric 1.17 ignores them:
 * clients pass their whole caps in both (OpenSHMEM puts FI_RECV in tx
 * caps), in fi_getinfo hints and on fi_endpoint alike.
 */
#define UTIL_TX_CAPS                                                           \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_READ | FI_WRITE |        \
	 FI_SEND | FI_HMEM | FI_TRIGGER | FI_FENCE | FI_MULTICAST |            \
	 FI_RMA_PMEM | FI_NAMED_RX_CTX | FI_COLLECTIVE)
#define UTIL_RX_CAPS                                                           \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_REMOTE_READ |            \
	 FI_REMOTE_WRITE | FI_RECV | FI_HMEM | FI_TRIGGER | FI_RMA_PMEM |      \
	 FI_DIRECTED_RECV | FI_VARIABLE_MSG | FI_MULTI_RECV | FI_SOURCE |      \
	 FI_RMA_EVENT | FI_SOURCE_ERR | FI_COLLECTIVE)
/* Secondary capabilities reported even when not asked for: they cost nothing. */
#define UTIL_FREE_SECONDARY_CAPS                                               \
	(FI_MULTI_RECV | FI_SHARED_AV | FI_FENCE | FI_LOCAL_COMM |             \
	 FI_REMOTE_COMM)

#endif /* WEFT_UTIL_GETINFO_H */
