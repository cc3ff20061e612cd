/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * weft compat: fi_info as programs built against older OFI headers see it.
 *
 * libfabric.so.1 keeps every symbol version it ever exported.  A program
 * linked against fi_getinfo@FABRIC_1.0 passes and receives fi_info structs in
 * the layout of its own headers, which had smaller attribute structs.  The
 * compat entry points in src/compat.c convert between those layouts and the
 * current one field by field; none of them hands a current struct to an old
 * caller or reads past the end of an old one.
 *
 * ABI node   libfabric   what changed against the node before it
 * FABRIC_1.0 1.0 - 1.4   (first)
 * FABRIC_1.1 1.5 - 1.6   ep_attr: + auth_key_size, auth_key
 *                        domain_attr: mr_mode enum -> int bits, + cntr_cnt,
 *                          mr_iov_limit, caps, mode, auth_key, auth_key_size,
 *                          max_err_data, mr_cnt
 *                        fabric_attr: + api_version
 * FABRIC_1.2 1.7 - 1.8   fi_info: + nic
 * FABRIC_1.3 1.9 - 1.19  tx_attr: + tclass; domain_attr: + tclass
 * FABRIC_1.7 1.20 - 1.22 domain_attr: + max_ep_auth_key
 * FABRIC_1.8 2.0 - 2.4   domain_attr: + max_group_id; + fi_fabric2
 * FABRIC_1.9 2.5 -       domain_attr: + max_cntr_value, max_err_cntr_value
 *
 * From FABRIC_1.3 on only domain_attr grows, and only at its end.  weft
 * allocates every domain_attr it hands out at the newest size (1.9), so one
 * fi_info serves a caller of any of those nodes; what it reads from a caller
 * stops where that caller's layout does (WEFT_DOMAIN_ATTR_SIZE_*).  The tail
 * past tclass is weft's own struct below: the installed headers may lack it
 * (1.17) or have it (2.5 and later), and weft's ABI is the same either way.
 *
 * rx_attr has not changed since 1.0.  The layouts below are those of the
 * public headers of each release; the field names are the public ones.
 */
#ifndef WEFT_COMPAT_H
#define WEFT_COMPAT_H

#include "weft/core.h"

#include <assert.h>

#include "weft/ofi.h"

/* tx_attr at FABRIC_1.0 to 1.2: no tclass. */
struct weft_tx_attr_1_0 {
	uint64_t caps;
	uint64_t mode;
	uint64_t op_flags;
	uint64_t msg_order;
	uint64_t comp_order;
	size_t inject_size;
	size_t size;
	size_t iov_limit;
	size_t rma_iov_limit;
};

/* ep_attr at FABRIC_1.0: no authorization key. */
struct weft_ep_attr_1_0 {
	enum fi_ep_type type;
	uint32_t protocol;
	uint32_t protocol_version;
	size_t max_msg_size;
	size_t msg_prefix_size;
	size_t max_order_raw_size;
	size_t max_order_war_size;
	size_t max_order_waw_size;
	uint64_t mem_tag_format;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
};

/* domain_attr at FABRIC_1.0: ends with max_ep_srx_ctx. */
struct weft_domain_attr_1_0 {
	struct fid_domain *domain;
	char *name;
	enum fi_threading threading;
	enum fi_progress control_progress;
	enum fi_progress data_progress;
	enum fi_resource_mgmt resource_mgmt;
	enum fi_av_type av_type;
	int mr_mode; /* enum fi_mr_mode then: FI_MR_BASIC, FI_MR_SCALABLE */
	size_t mr_key_size;
	size_t cq_data_size;
	size_t cq_cnt;
	size_t ep_cnt;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
	size_t max_ep_tx_ctx;
	size_t max_ep_rx_ctx;
	size_t max_ep_stx_ctx;
	size_t max_ep_srx_ctx;
};

/* domain_attr at FABRIC_1.1 and 1.2: no tclass. */
struct weft_domain_attr_1_1 {
	struct fid_domain *domain;
	char *name;
	enum fi_threading threading;
	enum fi_progress control_progress;
	enum fi_progress data_progress;
	enum fi_resource_mgmt resource_mgmt;
	enum fi_av_type av_type;
	int mr_mode;
	size_t mr_key_size;
	size_t cq_data_size;
	size_t cq_cnt;
	size_t ep_cnt;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
	size_t max_ep_tx_ctx;
	size_t max_ep_rx_ctx;
	size_t max_ep_stx_ctx;
	size_t max_ep_srx_ctx;
	size_t cntr_cnt;
	size_t mr_iov_limit;
	uint64_t caps;
	uint64_t mode;
	uint8_t *auth_key;
	size_t auth_key_size;
	size_t max_err_data;
	size_t mr_cnt;
};

/* fabric_attr at FABRIC_1.0: no api_version. */
struct weft_fabric_attr_1_0 {
	struct fid_fabric *fabric;
	char *name;
	char *prov_name;
	uint32_t prov_version;
};

struct weft_info_1_0 {
	struct weft_info_1_0 *next;
	uint64_t caps;
	uint64_t mode;
	uint32_t addr_format;
	size_t src_addrlen;
	size_t dest_addrlen;
	void *src_addr;
	void *dest_addr;
	fid_t handle;
	struct weft_tx_attr_1_0 *tx_attr;
	struct fi_rx_attr *rx_attr;
	struct weft_ep_attr_1_0 *ep_attr;
	struct weft_domain_attr_1_0 *domain_attr;
	struct weft_fabric_attr_1_0 *fabric_attr;
};

/* FABRIC_1.1: ep_attr and fabric_attr are the current ones. */
struct weft_info_1_1 {
	struct weft_info_1_1 *next;
	uint64_t caps;
	uint64_t mode;
	uint32_t addr_format;
	size_t src_addrlen;
	size_t dest_addrlen;
	void *src_addr;
	void *dest_addr;
	fid_t handle;
	struct weft_tx_attr_1_0 *tx_attr;
	struct fi_rx_attr *rx_attr;
	struct fi_ep_attr *ep_attr;
	struct weft_domain_attr_1_1 *domain_attr;
	struct fi_fabric_attr *fabric_attr;
};

/* FABRIC_1.2: FABRIC_1.1 plus the NIC, whose structs are the current ones. */
struct weft_info_1_2 {
	struct weft_info_1_2 *next;
	uint64_t caps;
	uint64_t mode;
	uint32_t addr_format;
	size_t src_addrlen;
	size_t dest_addrlen;
	void *src_addr;
	void *dest_addr;
	fid_t handle;
	struct weft_tx_attr_1_0 *tx_attr;
	struct fi_rx_attr *rx_attr;
	struct fi_ep_attr *ep_attr;
	struct weft_domain_attr_1_1 *domain_attr;
	struct fi_fabric_attr *fabric_attr;
	struct fid_nic *nic;
};

/* domain_attr past tclass, as FABRIC_1.7 to 1.9 lay it out */
struct weft_domain_attr_tail {
	size_t max_ep_auth_key;	     /* 1.20 (FABRIC_1.7) */
	uint32_t max_group_id;	     /* 2.0 (FABRIC_1.8) */
	uint64_t max_cntr_value;     /* 2.5 (FABRIC_1.9) */
	uint64_t max_err_cntr_value; /* 2.5 (FABRIC_1.9) */
};

/* The tail starts where a FABRIC_1.3 domain_attr ends. */
#define WEFT_DOMAIN_ATTR_SIZE_1_3 ((size_t)192)
#define WEFT_DOMAIN_ATTR_SIZE_1_7                                              \
	(WEFT_DOMAIN_ATTR_SIZE_1_3 +                                           \
	 offsetof(struct weft_domain_attr_tail, max_group_id))
#define WEFT_DOMAIN_ATTR_SIZE_1_8                                              \
	(WEFT_DOMAIN_ATTR_SIZE_1_3 +                                           \
	 offsetof(struct weft_domain_attr_tail, max_cntr_value))
#define WEFT_DOMAIN_ATTR_SIZE_1_9                                              \
	(WEFT_DOMAIN_ATTR_SIZE_1_3 + sizeof(struct weft_domain_attr_tail))
/* What weft allocates for a domain_attr: the newest layout, or the
 * headers' own if they are newer still. */
#define WEFT_DOMAIN_ATTR_ALLOC                                                 \
	(sizeof(struct fi_domain_attr) > WEFT_DOMAIN_ATTR_SIZE_1_9 ?           \
		 sizeof(struct fi_domain_attr) :                               \
		 WEFT_DOMAIN_ATTR_SIZE_1_9)

/* The tail of a domain_attr weft allocated (never of a caller's). */
static inline struct weft_domain_attr_tail *
weft_domain_tail(struct fi_domain_attr *attr)
{
	return (struct weft_domain_attr_tail *)((char *)attr +
						WEFT_DOMAIN_ATTR_SIZE_1_3);
}

/*
 * How much of a caller's domain_attr weft may read: what its node (the
 * symbol it bound) lays out, and no more than the API version it asked for
 * defines.  A program built against 1.17 headers but linked against weft
 * binds FABRIC_1.9 and asks for 1.17: its tail is never read.
 */
static inline size_t weft_domain_attr_size_for(uint32_t version)
{
	if (FI_VERSION_GE(version, FI_VERSION(2, 5)))
		return WEFT_DOMAIN_ATTR_SIZE_1_9;
	if (FI_VERSION_GE(version, FI_VERSION(2, 0)))
		return WEFT_DOMAIN_ATTR_SIZE_1_8;
	if (FI_VERSION_GE(version, FI_VERSION(1, 20)))
		return WEFT_DOMAIN_ATTR_SIZE_1_7;
	return WEFT_DOMAIN_ATTR_SIZE_1_3;
}

/*
 * Deep copy of one fi_info whose domain_attr is dom_len bytes long (at
 * least WEFT_DOMAIN_ATTR_SIZE_1_3): the copy's domain_attr is allocated at
 * WEFT_DOMAIN_ATTR_ALLOC and holds the source's tail up to dom_len, zero
 * past it.  weft_info_dup() is this with the 1.3 size and weft's own tail
 * values (weft_domain_tail_fill).
 */
struct fi_info *weft_info_dup_sized(const struct fi_info *src, size_t dom_len);
/* weft's answers for the tail fields, the same for every provider. */
void weft_domain_tail_fill(struct fi_domain_attr *attr);

#if UINTPTR_MAX == UINT64_MAX
static_assert(WEFT_DOMAIN_ATTR_SIZE_1_7 == 200, "domain_attr 1.7");
static_assert(WEFT_DOMAIN_ATTR_SIZE_1_8 == 208, "domain_attr 1.8");
static_assert(WEFT_DOMAIN_ATTR_SIZE_1_9 == 224, "domain_attr 1.9");
static_assert(offsetof(struct fi_domain_attr, tclass) + sizeof(uint32_t) <=
		      WEFT_DOMAIN_ATTR_SIZE_1_3,
	      "domain_attr 1.3");
#if FI_MAJOR_VERSION > 2 || (FI_MAJOR_VERSION == 2 && FI_MINOR_VERSION >= 5)
static_assert(offsetof(struct fi_domain_attr, max_ep_auth_key) == 192 &&
		      offsetof(struct fi_domain_attr, max_group_id) == 200 &&
		      offsetof(struct fi_domain_attr, max_cntr_value) == 208 &&
		      offsetof(struct fi_domain_attr, max_err_cntr_value) ==
			      216,
	      "the headers' domain_attr tail is weft's");
#endif
/* The sizes an LP64 program compiled against each release sees. */
static_assert(sizeof(struct weft_tx_attr_1_0) == 72, "tx_attr 1.0");
static_assert(sizeof(struct weft_ep_attr_1_0) == 80, "ep_attr 1.0");
static_assert(sizeof(struct weft_domain_attr_1_0) == 120, "domain_attr 1.0");
static_assert(sizeof(struct weft_domain_attr_1_1) == 184, "domain_attr 1.1");
static_assert(sizeof(struct weft_fabric_attr_1_0) == 32, "fabric_attr 1.0");
static_assert(sizeof(struct weft_info_1_0) == 112, "fi_info 1.0");
static_assert(sizeof(struct weft_info_1_1) == 112, "fi_info 1.1");
static_assert(sizeof(struct weft_info_1_2) == 120, "fi_info 1.2");
#endif

/*
 * fi_cq_err_entry past err_data_size, as 1.20 appended it; the part before
 * is the one every layout from 1.5 on shares.  Written only to a caller of
 * 1.20 or later, whose entry has it.
 */
struct weft_cq_err_tail {
	fi_addr_t src_addr;
};
#define WEFT_CQ_ERR_ENTRY_SIZE_1_5                                             \
	(offsetof(struct fi_cq_err_entry, err_data_size) + sizeof(size_t))

static inline struct weft_cq_err_tail *
weft_cq_err_tail(struct fi_cq_err_entry *entry)
{
	return (struct weft_cq_err_tail *)((char *)entry +
					   WEFT_CQ_ERR_ENTRY_SIZE_1_5);
}
#if UINTPTR_MAX == UINT64_MAX
static_assert(WEFT_CQ_ERR_ENTRY_SIZE_1_5 == 80, "fi_cq_err_entry 1.5");
#endif

/* The older ABI nodes whose fi_info layout differs from the current one. */
enum weft_abi {
	WEFT_ABI_1_0,
	WEFT_ABI_1_1,
	WEFT_ABI_1_2,
};

/*
 * Conversions, one fi_info at a time (->next is neither followed nor
 * copied).  `old` points at a struct weft_info_<abi>.  Both directions make a
 * deep copy the caller owns; fields the target layout lacks are dropped, and
 * fields the source layout lacks are zero.  NULL on allocation failure.
 */
struct fi_info *weft_compat_info_to_new(enum weft_abi abi, const void *old);
void *weft_compat_info_from_new(enum weft_abi abi, const struct fi_info *info);
/* Free a whole list in the abi layout, as fi_freeinfo at that node does. */
void weft_compat_info_free(enum weft_abi abi, void *old);

/*
 * The entry points bound to the older version nodes.  They are exported
 * from libfabric.so.1 only under their public names (fi_getinfo@FABRIC_1.0
 * and so on); these names let the unit tests, which link the core
 * statically, call them.
 */
int weft_compat_getinfo_1_0(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct weft_info_1_0 *hints,
			    struct weft_info_1_0 **info);
void weft_compat_freeinfo_1_0(struct weft_info_1_0 *info);
struct weft_info_1_0 *weft_compat_dupinfo_1_0(const struct weft_info_1_0 *info);
int weft_compat_fabric_1_0(struct weft_fabric_attr_1_0 *attr,
			   struct fid_fabric **fabric, void *context);

int weft_compat_getinfo_1_1(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct weft_info_1_1 *hints,
			    struct weft_info_1_1 **info);
void weft_compat_freeinfo_1_1(struct weft_info_1_1 *info);
struct weft_info_1_1 *weft_compat_dupinfo_1_1(const struct weft_info_1_1 *info);

int weft_compat_getinfo_1_2(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct weft_info_1_2 *hints,
			    struct weft_info_1_2 **info);
void weft_compat_freeinfo_1_2(struct weft_info_1_2 *info);
struct weft_info_1_2 *weft_compat_dupinfo_1_2(const struct weft_info_1_2 *info);

/* FABRIC_1.3, 1.7 and 1.8: the current fi_info, a shorter domain_attr. */
int weft_compat_getinfo_1_3(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct fi_info *hints, struct fi_info **info);
struct fi_info *weft_compat_dupinfo_1_3(const struct fi_info *info);
void weft_compat_freeinfo_1_3(struct fi_info *info);
int weft_compat_getinfo_1_7(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct fi_info *hints, struct fi_info **info);
struct fi_info *weft_compat_dupinfo_1_7(const struct fi_info *info);
void weft_compat_freeinfo_1_7(struct fi_info *info);
int weft_compat_getinfo_1_8(uint32_t version, const char *node,
			    const char *service, uint64_t flags,
			    const struct fi_info *hints, struct fi_info **info);
struct fi_info *weft_compat_dupinfo_1_8(const struct fi_info *info);
void weft_compat_freeinfo_1_8(struct fi_info *info);

#endif /* WEFT_COMPAT_H */
