/* SPDX-License-Identifier: BSD-2-Clause */
#include <criterion/criterion.h>
#include <sys/mman.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "weft/util_av.h"
#include "weft/util_domain.h"

/* ---- fixtures --------------------------------------------------------- */

static struct util_domain dom;
static struct fid_av *av;

static void dom_setup(void)
{
	cr_assert_eq(util_domain_init(&dom, NULL, NULL, NULL), 0);
	av = NULL;
}

static void dom_teardown(void)
{
	if (av)
		cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert_eq(util_domain_fini(&dom), 0);
}

static void open_av(enum fi_av_type type, const struct util_av_ops *ops)
{
	struct fi_av_attr attr = { .type = type };

	cr_assert_eq(util_av_open(&dom, &attr, ops, &av, NULL), 0);
	cr_assert_eq(attr.type, type == FI_AV_UNSPEC ? FI_AV_TABLE : type);
}

static struct sockaddr_in sin4(const char *ip, unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_port = htons((in_port_t)port);
	cr_assert_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	return sin;
}

static struct sockaddr_in sin_n(uint32_t n)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(0x0a000000u + n / 1000);
	sin.sin_port = htons((in_port_t)(1000 + n % 1000));
	return sin;
}

static void assert_lookup_in(fi_addr_t fa, const struct sockaddr_in *want)
{
	struct sockaddr_in got;
	size_t len = sizeof(got);

	memset(&got, 0xaa, sizeof(got));
	cr_assert_eq(fi_av_lookup(av, fa, &got, &len), 0);
	cr_assert_eq(len, sizeof(got));
	cr_assert_eq(got.sin_family, AF_INET);
	cr_assert_eq(got.sin_port, want->sin_port);
	cr_assert_eq(got.sin_addr.s_addr, want->sin_addr.s_addr);
}

/* ---- a tiny EQ that records what is written to it ------------------------ */

struct rec_event {
	uint32_t event;
	bool err;
	struct fi_eq_entry entry;
	struct fi_eq_err_entry err_entry;
};

/*
 * The AV counts itself on the util_eq behind an EQ it is bound to, so the
 * recording EQ is a util_eq as far as that count goes.
 */
struct rec_eq {
	union {
		struct util_eq util;
		struct fid_eq eq;
	};
	struct rec_event ev[64];
	size_t n;
};

static ssize_t rec_write(struct fid_eq *eq, uint32_t event, const void *buf,
			 size_t len, uint64_t flags)
{
	struct rec_eq *r = container_of(eq, struct rec_eq, eq);
	struct rec_event *e = &r->ev[r->n++];

	cr_assert_lt(r->n, 64);
	e->event = event;
	e->err = flags & UTIL_EQ_FLAG_ERROR;
	if (e->err) {
		cr_assert_eq(len, sizeof(e->err_entry));
		memcpy(&e->err_entry, buf, len);
	} else {
		cr_assert_eq(len, sizeof(e->entry));
		memcpy(&e->entry, buf, len);
	}
	return (ssize_t)len;
}

static struct fi_ops_eq rec_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.write = rec_write,
};

static void rec_eq_init(struct rec_eq *r)
{
	memset(r, 0, sizeof(*r));
	r->eq.fid.fclass = FI_CLASS_EQ;
	r->eq.ops = &rec_eq_ops;
}

TestSuite(av, .init = dom_setup, .fini = dom_teardown);

/* ---- FI_AV_TABLE / FI_AV_MAP -------------------------------------------- */

Test(av, table_indices_follow_insertion_order)
{
	struct sockaddr_in a[5];
	fi_addr_t fa[5];
	int i;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	for (i = 0; i < 5; i++)
		a[i] = sin_n((uint32_t)i);
	cr_assert_eq(fi_av_insert(av, a, 3, fa, 0, NULL), 3);
	cr_assert_eq(fi_av_insert(av, a + 3, 2, fa + 3, 0, NULL), 2);
	for (i = 0; i < 5; i++) {
		cr_assert_eq(fa[i], (fi_addr_t)i);
		assert_lookup_in(fa[i], &a[i]);
	}
	/* NULL fi_addr is allowed for tables */
	a[0] = sin_n(99);
	cr_assert_eq(fi_av_insert(av, a, 1, NULL, 0, NULL), 1);
	assert_lookup_in(5, &a[0]);
}

Test(av, unspec_type_picks_table)
{
	open_av(FI_AV_UNSPEC, &util_av_sockaddr_in_ops);
	cr_assert_eq(util_av_from_fid(av)->type, FI_AV_TABLE);
}

Test(av, map_addresses_distinct_and_valid)
{
	struct sockaddr_in a[8];
	fi_addr_t fa[8];
	int i, j;

	open_av(FI_AV_MAP, &util_av_sockaddr_in_ops);
	for (i = 0; i < 8; i++)
		a[i] = sin_n((uint32_t)i);
	cr_assert_eq(fi_av_insert(av, a, 8, fa, 0, NULL), 8);
	for (i = 0; i < 8; i++) {
		cr_assert_neq(fa[i], FI_ADDR_NOTAVAIL);
		for (j = 0; j < i; j++)
			cr_assert_neq(fa[i], fa[j]);
		assert_lookup_in(fa[i], &a[i]);
		cr_assert_not_null(util_av_addr(util_av_from_fid(av), fa[i]));
	}
}

Test(av, table_remove_and_reinsert_use_lowest_free_index)
{
	struct sockaddr_in a[8], got;
	fi_addr_t fa[8], rm[2], again[3];
	size_t len = sizeof(got);
	int i;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	for (i = 0; i < 8; i++)
		a[i] = sin_n((uint32_t)i);
	cr_assert_eq(fi_av_insert(av, a, 5, fa, 0, NULL), 5);
	rm[0] = 3;
	rm[1] = 1;
	cr_assert_eq(fi_av_remove(av, rm, 2, 0), 0);
	cr_assert_eq(fi_av_lookup(av, 1, &got, &len), -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, 3, &got, &len), -FI_EINVAL);
	cr_assert_null(util_av_addr(util_av_from_fid(av), 1));
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(av), &a[1]),
		     FI_ADDR_NOTAVAIL);
	assert_lookup_in(2, &a[2]);
	/* removing twice fails, and removes nothing else */
	rm[0] = 2;
	rm[1] = 1;
	cr_assert_eq(fi_av_remove(av, rm, 2, 0), -FI_EINVAL);
	assert_lookup_in(2, &a[2]);

	/* the removed address may come back */
	cr_assert_eq(fi_av_insert(av, &a[1], 1, &again[0], 0, NULL), 1);
	cr_assert_eq(again[0], 1);
	cr_assert_eq(fi_av_insert(av, a + 5, 2, again + 1, 0, NULL), 2);
	cr_assert_eq(again[1], 3);
	cr_assert_eq(again[2], 5);
	assert_lookup_in(1, &a[1]);
	assert_lookup_in(3, &a[5]);
	assert_lookup_in(5, &a[6]);
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(av), &a[1]), 1);
}

Test(av, map_stale_fi_addr_stays_invalid_after_slot_reuse)
{
	struct sockaddr_in a = sin_n(1), b = sin_n(2), got;
	size_t len = sizeof(got);
	fi_addr_t fa, fb;

	open_av(FI_AV_MAP, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fi_av_remove(av, &fa, 1, 0), 0);
	cr_assert_eq(fi_av_insert(av, &b, 1, &fb, 0, NULL), 1);
	cr_assert_neq(fa, fb);
	cr_assert_eq(util_av_index(util_av_from_fid(av), fa),
		     util_av_index(util_av_from_fid(av), fb));
	cr_assert_eq(fi_av_lookup(av, fa, &got, &len), -FI_EINVAL);
	cr_assert_null(util_av_addr(util_av_from_fid(av), fa));
	cr_assert_eq(fi_av_remove(av, &fa, 1, 0), -FI_EINVAL);
	assert_lookup_in(fb, &b);
	/* remove then reinsert the same address */
	cr_assert_eq(fi_av_remove(av, &fb, 1, 0), 0);
	cr_assert_eq(fi_av_insert(av, &b, 1, &fb, 0, NULL), 1);
	assert_lookup_in(fb, &b);
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(av), &b), fb);
}

Test(av, invalid_fi_addr_lookups)
{
	struct sockaddr_in a = sin_n(1), got;
	size_t len = sizeof(got);
	fi_addr_t fa;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fi_av_lookup(av, 1, &got, &len), -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, 100000, &got, &len), -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, FI_ADDR_NOTAVAIL, &got, &len),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_lookup(av, 1ULL << 32, &got, &len), -FI_EINVAL);
	cr_assert_null(util_av_addr(util_av_from_fid(av), 1ULL << 40));
	cr_assert_null(util_av_addr(util_av_from_fid(av), FI_ADDR_NOTAVAIL));
	cr_assert_null(util_av_addr(util_av_from_fid(av), 0xffffffffu));
	cr_assert_eq(fi_av_lookup(av, fa, &got, NULL), -FI_EINVAL);
}

/* ---- lookup and straddr sizes ------------------------------------------- */

Test(av, lookup_truncates_and_reports_real_size)
{
	struct sockaddr_in a = sin4("192.168.1.2", 4242);
	unsigned char buf[32];
	size_t len;
	fi_addr_t fa;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);

	memset(buf, 0xee, sizeof(buf));
	len = 4;
	cr_assert_eq(fi_av_lookup(av, fa, buf, &len), 0);
	cr_assert_eq(len, sizeof(a));
	cr_assert_eq(memcmp(buf, &a, 4), 0);
	cr_assert_eq(buf[4], 0xee, "copied past the caller's addrlen");

	len = 0;
	cr_assert_eq(fi_av_lookup(av, fa, NULL, &len), 0);
	cr_assert_eq(len, sizeof(a));

	len = sizeof(buf);
	cr_assert_eq(fi_av_lookup(av, fa, buf, &len), 0);
	cr_assert_eq(len, sizeof(a));
	cr_assert_eq(buf[sizeof(a)], 0xee);
}

Test(av, straddr_truncates_and_reports_needed_size)
{
	struct sockaddr_in a = sin4("10.1.2.3", 5000);
	const char *want = "fi_sockaddr_in://10.1.2.3:5000";
	char buf[64];
	size_t len;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	len = sizeof(buf);
	cr_assert_eq(fi_av_straddr(av, &a, buf, &len), buf);
	cr_assert_str_eq(buf, want);
	cr_assert_eq(len, strlen(want) + 1);

	memset(buf, 'x', sizeof(buf));
	len = 10;
	cr_assert_eq(fi_av_straddr(av, &a, buf, &len), buf);
	cr_assert_eq(len, strlen(want) + 1);
	cr_assert_eq(buf[9], '\0');
	cr_assert_eq(strncmp(buf, want, 9), 0);
	cr_assert_eq(buf[10], 'x', "wrote past len");

	memset(buf, 'x', sizeof(buf));
	len = 0;
	cr_assert_eq(fi_av_straddr(av, &a, buf, &len), buf);
	cr_assert_eq(len, strlen(want) + 1);
	cr_assert_eq(buf[0], 'x');

	/* exactly the size needed */
	len = strlen(want) + 1;
	fi_av_straddr(av, &a, buf, &len);
	cr_assert_str_eq(buf, want);
}

Test(av, sockaddr_string_round_trip_v4_v6)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 }, got6;
	struct sockaddr_in a = sin4("172.16.0.9", 65535);
	char buf[128];
	size_t len = sizeof(buf);
	fi_addr_t fa;

	open_av(FI_AV_TABLE, &util_av_sockaddr_ops);
	fi_av_straddr(av, &a, buf, &len);
	cr_assert_str_eq(buf, "fi_sockaddr_in://172.16.0.9:65535");
	cr_assert_eq(fi_av_insertsvc(av, buf, NULL, &fa, 0, NULL), 1);
	assert_lookup_in(fa, &a);

	s6.sin6_port = htons(7);
	inet_pton(AF_INET6, "fe80::1:2", &s6.sin6_addr);
	len = sizeof(buf);
	fi_av_straddr(av, &s6, buf, &len);
	cr_assert_str_eq(buf, "fi_sockaddr_in6://[fe80::1:2]:7");
	cr_assert_eq(fi_av_insertsvc(av, buf, NULL, &fa, 0, NULL), 1);
	len = sizeof(got6);
	cr_assert_eq(fi_av_lookup(av, fa, &got6, &len), 0);
	cr_assert_eq(len, sizeof(got6));
	cr_assert_eq(got6.sin6_port, s6.sin6_port);
	cr_assert_eq(memcmp(&got6.sin6_addr, &s6.sin6_addr, 16), 0);

	/* malformed strings */
	cr_assert_eq(fi_av_insertsvc(av, "fi_sockaddr_in://1.2.3.4", NULL,
				     &fa, 0, NULL), 0);
	cr_assert_eq(fa, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_insertsvc(av, "fi_sockaddr_in://1.2.3.4:70000",
				     NULL, &fa, 0, NULL), 0);
	cr_assert_eq(fi_av_insertsvc(av, "fi_sockaddr_in6://::1:5", NULL, &fa,
				     0, NULL), 0);
}

/* ---- insertsvc / insertsym ---------------------------------------------- */

Test(av, insertsvc_resolves_numeric_node_and_service)
{
	struct sockaddr_in want = sin4("127.0.0.1", 5000);
	fi_addr_t fa;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insertsvc(av, "127.0.0.1", "5000", &fa, 0, NULL),
		     1);
	cr_assert_eq(fa, 0);
	assert_lookup_in(fa, &want);
	cr_assert_eq(fi_av_insertsvc(av, NULL, NULL, &fa, 0, NULL),
		     -FI_EINVAL);
	/* IPv6 literal into an IPv4 AV cannot resolve */
	cr_assert_eq(fi_av_insertsvc(av, "::1", "5000", &fa, 0, NULL), 0);
	cr_assert_eq(fa, FI_ADDR_NOTAVAIL);
}

Test(av, insertsym_ipv4_ranges_in_documented_order)
{
	const char *order[4][2] = { { "10.1.1.1", "5000" },
				    { "10.1.1.1", "5001" },
				    { "10.1.1.2", "5000" },
				    { "10.1.1.2", "5001" } };
	struct sockaddr_in want;
	fi_addr_t fa[4];
	int i;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insertsym(av, "10.1.1.1", 2, "5000", 2, fa, 0,
				     NULL),
		     4);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(fa[i], (fi_addr_t)i);
		want = sin4(order[i][0], (unsigned int)atoi(order[i][1]));
		assert_lookup_in(fa[i], &want);
	}
	/* carry across an octet */
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.255", 2, "1", 1, fa, 0,
				     NULL),
		     2);
	want = sin4("10.0.1.0", 1);
	assert_lookup_in(fa[1], &want);
}

Test(av, insertsym_rejects_bad_ranges)
{
	fi_addr_t fa[4];

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.1", 1, "65535", 2, fa, 0,
				     NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(av, "255.255.255.255", 2, "1", 1, fa, 0,
				     NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(av, "hostname", 2, "1", 1, fa, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.1", 1, "http", 1, fa, 0,
				     NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(av, NULL, 1, "1", 1, fa, 0, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insertsym(av, "10.0.0.1", 0, "1", 1, fa, 0, NULL),
		     -FI_EINVAL);
	/* nothing was inserted */
	cr_assert_eq(util_av_from_fid(av)->count, 0);
}

/* A provider whose resolver only spells out what it was asked. */
static int echo_resolve(const struct util_av *a, const char *node,
			const char *service, void *addr)
{
	snprintf(addr, a->addrlen, "fi_test://%s:%s", node,
		 service ? service : "-");
	return 0;
}

static const struct util_av_ops echo_ops = {
	.addr_format = FI_ADDR_STR,
	.resolve = echo_resolve,
};

Test(av, insertsym_hostname_suffix_and_ipv6)
{
	const char *want[] = { "fi_test://host09:7", "fi_test://host09:8",
			       "fi_test://host10:7", "fi_test://host10:8",
			       "fi_test://host11:7", "fi_test://host11:8" };
	char buf[64];
	fi_addr_t fa[6];
	size_t len;
	int i;

	open_av(FI_AV_TABLE, &echo_ops);
	cr_assert_eq(fi_av_insertsym(av, "host09", 3, "7", 2, fa, 0, NULL), 6);
	for (i = 0; i < 6; i++) {
		len = sizeof(buf);
		cr_assert_eq(fi_av_lookup(av, fa[i], buf, &len), 0);
		cr_assert_str_eq(buf, want[i]);
		cr_assert_eq(len, strlen(want[i]) + 1);
	}
	cr_assert_eq(fi_av_insertsym(av, "fe80::ff", 2, "1", 1, fa, 0, NULL),
		     2);
	len = sizeof(buf);
	fi_av_lookup(av, fa[1], buf, &len);
	cr_assert_str_eq(buf, "fi_test://fe80::100:1");
}

/* ---- FI_ADDR_STR --------------------------------------------------------- */

Test(av, addr_str_round_trip)
{
	const char *names[] = { "fi_shm://alpha", "fi_shm://beta",
				"fi_shm://gamma" };
	struct util_av *uav;
	char buf[80], small[8];
	fi_addr_t fa[3];
	size_t len;
	int i;

	open_av(FI_AV_TABLE, &util_av_str_ops);
	uav = util_av_from_fid(av);
	cr_assert_eq(fi_av_insert(av, names, 3, fa, 0, NULL), 3);
	for (i = 0; i < 3; i++) {
		len = sizeof(buf);
		cr_assert_eq(fi_av_lookup(av, fa[i], buf, &len), 0);
		cr_assert_str_eq(buf, names[i]);
		cr_assert_eq(len, strlen(names[i]) + 1);
		cr_assert_str_eq(util_av_addr(uav, fa[i]), names[i]);
		cr_assert_eq(util_av_lookup_addr(uav, names[i]), fa[i]);
		len = sizeof(buf);
		cr_assert_eq(fi_av_straddr(av, names[i], buf, &len), buf);
		cr_assert_str_eq(buf, names[i]);
	}
	len = sizeof(small);
	cr_assert_eq(fi_av_lookup(av, fa[1], small, &len), 0);
	cr_assert_eq(len, strlen(names[1]) + 1);
	cr_assert_eq(memcmp(small, "fi_shm:", 7), 0);
	cr_assert_eq(util_av_lookup_addr(uav, "fi_shm://delta"),
		     FI_ADDR_NOTAVAIL);

	/* insertsvc takes an FI_ADDR_STR node with no service */
	cr_assert_eq(fi_av_insertsvc(av, "fi_shm://delta", NULL, fa, 0, NULL),
		     1);
	cr_assert_eq(fa[0], 3);
	cr_assert_eq(util_av_lookup_addr(uav, "fi_shm://delta"), 3);
}

Test(av, addr_str_too_long_fails_that_address_only)
{
	char longname[UTIL_AV_STR_ADDRLEN + 8];
	const char *names[3];
	fi_addr_t fa[3];
	int err[3] = { 99, 99, 99 };

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	names[0] = "fi_shm://a";
	names[1] = longname;
	names[2] = NULL;
	open_av(FI_AV_TABLE, &util_av_str_ops);
	cr_assert_eq(fi_av_insert(av, names, 3, fa, FI_SYNC_ERR, err), 1);
	cr_assert_eq(err[0], 0);
	cr_assert_eq(err[1], FI_EINVAL);
	cr_assert_eq(err[2], FI_EINVAL);
	cr_assert_eq(fa[0], 0);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[2], FI_ADDR_NOTAVAIL);
}

/*
 * Bad FI_ADDR_STR input fails its own entry, never the process: short,
 * empty, unprefixed and binary strings, given as fi_av(3)'s char ** and
 * packed one after another as fi_getname gives them.  prefixed_ops is a
 * provider whose addresses begin with "fi_shm://", like shm's.
 */
static int prefixed_normalize(const struct util_av *a, const void *in,
			      void *out)
{
	const char *s = in;
	size_t n = strnlen(s, a->addrlen), i;

	if (n == a->addrlen || n <= 9 || strncmp(s, "fi_shm://", 9))
		return -FI_EINVAL;
	for (i = 9; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '/')
			return -FI_EINVAL;
	memmove(out, in, n);
	memset((char *)out + n, 0, a->addrlen - n);
	return 0;
}

static const struct util_av_ops prefixed_ops = {
	.addr_format = FI_ADDR_STR,
	.str_prefix = "fi_shm://",
	.normalize = prefixed_normalize,
};

/* Insert count addresses from addr; want[i]: 1 inserted, 0 refused. */
static void insert_expect(const void *addr, size_t count, const int *want)
{
	fi_addr_t fa[8];
	int err[8];
	size_t i, good = 0;

	cr_assert(count <= 8);
	for (i = 0; i < count; i++) {
		fa[i] = 12345;
		err[i] = 99;
		good += want[i];
	}
	cr_assert_eq(fi_av_insert(av, addr, count, fa, FI_SYNC_ERR, err),
		     (int)good);
	for (i = 0; i < count; i++) {
		if (want[i]) {
			cr_assert_eq(err[i], 0, "address %zu", i);
			cr_assert_neq(fa[i], FI_ADDR_NOTAVAIL, "address %zu", i);
		} else {
			cr_assert_eq(err[i], FI_EINVAL, "address %zu: %d", i,
				     err[i]);
			cr_assert_eq(fa[i], FI_ADDR_NOTAVAIL, "address %zu", i);
		}
	}
}

Test(av, addr_str_bad_strings_as_pointer_array)
{
	static const char binary[] = { 0x01, (char)0xfe, (char)0x80, 0x7f, 0 };
	const char *names[] = { "abc", "", "shm://x", binary, "fi_shm:",
				"fi_shm://ok", NULL };
	const int want[] = { 0, 0, 0, 0, 0, 1, 0 };

	open_av(FI_AV_TABLE, &prefixed_ops);
	insert_expect(names, 7, want);
	cr_assert_eq(fi_close(&av->fid), 0);
	/* a provider without a prefix reads the same array the same way */
	open_av(FI_AV_TABLE, &util_av_str_ops);
	insert_expect(names, 7, (const int[]){ 1, 0, 1, 1, 1, 1, 0 });
}

Test(av, addr_str_bad_packed_strings)
{
	/* packed: the prefix first, then an empty and a binary string */
	static const char packed[] = "fi_shm://a\0"
				     "\0"
				     "\x01\xfe\x80\x7f\x02\x03\x04\x05\0"
				     "fi_shm://\0"
				     "fi_shm:/a\0"
				     "fi_shm://b";
	const int want[] = { 1, 0, 0, 0, 0, 1 };
	/* not beginning with the prefix, yet no pointer: text or binary */
	static const char unprefixed[] = "fi_shm:\0fi_shm://c";
	static const char binary[] = "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\0"
				     "fi_shm://d";
	static const char spaced[] = "fi_shm\t://e\0fi_shm://e";
	const int bad_good[] = { 0, 1 };

	open_av(FI_AV_TABLE, &prefixed_ops);
	insert_expect(packed, 6, want);
	insert_expect(unprefixed, 2, bad_good);
	insert_expect(binary, 2, bad_good);
	insert_expect(spaced, 2, bad_good);
	/* what went in is what was meant */
	cr_assert_str_eq(util_av_addr(util_av_from_fid(av), 0), "fi_shm://a");
	cr_assert_str_eq(util_av_addr(util_av_from_fid(av), 1), "fi_shm://b");
	cr_assert_str_eq(util_av_addr(util_av_from_fid(av), 4), "fi_shm://e");
}

/*
 * A short packed string without the prefix ("abc") looks like the start of
 * a pointer array: the insert must neither read it past its end as a
 * pointer nor follow that "pointer".  Placed at the very end of a page
 * whose next page is unmapped, any read past the string would fault.
 */
Test(av, addr_str_short_packed_string_at_page_end)
{
	static const char *const texts[] = { "abc", "", "ab", "x:y", "\x01" };
	long page = sysconf(_SC_PAGESIZE);
	char *mem, *s;
	size_t i, n;

	mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(mem, MAP_FAILED);
	cr_assert_eq(munmap(mem + page, page), 0);
	open_av(FI_AV_TABLE, &prefixed_ops);
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		n = strlen(texts[i]) + 1;
		s = mem + page - n;
		memcpy(s, texts[i], n);
		insert_expect(s, 1, (const int[]){ 0 });
	}
	/* The same strings in ordinary memory, followed by other data. */
	insert_expect("abc", 1, (const int[]){ 0 });
	insert_expect("ab\0fi_shm://z", 2, (const int[]){ 0, 1 });
	/* A real pointer array of short bad strings is still read as one. */
	insert_expect((const char *const[]){ "abc", "fi_shm://q" }, 2,
		      (const int[]){ 0, 1 });
	cr_assert_eq(munmap(mem, page), 0);
}

/* ---- scale and the reverse map ------------------------------------------- */

Test(av, many_addresses_reverse_lookup, .timeout = 30)
{
	enum { N = 4096 };
	struct sockaddr_in *a = calloc(N, sizeof(*a));
	fi_addr_t *fa = calloc(N, sizeof(*fa));
	struct util_av *uav;
	void *first;
	int i;

	cr_assert(a && fa);
	open_av(FI_AV_MAP, &util_av_sockaddr_in_ops);
	uav = util_av_from_fid(av);
	for (i = 0; i < N; i++)
		a[i] = sin_n((uint32_t)i);
	cr_assert_eq(fi_av_insert(av, a, 1, fa, 0, NULL), 1);
	first = util_av_addr(uav, fa[0]);
	cr_assert_eq(fi_av_insert(av, a + 1, N - 1, fa + 1, 0, NULL), N - 1);
	cr_assert_eq(util_av_addr(uav, fa[0]), first, "a stored address moved");
	for (i = 0; i < N; i++) {
		cr_assert_eq(util_av_lookup_addr(uav, &a[i]), fa[i],
			     "reverse lookup of %d", i);
		cr_assert_eq(memcmp(util_av_addr(uav, fa[i]), &a[i],
				    sizeof(a[i])),
			     0);
	}
	/* drop every other one; the rest still resolve both ways */
	for (i = 0; i < N; i += 2)
		cr_assert_eq(fi_av_remove(av, &fa[i], 1, 0), 0);
	for (i = 0; i < N; i++) {
		if (i % 2 == 0) {
			cr_assert_eq(util_av_lookup_addr(uav, &a[i]),
				     FI_ADDR_NOTAVAIL);
			cr_assert_null(util_av_addr(uav, fa[i]));
		} else {
			cr_assert_eq(util_av_lookup_addr(uav, &a[i]), fa[i]);
		}
	}
	cr_assert_eq(uav->count, N / 2);
	free(a);
	free(fa);
}

Test(av, reverse_lookup_ignores_sockaddr_padding)
{
	struct sockaddr_in a = sin4("10.9.8.7", 99), clean;
	fi_addr_t fa;

	clean = a;
	memset(a.sin_zero, 0x5a, sizeof(a.sin_zero));
	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(av), &clean), fa);
	clean.sin_port = htons(100);
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(av), &clean),
		     FI_ADDR_NOTAVAIL);
}

Test(av, rx_ctx_bits_are_ignored_by_provider_lookups)
{
	struct fi_av_attr attr = { .type = FI_AV_MAP, .rx_ctx_bits = 4 };
	struct sockaddr_in a = sin_n(5);
	fi_addr_t fa;

	cr_assert_eq(util_av_open(&dom, &attr, &util_av_sockaddr_in_ops, &av,
				  NULL),
		     0);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(util_av_addr(util_av_from_fid(av), fi_rx_addr(fa, 3, 4)),
		     util_av_addr(util_av_from_fid(av), fa));
	cr_assert_not_null(util_av_addr(util_av_from_fid(av), fa));
}

/* ---- errors ---------------------------------------------------------------- */

Test(av, sync_err_reports_each_address)
{
	struct sockaddr_in a[3];
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	fi_addr_t fa[3];
	int err[3] = { 7, 7, 7 };

	a[0] = sin_n(1);
	memcpy(&a[1], &un, sizeof(a[1]));
	a[2] = sin_n(2);
	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, a, 3, fa, FI_SYNC_ERR, err), 2);
	cr_assert_eq(err[0], 0);
	cr_assert_eq(err[1], FI_EINVAL);
	cr_assert_eq(err[2], 0);
	cr_assert_eq(fa[0], 0);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[2], 1);
	/* FI_SYNC_ERR without its array */
	cr_assert_eq(fi_av_insert(av, a, 1, fa, FI_SYNC_ERR, NULL),
		     -FI_EINVAL);
}

Test(av, invalid_calls)
{
	struct sockaddr_in a = sin_n(1);
	fi_addr_t fa = 0;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, NULL, 1, &fa, 0, NULL), -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, FI_TAGGED, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(fi_av_insert(av, &a, 1, NULL, FI_AV_USER_ID, NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, &a, 0, NULL, 0, NULL), 0);
	cr_assert_eq(fi_av_remove(av, &fa, 1, 1), -FI_EBADFLAGS);
	cr_assert_eq(fi_av_remove(av, &fa, 1, 0), -FI_EINVAL);
	cr_assert_eq(fi_av_bind(av, &dom.domain_fid.fid, 0), -FI_EINVAL);
	cr_assert_eq(util_av_from_fid(av)->count, 0);
}

Test(av, open_rejects_bad_attributes)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct util_av_ops bad = util_av_sockaddr_in_ops;
	struct fid_av *a2;

	attr.name = "shared";
	cr_assert_eq(util_av_open(&dom, &attr, &util_av_sockaddr_in_ops, &a2,
				  NULL),
		     -FI_ENOSYS);
	attr.name = NULL;
	attr.flags = FI_READ;
	cr_assert_eq(util_av_open(&dom, &attr, &util_av_sockaddr_in_ops, &a2,
				  NULL),
		     -FI_ENOSYS);
	attr.flags = 0;
	attr.type = 42;
	cr_assert_eq(util_av_open(&dom, &attr, &util_av_sockaddr_in_ops, &a2,
				  NULL),
		     -FI_EINVAL);
	attr.type = FI_AV_TABLE;
	attr.rx_ctx_bits = 17;
	cr_assert_eq(util_av_open(&dom, &attr, &util_av_sockaddr_in_ops, &a2,
				  NULL),
		     -FI_EINVAL);
	attr.rx_ctx_bits = 0;
	bad.addrlen = UTIL_AV_MAX_ADDRLEN + 1;
	cr_assert_eq(util_av_open(&dom, &attr, &bad, &a2, NULL), -FI_EINVAL);
	cr_assert_eq(atomic_load(&dom.ref), 0, "failed opens leaked a ref");
}

Test(av, close_busy_while_bound)
{
	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(atomic_load(&dom.ref), 1);
	util_av_get(util_av_from_fid(av));
	cr_assert_eq(fi_close(&av->fid), -FI_EBUSY);
	util_av_put(util_av_from_fid(av));
}

/* ---- asynchronous inserts --------------------------------------------------- */

Test(av, event_flag_without_eq_is_enoeq)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct sockaddr_in a = sin_n(1);
	struct rec_eq eq;
	fi_addr_t fa;
	int ctx;

	cr_assert_eq(util_av_open(&dom, &attr, &util_av_sockaddr_in_ops, &av,
				  NULL),
		     0);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, &ctx), -FI_ENOEQ);
	rec_eq_init(&eq);
	cr_assert_eq(fi_av_bind(av, &eq.eq.fid, 0), 0);
	cr_assert_eq(fi_av_bind(av, &eq.eq.fid, 0), -FI_EALREADY);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, &ctx), 0);
	cr_assert_eq(eq.n, 1);
	cr_assert_eq(eq.ev[0].entry.data, 1);
	/* a synchronous-only flag on an asynchronous AV */
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, FI_SYNC_ERR, &ctx),
		     -FI_EINVAL);
}

Test(av, async_insert_reports_errors_then_completion)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_in a[4];
	struct rec_eq eq;
	fi_addr_t fa[4];
	int ctx1, ctx2;

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	rec_eq_init(&eq);
	cr_assert_eq(fi_av_bind(av, &eq.eq.fid, 0), 0);
	a[0] = sin_n(1);
	memcpy(&a[1], &un, sizeof(a[1]));
	a[2] = sin_n(2);
	memcpy(&a[3], &un, sizeof(a[3]));

	cr_assert_eq(fi_av_insert(av, a, 4, fa, 0, &ctx1), 0);
	cr_assert_eq(eq.n, 3);
	cr_assert(eq.ev[0].err);
	cr_assert_eq(eq.ev[0].event, FI_AV_COMPLETE);
	cr_assert_eq(eq.ev[0].err_entry.fid, &av->fid);
	cr_assert_eq(eq.ev[0].err_entry.context, &ctx1);
	cr_assert_eq(eq.ev[0].err_entry.data, 1);
	cr_assert_eq(eq.ev[0].err_entry.err, FI_EINVAL);
	cr_assert(eq.ev[1].err);
	cr_assert_eq(eq.ev[1].err_entry.data, 3);
	cr_assert_not(eq.ev[2].err);
	cr_assert_eq(eq.ev[2].event, FI_AV_COMPLETE);
	cr_assert_eq(eq.ev[2].entry.fid, &av->fid);
	cr_assert_eq(eq.ev[2].entry.context, &ctx1);
	cr_assert_eq(eq.ev[2].entry.data, 2);
	cr_assert_eq(fa[0], 0);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[2], 1);
	cr_assert_eq(fa[3], FI_ADDR_NOTAVAIL);

	/* every address failing still completes once, with count 0 */
	cr_assert_eq(fi_av_insert(av, &a[1], 1, fa, 0, &ctx2), 0);
	cr_assert_eq(eq.n, 5);
	cr_assert(eq.ev[3].err);
	cr_assert_eq(eq.ev[3].err_entry.data, 0);
	cr_assert_not(eq.ev[4].err);
	cr_assert_eq(eq.ev[4].entry.context, &ctx2);
	cr_assert_eq(eq.ev[4].entry.data, 0);

	cr_assert_eq(fi_av_insertsvc(av, "10.0.0.1", "80", fa, 0, &ctx2), 0);
	cr_assert_eq(eq.n, 6);
	cr_assert_eq(eq.ev[5].entry.data, 1);
}

/* ---- provider hooks and user ids ---------------------------------------------- */

static int hook_inits, hook_finis;

static int hook_init(struct util_av *a, fi_addr_t fi_addr, const void *addr,
		     void *priv)
{
	const struct sockaddr_in *sin = addr;

	if (ntohs(sin->sin_port) == 666)
		return -FI_EHOSTUNREACH;
	*(uint64_t *)priv = fi_addr + 1000;
	hook_inits++;
	return 0;
}

static void hook_fini(struct util_av *a, fi_addr_t fi_addr, const void *addr,
		      void *priv)
{
	cr_assert_eq(*(uint64_t *)priv, fi_addr + 1000);
	hook_finis++;
}

static const struct util_av_ops hook_ops = {
	.addr_format = FI_SOCKADDR_IN,
	.priv_size = sizeof(uint64_t),
	.entry_init = hook_init,
	.entry_fini = hook_fini,
};

Test(av, provider_hooks_and_private_data)
{
	struct sockaddr_in a[3];
	int err[3];
	fi_addr_t fa[3];

	hook_inits = hook_finis = 0;
	open_av(FI_AV_TABLE, &hook_ops);
	a[0] = sin4("1.1.1.1", 1);
	a[1] = sin4("1.1.1.1", 666);
	a[2] = sin4("1.1.1.1", 2);
	cr_assert_eq(fi_av_insert(av, a, 3, fa, FI_SYNC_ERR, err), 2);
	cr_assert_eq(err[1], FI_EHOSTUNREACH);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[2], 1, "a failed address used up an index");
	cr_assert_eq(*(uint64_t *)util_av_priv(util_av_from_fid(av), fa[2]),
		     1001);
	cr_assert_eq(hook_inits, 2);
	cr_assert_eq(fi_av_remove(av, fa, 1, 0), 0);
	cr_assert_eq(hook_finis, 1);
	cr_assert_eq(fi_close(&av->fid), 0);
	av = NULL;
	cr_assert_eq(hook_finis, 2);
}

Test(av, user_ids_reported_for_source)
{
	struct sockaddr_in a[2];
	fi_addr_t fa[2] = { 0xabc, 0xdef };
	struct util_av *uav;

	open_av(FI_AV_MAP, &util_av_sockaddr_in_ops);
	uav = util_av_from_fid(av);
	a[0] = sin_n(1);
	a[1] = sin_n(2);
	cr_assert_eq(fi_av_insert(av, a, 2, fa, FI_AV_USER_ID, NULL), 2);
	cr_assert_neq(fa[0], 0xabc);
	cr_assert_eq(util_av_user_id(uav, fa[0]), 0xabc);
	cr_assert_eq(util_av_user_id(uav, fa[1]), 0xdef);
	cr_assert_eq(fi_av_insert(av, a, 1, fa, 0, NULL), 1);
	cr_assert_eq(util_av_user_id(uav, fa[0]), fa[0]);
}

/* ---- threads ---------------------------------------------------------------- */

#include <pthread.h>

enum { THREADS = 4, PER_THREAD = 2000 };
static fi_addr_t thread_fa[THREADS][PER_THREAD];

static void *insert_thread(void *arg)
{
	struct util_av *uav = util_av_from_fid(av);
	uintptr_t t = (uintptr_t)arg;
	struct sockaddr_in a;
	int i;

	for (i = 0; i < PER_THREAD; i++) {
		a = sin_n((uint32_t)(t * PER_THREAD + (uintptr_t)i));
		if (fi_av_insert(av, &a, 1, &thread_fa[t][i], 0, NULL) != 1)
			return (void *)1;
		if (util_av_lookup_addr(uav, &a) != thread_fa[t][i])
			return (void *)2;
		if (i % 3 == 0 &&
		    fi_av_remove(av, &thread_fa[t][i], 1, 0) != 0)
			return (void *)3;
	}
	return NULL;
}

Test(av, concurrent_inserts_under_thread_safe, .timeout = 30)
{
	struct util_av *uav;
	pthread_t th[THREADS];
	struct sockaddr_in a;
	void *ret;
	uintptr_t t;
	int i, live = 0;

	cr_assert_eq(dom.threading, FI_THREAD_SAFE);
	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	uav = util_av_from_fid(av);
	for (t = 0; t < THREADS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, insert_thread,
					    (void *)t),
			     0);
	for (t = 0; t < THREADS; t++) {
		cr_assert_eq(pthread_join(th[t], &ret), 0);
		cr_assert_null(ret, "thread %zu failed at step %p", (size_t)t,
			       ret);
	}
	for (t = 0; t < THREADS; t++) {
		for (i = 0; i < PER_THREAD; i++) {
			a = sin_n((uint32_t)(t * PER_THREAD + (uintptr_t)i));
			if (i % 3 == 0) {
				cr_assert_eq(util_av_lookup_addr(uav, &a),
					     FI_ADDR_NOTAVAIL);
				continue;
			}
			live++;
			cr_assert_eq(util_av_lookup_addr(uav, &a),
				     thread_fa[t][i]);
			assert_lookup_in(thread_fa[t][i], &a);
		}
	}
	cr_assert_eq(uav->count, (uint32_t)live);
}

Test(av, provider_side_insert)
{
	struct sockaddr_in a = sin_n(3), un = sin_n(4);
	fi_addr_t fa;

	open_av(FI_AV_MAP, &util_av_sockaddr_in_ops);
	cr_assert_eq(util_av_insert_addr(util_av_from_fid(av), &a, &fa), 0);
	assert_lookup_in(fa, &a);
	un.sin_family = AF_INET6;
	cr_assert_eq(util_av_insert_addr(util_av_from_fid(av), &un, &fa),
		     -FI_EINVAL);
}

/* ---- FI_ADDR_STR with a binary stored form ----------------------------------- */

static int num_from_str(const struct util_av *a, const char *str, void *addr)
{
	unsigned long long v;
	char *end;

	if (strncmp(str, "fi_num://", 9))
		return -FI_EINVAL;
	v = strtoull(str + 9, &end, 10);
	if (*end || end == str + 9)
		return -FI_EINVAL;
	memcpy(addr, &(uint64_t){ v }, sizeof(uint64_t));
	return 0;
}

static int num_to_str(const struct util_av *a, const void *addr, char *buf,
		      size_t len)
{
	uint64_t v;

	memcpy(&v, addr, sizeof(v));
	return snprintf(buf, len, "fi_num://%llu", (unsigned long long)v);
}

static const struct util_av_ops num_ops = {
	.addr_format = FI_ADDR_STR,
	.addrlen = sizeof(uint64_t),
	.from_str = num_from_str,
	.to_str = num_to_str,
};

Test(av, addr_str_with_binary_storage)
{
	const char *names[] = { "fi_num://7", "fi_num://x", "fi_num://123456" };
	uint64_t key = 123456;
	struct util_av *uav;
	fi_addr_t fa[3];
	char buf[32];
	size_t len = sizeof(buf);

	open_av(FI_AV_TABLE, &num_ops);
	uav = util_av_from_fid(av);
	cr_assert_eq(fi_av_insert(av, names, 3, fa, 0, NULL), 2);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fa[2], 1);
	cr_assert_eq(*(uint64_t *)util_av_addr(uav, fa[2]), 123456);
	cr_assert_eq(util_av_lookup_addr(uav, &key), fa[2]);
	cr_assert_eq(fi_av_lookup(av, fa[2], buf, &len), 0);
	cr_assert_str_eq(buf, "fi_num://123456");
	cr_assert_eq(len, strlen("fi_num://123456") + 1);
	cr_assert_eq(fi_av_insertsvc(av, "fi_num://8", NULL, fa, 0, NULL), 1);
	cr_assert_eq(fa[0], 2);
	/* a provider giving only one of the two converters is refused */
	{
		struct util_av_ops half = num_ops;
		struct fi_av_attr attr = { .type = FI_AV_TABLE };
		struct fid_av *a2;

		half.to_str = NULL;
		cr_assert_eq(util_av_open(&dom, &attr, &half, &a2, NULL),
			     -FI_EINVAL);
	}
}

Test(av, straddr_of_unprintable_address_prints_bytes)
{
	struct sockaddr_in a = { .sin_family = AF_UNIX };
	char buf[128];
	size_t len = sizeof(buf);

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_straddr(av, &a, buf, &len), buf);
	cr_assert_eq(strncmp(buf, "fi_addr_raw://0100", 18), 0, "%s", buf);
	cr_assert_eq(len, strlen("fi_addr_raw://") + 2 * sizeof(a) + 1);
	cr_assert_eq(strlen(buf) + 1, len);
}

/* ---- with the util EQ ---------------------------------------------------------- */

#include "weft/util_eq.h"

Test(av, async_completion_read_from_util_eq)
{
	struct sockaddr_in a[2];
	struct fi_eq_entry entry;
	struct fid_eq *eq;
	uint32_t event;
	fi_addr_t fa[2];
	int ctx;

	a[0] = sin_n(1);
	a[1] = sin_n(2);
	cr_assert_eq(util_eq_open(NULL, NULL, &eq, NULL), 0);
	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_bind(av, &eq->fid, 0), 0);
	cr_assert_eq(fi_av_insert(av, a, 2, fa, 0, &ctx), 0);
	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		     sizeof(entry));
	cr_assert_eq(event, FI_AV_COMPLETE);
	cr_assert_eq(entry.fid, &av->fid);
	cr_assert_eq(entry.context, &ctx);
	cr_assert_eq(entry.data, 2);
	cr_assert_eq(fa[1], 1);
	cr_assert_eq(fi_close(&av->fid), 0);
	av = NULL;
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/* fi_eq(3): an EQ still bound to an AV does not close. */
Test(av, bound_eq_close_is_busy)
{
	struct fid_eq *eq;

	cr_assert_eq(util_eq_open(NULL, NULL, &eq, NULL), 0);
	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_bind(av, &eq->fid, 0), 0);
	cr_assert_eq(fi_close(&eq->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&av->fid), 0);
	av = NULL;
	cr_assert_eq(fi_close(&eq->fid), 0);
}

Test(av, async_errors_read_from_util_eq)
{
	struct sockaddr_in a[2];
	struct fi_eq_err_entry err;
	struct fi_eq_entry entry;
	struct fid_eq *eq;
	uint32_t event;
	fi_addr_t fa[2];
	int ctx;

	a[0] = sin_n(1);
	a[1] = sin_n(2);
	a[1].sin_family = AF_UNIX; /* malformed: fails alone */
	cr_assert_eq(util_eq_open(NULL, NULL, &eq, NULL), 0);
	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_bind(av, &eq->fid, 0), 0);
	cr_assert_eq(fi_av_insert(av, a, 2, fa, 0, &ctx), 0);
	/* The failed address comes first, as an error entry. */
	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		     -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	cr_assert_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
	cr_assert_eq(err.fid, &av->fid);
	cr_assert_eq(err.context, &ctx);
	cr_assert_eq(err.data, 1);
	cr_assert_eq(err.err, FI_EINVAL);
	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		     sizeof(entry));
	cr_assert_eq(event, FI_AV_COMPLETE);
	cr_assert_eq(entry.data, 1);
	cr_assert_eq(fa[0], 0);
	cr_assert_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_close(&av->fid), 0);
	av = NULL;
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/* A bad packed string on an AV bound to an EQ: an error event, no crash. */
Test(av, addr_str_bad_packed_string_reported_on_eq)
{
	static const char packed[] = "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\0"
				     "fi_shm://ok";
	struct fi_eq_err_entry err;
	struct fi_eq_entry entry;
	struct fid_eq *eq;
	uint32_t event;
	fi_addr_t fa[2];
	int ctx;

	cr_assert_eq(util_eq_open(NULL, NULL, &eq, NULL), 0);
	open_av(FI_AV_TABLE, &prefixed_ops);
	cr_assert_eq(fi_av_bind(av, &eq->fid, 0), 0);
	cr_assert_eq(fi_av_insert(av, packed, 2, fa, 0, &ctx), 0);
	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		     -FI_EAVAIL);
	cr_assert_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
	cr_assert_eq(err.data, 0, "the first address failed");
	cr_assert_eq(err.err, FI_EINVAL);
	cr_assert_eq(err.context, &ctx);
	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		     sizeof(entry));
	cr_assert_eq(event, FI_AV_COMPLETE);
	cr_assert_eq(entry.data, 1, "one address inserted");
	cr_assert_eq(fa[0], FI_ADDR_NOTAVAIL);
	cr_assert_str_eq(util_av_addr(util_av_from_fid(av), fa[1]),
			 "fi_shm://ok");
	cr_assert_eq(fi_close(&av->fid), 0);
	av = NULL;
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/* FI_AV_MAP: the same address inserted again keeps its one fi_addr_t (an
 * MPI library may insert a peer from two threads at once); the entry goes
 * with the last remove.  FI_AV_TABLE keeps its indices in insertion order:
 * a new one each time. */
Test(av, map_same_address_one_fi_addr)
{
	struct sockaddr_in a = sin_n(1), b = sin_n(2), two[2];
	fi_addr_t fa, again, pair[2], fb;

	open_av(FI_AV_MAP, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fi_av_insert(av, &a, 1, &again, 0, NULL), 1);
	cr_assert_eq(again, fa, "a second insert answers the same fi_addr");
	two[0] = b;
	two[1] = a;
	cr_assert_eq(fi_av_insert(av, two, 2, pair, 0, NULL), 2);
	cr_assert_eq(pair[1], fa);
	fb = pair[0];
	cr_assert_neq(fb, fa);
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(av), &a), fa);
	/* three inserts of a: two removes leave it, the third takes it */
	cr_assert_eq(fi_av_remove(av, &fa, 1, 0), 0);
	cr_assert_eq(fi_av_remove(av, &fa, 1, 0), 0);
	assert_lookup_in(fa, &a);
	cr_assert_eq(fi_av_remove(av, &fa, 1, 0), 0);
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(av), &a),
		     FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_av_remove(av, &fa, 1, 0), -FI_EINVAL);
	assert_lookup_in(fb, &b);
}

Test(av, table_same_address_new_index)
{
	struct sockaddr_in a = sin_n(1);
	fi_addr_t f[2];

	open_av(FI_AV_TABLE, &util_av_sockaddr_in_ops);
	cr_assert_eq(fi_av_insert(av, &a, 1, &f[0], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(av, &a, 1, &f[1], 0, NULL), 1);
	cr_assert_eq(f[0], 0);
	cr_assert_eq(f[1], 1);
}

/*
 * Under FI_PROGRESS_AUTO endpoints' threads look addresses up (a peer
 * that connects, FI_SOURCE) while the application inserts, whatever the
 * threading model: the AV takes its lock then.  Under FI_THREAD_DOMAIN
 * with manual progress it need not.
 */
static bool av_locked(enum fi_threading threading, enum fi_progress progress)
{
	struct fi_domain_attr dattr = { .threading = threading,
					.data_progress = progress };
	struct fi_info info = { .domain_attr = &dattr };
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct util_domain d;
	struct fid_av *a;
	bool locked;

	cr_assert_eq(util_domain_init(&d, NULL, &info, NULL), 0);
	cr_assert_eq(util_av_open(&d, &attr, &util_av_sockaddr_in_ops, &a, NULL),
		     0);
	locked = util_av_from_fid(a)->lock.needed;
	cr_assert_eq(fi_close(&a->fid), 0);
	cr_assert_eq(util_domain_fini(&d), 0);
	return locked;
}

Test(av, locked_for_progress_threads)
{
	cr_assert(av_locked(FI_THREAD_DOMAIN, FI_PROGRESS_AUTO));
	cr_assert(av_locked(FI_THREAD_SAFE, FI_PROGRESS_MANUAL));
	cr_assert_not(av_locked(FI_THREAD_DOMAIN, FI_PROGRESS_MANUAL));
}
