// SPDX-License-Identifier: BSD-2-Clause
/*
 * The contract of fi_getinfo(3), checked on every entry a provider returns:
 * with no hints, with each single capability as the hint, and with each
 * entry passed back as hints.  Every entry must keep the rules of
 * fi_getinfo(3), fi_endpoint(3) and fi_domain(3) that clients rely on
 * (upstream's fabtests check many of the same): context caps a subset of
 * the entry's caps, an order bit only with its max_order size, addresses of
 * the length their format says, values inside their enums, and an entry
 * that finds itself again as hints and opens as an endpoint.  The same
 * program runs over the reference library (make check-prov-reference), so
 * a rule weft breaks and 1.17 keeps is a finding.
 */
#include "config.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* Every mr_mode bit the 1.17 headers define: the hints allow them all. */
#define GI_MR_MODES                                                            \
	(FI_MR_LOCAL | FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |        \
	 FI_MR_PROV_KEY | FI_MR_MMU_NOTIFY | FI_MR_RMA_EVENT |                 \
	 FI_MR_ENDPOINT | FI_MR_HMEM | FI_MR_COLLECTIVE)

/* The capabilities of fi_getinfo(3) a single-bit hint is tried with. */
static const uint64_t gi_caps[] = {
	FI_MSG,		 FI_RMA,	  FI_TAGGED,	    FI_ATOMIC,
	FI_MULTICAST,	 FI_COLLECTIVE,	  FI_NAMED_RX_CTX,  FI_DIRECTED_RECV,
	FI_HMEM,	 FI_READ,	  FI_WRITE,	    FI_RECV,
	FI_SEND,	 FI_REMOTE_READ,  FI_REMOTE_WRITE,  FI_MULTI_RECV,
	FI_SOURCE,	 FI_RMA_EVENT,	  FI_SHARED_AV,	    FI_TRIGGER,
	FI_FENCE,	 FI_LOCAL_COMM,	  FI_REMOTE_COMM,   FI_SOURCE_ERR,
	FI_RMA_PMEM,	 FI_VARIABLE_MSG,
};

#define GI_NCAPS (sizeof(gi_caps) / sizeof(gi_caps[0]))

/* The orders that need a max_order size, by the size they need. */
#define GI_RAW (FI_ORDER_RAW | FI_ORDER_RMA_RAW | FI_ORDER_ATOMIC_RAW)
#define GI_WAR (FI_ORDER_WAR | FI_ORDER_RMA_WAR | FI_ORDER_ATOMIC_WAR)
#define GI_WAW (FI_ORDER_WAW | FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_WAW)

/* Capability bits by name (cf_flags_str names operation flags). */
static const char *gi_caps_str(uint64_t caps)
{
	static __thread char buf[512];

	return fi_tostr_r(buf, sizeof(buf), &caps, FI_TYPE_CAPS);
}

static struct fi_info *gi_hints(const char *name)
{
	struct fi_info *h = fi_allocinfo();

	cf_assert(h, "fi_allocinfo failed");
	h->fabric_attr->prov_name = strdup(name);
	h->mode = ~0ULL;
	h->domain_attr->mr_mode = GI_MR_MODES;
	return h;
}

static const char *gi_what(const struct fi_info *fi, char *buf, size_t len)
{
	char t[64];

	snprintf(buf, len, "%s %s %s/%s",
		 fi->fabric_attr && fi->fabric_attr->prov_name ?
			 fi->fabric_attr->prov_name :
			 "?",
		 fi->ep_attr ? fi_tostr_r(t, sizeof(t), &fi->ep_attr->type,
					  FI_TYPE_EP_TYPE) :
			       "?",
		 fi->fabric_attr && fi->fabric_attr->name ?
			 fi->fabric_attr->name :
			 "?",
		 fi->domain_attr && fi->domain_attr->name ?
			 fi->domain_attr->name :
			 "?");
	return buf;
}

static void gi_check_addr(const char *w, uint32_t fmt, const void *addr,
			  size_t len, const char *which)
{
	if (!len) {
		cf_expect(!addr, "%s: %s address without a length", w, which);
		return;
	}
	cf_expect(addr, "%s: %s addrlen %zu without an address", w, which,
		  len);
	if (!addr)
		return;
	switch (fmt) {
	case FI_SOCKADDR_IN:
		cf_expect(len == sizeof(struct sockaddr_in) &&
				  ((const struct sockaddr *)addr)->sa_family ==
					  AF_INET,
			  "%s: %s address of %zu bytes for FI_SOCKADDR_IN", w,
			  which, len);
		break;
	case FI_SOCKADDR_IN6:
		cf_expect(len == sizeof(struct sockaddr_in6) &&
				  ((const struct sockaddr *)addr)->sa_family ==
					  AF_INET6,
			  "%s: %s address of %zu bytes for FI_SOCKADDR_IN6", w,
			  which, len);
		break;
	case FI_ADDR_STR:
		cf_expect(strnlen(addr, len) < len &&
				  strlen(addr) + 1 == len,
			  "%s: %s FI_ADDR_STR of length %zu is not one string",
			  w, which, len);
		break;
	default:
		break;
	}
}

/* The rules every single entry keeps, whatever the hints were. */
static void gi_check_entry(const struct fi_info *fi, uint32_t version)
{
	const struct fi_tx_attr *tx = fi->tx_attr;
	const struct fi_rx_attr *rx = fi->rx_attr;
	const struct fi_ep_attr *ep = fi->ep_attr;
	const struct fi_domain_attr *d = fi->domain_attr;
	uint64_t order;
	char w[160];

	gi_what(fi, w, sizeof(w));
	cf_assert(tx && rx && ep && d && fi->fabric_attr,
		  "%s: an attribute structure is missing", w);
	cf_expect(fi->fabric_attr->prov_name && fi->fabric_attr->name &&
			  d->name,
		  "%s: provider, fabric or domain without a name", w);
	cf_expect(fi->fabric_attr->api_version == version,
		  "%s: api_version %u.%u, asked %u.%u", w,
		  FI_MAJOR(fi->fabric_attr->api_version),
		  FI_MINOR(fi->fabric_attr->api_version), FI_MAJOR(version),
		  FI_MINOR(version));

	/* fi_endpoint(3): a context's caps are a subset of the endpoint's. */
	cf_expect(!(tx->caps & ~fi->caps), "%s: tx caps %s not in info caps",
		  w, gi_caps_str(tx->caps & ~fi->caps));
	cf_expect(!(rx->caps & ~fi->caps), "%s: rx caps %s not in info caps",
		  w, gi_caps_str(rx->caps & ~fi->caps));
	cf_expect(!(d->caps & ~fi->caps) ||
			  !(d->caps & ~(FI_LOCAL_COMM | FI_REMOTE_COMM |
					FI_SHARED_AV)),
		  "%s: domain caps %s not in info caps", w,
		  gi_caps_str(d->caps & ~fi->caps));

	/* An order is promised up to its size: a bit with size 0 promises
	 * nothing (upstream's getinfo_test checks the same). */
	order = tx->msg_order | rx->msg_order;
	cf_expect(!(order & GI_RAW) || ep->max_order_raw_size,
		  "%s: claims read-after-write order with max_order_raw_size "
		  "0",
		  w);
	cf_expect(!(order & GI_WAR) || ep->max_order_war_size,
		  "%s: claims write-after-read order with max_order_war_size "
		  "0",
		  w);
	cf_expect(!(order & GI_WAW) || ep->max_order_waw_size,
		  "%s: claims write-after-write order with max_order_waw_size "
		  "0",
		  w);

	/* Values inside their enums and ranges. */
	cf_expect(ep->type == FI_EP_MSG || ep->type == FI_EP_RDM ||
			  ep->type == FI_EP_DGRAM,
		  "%s: endpoint type %d", w, (int)ep->type);
	cf_expect(ep->protocol != FI_PROTO_UNSPEC, "%s: no protocol", w);
	cf_expect(d->threading >= FI_THREAD_SAFE &&
			  d->threading <= FI_THREAD_DOMAIN,
		  "%s: threading %d", w, (int)d->threading);
	cf_expect(d->control_progress == FI_PROGRESS_AUTO ||
			  d->control_progress == FI_PROGRESS_MANUAL,
		  "%s: control progress %d", w, (int)d->control_progress);
	cf_expect(d->data_progress == FI_PROGRESS_AUTO ||
			  d->data_progress == FI_PROGRESS_MANUAL,
		  "%s: data progress %d", w, (int)d->data_progress);
	cf_expect(d->resource_mgmt == FI_RM_ENABLED ||
			  d->resource_mgmt == FI_RM_DISABLED,
		  "%s: resource_mgmt %d", w, (int)d->resource_mgmt);
	cf_expect((unsigned int)d->av_type <= FI_AV_TABLE, "%s: av_type %d", w,
		  (int)d->av_type);
	cf_expect(d->mr_key_size <= 8 && d->cq_data_size <= 8,
		  "%s: mr_key_size %zu, cq_data_size %zu", w, d->mr_key_size,
		  d->cq_data_size);
	cf_expect(ep->max_msg_size > 0, "%s: max_msg_size 0", w);
	cf_expect(tx->size > 0 && rx->size > 0, "%s: tx size %zu, rx size %zu",
		  w, tx->size, rx->size);
	cf_expect(tx->iov_limit > 0 && rx->iov_limit > 0,
		  "%s: tx iov_limit %zu, rx iov_limit %zu", w, tx->iov_limit,
		  rx->iov_limit);
	cf_expect(tx->inject_size <= ep->max_msg_size,
		  "%s: inject_size %zu above max_msg_size %zu", w,
		  tx->inject_size, ep->max_msg_size);
	cf_expect(!(fi->caps & (FI_RMA | FI_ATOMIC)) || tx->rma_iov_limit > 0,
		  "%s: RMA with rma_iov_limit 0", w);
	cf_expect(ep->tx_ctx_cnt >= 1 && ep->rx_ctx_cnt >= 1 &&
			  ep->tx_ctx_cnt <= d->max_ep_tx_ctx &&
			  ep->rx_ctx_cnt <= d->max_ep_rx_ctx,
		  "%s: tx_ctx_cnt %zu rx_ctx_cnt %zu against max_ep %zu/%zu", w,
		  ep->tx_ctx_cnt, ep->rx_ctx_cnt, d->max_ep_tx_ctx,
		  d->max_ep_rx_ctx);
	cf_expect((fi->caps & FI_TAGGED) == 0 || ep->mem_tag_format,
		  "%s: FI_TAGGED with no mem_tag_format", w);
	/* (FI_DIRECTED_RECV on a connected endpoint is allowed:
	 * fi_getinfo(3) does not forbid it, and 1.17's sockets offers it;
	 * cm_source checks what it means there.) */

	/* Addresses of the length their format says; never the generic
	 * FI_SOCKADDR in an answer. */
	cf_expect(fi->addr_format != FI_FORMAT_UNSPEC &&
			  fi->addr_format != FI_SOCKADDR,
		  "%s: addr_format %u in an answer", w, fi->addr_format);
	gi_check_addr(w, fi->addr_format, fi->src_addr, fi->src_addrlen,
		      "source");
	gi_check_addr(w, fi->addr_format, fi->dest_addr, fi->dest_addrlen,
		      "destination");
}

/*
 * The entry as hints finds an entry again, of the same provider, type and
 * domain, and a domain and endpoint open with it.
 */
static void gi_round_trip(const struct fi_info *fi, uint32_t version,
			  bool open_ep)
{
	struct fi_info *h, *got = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	char w[160];
	int ret;

	gi_what(fi, w, sizeof(w));
	h = fi_dupinfo(fi);
	cf_assert(h, "fi_dupinfo failed");
	/* Addresses were resolved from node/service: as hints they would
	 * ask for that address again, which is fine, so keep them. */
	ret = fi_getinfo(version, NULL, NULL, 0, h, &got);
	cf_expect(!ret && got, "%s: passed back as hints: fi_getinfo %d (%s)",
		  w, ret, fi_strerror(-ret));
	if (!ret && got) {
		const struct fi_info *g;
		bool same = false;

		for (g = got; g && !same; g = g->next)
			same = g->ep_attr->type == fi->ep_attr->type &&
			       !strcmp(g->fabric_attr->prov_name,
				       fi->fabric_attr->prov_name) &&
			       !strcmp(g->domain_attr->name,
				       fi->domain_attr->name) &&
			       g->addr_format == fi->addr_format;
		cf_expect(same, "%s: passed back as hints, it is not among "
				"the answers",
			  w);
	}
	fi_freeinfo(got);
	fi_freeinfo(h);
	if (!open_ep)
		return;

	cf_mark("fi_fabric");
	ret = fi_fabric(fi->fabric_attr, &fabric, NULL);
	cf_expect(!ret, "%s: fi_fabric %d (%s)", w, ret, fi_strerror(-ret));
	if (ret)
		return;
	cf_mark("fi_domain");
	ret = fi_domain(fabric, (struct fi_info *)fi, &domain, NULL);
	cf_expect(!ret, "%s: fi_domain %d (%s)", w, ret, fi_strerror(-ret));
	if (!ret) {
		cf_mark("fi_endpoint");
		ret = fi_endpoint(domain, (struct fi_info *)fi, &ep, NULL);
		cf_expect(!ret, "%s: fi_endpoint %d (%s)", w, ret,
			  fi_strerror(-ret));
		if (!ret)
			fi_close(&ep->fid);
		fi_close(&domain->fid);
	}
	fi_close(&fabric->fid);
}

/* The names to check: the provider's, and its layered RDM name if it
 * answers to one (a listing that names no provider lists it once). */
static int gi_names(const char *prov, char names[2][64])
{
	struct fi_info *h, *got = NULL;
	int n = 0;

	snprintf(names[n++], 64, "%s", prov);
	if (strchr(prov, ';'))
		return n;
	snprintf(names[n], 64, "%s;ofi_rxm", prov);
	h = gi_hints(names[n]);
	if (!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &got) && got)
		n++;
	fi_freeinfo(got);
	fi_freeinfo(h);
	return n;
}

static void gi_name(const char *name)
{
	const uint32_t version = FI_VERSION(1, 17);
	struct fi_info *h, *all = NULL, *got, *fi;
	size_t i, n = 0;
	char w[160];
	int ret;

	h = gi_hints(name);
	ret = fi_getinfo(version, NULL, NULL, 0, h, &all);
	fi_freeinfo(h);
	if (ret == -FI_ENODATA)
		cf_skip("%s: no entry at all", name);
	cf_assert(!ret, "%s: fi_getinfo %d (%s)", name, ret,
		  fi_strerror(-ret));
	for (fi = all; fi; fi = fi->next, n++) {
		cf_expect(!strcmp(fi->fabric_attr->prov_name, name),
			  "%s: an entry comes back named %s", name,
			  fi->fabric_attr->prov_name);
		gi_check_entry(fi, version);
		/* Open the first entry of each type and domain only: a
		 * verbs device has many. */
		gi_round_trip(fi, version, n < 8);
	}
	cf_note("%s: %zu entries", name, n);

	/* NULL hints (fi_info with no options): the entries as listed,
	 * narrowed by nothing. */
	got = NULL;
	ret = fi_getinfo(version, NULL, NULL, 0, NULL, &got);
	cf_expect(!ret, "NULL hints: fi_getinfo %d (%s)", ret,
		  fi_strerror(-ret));
	for (fi = got; fi; fi = fi->next)
		if (fi->fabric_attr && fi->fabric_attr->prov_name &&
		    !strcmp(fi->fabric_attr->prov_name, name))
			gi_check_entry(fi, version);
	fi_freeinfo(got);

	/* Each capability as the only hint: answers have it; an entry of
	 * the full listing that has it means there must be an answer. */
	for (i = 0; i < GI_NCAPS; i++) {
		bool offered = false;

		for (fi = all; fi && !offered; fi = fi->next)
			offered = (fi->caps & gi_caps[i]) == gi_caps[i];
		h = gi_hints(name);
		h->caps = gi_caps[i];
		got = NULL;
		ret = fi_getinfo(version, NULL, NULL, 0, h, &got);
		fi_freeinfo(h);
		cf_expect(!offered || (!ret && got),
			  "%s: hint caps %s: fi_getinfo %d, though an entry "
			  "offers it",
			  name, gi_caps_str(gi_caps[i]), ret);
		cf_expect(offered || ret == -FI_ENODATA,
			  "%s: hint caps %s: answered %d, though no entry "
			  "offers it",
			  name, gi_caps_str(gi_caps[i]), ret);
		for (fi = got; fi; fi = fi->next) {
			gi_what(fi, w, sizeof(w));
			cf_expect((fi->caps & gi_caps[i]) == gi_caps[i],
				  "%s: hint caps %s: answer lacks it", w,
				  gi_caps_str(gi_caps[i]));
			/* Narrowed to the hint, the sides still fit. */
			cf_expect(!(fi->tx_attr->caps & ~fi->caps) &&
					  !(fi->rx_attr->caps & ~fi->caps),
				  "%s: hint caps %s: tx or rx caps not in the "
				  "answer's caps",
				  w, gi_caps_str(gi_caps[i]));
		}
		fi_freeinfo(got);
	}
	fi_freeinfo(all);
}

/*
 * Whether a listing that names no provider holds entries named `name`
 * (and, when `type` is set, of that endpoint type under the provider's
 * own name).
 */
static bool gi_listed(const char *name, enum fi_ep_type type)
{
	struct fi_info *all = NULL, *fi;
	bool found = false;

	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &all))
		return false;
	for (fi = all; fi && !found; fi = fi->next)
		found = fi->fabric_attr && fi->fabric_attr->prov_name &&
			!strcmp(fi->fabric_attr->prov_name, name) &&
			(type == FI_EP_UNSPEC || fi->ep_attr->type == type);
	fi_freeinfo(all);
	return found;
}

static int case_getinfo_contract(const char *prov)
{
	char names[2][64];
	int i, n = gi_names(prov, names);

	for (i = 0; i < n; i++)
		gi_name(names[i]);
	/*
	 * As in 1.17, a listing that names no provider has the layered RDM
	 * name of each provider with MSG endpoints (Open MPI's include
	 * lists pick "tcp;ofi_rxm" or "verbs;ofi_rxm" from it), unless
	 * FI_PROVIDER narrows it.
	 */
	if (n == 2 && !getenv("FI_PROVIDER") && gi_listed(prov, FI_EP_MSG))
		cf_expect(gi_listed(names[1], FI_EP_UNSPEC),
			  "a listing naming no provider has no %s entries",
			  names[1]);
	return 0;
}

/*
 * The hints clients of 1.17 pass that name an order or a socket address
 * generically, or a source address: what the entries claim, asked back, is
 * answered, and a source address picks the domain that has it.
 */
static int case_getinfo_hints(const char *prov)
{
	const uint32_t version = FI_VERSION(1, 17);
	struct fi_info *h, *all = NULL, *got, *fi, *g;
	bool sock = false;
	int ret;

	h = gi_hints(prov);
	ret = fi_getinfo(version, NULL, NULL, 0, h, &all);
	fi_freeinfo(h);
	if (ret)
		cf_skip("fi_getinfo %d", ret);
	for (fi = all; fi; fi = fi->next) {
		char w[160];

		gi_what(fi, w, sizeof(w));
		sock |= fi->addr_format == FI_SOCKADDR_IN ||
			fi->addr_format == FI_SOCKADDR_IN6;
		/* The entry's own orders, asked for, are met. */
		h = gi_hints(prov);
		h->ep_attr->type = fi->ep_attr->type;
		h->tx_attr->msg_order = fi->tx_attr->msg_order;
		h->rx_attr->msg_order = fi->rx_attr->msg_order;
		got = NULL;
		ret = fi_getinfo(version, NULL, NULL, 0, h, &got);
		cf_expect(!ret && got, "%s: its own msg_order %s as hints: %d",
			  w,
			  fi_tostr(&fi->tx_attr->msg_order, FI_TYPE_MSG_ORDER),
			  ret);
		fi_freeinfo(got);
		fi_freeinfo(h);
		/* Its source address as the hint's names its domain: every
		 * answer is of that domain (Mercury picks a device by it). */
		if (!fi->src_addr || (fi->addr_format != FI_SOCKADDR_IN &&
				      fi->addr_format != FI_SOCKADDR_IN6))
			continue;
		h = gi_hints(prov);
		h->addr_format = fi->addr_format;
		h->src_addr = malloc(fi->src_addrlen);
		memcpy(h->src_addr, fi->src_addr, fi->src_addrlen);
		h->src_addrlen = fi->src_addrlen;
		got = NULL;
		ret = fi_getinfo(version, NULL, NULL, 0, h, &got);
		cf_expect(!ret && got, "%s: its own src_addr as hints: %d", w,
			  ret);
		for (g = got; g; g = g->next)
			cf_expect(!strcmp(g->domain_attr->name,
					  fi->domain_attr->name),
				  "%s: its src_addr as hints answered by "
				  "domain %s",
				  w, g->domain_attr->name);
		fi_freeinfo(got);
		fi_freeinfo(h);
	}
	/* FI_SOCKADDR: any socket address (1.17 answers with _IN/_IN6). */
	h = gi_hints(prov);
	h->addr_format = FI_SOCKADDR;
	got = NULL;
	ret = fi_getinfo(version, NULL, NULL, 0, h, &got);
	fi_freeinfo(h);
	cf_expect(!sock || (!ret && got),
		  "hints FI_SOCKADDR: fi_getinfo %d though entries have "
		  "socket addresses",
		  ret);
	cf_expect(sock || ret == -FI_ENODATA,
		  "hints FI_SOCKADDR: answered %d without socket addresses",
		  ret);
	for (fi = got; fi; fi = fi->next)
		cf_expect(fi->addr_format == FI_SOCKADDR_IN ||
				  fi->addr_format == FI_SOCKADDR_IN6,
			  "hints FI_SOCKADDR: answer with addr_format %u",
			  fi->addr_format);
	fi_freeinfo(got);
	fi_freeinfo(all);
	return 0;
}

const struct cf_case cf_cases_getinfo[] = {
    {"getinfo_contract",
     "every entry, with no hints and each single-cap hint: fi_getinfo(3)'s "
     "rules; each entry found again as hints and opened",
     case_getinfo_contract},
    {"getinfo_hints",
     "an entry's own msg_order, and FI_SOCKADDR, asked for are answered",
     case_getinfo_hints},
    {NULL},
};
