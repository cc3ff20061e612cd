/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Matching a provider's capabilities against fi_getinfo hints
 * (weft/util_getinfo.h).  The rules are those of fi_getinfo(3),
 * fi_domain(3), fi_endpoint(3) and fi_mr(3): a non-zero hint must be met,
 * a zero hint is a wildcard, except mode bits, where zero means the
 * application supports no mode.
 */
#include "weft/util_getinfo.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/ofi.h"

struct check {
	char *why;
	size_t len;
	int depth;
};

/* Record the first unmet hint; always returns -FI_ENODATA. */
__attribute__((format(printf, 2, 3))) static int
check_fail(struct check *c, const char *fmt, ...)
{
	va_list ap;

	if (c->why && c->len) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->len, fmt, ap);
		va_end(ap);
	}
	return -FI_ENODATA;
}

/* Name a set of flag bits the way fi_tostr does ("FI_ATOMIC, FI_RMA"). */
static const char *bits_str(char *buf, size_t len, uint64_t bits,
			    enum fi_type type)
{
	char *s = fi_tostr_r(buf, len, &bits, type);

	if (!s || !*s)
		snprintf(buf, len, "0x%llx", (unsigned long long)bits);
	return buf;
}

static const char *enum_str(char *buf, size_t len, const void *val,
			    enum fi_type type)
{
	char *s = fi_tostr_r(buf, len, val, type);

	return s && *s ? s : "?";
}

/* Count a hint as met; -FI_ENODATA (and the reason) when not. */
#define CHECK(c, ok, ...)                                                      \
	do {                                                                   \
		if (!(ok))                                                     \
			return check_fail((c), __VA_ARGS__);                   \
		(c)->depth++;                                                  \
	} while (0)

#define CHECK_LIMIT(c, hint_attr, cand_attr, field, what)                      \
	CHECK(c, !(hint_attr)->field || (hint_attr)->field <= (cand_attr)->field, \
	      "%s %zu is more than the %zu supported", what,                   \
	      (size_t)(hint_attr)->field, (size_t)(cand_attr)->field)

/*
 * Strength of a threading model for the provider: the stronger one it
 * offers satisfies every weaker request.
 */
static int threading_rank(enum fi_threading t)
{
	switch (t) {
	case FI_THREAD_DOMAIN:
		return 1;
	case FI_THREAD_COMPLETION:
		return 2;
	case FI_THREAD_ENDPOINT:
		return 3;
	case FI_THREAD_FID:
		return 4;
	case FI_THREAD_SAFE:
		return 5;
	default:
		return 0;
	}
}

/* Modes the application supports (hints->mode), as a provider may use them. */
static uint64_t modes_allowed(uint64_t app_mode)
{
	/* fi_context2 holds an fi_context: an application that passes the
	 * larger one satisfies a provider that needs the smaller. */
	if (app_mode & FI_CONTEXT2)
		app_mode |= FI_CONTEXT;
	return app_mode;
}

static int check_mode(struct check *c, const char *where, uint64_t needed,
		      uint64_t app_mode)
{
	char buf[256];
	uint64_t missing = needed & ~modes_allowed(app_mode);

	CHECK(c, !missing,
	      "%srequires mode %s, which the hints do not allow", where,
	      bits_str(buf, sizeof(buf), missing, FI_TYPE_MODE));
	return 0;
}

static int check_caps(struct check *c, const char *where, uint64_t wanted,
		      uint64_t offered)
{
	char buf[256];
	uint64_t missing = wanted & ~offered;

	CHECK(c, !missing, "%s%s %s not supported", where,
	      bits_str(buf, sizeof(buf), missing, FI_TYPE_CAPS),
	      missing & (missing - 1) ? "are" : "is");
	return 0;
}

#define MR_BASIC_MAP (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

static int check_mr_mode(struct check *c, int cand, int hint, uint64_t app_mode,
			 uint32_t version)
{
	char buf[256];
	uint64_t missing;

	if (hint == FI_MR_BASIC) {
		CHECK(c, !(cand & ~(MR_BASIC_MAP | FI_MR_LOCAL)),
		      "FI_MR_BASIC cannot express this provider's mr_mode");
		return 0;
	}
	if (hint == FI_MR_SCALABLE) {
		CHECK(c, !(cand & (MR_BASIC_MAP | FI_MR_LOCAL)),
		      "FI_MR_SCALABLE is not supported: mr_mode needs %s",
		      bits_str(buf, sizeof(buf), (uint64_t)cand,
			       FI_TYPE_MR_MODE));
		return 0;
	}
	if (hint == FI_MR_UNSPEC) {
		/* Before 1.5 an unspecified mode means basic or scalable;
		 * from 1.5 on it means the application supports no mr_mode
		 * bit, except that the old FI_LOCAL_MR mode stands for
		 * FI_MR_LOCAL. */
		if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
			CHECK(c, !(cand & ~(MR_BASIC_MAP | FI_MR_LOCAL)),
			      "mr_mode needs bits an API %u.%u caller cannot "
			      "express",
			      FI_MAJOR(version), FI_MINOR(version));
			return 0;
		}
		missing = (uint64_t)cand;
		if (app_mode & FI_LOCAL_MR)
			missing &= ~(uint64_t)FI_MR_LOCAL;
		CHECK(c, !missing,
		      "requires mr_mode %s, which the hints do not allow",
		      bits_str(buf, sizeof(buf), missing, FI_TYPE_MR_MODE));
		return 0;
	}
	missing = (uint64_t)(cand & ~hint);
	CHECK(c, !missing, "requires mr_mode %s, which the hints do not allow",
	      bits_str(buf, sizeof(buf), missing, FI_TYPE_MR_MODE));
	return 0;
}

static int check_progress(struct check *c, const char *what,
			  enum fi_progress cand, enum fi_progress hint)
{
	char b1[64], b2[64];

	/* Automatic progress also serves a caller that drives progress. */
	CHECK(c,
	      hint == FI_PROGRESS_UNSPEC || hint == cand ||
		      (cand == FI_PROGRESS_AUTO && hint == FI_PROGRESS_MANUAL),
	      "%s %s is not supported (offers %s)", what,
	      enum_str(b1, sizeof(b1), &hint, FI_TYPE_PROGRESS),
	      enum_str(b2, sizeof(b2), &cand, FI_TYPE_PROGRESS));
	return 0;
}

static int check_domain(struct check *c, const struct fi_domain_attr *cand,
			const struct fi_domain_attr *hint, uint64_t app_mode,
			uint32_t version, bool have_hints)
{
	char b1[64], b2[64];
	int ret;

	if (!hint) {
		/* Hints without domain attributes: only mr_mode still
		 * constrains (no bit is supported). */
		if (have_hints && !FI_VERSION_LT(version, FI_VERSION(1, 5)))
			return check_mr_mode(c, cand->mr_mode, FI_MR_UNSPEC,
					     app_mode, version);
		return 0;
	}
	CHECK(c,
	      !hint->name || (cand->name && !strcmp(hint->name, cand->name)),
	      "domain \"%s\" not found (offers \"%s\")", hint->name,
	      cand->name ? cand->name : "");
	/* Values outside an enum would be copied into the answer. */
	CHECK(c,
	      hint->threading == FI_THREAD_UNSPEC ||
		      threading_rank(hint->threading),
	      "threading %d is not a threading model", (int)hint->threading);
	CHECK(c, (unsigned int)hint->resource_mgmt <= FI_RM_ENABLED,
	      "resource_mgmt %d is not a resource management mode",
	      (int)hint->resource_mgmt);
	CHECK(c, (unsigned int)hint->av_type <= FI_AV_TABLE,
	      "av_type %d is not an AV type", (int)hint->av_type);
	CHECK(c,
	      hint->threading == FI_THREAD_UNSPEC ||
		      threading_rank(hint->threading) <=
			      threading_rank(cand->threading),
	      "threading %s is not supported (offers %s)",
	      enum_str(b1, sizeof(b1), &hint->threading, FI_TYPE_THREADING),
	      enum_str(b2, sizeof(b2), &cand->threading, FI_TYPE_THREADING));
	ret = check_progress(c, "control progress", cand->control_progress,
			     hint->control_progress);
	if (ret)
		return ret;
	ret = check_progress(c, "data progress", cand->data_progress,
			     hint->data_progress);
	if (ret)
		return ret;
	CHECK(c,
	      hint->resource_mgmt != FI_RM_ENABLED ||
		      cand->resource_mgmt == FI_RM_ENABLED,
	      "resource management FI_RM_ENABLED is not supported");
	CHECK(c,
	      hint->av_type == FI_AV_UNSPEC || cand->av_type == FI_AV_UNSPEC ||
		      hint->av_type == cand->av_type,
	      "av_type %s is not supported (offers %s)",
	      enum_str(b1, sizeof(b1), &hint->av_type, FI_TYPE_AV_TYPE),
	      enum_str(b2, sizeof(b2), &cand->av_type, FI_TYPE_AV_TYPE));
	ret = check_mr_mode(c, cand->mr_mode, hint->mr_mode, app_mode,
			    version);
	if (ret)
		return ret;
	CHECK_LIMIT(c, hint, cand, mr_key_size, "mr_key_size");
	CHECK_LIMIT(c, hint, cand, cq_data_size, "cq_data_size");
	CHECK_LIMIT(c, hint, cand, cq_cnt, "cq_cnt");
	CHECK_LIMIT(c, hint, cand, ep_cnt, "ep_cnt");
	CHECK_LIMIT(c, hint, cand, tx_ctx_cnt, "tx_ctx_cnt");
	CHECK_LIMIT(c, hint, cand, rx_ctx_cnt, "rx_ctx_cnt");
	CHECK_LIMIT(c, hint, cand, max_ep_tx_ctx, "max_ep_tx_ctx");
	CHECK_LIMIT(c, hint, cand, max_ep_rx_ctx, "max_ep_rx_ctx");
	CHECK_LIMIT(c, hint, cand, max_ep_stx_ctx, "max_ep_stx_ctx");
	CHECK_LIMIT(c, hint, cand, max_ep_srx_ctx, "max_ep_srx_ctx");
	CHECK_LIMIT(c, hint, cand, cntr_cnt, "cntr_cnt");
	CHECK_LIMIT(c, hint, cand, mr_iov_limit, "mr_iov_limit");
	CHECK_LIMIT(c, hint, cand, max_err_data, "max_err_data");
	CHECK_LIMIT(c, hint, cand, mr_cnt, "mr_cnt");
	if (!FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		ret = check_caps(c, "domain ", hint->caps, cand->caps);
		if (ret)
			return ret;
		ret = check_mode(c, "domain ", cand->mode, hint->mode);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * cand_dom: the candidate's domain attributes (may be NULL).  A hint of
 * FI_SHARED_CONTEXT transmit or receive contexts is met by a candidate
 * whose domain lets an endpoint use a shared context of that kind
 * (max_ep_stx_ctx, max_ep_srx_ctx).
 */
static int check_ep(struct check *c, const struct fi_ep_attr *cand,
		    const struct fi_domain_attr *cand_dom,
		    const struct fi_ep_attr *hint)
{
	char b1[64], b2[64];

	if (!hint)
		return 0;
	CHECK(c, hint->type == FI_EP_UNSPEC || hint->type == cand->type,
	      "endpoint type %s is not supported (offers %s)",
	      enum_str(b1, sizeof(b1), &hint->type, FI_TYPE_EP_TYPE),
	      enum_str(b2, sizeof(b2), &cand->type, FI_TYPE_EP_TYPE));
	CHECK(c, hint->protocol == FI_PROTO_UNSPEC ||
			 hint->protocol == cand->protocol,
	      "protocol %s is not supported (offers %s)",
	      enum_str(b1, sizeof(b1), &hint->protocol, FI_TYPE_PROTOCOL),
	      enum_str(b2, sizeof(b2), &cand->protocol, FI_TYPE_PROTOCOL));
	CHECK(c, !hint->protocol_version ||
			 hint->protocol_version <= cand->protocol_version,
	      "protocol version %u is newer than the %u supported",
	      hint->protocol_version, cand->protocol_version);
	CHECK_LIMIT(c, hint, cand, max_msg_size, "max_msg_size");
	CHECK_LIMIT(c, hint, cand, max_order_raw_size, "max_order_raw_size");
	CHECK_LIMIT(c, hint, cand, max_order_war_size, "max_order_war_size");
	CHECK_LIMIT(c, hint, cand, max_order_waw_size, "max_order_waw_size");
	/* An endpoint has one context of each kind; a scalable endpoint up
	 * to the domain's max_ep_tx_ctx / max_ep_rx_ctx. */
	CHECK(c, !hint->tx_ctx_cnt || hint->tx_ctx_cnt <= cand->tx_ctx_cnt ||
			 (hint->tx_ctx_cnt != FI_SHARED_CONTEXT && cand_dom &&
			  hint->tx_ctx_cnt <= cand_dom->max_ep_tx_ctx) ||
			 (hint->tx_ctx_cnt == FI_SHARED_CONTEXT &&
			  (cand->tx_ctx_cnt == FI_SHARED_CONTEXT ||
			   (cand_dom && cand_dom->max_ep_stx_ctx))),
	      "%s transmit contexts are not supported",
	      hint->tx_ctx_cnt == FI_SHARED_CONTEXT ? "shared" : "that many");
	CHECK(c, !hint->rx_ctx_cnt || hint->rx_ctx_cnt <= cand->rx_ctx_cnt ||
			 (hint->rx_ctx_cnt != FI_SHARED_CONTEXT && cand_dom &&
			  hint->rx_ctx_cnt <= cand_dom->max_ep_rx_ctx) ||
			 (hint->rx_ctx_cnt == FI_SHARED_CONTEXT &&
			  (cand->rx_ctx_cnt == FI_SHARED_CONTEXT ||
			   (cand_dom && cand_dom->max_ep_srx_ctx))),
	      "%s receive contexts are not supported",
	      hint->rx_ctx_cnt == FI_SHARED_CONTEXT ? "shared" : "that many");
	return 0;
}

static int check_order(struct check *c, const char *what, uint64_t hint,
		       uint64_t cand)
{
	char buf[256];
	uint64_t missing = hint & ~cand;

	CHECK(c, !missing, "%s %s is not supported", what,
	      bits_str(buf, sizeof(buf), missing, FI_TYPE_MSG_ORDER));
	return 0;
}

static int check_tx(struct check *c, const struct fi_tx_attr *cand,
		    const struct fi_tx_attr *hint, uint64_t app_mode)
{
	char buf[256];
	int ret;

	if (!hint)
		return 0;
	ret = check_caps(c, "tx ", hint->caps & UTIL_TX_CAPS, cand->caps);
	if (!ret)
		ret = check_mode(c, "tx ", cand->mode,
				 hint->mode ? hint->mode : app_mode);
	if (ret)
		return ret;
	CHECK(c, !(hint->op_flags & ~cand->op_flags),
	      "tx op_flags %s are not supported",
	      bits_str(buf, sizeof(buf), hint->op_flags & ~cand->op_flags,
		       FI_TYPE_OP_FLAGS));
	ret = check_order(c, "tx msg_order", hint->msg_order, cand->msg_order);
	if (!ret)
		ret = check_order(c, "tx comp_order", hint->comp_order,
				  cand->comp_order);
	if (ret)
		return ret;
	CHECK_LIMIT(c, hint, cand, inject_size, "inject_size");
	CHECK_LIMIT(c, hint, cand, size, "tx size");
	CHECK_LIMIT(c, hint, cand, iov_limit, "tx iov_limit");
	CHECK_LIMIT(c, hint, cand, rma_iov_limit, "rma_iov_limit");
	return 0;
}

static int check_rx(struct check *c, const struct fi_rx_attr *cand,
		    const struct fi_rx_attr *hint, uint64_t app_mode)
{
	char buf[256];
	int ret;

	if (!hint)
		return 0;
	ret = check_caps(c, "rx ", hint->caps & UTIL_RX_CAPS, cand->caps);
	if (!ret)
		ret = check_mode(c, "rx ", cand->mode,
				 hint->mode ? hint->mode : app_mode);
	if (ret)
		return ret;
	CHECK(c, !(hint->op_flags & ~cand->op_flags),
	      "rx op_flags %s are not supported",
	      bits_str(buf, sizeof(buf), hint->op_flags & ~cand->op_flags,
		       FI_TYPE_OP_FLAGS));
	ret = check_order(c, "rx msg_order", hint->msg_order, cand->msg_order);
	if (!ret)
		ret = check_order(c, "rx comp_order", hint->comp_order,
				  cand->comp_order);
	if (ret)
		return ret;
	CHECK_LIMIT(c, hint, cand, total_buffered_recv, "total_buffered_recv");
	CHECK_LIMIT(c, hint, cand, size, "rx size");
	CHECK_LIMIT(c, hint, cand, iov_limit, "rx iov_limit");
	return 0;
}

/*
 * Whether a candidate's address format serves the one asked: FI_SOCKADDR
 * stands for any socket address, and 1.17 answers it with FI_SOCKADDR_IN
 * or FI_SOCKADDR_IN6 entries.
 */
static bool addr_format_fits(uint32_t hint, uint32_t cand)
{
	if (hint == FI_FORMAT_UNSPEC || cand == FI_FORMAT_UNSPEC ||
	    hint == cand)
		return true;
	return hint == FI_SOCKADDR &&
	       (cand == FI_SOCKADDR_IN || cand == FI_SOCKADDR_IN6);
}

int util_info_check(const struct fi_info *cand, const struct fi_info *hints,
		    uint32_t version, char *why, size_t len, int *depth)
{
	struct check c = { .why = why, .len = len };
	char b1[64], b2[64];
	int ret;

	if (why && len)
		why[0] = '\0';
	if (!hints)
		goto out;

	ret = check_caps(&c, "", hints->caps, cand->caps);
	if (ret)
		goto out;
	ret = check_mode(&c, "", cand->mode, hints->mode);
	if (ret)
		goto out;
	if (hints->ep_attr || hints->domain_attr) {
		/* Endpoint type first: the most telling mismatch. */
		ret = check_ep(&c, cand->ep_attr, cand->domain_attr,
			       hints->ep_attr);
		if (ret)
			goto out;
	}
	if (!addr_format_fits(hints->addr_format, cand->addr_format)) {
		ret = check_fail(&c, "address format %s is not supported "
				     "(uses %s)",
				 enum_str(b1, sizeof(b1), &hints->addr_format,
					  FI_TYPE_ADDR_FORMAT),
				 enum_str(b2, sizeof(b2), &cand->addr_format,
					  FI_TYPE_ADDR_FORMAT));
		goto out;
	}
	c.depth++;
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    (!cand->fabric_attr->name ||
	     strcmp(hints->fabric_attr->name, cand->fabric_attr->name))) {
		ret = check_fail(&c, "fabric \"%s\" not found (offers \"%s\")",
				 hints->fabric_attr->name,
				 cand->fabric_attr->name ?
					 cand->fabric_attr->name :
					 "");
		goto out;
	}
	c.depth++;
	ret = check_domain(&c, cand->domain_attr, hints->domain_attr,
			   hints->mode, version, true);
	if (ret)
		goto out;
	ret = check_tx(&c, cand->tx_attr, hints->tx_attr, hints->mode);
	if (ret)
		goto out;
	ret = check_rx(&c, cand->rx_attr, hints->rx_attr, hints->mode);
	if (ret)
		goto out;
	if (hints->nic && hints->nic->device_attr &&
	    hints->nic->device_attr->name) {
		const char *have = cand->nic && cand->nic->device_attr ?
					   cand->nic->device_attr->name :
					   NULL;

		if (!have || strcmp(have, hints->nic->device_attr->name)) {
			ret = check_fail(&c, "NIC \"%s\" not found",
					 hints->nic->device_attr->name);
			goto out;
		}
	}
	c.depth++;
	ret = 0;
out:
	if (depth)
		*depth = c.depth;
	return hints ? ret : 0;
}

/*
 * What a domain asks of a candidate: a threading model and progress it can
 * give, values inside their enums, and capabilities it offers.
 */
static int check_domain_open(struct check *c, const struct fi_info *cand,
			     const struct fi_info *info)
{
	const struct fi_domain_attr *hd = info->domain_attr;
	char b1[64], b2[64];
	int ret;

	if (hd) {
		CHECK(c,
		      hd->threading == FI_THREAD_UNSPEC ||
			      threading_rank(hd->threading),
		      "threading %d is not a threading model",
		      (int)hd->threading);
		CHECK(c,
		      threading_rank(hd->threading) <=
			      threading_rank(cand->domain_attr->threading),
		      "threading %s is not supported (offers %s)",
		      enum_str(b1, sizeof(b1), &hd->threading,
			       FI_TYPE_THREADING),
		      enum_str(b2, sizeof(b2), &cand->domain_attr->threading,
			       FI_TYPE_THREADING));
		ret = check_progress(c, "control progress",
				     cand->domain_attr->control_progress,
				     hd->control_progress);
		if (ret)
			return ret;
		ret = check_progress(c, "data progress",
				     cand->domain_attr->data_progress,
				     hd->data_progress);
		if (ret)
			return ret;
		CHECK(c, (unsigned int)hd->resource_mgmt <= FI_RM_ENABLED,
		      "resource_mgmt %d is not a resource management mode",
		      (int)hd->resource_mgmt);
		CHECK(c, (unsigned int)hd->av_type <= FI_AV_TABLE,
		      "av_type %d is not an AV type", (int)hd->av_type);
		ret = check_caps(c, "domain ", hd->caps,
				 cand->domain_attr->caps);
		if (ret)
			return ret;
	}
	return check_caps(c, "", info->caps, cand->caps);
}

/* What an endpoint asks of a candidate: its type, protocol and
 * capabilities. */
static int check_ep_open(struct check *c, const struct fi_info *cand,
			 const struct fi_info *info)
{
	uint32_t protocol = cand->ep_attr->protocol;
	struct weft_name_look look;
	char b1[64], b2[64];
	int ret;

	/* An entry got under "sockets" says the protocol of that name. */
	if (info->fabric_attr &&
	    weft_name_look(info->fabric_attr->prov_name, &look) &&
	    look.protocol != FI_PROTO_UNSPEC)
		protocol = look.protocol;
	if (info->ep_attr) {
		CHECK(c,
		      info->ep_attr->type == FI_EP_UNSPEC ||
			      info->ep_attr->type == cand->ep_attr->type,
		      "endpoint type %s is not supported (offers %s)",
		      enum_str(b1, sizeof(b1), &info->ep_attr->type,
			       FI_TYPE_EP_TYPE),
		      enum_str(b2, sizeof(b2), &cand->ep_attr->type,
			       FI_TYPE_EP_TYPE));
		CHECK(c,
		      info->ep_attr->protocol == FI_PROTO_UNSPEC ||
			      info->ep_attr->protocol == protocol,
		      "protocol %s is not supported (offers %s)",
		      enum_str(b1, sizeof(b1), &info->ep_attr->protocol,
			       FI_TYPE_PROTOCOL),
		      enum_str(b2, sizeof(b2), &protocol, FI_TYPE_PROTOCOL));
	}
	ret = check_caps(c, "", info->caps, cand->caps);
	if (!ret && info->tx_attr)
		ret = check_caps(c, "tx ", info->tx_attr->caps & UTIL_TX_CAPS,
				 cand->tx_attr->caps);
	if (!ret && info->rx_attr)
		ret = check_caps(c, "rx ", info->rx_attr->caps & UTIL_RX_CAPS,
				 cand->rx_attr->caps);
	return ret;
}

/* 0 when one candidate passes check, else -FI_ENODATA logged as what. */
static int prov_check_open(const struct util_prov *uprov,
			   const struct fi_info *info, const char *what,
			   int (*check)(struct check *, const struct fi_info *,
					const struct fi_info *))
{
	const struct fi_info *cand;
	char why[256], best_why[256] = "";
	int best = -1;

	for (cand = uprov->info; cand; cand = cand->next) {
		struct check c = { .why = why, .len = sizeof(why) };

		if (!check(&c, cand, info))
			return 0;
		if (c.depth > best) {
			best = c.depth;
			snprintf(best_why, sizeof(best_why), "%s", why);
		}
	}
	FI_WARN(uprov->prov, FI_LOG_CORE, "%s refused: %s\n", what,
		best_why);
	return -FI_ENODATA;
}

int util_prov_check_domain(const struct util_prov *uprov,
			   const struct fi_info *info)
{
	return prov_check_open(uprov, info, "domain", check_domain_open);
}

int util_prov_check_ep(const struct util_prov *uprov,
		       const struct fi_info *info)
{
	return prov_check_open(uprov, info, "endpoint", check_ep_open);
}

/* The modifiers each primary capability implies when none is named. */
static uint64_t implied_modifiers(uint64_t caps)
{
	uint64_t mods = 0;

	if (caps & (FI_MSG | FI_TAGGED | FI_MULTICAST | FI_COLLECTIVE))
		mods |= FI_SEND | FI_RECV;
	if (caps & (FI_RMA | FI_ATOMIC))
		mods |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	return mods;
}

static uint64_t narrow_caps(uint64_t wanted, uint64_t offered)
{
	uint64_t caps;

	if (!wanted)
		return offered;
	caps = wanted & (UTIL_PRIMARY_CAPS | UTIL_SECONDARY_CAPS);
	if (wanted & UTIL_CAP_MODIFIERS)
		caps |= wanted & UTIL_CAP_MODIFIERS;
	else
		caps |= implied_modifiers(wanted);
	caps |= offered & UTIL_FREE_SECONDARY_CAPS;
	return caps & offered;
}

void util_info_narrow(struct fi_info *out, const struct fi_info *hints,
		      uint32_t version)
{
	const struct fi_domain_attr *hd;
	struct fi_domain_attr *d = out->domain_attr;

	if (!hints) {
		if (out->tx_attr)
			out->tx_attr->op_flags = 0;
		if (out->rx_attr)
			out->rx_attr->op_flags = 0;
		if (FI_VERSION_LT(version, FI_VERSION(1, 5)) && d)
			d->mr_mode = FI_MR_BASIC;
		return;
	}

	out->caps = narrow_caps(hints->caps, out->caps);
	if (out->tx_attr) {
		out->tx_attr->caps = narrow_caps(
			hints->tx_attr && hints->tx_attr->caps ?
				hints->tx_attr->caps :
				hints->caps,
			out->tx_attr->caps) &
				     (out->caps | UTIL_CAP_MODIFIERS);
		/* A candidate lists the op flags it supports; the default
		 * flags handed out are the ones asked for, else none. */
		out->tx_attr->op_flags =
			hints->tx_attr ? hints->tx_attr->op_flags : 0;
		/* the size asked for (no more than the candidate's, checked):
		 * the endpoint holds that many */
		if (hints->tx_attr && hints->tx_attr->size)
			out->tx_attr->size = hints->tx_attr->size;
	}
	if (out->rx_attr) {
		out->rx_attr->caps = narrow_caps(
			hints->rx_attr && hints->rx_attr->caps ?
				hints->rx_attr->caps :
				hints->caps,
			out->rx_attr->caps) &
				     (out->caps | UTIL_CAP_MODIFIERS);
		out->rx_attr->op_flags =
			hints->rx_attr ? hints->rx_attr->op_flags : 0;
		if (hints->rx_attr && hints->rx_attr->size)
			out->rx_attr->size = hints->rx_attr->size;
	}
	/* The modes the provider needs and the application allows; a
	 * provider needing FI_CONTEXT served by FI_CONTEXT2 reports the
	 * application's bit. */
	if ((out->mode & FI_CONTEXT) && !(hints->mode & FI_CONTEXT) &&
	    (hints->mode & FI_CONTEXT2))
		out->mode = (out->mode & ~FI_CONTEXT) | FI_CONTEXT2;
	if (hints->ep_attr && hints->ep_attr->mem_tag_format && out->ep_attr)
		out->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
	if (hints->ep_attr && hints->ep_attr->tx_ctx_cnt && out->ep_attr)
		out->ep_attr->tx_ctx_cnt = hints->ep_attr->tx_ctx_cnt;
	if (hints->ep_attr && hints->ep_attr->rx_ctx_cnt && out->ep_attr)
		out->ep_attr->rx_ctx_cnt = hints->ep_attr->rx_ctx_cnt;

	hd = hints->domain_attr;
	if (!d)
		return;
	if (hd && hd->threading)
		d->threading = hd->threading;
	if (hd && hd->control_progress)
		d->control_progress = hd->control_progress;
	if (hd && hd->data_progress)
		d->data_progress = hd->data_progress;
	if (hd && hd->resource_mgmt)
		d->resource_mgmt = hd->resource_mgmt;
	if (hd && hd->av_type)
		d->av_type = hd->av_type;
	if (hd && hd->caps)
		d->caps = narrow_caps(hd->caps, d->caps);
	if (hd && (hd->mr_mode == FI_MR_BASIC || hd->mr_mode == FI_MR_SCALABLE))
		d->mr_mode = hd->mr_mode;
	else if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		/* As libfabric 1.17 answers an unspecified mode: basic, the
		 * one every candidate that passed check_mr_mode can serve. */
		d->mr_mode = FI_MR_BASIC;
	else if ((hints->mode & FI_LOCAL_MR) && (!hd || !hd->mr_mode))
		d->mr_mode &= ~FI_MR_LOCAL;
}

static int copy_hint_addrs(struct fi_info *out, const struct fi_info *hints,
			   uint64_t flags)
{
	if (!hints)
		return 0;
	if (hints->src_addr && hints->src_addrlen && !(flags & FI_SOURCE)) {
		free(out->src_addr);
		out->src_addr = malloc(hints->src_addrlen);
		if (!out->src_addr)
			return -FI_ENOMEM;
		memcpy(out->src_addr, hints->src_addr, hints->src_addrlen);
		out->src_addrlen = hints->src_addrlen;
	}
	if (hints->dest_addr && hints->dest_addrlen) {
		free(out->dest_addr);
		out->dest_addr = malloc(hints->dest_addrlen);
		if (!out->dest_addr)
			return -FI_ENOMEM;
		memcpy(out->dest_addr, hints->dest_addr, hints->dest_addrlen);
		out->dest_addrlen = hints->dest_addrlen;
	}
	/* The candidate's own format when the hint is the generic one. */
	if (hints->addr_format != FI_FORMAT_UNSPEC &&
	    !(hints->addr_format == FI_SOCKADDR &&
	      out->addr_format != FI_FORMAT_UNSPEC))
		out->addr_format = hints->addr_format;
	if (hints->handle && hints->handle->fclass == FI_CLASS_PEP)
		out->handle = hints->handle;
	return 0;
}

/* Automatic progress only for callers that asked for it. */
static void progress_on_request(struct fi_info *out,
				const struct fi_info *hints)
{
	const struct fi_domain_attr *hd = hints ? hints->domain_attr : NULL;
	struct fi_domain_attr *d = out->domain_attr;

	if (!d)
		return;
	if (!hd || hd->control_progress != FI_PROGRESS_AUTO)
		d->control_progress = FI_PROGRESS_MANUAL;
	if (!hd || hd->data_progress != FI_PROGRESS_AUTO)
		d->data_progress = FI_PROGRESS_MANUAL;
}

/* Sizes the hints leave open: the provider's default, when smaller. */
static void size_default(struct fi_info *out, const struct fi_info *hints,
			 size_t dflt)
{
	if (!dflt)
		return;
	if (out->tx_attr && out->tx_attr->size > dflt &&
	    !(hints && hints->tx_attr && hints->tx_attr->size))
		out->tx_attr->size = dflt;
	if (out->rx_attr && out->rx_attr->size > dflt &&
	    !(hints && hints->rx_attr && hints->rx_attr->size))
		out->rx_attr->size = dflt;
}

int util_getinfo(const struct util_prov *uprov, uint32_t version,
		 const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *head = NULL, **tail = &head, *out;
	const struct fi_info *cand;
	char why[256], best_why[256] = "";
	int depth, best = -1, ret;

	*info = NULL;
	for (cand = uprov->info; cand; cand = cand->next) {
		if (util_info_check(cand, hints, version, why, sizeof(why),
				    &depth)) {
			if (depth > best) {
				best = depth;
				snprintf(best_why, sizeof(best_why), "%s",
					 why);
			}
			continue;
		}
		out = weft_info_dup(cand);
		if (!out) {
			ret = -FI_ENOMEM;
			goto err_free;
		}
		util_info_narrow(out, hints, version);
		size_default(out, hints, uprov->size_default);
		if (uprov->auto_on_request)
			progress_on_request(out, hints);
		ret = copy_hint_addrs(out, hints, flags);
		if (!ret && uprov->resolve)
			ret = uprov->resolve(uprov, version, node, service,
					     flags, hints, out);
		if (ret == -FI_ENODATA) {
			weft_info_free(out);
			best_why[0] = '\0';
			best = 1 << 20;
			continue;
		}
		if (ret) {
			weft_info_free(out);
			goto err_free;
		}
		*tail = out;
		tail = &out->next;
	}
	if (!head) {
		if (best_why[0])
			weft_explain(uprov->prov, "%s", best_why);
		return -FI_ENODATA;
	}
	*info = head;
	return 0;

err_free:
	weft_info_free_list(head);
	return ret;
}
