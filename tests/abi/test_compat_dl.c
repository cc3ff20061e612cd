/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The compat versions as an old program reaches them: load the built
 * libfabric.so.1, look each symbol up by version with dlvsym(), and allocate,
 * fill, duplicate and free fi_info in the old layouts through it.  This
 * program does not link the core, so every call goes through the library.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/compat.h"

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const void *, void **);
typedef void (*freeinfo_fn)(void *);
typedef void *(*dupinfo_fn)(const void *);
typedef int (*fabric_fn)(void *, struct fid_fabric **, void *);

static void *lib;

static void lib_open(void)
{
	const char *top = getenv("top_builddir");
	char path[4096];

	snprintf(path, sizeof(path), "%s/.libs/libfabric.so.1",
		 top ? top : ".");
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "dlopen %s: %s", path, dlerror());
}

static void lib_close(void)
{
	if (lib)
		dlclose(lib);
	lib = NULL;
}

TestSuite(compat_dl, .init = lib_open, .fini = lib_close);

static void *sym(const char *name, const char *node)
{
	void *p = dlvsym(lib, name, node);

	cr_assert_not_null(p, "%s@%s: %s", name, node, dlerror());
	return p;
}

/* Every compat version is its own function, not the default one renamed. */
Test(compat_dl, versions_are_distinct)
{
	static const char *const names[] = { "fi_getinfo", "fi_freeinfo",
					     "fi_dupinfo" };
	static const char *const nodes[] = { "FABRIC_1.0", "FABRIC_1.1",
					     "FABRIC_1.2", "FABRIC_1.3",
					     "FABRIC_1.7", "FABRIC_1.8",
					     "FABRIC_1.9" };
	const size_t n = sizeof(nodes) / sizeof(nodes[0]);
	size_t i, a, b;

	for (i = 0; i < 3; i++)
		for (a = 0; a < n; a++)
			for (b = a + 1; b < n; b++)
				cr_assert_neq(sym(names[i], nodes[a]),
					      sym(names[i], nodes[b]),
					      "%s@%s is %s@%s", names[i],
					      nodes[a], names[i], nodes[b]);
	cr_assert_neq(sym("fi_fabric", "FABRIC_1.0"),
		      sym("fi_fabric", "FABRIC_1.1"));
	/* The default of each is the one an unversioned lookup finds. */
	cr_assert_eq(dlsym(lib, "fi_getinfo"), sym("fi_getinfo", "FABRIC_1.9"));
	cr_assert_eq(dlsym(lib, "fi_dupinfo"), sym("fi_dupinfo", "FABRIC_1.9"));
	cr_assert_eq(dlsym(lib, "fi_fabric"), sym("fi_fabric", "FABRIC_1.1"));
	cr_assert_eq(dlsym(lib, "fi_fabric2"), sym("fi_fabric2", "FABRIC_1.8"));
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	cr_assert_not_null(d);
	return d;
}

static void *xmemdup(const void *src, size_t len)
{
	void *d = malloc(len);

	cr_assert_not_null(d);
	memcpy(d, src, len);
	return d;
}

static const uint8_t addr[] = { 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5 };
static const uint8_t key[] = { 0x5e, 0xc2, 0xe7 };

Test(compat_dl, alloc_dup_free_1_0)
{
	dupinfo_fn dup = (dupinfo_fn)sym("fi_dupinfo", "FABRIC_1.0");
	freeinfo_fn release = (freeinfo_fn)sym("fi_freeinfo", "FABRIC_1.0");
	struct weft_info_1_0 *info = dup(NULL), *copy;

	cr_assert_not_null(info);
	cr_assert(info->tx_attr && info->rx_attr && info->ep_attr &&
		  info->domain_attr && info->fabric_attr);
	cr_assert_eq(info->ep_attr->rx_ctx_cnt, 0);
	cr_assert_eq(info->domain_attr->max_ep_srx_ctx, 0);
	cr_assert_null(info->fabric_attr->prov_name);

	info->caps = FI_MSG;
	info->src_addr = xmemdup(addr, sizeof(addr));
	info->src_addrlen = sizeof(addr);
	info->tx_attr->rma_iov_limit = 4;
	info->rx_attr->iov_limit = 3;
	info->ep_attr->rx_ctx_cnt = 2;
	info->domain_attr->name = xstrdup("dom");
	info->domain_attr->max_ep_srx_ctx = 6;
	info->fabric_attr->prov_name = xstrdup("tcp");
	info->fabric_attr->prov_version = 7;

	copy = dup(info);
	cr_assert_not_null(copy);
	cr_assert_null(copy->next);
	cr_assert_eq(copy->caps, FI_MSG);
	cr_assert_neq(copy->src_addr, info->src_addr);
	cr_assert_eq(copy->src_addrlen, sizeof(addr));
	cr_assert_eq(memcmp(copy->src_addr, addr, sizeof(addr)), 0);
	cr_assert_eq(copy->tx_attr->rma_iov_limit, 4);
	cr_assert_eq(copy->rx_attr->iov_limit, 3);
	cr_assert_eq(copy->ep_attr->rx_ctx_cnt, 2);
	cr_assert_str_eq(copy->domain_attr->name, "dom");
	cr_assert_eq(copy->domain_attr->max_ep_srx_ctx, 6);
	cr_assert_str_eq(copy->fabric_attr->prov_name, "tcp");
	cr_assert_eq(copy->fabric_attr->prov_version, 7);

	info->next = copy; /* one call frees the list */
	release(info);
	release(NULL);
}

Test(compat_dl, alloc_dup_free_1_1)
{
	dupinfo_fn dup = (dupinfo_fn)sym("fi_dupinfo", "FABRIC_1.1");
	freeinfo_fn release = (freeinfo_fn)sym("fi_freeinfo", "FABRIC_1.1");
	struct weft_info_1_1 *info = dup(NULL), *copy;

	cr_assert_not_null(info);
	cr_assert(info->tx_attr && info->rx_attr && info->ep_attr &&
		  info->domain_attr && info->fabric_attr);
	info->ep_attr->auth_key = xmemdup(key, sizeof(key));
	info->ep_attr->auth_key_size = sizeof(key);
	info->domain_attr->auth_key = xmemdup(key, sizeof(key));
	info->domain_attr->auth_key_size = sizeof(key);
	info->domain_attr->mr_cnt = 11;
	info->fabric_attr->api_version = FI_VERSION(1, 6);
	info->fabric_attr->name = xstrdup("fab");

	copy = dup(info);
	cr_assert_not_null(copy);
	cr_assert_neq(copy->ep_attr->auth_key, info->ep_attr->auth_key);
	cr_assert_eq(copy->ep_attr->auth_key_size, sizeof(key));
	cr_assert_eq(memcmp(copy->ep_attr->auth_key, key, sizeof(key)), 0);
	cr_assert_neq(copy->domain_attr->auth_key, info->domain_attr->auth_key);
	cr_assert_eq(memcmp(copy->domain_attr->auth_key, key, sizeof(key)), 0);
	cr_assert_eq(copy->domain_attr->mr_cnt, 11);
	cr_assert_eq(copy->fabric_attr->api_version, FI_VERSION(1, 6));
	cr_assert_str_eq(copy->fabric_attr->name, "fab");

	release(copy);
	release(info);
}

Test(compat_dl, alloc_dup_free_1_2)
{
	dupinfo_fn dup = (dupinfo_fn)sym("fi_dupinfo", "FABRIC_1.2");
	freeinfo_fn release = (freeinfo_fn)sym("fi_freeinfo", "FABRIC_1.2");
	struct weft_info_1_2 *info = dup(NULL), *copy;

	cr_assert_not_null(info);
	cr_assert_null(info->nic);
	info->domain_attr->max_err_data = 12;
	info->tx_attr->inject_size = 13;
	copy = dup(info);
	cr_assert_not_null(copy);
	cr_assert_eq(copy->domain_attr->max_err_data, 12);
	cr_assert_eq(copy->tx_attr->inject_size, 13);
	cr_assert_null(copy->nic);
	release(copy);
	release(info);
}

/*
 * fi_getinfo at each old node, with old-layout hints.  Which providers
 * answer depends on the machine; whatever comes back is walked and freed in
 * the old layout.
 */
static void getinfo_at(const char *node)
{
	getinfo_fn getinfo = (getinfo_fn)sym("fi_getinfo", node);
	dupinfo_fn dup = (dupinfo_fn)sym("fi_dupinfo", node);
	freeinfo_fn release = (freeinfo_fn)sym("fi_freeinfo", node);
	struct weft_info_1_0 *hints = dup(NULL);
	void *info = (void *)0x1;
	int ret;

	cr_assert_not_null(hints);
	/* fabric_attr->prov_name sits at the same place in every layout. */
	hints->fabric_attr->prov_name = xstrdup("no-such-provider");
	ret = getinfo(FI_VERSION(1, 4), NULL, NULL, 0, hints, &info);
	cr_assert_eq(ret, -FI_ENODATA, "%s: %d", node, ret);
	cr_assert_eq(info, (void *)0x1);
	release(hints);

	ret = getinfo(FI_VERSION(1, 4), NULL, NULL, 0, NULL, &info);
	cr_assert(ret == 0 || ret == -FI_ENODATA, "%s: %d", node, ret);
	if (ret)
		return;
	for (hints = info; hints; hints = hints->next) {
		cr_assert_not_null(hints->fabric_attr);
		cr_assert_not_null(hints->fabric_attr->prov_name);
	}
	release(info);
}

Test(compat_dl, getinfo_1_0)
{
	getinfo_at("FABRIC_1.0");
}

Test(compat_dl, getinfo_1_1)
{
	getinfo_at("FABRIC_1.1");
}

Test(compat_dl, getinfo_1_2)
{
	getinfo_at("FABRIC_1.2");
}

Test(compat_dl, fabric_1_0)
{
	fabric_fn fabric_open = (fabric_fn)sym("fi_fabric", "FABRIC_1.0");
	struct weft_fabric_attr_1_0 attr = { .prov_name = "no-such-provider" };
	struct fid_fabric *fabric = NULL;

	cr_assert_eq(fabric_open(NULL, &fabric, NULL), -FI_EINVAL);
	cr_assert_eq(fabric_open(&attr, &fabric, NULL), -FI_ENODEV);
	cr_assert_null(fabric);
}

/*
 * FABRIC_1.3 to 1.9: one fi_info layout whose domain_attr grows at its end
 * (192, 200, 208, 224 bytes).  Each caller's domain_attr below is allocated
 * at exactly its node's size, so that a read past it is an ASan error in
 * the sanitized build; the tail is read as that node lays it out.
 */
struct dom_tail {
	size_t max_ep_auth_key;	     /* 1.7 */
	uint32_t max_group_id;	     /* 1.8 */
	uint64_t max_cntr_value;     /* 1.9 */
	uint64_t max_err_cntr_value; /* 1.9 */
};
#define DOM_1_3 192
#define TAIL(d) ((struct dom_tail *)((char *)(d) + DOM_1_3))

/* An fi_info from fi_dupinfo(NULL) at node, its domain_attr swapped for a
 * copy of exactly dom_len bytes. */
static struct fi_info *caller_info(const char *node, size_t dom_len)
{
	dupinfo_fn dup = (dupinfo_fn)sym("fi_dupinfo", node);
	struct fi_info *info = dup(NULL);
	void *d = calloc(1, dom_len);

	cr_assert_not_null(info);
	cr_assert_not_null(d);
	free(info->domain_attr);
	info->domain_attr = d;
	return info;
}

Test(compat_dl, dupinfo_reads_the_node_size)
{
	static const struct {
		const char *node;
		size_t len;
	} nodes[] = { { "FABRIC_1.3", 192 },
		      { "FABRIC_1.7", 200 },
		      { "FABRIC_1.8", 208 },
		      { "FABRIC_1.9", 224 } };
	size_t i;

	for (i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		dupinfo_fn dup = (dupinfo_fn)sym("fi_dupinfo", nodes[i].node);
		freeinfo_fn release =
			(freeinfo_fn)sym("fi_freeinfo", nodes[i].node);
		struct fi_info *info = caller_info(nodes[i].node, nodes[i].len);
		struct fi_info *copy;
		struct dom_tail *t;

		info->domain_attr->mr_cnt = 31;
		info->domain_attr->tclass = 32;
		if (nodes[i].len >= 200)
			TAIL(info->domain_attr)->max_ep_auth_key = 33;
		if (nodes[i].len >= 208)
			TAIL(info->domain_attr)->max_group_id = 34;
		if (nodes[i].len >= 224) {
			TAIL(info->domain_attr)->max_cntr_value = 35;
			TAIL(info->domain_attr)->max_err_cntr_value = 36;
		}
		copy = dup(info);
		cr_assert_not_null(copy, "%s", nodes[i].node);
		cr_assert_eq(copy->domain_attr->mr_cnt, 31);
		cr_assert_eq(copy->domain_attr->tclass, 32);
		/* the copy has the newest layout: what the caller had is kept,
		 * the rest is zero */
		t = TAIL(copy->domain_attr);
		cr_assert_eq(t->max_ep_auth_key, nodes[i].len >= 200 ? 33 : 0,
			     "%s", nodes[i].node);
		cr_assert_eq(t->max_group_id, nodes[i].len >= 208 ? 34 : 0,
			     "%s", nodes[i].node);
		cr_assert_eq(t->max_cntr_value, nodes[i].len >= 224 ? 35 : 0,
			     "%s", nodes[i].node);
		cr_assert_eq(t->max_err_cntr_value,
			     nodes[i].len >= 224 ? 36 : 0, "%s",
			     nodes[i].node);
		release(copy);
		release(info);
	}
}

/* What a node's fi_getinfo reads of the hints: its layout, and only what
 * the version asked for defines. */
Test(compat_dl, getinfo_hints_tail)
{
	getinfo_fn gi17 = (getinfo_fn)sym("fi_getinfo", "FABRIC_1.7");
	getinfo_fn gi19 = (getinfo_fn)sym("fi_getinfo", "FABRIC_1.9");
	getinfo_fn gi13 = (getinfo_fn)sym("fi_getinfo", "FABRIC_1.3");
	freeinfo_fn release = (freeinfo_fn)sym("fi_freeinfo", "FABRIC_1.9");
	struct fi_info *hints, *info = NULL;

	/* a 1.17 program linked against weft binds 1.9 and asks 1.17: its
	 * 192-byte domain_attr is read as such (ASan would see more) */
	hints = caller_info("FABRIC_1.9", 192);
	hints->fabric_attr->prov_name = xstrdup("shm");
	cr_assert_eq(gi19(FI_VERSION(1, 17), NULL, NULL, 0, hints,
			  (void **)&info),
		     0);
	cr_assert_not_null(info);
	/* answers carry the newest layout, the tail filled */
	cr_assert_eq(TAIL(info->domain_attr)->max_ep_auth_key, 0);
	cr_assert_eq(TAIL(info->domain_attr)->max_cntr_value, UINT64_MAX);
	cr_assert_eq(TAIL(info->domain_attr)->max_err_cntr_value, UINT64_MAX);
	release(info);
	release(hints);

	/* 1.20 at FABRIC_1.7: max_ep_auth_key is read, and weft has none */
	hints = caller_info("FABRIC_1.7", 200);
	hints->fabric_attr->prov_name = xstrdup("shm");
	TAIL(hints->domain_attr)->max_ep_auth_key = 1;
	info = NULL;
	cr_assert_eq(gi17(FI_VERSION(1, 20), NULL, NULL, 0, hints,
			  (void **)&info),
		     -FI_ENODATA);
	/* the same hints asking 1.17 semantics: the field is not theirs */
	cr_assert_eq(gi17(FI_VERSION(1, 17), NULL, NULL, 0, hints,
			  (void **)&info),
		     0);
	release(info);
	/* and FABRIC_1.3 never reads past tclass, whatever the version */
	info = NULL;
	cr_assert_eq(gi13(FI_VERSION(2, 6), NULL, NULL, 0, hints,
			  (void **)&info),
		     0);
	release(info);
	release(hints);

	/* 2.6 at FABRIC_1.9: max_group_id too */
	hints = caller_info("FABRIC_1.9", 224);
	hints->fabric_attr->prov_name = xstrdup("shm");
	TAIL(hints->domain_attr)->max_group_id = 5;
	cr_assert_eq(gi19(FI_VERSION(2, 6), NULL, NULL, 0, hints,
			  (void **)&info),
		     -FI_ENODATA);
	TAIL(hints->domain_attr)->max_group_id = 0;
	TAIL(hints->domain_attr)->max_cntr_value = UINT64_MAX;
	cr_assert_eq(gi19(FI_VERSION(2, 6), NULL, NULL, 0, hints,
			  (void **)&info),
		     0);
	cr_assert_eq(info->fabric_attr->api_version, FI_VERSION(2, 6));
	release(info);
	release(hints);
}

Test(compat_dl, fabric2)
{
	int (*fabric2)(struct fi_info *, struct fid_fabric **, uint64_t,
		       void *) =
		(int (*)(struct fi_info *, struct fid_fabric **, uint64_t,
			 void *))sym("fi_fabric2", "FABRIC_1.8");
	getinfo_fn gi19 = (getinfo_fn)sym("fi_getinfo", "FABRIC_1.9");
	freeinfo_fn release = (freeinfo_fn)sym("fi_freeinfo", "FABRIC_1.9");
	dupinfo_fn dup = (dupinfo_fn)sym("fi_dupinfo", "FABRIC_1.9");
	struct fi_info *hints = dup(NULL), *info = NULL;
	struct fid_fabric *fabric = NULL;

	hints->fabric_attr->prov_name = xstrdup("shm");
	cr_assert_eq(gi19(FI_VERSION(2, 0), NULL, NULL, 0, hints,
			  (void **)&info),
		     0);
	cr_assert_eq(fabric2(NULL, &fabric, 0, NULL), -FI_EINVAL);
	cr_assert_eq(fabric2(info, &fabric, 1, NULL), -FI_EINVAL);
	cr_assert_eq(fabric2(info, &fabric, 0, NULL), 0);
	cr_assert_not_null(fabric);
	cr_assert_eq(fabric->api_version, FI_VERSION(2, 0));
	cr_assert_eq(fabric->fid.ops->close(&fabric->fid), 0);
	release(info);
	release(hints);
}
