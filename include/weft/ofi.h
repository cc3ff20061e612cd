/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * weft/ofi.h: the one place the library includes the public OFI headers.
 *
 * weft builds on whatever OFI headers the machine has, 1.17 or newer.  Its
 * ABI does not follow them (docs/ABI.md says how):
 *
 *  - the structs whose layout grew after 1.17 (fi_domain_attr, fi_mr_attr,
 *    fi_cq_err_entry) reach a caller only through weft's own description of
 *    the caller's layout (include/weft/compat.h), chosen by the symbol
 *    version node the caller bound and the API version it asked for;
 *  - the names whose value 2.x headers dropped or re-pointed are pinned
 *    below to the values every 1.x client was built with, and the names 2.x
 *    added are defined where older headers lack them, so one source means
 *    one set of numbers on any headers;
 *  - the layouts weft does take from the headers are checked below against
 *    the facts, so headers that disagree fail the build, not a client.
 *
 * Library sources include this instead of <rdma/...>.  Tests and tools are
 * clients: they include the system headers as any program would.
 */
#ifndef WEFT_OFI_H
#define WEFT_OFI_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#if FI_MAJOR_VERSION < 1 || (FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION < 17)
#error "weft needs OFI headers 1.17 or newer (Debian: libfabric-dev)"
#endif

/* ---- 1.x values that 2.x headers dropped, deprecated or re-pointed ---- */

/* mr_mode values of API 1.0 to 1.4, kept for callers below 2.0 */
#undef FI_MR_UNSPEC
#undef FI_MR_BASIC
#undef FI_MR_SCALABLE
#define FI_MR_UNSPEC 0
#define FI_MR_BASIC (1 << 0)
#define FI_MR_SCALABLE (1 << 1)
#undef FI_LOCAL_MR
#define FI_LOCAL_MR (1ULL << 55)
#undef FI_REG_MR
#define FI_REG_MR (1ULL << 59)

#undef FI_ORDER_NONE
#undef FI_ORDER_STRICT
#undef FI_ORDER_DATA
#define FI_ORDER_NONE 0ULL
#define FI_ORDER_STRICT 0x1FFULL
#define FI_ORDER_DATA (1ULL << 16)

/* 2.x defines these as 0 "for old fabtests"; a 1.x caller's bits are real */
#undef FI_VARIABLE_MSG
#undef FI_NOTIFY_FLAGS_ONLY
#undef FI_RESTRICTED_COMP
#define FI_VARIABLE_MSG (1ULL << 48)
#define FI_NOTIFY_FLAGS_ONLY (1ULL << 54)
#define FI_RESTRICTED_COMP (1ULL << 53)
#ifndef FI_BUFFERED_RECV
#define FI_BUFFERED_RECV (1ULL << 51)
#endif
#ifndef FI_PRIORITY
#define FI_PRIORITY (1ULL << 22)
#endif
#ifndef FI_XPU_TRIGGER
#define FI_XPU_TRIGGER (1ULL << 44)
#endif
#ifndef FI_HMEM_HOST_ALLOC
#define FI_HMEM_HOST_ALLOC (1ULL << 45)
#endif
#ifndef FI_HMEM_DEVICE_ONLY
#define FI_HMEM_DEVICE_ONLY (1ULL << 46)
#endif
#ifndef FI_MR_DMABUF
#define FI_MR_DMABUF (1ULL << 40)
#endif
#ifndef FI_PROV_SPECIFIC
#define FI_PROV_SPECIFIC (1U << 31)
#endif

/* enum fi_ep_type: 2.x comments the socket types out of the enum */
#undef FI_EP_SOCK_STREAM
#undef FI_EP_SOCK_DGRAM
#define FI_EP_SOCK_STREAM ((enum fi_ep_type)4)
#define FI_EP_SOCK_DGRAM ((enum fi_ep_type)5)

/* ---- names that 1.18 to 2.6 added (facts: numbers, bits) ---- */

#ifndef FI_AUTH_KEY
#define FI_AUTH_KEY (1ULL << 57)
#endif
#ifndef FI_AV_AUTH_KEY
#define FI_AV_AUTH_KEY SIZE_MAX
#endif
/* caps bits 45, 46 and 48 as a 2.x caller means them */
#ifndef FI_TAGGED_DIRECTED_RECV
#define FI_TAGGED_DIRECTED_RECV (1ULL << 45)
#endif
#ifndef FI_TAGGED_MULTI_RECV
#define FI_TAGGED_MULTI_RECV (1ULL << 46)
#endif
#ifndef FI_EXACT_DIRECTED_RECV
#define FI_EXACT_DIRECTED_RECV (1ULL << 48)
#endif
#ifndef FI_RESCAN
#define FI_RESCAN (1ULL << 35)
#endif
#ifndef FI_FIREWALL_ADDR
#define FI_FIREWALL_ADDR (1ULL << 42)
#endif
/* enum values (not macros) in the headers that have them */
#define WEFT_PROGRESS_CONTROL_UNIFIED ((enum fi_progress)3) /* 1.21 */
#define WEFT_SOCKADDR_IP 17				    /* 2.4 */
/* 2.0; the same declaration as newer headers make */
int fi_fabric2(struct fi_info *info, struct fid_fabric **fabric,
	       uint64_t flags, void *context);
/* error codes past 1.17's FI_ENORX (269) */
#define WEFT_FI_ENOMR 270
#define WEFT_FI_EFIREWALLADDR 271
/* One past the last error code weft knows, whatever the headers say. */
#define WEFT_ERRNO_MAX 272
/* datatypes and ops past 1.17's FI_UINT128 and FI_MSWAP */
#define WEFT_FI_FLOAT16 16
#define WEFT_FI_BFLOAT16 17
#define WEFT_FI_FLOAT8_E4M3 18
#define WEFT_FI_FLOAT8_E5M2 19
#define WEFT_FI_DIFF 19
/* 1.17's enums end with FI_MSWAP and FI_UINT128: 19 ops, 16 datatypes
 * (2.x headers pin FI_ATOMIC_OP_LAST to 19 in an anonymous enum) */
#define WEFT_ATOMIC_OP_COUNT 19
#define WEFT_DATATYPE_COUNT 16

/*
 * fi_ops_av as 1.17 ends it (av_set).  1.20 appended insert_auth_key,
 * lookup_auth_key and set_user_id; weft has none of them, so its tables
 * say this size on any headers and a newer client's inline call finds the
 * op missing (-FI_ENOSYS) instead of a NULL pointer.
 */
#define WEFT_OPS_AV_SIZE (offsetof(struct fi_ops_av, av_set) + sizeof(void *))

/* fi_mr_attr up to device (1.9 to 1.18); 1.19 to 2.0 appended fields weft
 * ignores, which an older caller's struct does not have. */
#define WEFT_MR_ATTR_SIZE_1_9                                                  \
	(offsetof(struct fi_mr_attr, device) + sizeof(((struct fi_mr_attr *)0)->device))

/* ---- the layouts taken from the headers, checked against the facts ---- */
#if UINTPTR_MAX == UINT64_MAX
static_assert(FI_ATOMIC_OP_LAST == WEFT_ATOMIC_OP_COUNT, "FI_ATOMIC_OP_LAST");
static_assert(FI_UINT128 == 15 && FI_MSWAP == 18, "atomic enums");
static_assert(FI_ENORX == 269, "error codes");
static_assert(sizeof(struct fi_tx_attr) == 80, "fi_tx_attr (since 1.9)");
static_assert(sizeof(struct fi_rx_attr) == 64, "fi_rx_attr (since 1.0)");
static_assert(sizeof(struct fi_ep_attr) == 96, "fi_ep_attr (since 1.5)");
static_assert(sizeof(struct fi_fabric_attr) == 32, "fi_fabric_attr (1.5)");
static_assert(sizeof(struct fi_info) == 120, "fi_info (since 1.7)");
static_assert(offsetof(struct fi_domain_attr, tclass) == 184,
	      "fi_domain_attr up to tclass (1.9)");
static_assert(sizeof(struct fi_cq_tagged_entry) == 48, "fi_cq_tagged_entry");
static_assert(offsetof(struct fi_cq_err_entry, err_data_size) == 72,
	      "fi_cq_err_entry up to err_data_size (1.5)");
static_assert(offsetof(struct fi_mr_attr, auth_key) == 56 &&
		      offsetof(struct fi_mr_attr, device) == 72,
	      "fi_mr_attr up to device (1.9)");
static_assert(WEFT_MR_ATTR_SIZE_1_9 == 80, "fi_mr_attr 1.9");
static_assert(sizeof(struct fi_ops) == 56, "fi_ops");
static_assert(offsetof(struct fi_ops_av, av_set) == 56, "fi_ops_av (1.17)");
#endif

#endif /* WEFT_OFI_H */
