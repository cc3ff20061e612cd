/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The core: the registry of compiled-in providers, fi_getinfo, fi_fabric,
 * fi_version and fi_open.
 */
#include "weft/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "weft/compat.h"
#include "weft/hook.h"
#include "weft/stubs.h"

/* ---- registry ------------------------------------------------------------ */

/*
 * The linker gathers every WEFT_PROVIDER() pointer into one section and
 * defines these bounds.  The weak definitions keep a build with no provider
 * linking: the section, and so the symbols, then do not exist.
 */
extern const struct fi_provider *const __start_weft_providers[]
	__attribute__((weak));
extern const struct fi_provider *const __stop_weft_providers[]
	__attribute__((weak));

const struct fi_provider *weft_prov_at(size_t i)
{
	size_t n;

	if (!__start_weft_providers || !__stop_weft_providers)
		return NULL;
	n = (size_t)(__stop_weft_providers - __start_weft_providers);
	return i < n ? __start_weft_providers[i] : NULL;
}

struct fi_provider weft_core_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "core",
};

/*
 * The layered names of libfabric 1.17 that a native provider answers to: a
 * client asking for "tcp;ofi_rxm" gets weft's tcp provider, whose RDM
 * endpoint is native.  Under such a name the entries look as 1.17's utility
 * provider makes them: RDM only, its protocol.
 */
static const struct {
	const char *suffix;
	struct weft_name_look look;
} layered_names[] = {
	{ "ofi_rxm", { FI_EP_RDM, FI_PROTO_RXM, 1 } },
	{ "ofi_rxd", { FI_EP_RDM, FI_PROTO_RXD, 1 } },
};

/*
 * Provider names of libfabric 1.17 that weft has no provider of its own for,
 * each answered by the providers that do the same jobs.  "sockets" (still
 * the default of some client setups) is served by tcp for RDM and MSG and
 * by udp for DGRAM, as 1.17's sockets offered all three: their entries come
 * back named "sockets" and say the protocol 1.17's sockets says, as
 * "tcp;ofi_rxm" comes back under that name.  One row per provider an alias
 * names; the rows of one alias have one look.  This table is the only
 * place an alias is known; fi_getinfo, fi_fabric, FI_PROVIDER and
 * FI_PROV_ATTR_ONLY listings all go through it.
 */
#define EP_TYPE_BIT(t) ((uint32_t)1 << (t))

static const struct {
	const char *alias;
	const char *prov;
	uint32_t types; /* EP_TYPE_BIT of the endpoint types it serves */
	struct weft_name_look look;
} prov_aliases[] = {
	{ "sockets", "tcp", EP_TYPE_BIT(FI_EP_MSG) | EP_TYPE_BIT(FI_EP_RDM),
	  { FI_EP_UNSPEC, FI_PROTO_SOCK_TCP, 2 } },
	{ "sockets", "udp", EP_TYPE_BIT(FI_EP_DGRAM),
	  { FI_EP_UNSPEC, FI_PROTO_SOCK_TCP, 2 } },
};

/*
 * The names other than a provider's own that 1.17 lists when no provider
 * is asked for: its utility provider over each core provider with MSG
 * endpoints, and the aliases (listed_name).
 */
static const char *const listed_layered[] = { "tcp;ofi_rxm", "verbs;ofi_rxm",
					       "udp;ofi_rxd" };

/* Whether `name` (len bytes) is an alias, of whichever provider. */
static bool is_alias(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(prov_aliases); i++)
		if (strlen(prov_aliases[i].alias) == len &&
		    !strncasecmp(name, prov_aliases[i].alias, len))
			return true;
	return false;
}

/* Whether the alias `name` (len bytes) is answered by the provider named
 * prov_name: "sockets" by "tcp" and "udp". */
static bool alias_of(const char *name, size_t len, const char *prov_name)
{
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(prov_aliases); i++)
		if (strlen(prov_aliases[i].alias) == len &&
		    !strncasecmp(name, prov_aliases[i].alias, len) &&
		    !strcasecmp(prov_name, prov_aliases[i].prov))
			return true;
	return false;
}

/* The alias a provider answers to, or NULL. */
static const char *prov_alias(const struct fi_provider *prov)
{
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(prov_aliases); i++)
		if (!strcasecmp(prov->name, prov_aliases[i].prov))
			return prov_aliases[i].alias;
	return NULL;
}

/*
 * Whether `prov` is the first built provider that answers to its alias:
 * a listing by name shows the alias once, after that one.
 */
static bool alias_first(const struct fi_provider *prov, const char *alias)
{
	const struct fi_provider *p;
	size_t i;

	for (i = 0; (p = weft_prov_at(i)) && p != prov; i++)
		if (alias_of(alias, strlen(alias), p->name))
			return false;
	return true;
}

/* The layered name's entry for what follows "core;", or -1. */
static int layered_index(const char *rest)
{
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(layered_names); i++)
		if (!strcasecmp(rest, layered_names[i].suffix))
			return (int)i;
	return -1;
}

bool weft_prov_name_matches(const struct fi_provider *prov, const char *asked)
{
	size_t len = strlen(prov->name);
	const char *rest;

	if (!asked)
		return true;
	if (is_alias(asked, strlen(asked)))
		return alias_of(asked, strlen(asked), prov->name);
	if (strncasecmp(asked, prov->name, len))
		return false;
	rest = asked + len;
	if (*rest == '\0')
		return true;
	return *rest == ';' && layered_index(rest + 1) >= 0;
}

bool weft_name_look(const char *name, struct weft_name_look *look)
{
	const char *semi;
	size_t i;
	int k;

	if (!name)
		return false;
	for (i = 0; i < WEFT_ARRAY_SIZE(prov_aliases); i++)
		if (!strcasecmp(name, prov_aliases[i].alias)) {
			*look = prov_aliases[i].look;
			return true;
		}
	semi = strchr(name, ';');
	if (!semi || (k = layered_index(semi + 1)) < 0)
		return false;
	*look = layered_names[k].look;
	return true;
}

/*
 * Providers a caller may ask for by name that this build leaves out, with
 * the reason configure found.
 */
static const struct {
	const char *name;
	const char *why;
} missing_provs[] = {
#ifdef WEFT_MISSING_VERBS
	{ "verbs", WEFT_MISSING_VERBS },
#endif
#ifdef WEFT_MISSING_TCP
	{ "tcp", WEFT_MISSING_TCP },
#endif
	{ NULL, NULL } /* the list may otherwise be empty */
};

/*
 * The reason `asked` (maybe layered, "tcp;ofi_rxm") is not built, or NULL.
 * An alias is missing when every provider that answers to it is: the
 * reason is the first one's.
 */
static const char *missing_reason(const char *asked)
{
	size_t i, len = strcspn(asked, ";");
	bool alias = is_alias(asked, len);

	for (i = 0; missing_provs[i].name; i++)
		if (alias ? alias_of(asked, len, missing_provs[i].name) :
			    strlen(missing_provs[i].name) == len &&
				    !strncasecmp(asked, missing_provs[i].name,
						 len))
			return missing_provs[i].why;
	return NULL;
}

/* ---- FI_PROVIDER --------------------------------------------------------- */

/*
 * FI_PROVIDER is a comma-separated list of provider names; a leading '^'
 * turns it into a list of names to exclude.  Names may be layered
 * ("tcp;ofi_rxm"); the core provider name is what counts.
 */
static bool env_list_has(const char *list, const char *name)
{
	size_t nlen = strlen(name);
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *semi = memchr(p, ';', len);
		size_t core_len = semi ? (size_t)(semi - p) : len;

		if (core_len == nlen && !strncasecmp(p, name, nlen))
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

static bool env_allows(const char *env, const char *name)
{
	if (!env || !*env)
		return true;
	if (*env == '^')
		return !env_list_has(env + 1, name);
	return env_list_has(env, name);
}

/* Whether the FI_PROVIDER list holds exactly `name`. */
static bool env_list_exact(const char *list, const char *name)
{
	size_t nlen = strlen(name);
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == nlen && !strncasecmp(p, name, nlen))
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

/*
 * The layered name of `prov` that FI_PROVIDER lists, when it lists that
 * and not the provider's own name ("FI_PROVIDER=tcp;ofi_rxm": 1.17 then
 * answers under that name only), or NULL.
 */
static const char *env_layered(const char *env, const struct fi_provider *prov)
{
	size_t i, len = strlen(prov->name);

	if (!env || !*env || *env == '^' || env_list_exact(env, prov->name))
		return NULL;
	for (i = 0; i < WEFT_ARRAY_SIZE(listed_layered); i++)
		if (!strncasecmp(listed_layered[i], prov->name, len) &&
		    listed_layered[i][len] == ';' &&
		    env_list_exact(env, listed_layered[i]))
			return listed_layered[i];
	return NULL;
}

/*
 * The name `prov` answers to in this request, or NULL when FI_PROVIDER or
 * the hints leave it out.  Asked by name (maybe layered or an alias), it is
 * the name asked, which FI_PROVIDER must allow; otherwise its own name, or
 * its alias when FI_PROVIDER lists only that ("FI_PROVIDER=sockets").
 */
static const char *prov_selected(const struct fi_provider *prov,
				 const char *asked)
{
	const char *env = getenv("FI_PROVIDER");
	const char *alias = prov_alias(prov), *layered;

	if (asked) {
		if (!weft_prov_name_matches(prov, asked))
			return NULL;
		if (is_alias(asked, strlen(asked)))
			return env_allows(env, alias) ? asked : NULL;
		return env_allows(env, prov->name) ? asked : NULL;
	}
	layered = env_layered(env, prov);
	if (layered)
		return layered;
	if (env_allows(env, prov->name))
		return prov->name;
	if (alias && env && *env && *env != '^' && env_list_has(env, alias))
		return alias;
	return NULL;
}

/*
 * The k-th name besides its own under which `prov` is listed when no
 * provider is asked for and FI_PROVIDER allows it, or NULL past the last.
 */
static const char *listed_name(const struct fi_provider *prov, size_t k)
{
	const char *env = getenv("FI_PROVIDER");
	size_t i, len = strlen(prov->name);

	for (i = 0; i < WEFT_ARRAY_SIZE(listed_layered); i++)
		if (!strncasecmp(listed_layered[i], prov->name, len) &&
		    listed_layered[i][len] == ';' && !k--)
			return listed_layered[i];
	for (i = 0; i < WEFT_ARRAY_SIZE(prov_aliases); i++)
		if (!strcasecmp(prov->name, prov_aliases[i].prov) &&
		    env_allows(env, prov_aliases[i].alias) && !k--)
			return prov_aliases[i].alias;
	return NULL;
}

/* ---- explanations -------------------------------------------------------- */

void weft_explain(const struct fi_provider *prov, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!fi_log_enabled(prov, FI_LOG_WARN, FI_LOG_CORE))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fi_log(prov, FI_LOG_WARN, FI_LOG_CORE, __func__, __LINE__, "%s: %s\n",
	       prov->name, msg);
}

/* ---- fi_getinfo ---------------------------------------------------------- */

static int prov_attr_only(uint32_t prov_version, const char *name,
			  struct fi_info **tail)
{
	struct fi_info *info = weft_info_dup(NULL);

	if (!info)
		return -FI_ENOMEM;
	info->fabric_attr->prov_name = strdup(name);
	if (!info->fabric_attr->prov_name) {
		weft_info_free(info);
		return -FI_ENOMEM;
	}
	info->fabric_attr->prov_version = prov_version;
	*tail = info;
	return 0;
}

/* Whether `name` is a hook's, as the listing names it ("ofi_hook_perf"). */
static bool is_hook_name(const char *name)
{
	const char *h;
	size_t i;

	if (strncasecmp(name, "ofi_hook_", 9))
		return false;
	for (i = 0; (h = weft_hook_name_at(i)); i++)
		if (!strcasecmp(name + 9, h))
			return true;
	return false;
}

/*
 * The hooks in a FI_PROV_ATTR_ONLY listing, after the providers, named as
 * 1.17 names its own ("ofi_hook_perf"): all of them when no provider was
 * asked for, else the one asked for.  FI_PROVIDER does not apply: FI_HOOK
 * wraps whichever provider is picked.
 */
static int hooks_attr_only(const char *asked, struct fi_info ***tail,
			   size_t *tried)
{
	char name[64];
	const char *h;
	size_t i;
	int ret;

	for (i = 0; (h = weft_hook_name_at(i)); i++) {
		snprintf(name, sizeof(name), "ofi_hook_%s", h);
		if (asked && strcasecmp(asked, name))
			continue;
		(*tried)++;
		ret = prov_attr_only(WEFT_PROV_VERSION, name, *tail);
		if (ret)
			return ret;
		*tail = &(**tail)->next;
	}
	return 0;
}

/* Stamp the provider identity the caller expects on each returned entry. */
static int label_infos(struct fi_info *list, const struct fi_provider *prov,
		       const char *asked, uint32_t version)
{
	struct fi_info *cur;

	for (cur = list; cur; cur = cur->next) {
		if (!cur->fabric_attr)
			continue;
		if (asked && (!cur->fabric_attr->prov_name ||
			      strcasecmp(cur->fabric_attr->prov_name, asked))) {
			char *name = strdup(asked);

			if (!name)
				return -FI_ENOMEM;
			free(cur->fabric_attr->prov_name);
			cur->fabric_attr->prov_name = name;
		} else if (!cur->fabric_attr->prov_name) {
			cur->fabric_attr->prov_name = strdup(prov->name);
			if (!cur->fabric_attr->prov_name)
				return -FI_ENOMEM;
		}
		cur->fabric_attr->prov_version = prov->version;
		cur->fabric_attr->api_version = version;
	}
	return 0;
}

/*
 * The hints a provider sees when asked under a name with a look: the type
 * and protocol the name stands for are the name's, not the provider's.
 * Fills *h and *ep (h->ep_attr points at ep).  Returns 0, or -FI_ENODATA
 * having explained why when the hints ask what the name does not offer.
 */
static int look_hints(const struct fi_provider *prov, const char *name,
		      const struct weft_name_look *look,
		      const struct fi_info *hints, struct fi_info *h,
		      struct fi_ep_attr *ep)
{
	char b1[64], b2[64];

	*h = *hints;
	if (hints->ep_attr)
		*ep = *hints->ep_attr;
	else
		memset(ep, 0, sizeof(*ep));
	h->ep_attr = ep;
	if (look->type != FI_EP_UNSPEC) {
		if (ep->type != FI_EP_UNSPEC && ep->type != look->type) {
			weft_explain(prov, "%s offers only %s endpoints", name,
				     fi_tostr_r(b1, sizeof(b1), &look->type,
						FI_TYPE_EP_TYPE));
			return -FI_ENODATA;
		}
		ep->type = look->type;
	}
	if (look->protocol == FI_PROTO_UNSPEC)
		return 0;
	if (ep->protocol != FI_PROTO_UNSPEC && ep->protocol != look->protocol) {
		weft_explain(prov, "protocol %s is not supported by %s (offers %s)",
			     fi_tostr_r(b1, sizeof(b1), &ep->protocol,
					FI_TYPE_PROTOCOL),
			     name,
			     fi_tostr_r(b2, sizeof(b2), &look->protocol,
					FI_TYPE_PROTOCOL));
		return -FI_ENODATA;
	}
	if (ep->protocol_version > look->protocol_version) {
		weft_explain(prov,
			     "protocol version %u is newer than the %u of %s",
			     ep->protocol_version, look->protocol_version,
			     name);
		return -FI_ENODATA;
	}
	ep->protocol = FI_PROTO_UNSPEC;
	ep->protocol_version = 0;
	return 0;
}

/* Make a provider's answers look as they do under the name asked. */
static void look_answers(struct fi_info **list,
			 const struct weft_name_look *look)
{
	struct fi_info *cur;

	while ((cur = *list)) {
		if (look->type != FI_EP_UNSPEC && cur->ep_attr &&
		    cur->ep_attr->type != look->type) {
			*list = cur->next;
			cur->next = NULL;
			weft_info_free_list(cur);
			continue;
		}
		if (look->protocol != FI_PROTO_UNSPEC && cur->ep_attr) {
			cur->ep_attr->protocol = look->protocol;
			cur->ep_attr->protocol_version = look->protocol_version;
		}
		list = &cur->next;
	}
}

/*
 * One provider's entries under one name it answers to, appended at *tail.
 * Returns 0 (with or without entries), or -FI_ENOMEM.
 */
static int getinfo_named(const struct fi_provider *prov, const char *name,
			 uint32_t version, const char *node,
			 const char *service, uint64_t flags,
			 const struct fi_info *hints, struct fi_info ***tail)
{
	struct fi_info *list = NULL, looked, none = { 0 };
	struct fi_ep_attr looked_ep;
	struct fi_fabric_attr looked_fabric = { 0 };
	struct weft_name_look look;
	bool looks = weft_name_look(name, &look);
	int ret;

	/* The provider sees the name it is asked under (hints' prov_name):
	 * one that answers to an alias may offer other entries there (udp's
	 * datagrams under "sockets"). */
	if (looks) {
		if (look_hints(prov, name, &look, hints ? hints : &none,
			       &looked, &looked_ep))
			return 0;
		if (hints && hints->fabric_attr)
			looked_fabric = *hints->fabric_attr;
		looked_fabric.prov_name = (char *)name;
		looked.fabric_attr = &looked_fabric;
	}
	ret = prov->getinfo(version, node, service, flags,
			    looks ? &looked : hints, &list);
	if (!ret && looks)
		look_answers(&list, &look);
	if (ret == -FI_ENODATA || (!ret && !list))
		return 0;
	if (ret) {
		FI_WARN(&weft_core_prov, FI_LOG_CORE,
			"%s: fi_getinfo failed: %s\n", prov->name,
			fi_strerror(-ret));
		return 0;
	}
	ret = label_infos(list, prov, name, version);
	**tail = list;
	while (**tail)
		*tail = &(**tail)->next;
	return ret;
}

/*
 * What an API version changed in the hints' meaning.  weft's providers
 * speak 1.x; a caller of a later version is translated on the way in and
 * out, so every provider serves every version the same way.
 */
struct api_view {
	struct weft_info_copy c;
	uint64_t caps2;	   /* 2.x receive caps asked (bits 45, 46, 48) */
	uint64_t rx_caps2; /* the same, asked in rx_attr->caps */
	bool unified;	   /* control_progress WEFT_PROGRESS_CONTROL_UNIFIED */
};

#define API2_RECV_CAPS                                                         \
	(FI_TAGGED_DIRECTED_RECV | FI_TAGGED_MULTI_RECV | FI_EXACT_DIRECTED_RECV)

/* The 1.x caps a provider needs to grant 2.x receive caps. */
static uint64_t api2_base_caps(uint64_t caps2)
{
	uint64_t base = 0;

	if (caps2 & (FI_TAGGED_DIRECTED_RECV | FI_EXACT_DIRECTED_RECV))
		base |= FI_DIRECTED_RECV;
	if (caps2 & FI_TAGGED_MULTI_RECV)
		base |= FI_MULTI_RECV;
	if (caps2 & (FI_TAGGED_DIRECTED_RECV | FI_TAGGED_MULTI_RECV))
		base |= FI_TAGGED;
	return base;
}

/*
 * Set *out to the hints a 1.x provider reads: `hints` itself when the
 * version changed nothing in them, else v->c.info.  Returns 0 or
 * -FI_ENODATA (explained) for what the caller's version no longer has.
 */
static int api_hints(uint32_t version, const struct fi_info *hints,
		     struct api_view *v, const struct fi_info **out)
{
	const struct fi_domain_attr *d = hints->domain_attr;
	bool v2 = FI_VERSION_GE(version, FI_VERSION(2, 0));
	bool unified = FI_VERSION_GE(version, FI_VERSION(1, 21)) && d &&
		       d->control_progress == WEFT_PROGRESS_CONTROL_UNIFIED;
	uint64_t caps2 = v2 ? hints->caps & API2_RECV_CAPS : 0;
	uint64_t rx_caps2 = v2 && hints->rx_attr ?
				    hints->rx_attr->caps & API2_RECV_CAPS :
				    0;

	*out = hints;
	/* since 1.5 (and 1.20's FI_AV_AUTH_KEY): weft has none, as 1.17's
	 * providers refused a key size they did not have */
	if (FI_VERSION_GE(version, FI_VERSION(1, 5)) &&
	    ((d && d->auth_key_size) ||
	     (hints->ep_attr && hints->ep_attr->auth_key_size))) {
		weft_explain(&weft_core_prov,
			     "hints ask for an authorization key%s: weft has "
			     "none",
			     d && d->auth_key_size == FI_AV_AUTH_KEY ?
				     " per address (FI_AV_AUTH_KEY)" :
				     "");
		return -FI_ENODATA;
	}
	if (v2 && d && (d->mr_mode & (FI_MR_BASIC | FI_MR_SCALABLE))) {
		weft_explain(&weft_core_prov,
			     "mr_mode FI_MR_BASIC and FI_MR_SCALABLE are gone "
			     "from API %u.%u (since 2.0): ask for the mode bits "
			     "(FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY)",
			     FI_MAJOR(version), FI_MINOR(version));
		return -FI_ENODATA;
	}
	if (!caps2 && !rx_caps2 && !unified)
		return 0;

	weft_info_copy_shallow(&v->c, hints);
	v->caps2 = caps2;
	v->rx_caps2 = rx_caps2;
	v->unified = unified;
	v->c.info.caps =
		(v->c.info.caps & ~API2_RECV_CAPS) | api2_base_caps(caps2);
	if (hints->rx_attr)
		v->c.rx.caps = (v->c.rx.caps & ~API2_RECV_CAPS) |
			       api2_base_caps(rx_caps2);
	if (unified)
		v->c.domain.control_progress = FI_PROGRESS_UNSPEC;
	*out = &v->c.info;
	return 0;
}

/* Answer in the caller's terms what api_hints translated. */
static void api_answers(struct fi_info *list, const struct api_view *v)
{
	for (; list; list = list->next) {
		list->caps |= v->caps2 | v->rx_caps2;
		if (list->rx_attr)
			list->rx_attr->caps |= v->caps2 | v->rx_caps2;
		if (v->unified && list->domain_attr)
			list->domain_attr->control_progress =
				WEFT_PROGRESS_CONTROL_UNIFIED;
	}
}

int weft_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info)
{
	const char *asked = NULL, *listed;
	struct fi_info *head = NULL, **tail = &head;
	const struct fi_provider *prov;
	struct api_view view;
	const struct fi_info *given = hints;
	size_t i, k, tried = 0;
	int ret = 0;

	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	/*
	 * Any version up to ours, as libfabric accepts: MPICH passes 0
	 * ("no version required"); versions before 1.5 (0 included) get the
	 * 1.0-1.4 semantics, such as FI_MR_BASIC / FI_MR_SCALABLE.
	 */
	if (FI_VERSION_LT(WEFT_API_VERSION, version)) {
		FI_WARN(&weft_core_prov, FI_LOG_CORE,
			"API version %u.%u is not supported (this library "
			"implements up to %u.%u)\n",
			FI_MAJOR(version), FI_MINOR(version),
			FI_MAJOR(WEFT_API_VERSION), FI_MINOR(WEFT_API_VERSION));
		return -FI_ENOSYS;
	}
	if (hints) {
		ret = api_hints(version, given, &view, &hints);
		if (ret)
			return ret;
	}
	if ((flags & FI_SOURCE) && !node && !service) {
		FI_WARN(&weft_core_prov, FI_LOG_CORE,
			"FI_SOURCE needs a node or a service\n");
		return -FI_EINVAL;
	}
	if (hints && hints->fabric_attr && hints->fabric_attr->prov_name)
		asked = hints->fabric_attr->prov_name;

	for (i = 0; (prov = weft_prov_at(i)); i++) {
		const char *name = prov_selected(prov, asked);
		const char *alias = prov_alias(prov);

		if (!name)
			continue;
		tried++;
		if (flags & FI_PROV_ATTR_ONLY) {
			/* An alias asked for is listed once, for the first
			 * provider that answers to it. */
			if (asked && name == asked &&
			    is_alias(asked, strlen(asked)) &&
			    !alias_first(prov, asked))
				continue;
			ret = prov_attr_only(prov->version, name, tail);
			if (ret)
				goto err_free;
			tail = &(*tail)->next;
			/*
			 * A listing of every provider names the alias too,
			 * right after the provider that answers to it.
			 */
			if (!asked && alias && name == prov->name &&
			    alias_first(prov, alias) &&
			    env_allows(getenv("FI_PROVIDER"), alias)) {
				ret = prov_attr_only(prov->version, alias, tail);
				if (ret)
					goto err_free;
				tail = &(*tail)->next;
			}
			continue;
		}
		if (!prov->getinfo)
			continue;
		ret = getinfo_named(prov, name, version, node, service, flags,
				    hints, &tail);
		/*
		 * A listing that names no provider has entries under the
		 * names 1.17 lists too ("tcp;ofi_rxm", "sockets"): clients
		 * pick them by name from it (Open MPI's include lists).
		 */
		for (k = 0; !ret && !asked && name == prov->name &&
			    (listed = listed_name(prov, k));
		     k++)
			ret = getinfo_named(prov, listed, version, node,
					    service, flags, hints, &tail);
		if (ret)
			goto err_free;
	}

	if (flags & FI_PROV_ATTR_ONLY) {
		ret = hooks_attr_only(asked, &tail, &tried);
		if (ret)
			goto err_free;
	}
	if (!head) {
		if (!weft_prov_at(0))
			weft_explain(&weft_core_prov,
				     "no provider is built into this library");
		else if (!tried && asked && missing_reason(asked))
			weft_explain(&weft_core_prov,
				     "the %.*s provider is not built into this "
				     "library: %s",
				     (int)strcspn(asked, ";"), asked,
				     missing_reason(asked));
		else if (!tried && asked && is_hook_name(asked))
			weft_explain(&weft_core_prov,
				     "%s is a hook, not a provider: FI_HOOK=%s "
				     "wraps the provider picked", asked,
				     asked + 9);
		else if (!tried && asked)
			weft_explain(&weft_core_prov,
				     "no provider is named \"%s\"%s", asked,
				     getenv("FI_PROVIDER") ?
					     " (or FI_PROVIDER excludes it)" :
					     "");
		else if (!tried)
			weft_explain(&weft_core_prov,
				     "FI_PROVIDER=%s excludes every provider",
				     getenv("FI_PROVIDER"));
		return -FI_ENODATA;
	}
	if (hints && hints != given)
		api_answers(head, &view);
	*info = head;
	return 0;

err_free:
	weft_info_free_list(head);
	return ret;
}

/* ---- fi_fabric ----------------------------------------------------------- */

/*
 * A fabric opened under an alias that several providers answer to
 * ("sockets": tcp and udp): fi_fabric cannot tell which one the entry came
 * from, so it opens a fabric of each, and this object hands each domain
 * (and passive endpoint) to the fabric of the provider that serves the
 * entry's endpoint type (the alias table's types).  EQs and wait sets are
 * prov/util's whichever provider opens them: the first fabric's serve.
 */
#define ALIAS_FABRICS_MAX 4

struct alias_fabric {
	struct fid_fabric fabric_fid;
	struct fid_fabric *sub[ALIAS_FABRICS_MAX];
	uint32_t types[ALIAS_FABRICS_MAX];
	size_t n;
};

static struct fid_fabric *alias_sub(struct alias_fabric *af,
				    enum fi_ep_type type)
{
	size_t i;

	for (i = 0; i < af->n; i++)
		if (af->sub[i] && (type == FI_EP_UNSPEC ||
				   (af->types[i] & EP_TYPE_BIT(type))))
			return af->sub[i];
	return NULL;
}

static struct alias_fabric *alias_fabric_of(struct fid_fabric *f)
{
	return container_of(f, struct alias_fabric, fabric_fid);
}

static int alias_domain(struct fid_fabric *f, struct fi_info *info,
			struct fid_domain **domain, void *context)
{
	struct fid_fabric *sub = alias_sub(
		alias_fabric_of(f),
		info && info->ep_attr ? info->ep_attr->type : FI_EP_UNSPEC);

	return sub ? fi_domain(sub, info, domain, context) : -FI_ENODATA;
}

static int alias_domain2(struct fid_fabric *f, struct fi_info *info,
			 struct fid_domain **domain, uint64_t flags,
			 void *context)
{
	struct fid_fabric *sub = alias_sub(
		alias_fabric_of(f),
		info && info->ep_attr ? info->ep_attr->type : FI_EP_UNSPEC);

	return sub ? fi_domain2(sub, info, domain, flags, context) :
		     -FI_ENODATA;
}

static int alias_passive_ep(struct fid_fabric *f, struct fi_info *info,
			    struct fid_pep **pep, void *context)
{
	struct fid_fabric *sub = alias_sub(alias_fabric_of(f), FI_EP_MSG);

	return sub ? fi_passive_ep(sub, info, pep, context) : -FI_ENOSYS;
}

static int alias_eq_open(struct fid_fabric *f, struct fi_eq_attr *attr,
			 struct fid_eq **eq, void *context)
{
	return fi_eq_open(alias_sub(alias_fabric_of(f), FI_EP_UNSPEC), attr,
			  eq, context);
}

static int alias_wait_open(struct fid_fabric *f, struct fi_wait_attr *attr,
			   struct fid_wait **waitset)
{
	return fi_wait_open(alias_sub(alias_fabric_of(f), FI_EP_UNSPEC), attr,
			    waitset);
}

static int alias_trywait(struct fid_fabric *f, struct fid **fids, int count)
{
	return fi_trywait(alias_sub(alias_fabric_of(f), FI_EP_UNSPEC), fids,
			  count);
}

/* Each provider's fabric closes once its objects are gone; the alias
 * fabric when all have. */
static int alias_close(struct fid *fid)
{
	struct alias_fabric *af =
		container_of(fid, struct alias_fabric, fabric_fid.fid);
	int ret = 0, r;
	size_t i;

	for (i = 0; i < af->n; i++) {
		if (!af->sub[i])
			continue;
		r = fi_close(&af->sub[i]->fid);
		if (r)
			ret = ret ? ret : r;
		else
			af->sub[i] = NULL;
	}
	if (!ret)
		free(af);
	return ret;
}

static struct fi_ops_fabric alias_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = alias_domain,
	.passive_ep = alias_passive_ep,
	.eq_open = alias_eq_open,
	.wait_open = alias_wait_open,
	.trywait = alias_trywait,
	.domain2 = alias_domain2,
};

static struct fi_ops alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = alias_close,
	.bind = weft_no_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

/* fi_fabric under an alias: one fabric per built provider of it. */
static int alias_fabric_open(struct fi_fabric_attr *attr,
			     struct fid_fabric **fabric, void *context)
{
	const struct fi_provider *prov;
	struct alias_fabric *af = calloc(1, sizeof(*af));
	size_t i, k, len = strlen(attr->prov_name);
	int ret = -FI_ENODEV;

	if (!af)
		return -FI_ENOMEM;
	for (i = 0; (prov = weft_prov_at(i)) && af->n < ALIAS_FABRICS_MAX;
	     i++) {
		for (k = 0; k < WEFT_ARRAY_SIZE(prov_aliases); k++)
			if (alias_of(attr->prov_name, len, prov->name) &&
			    !strcasecmp(prov->name, prov_aliases[k].prov))
				break;
		if (k == WEFT_ARRAY_SIZE(prov_aliases) || !prov->fabric)
			continue;
		ret = prov->fabric(attr, &af->sub[af->n], context);
		if (ret)
			goto err;
		af->types[af->n++] = prov_aliases[k].types;
	}
	if (!af->n)
		goto err;
	if (af->n == 1) { /* one provider built: its own fabric */
		*fabric = af->sub[0];
		free(af);
		return 0;
	}
	af->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	af->fabric_fid.fid.context = context;
	af->fabric_fid.fid.ops = &alias_fi_ops;
	af->fabric_fid.ops = &alias_fabric_ops;
	af->fabric_fid.api_version = af->sub[0]->api_version;
	*fabric = &af->fabric_fid;
	return 0;

err:
	while (af->n)
		fi_close(&af->sub[--af->n]->fid);
	free(af);
	return ret;
}

int weft_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		void *context)
{
	const struct fi_provider *prov;
	size_t i;
	int ret;

	if (!attr || !attr->prov_name || !fabric)
		return -FI_EINVAL;
	if (is_alias(attr->prov_name, strlen(attr->prov_name))) {
		ret = alias_fabric_open(attr, fabric, context);
		if (ret == -FI_ENODEV)
			goto none;
		if (ret)
			return ret;
		return weft_hook_fabric(*fabric, fabric);
	}
	for (i = 0; (prov = weft_prov_at(i)); i++) {
		if (!weft_prov_name_matches(prov, attr->prov_name))
			continue;
		if (!prov->fabric)
			return -FI_ENOSYS;
		ret = prov->fabric(attr, fabric, context);
		if (ret)
			return ret;
		return weft_hook_fabric(*fabric, fabric);
	}
none:
	FI_WARN(&weft_core_prov, FI_LOG_CORE, "no provider is named \"%s\"\n",
		attr->prov_name);
	return -FI_ENODEV;
}

WEFT_EXPORT int fi_fabric(struct fi_fabric_attr *attr,
			  struct fid_fabric **fabric, void *context)
{
	return weft_fabric(attr, fabric, context);
}

/* ---- fi_version, fi_open ------------------------------------------------- */

WEFT_EXPORT uint32_t fi_version(void)
{
	return WEFT_API_VERSION;
}

WEFT_EXPORT int fi_open(uint32_t version, const char *name, void *attr,
			size_t attr_len, uint64_t flags, struct fid **fid,
			void *context)
{
	if (!name || !fid)
		return -FI_EINVAL;
	if (!strcasecmp(name, "logging"))
		return weft_log_open(fid, context);
	return -FI_ENOSYS;
}

/* ---- load and unload ----------------------------------------------------- */

__attribute__((constructor)) static void weft_init(void)
{
	weft_log_init();
}

__attribute__((destructor)) static void weft_fini(void)
{
	const struct fi_provider *prov;
	size_t i;

	for (i = 0; (prov = weft_prov_at(i)); i++)
		if (prov->cleanup)
			prov->cleanup();
	weft_param_cleanup();
	weft_log_fini();
}
