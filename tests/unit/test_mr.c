/* SPDX-License-Identifier: BSD-2-Clause */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include "weft/util_cntr.h"
#include "weft/util_domain.h"
#include "weft/util_eq.h"
#include "weft/util_mr.h"
#include "weft/util_rdm.h"

static struct util_mr_map map;
static char buf[4096];

static uint64_t insert(uint64_t base_or_offset, size_t len, uint64_t access,
		       uint64_t requested, int expect)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
		.offset = base_or_offset,
		.requested_key = requested,
	};
	uint64_t key = 0;

	cr_assert_eq(util_mr_map_insert(&map, &attr, buf, &key), expect);
	return key;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- keys ---------------------------------------------------------------- */

Test(mr_map, provider_keys_unique_across_removal, .timeout = 30)
{
	enum { N = 20000 };
	uint64_t *keys = malloc(2 * N * sizeof(*keys));
	size_t i;

	cr_assert_not_null(keys);
	cr_assert_eq(util_mr_map_init(&map, NULL, FI_MR_PROV_KEY, 0, true), 0);
	for (i = 0; i < N; i++) {
		keys[i] = insert(0, 64, FI_REMOTE_READ, 7, 0);
		cr_assert_neq(keys[i], FI_KEY_NOTAVAIL);
	}
	for (i = 0; i < N; i++)
		cr_assert_eq(util_mr_map_remove(&map, keys[i]), 0);
	cr_assert_eq(map.count, 0);
	for (i = N; i < 2 * N; i++)
		keys[i] = insert(0, 64, FI_REMOTE_READ, 7, 0);
	qsort(keys, 2 * N, sizeof(*keys), cmp_u64);
	for (i = 1; i < 2 * N; i++)
		cr_assert_neq(keys[i], keys[i - 1], "key %#llx handed out twice",
			      (unsigned long long)keys[i]);
	/* keys look random: both halves of the key space are used */
	cr_assert_lt(keys[0], 1ULL << 63);
	cr_assert_geq(keys[2 * N - 1], 1ULL << 63);
	util_mr_map_fini(&map);
	free(keys);
}

Test(mr_map, two_maps_pick_different_keys)
{
	struct util_mr_map other;
	uint64_t k1, k2;

	cr_assert_eq(util_mr_map_init(&map, NULL, FI_MR_BASIC, 0, false), 0);
	cr_assert_eq(util_mr_map_init(&other, NULL, FI_MR_PROV_KEY, 0, false),
		     0);
	cr_assert(map.mr_mode & FI_MR_PROV_KEY);
	cr_assert(map.mr_mode & FI_MR_VIRT_ADDR);
	k1 = insert((uintptr_t)buf, 16, FI_REMOTE_READ, 0, 0);
	{
		struct iovec iov = { buf, 16 };
		struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1 };

		cr_assert_eq(util_mr_map_insert(&other, &attr, NULL, &k2), 0);
	}
	cr_assert_neq(k1, k2, "same seed in two maps");
	util_mr_map_fini(&other);
	util_mr_map_fini(&map);
}

Test(mr_map, requested_keys_and_collisions)
{
	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	cr_assert_eq(insert(0, 16, FI_REMOTE_WRITE, 42, 0), 42);
	insert(0, 16, FI_REMOTE_WRITE, 42, -FI_ENOKEY);
	cr_assert_eq(insert(0, 16, FI_REMOTE_WRITE, 0, 0), 0);
	cr_assert_eq(insert(0, 16, FI_REMOTE_WRITE, UINT64_MAX - 1, 0),
		     UINT64_MAX - 1);
	cr_assert_eq(util_mr_map_lookup(&map, 42), buf);
	cr_assert_null(util_mr_map_lookup(&map, 43));
	cr_assert_eq(util_mr_map_remove(&map, 42), 0);
	cr_assert_eq(util_mr_map_remove(&map, 42), -FI_ENOKEY);
	cr_assert_null(util_mr_map_lookup(&map, 42));
	cr_assert_eq(insert(0, 16, FI_REMOTE_WRITE, 42, 0), 42);
	cr_assert_eq(map.count, 3);
	util_mr_map_fini(&map);
}

Test(mr_map, many_requested_keys_lookup)
{
	uint64_t k;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	for (k = 0; k < 5000; k++)
		insert(0, 8, FI_REMOTE_READ, k * 4096, 0);
	for (k = 0; k < 5000; k++) {
		cr_assert_eq(util_mr_map_lookup(&map, k * 4096), buf);
		cr_assert_null(util_mr_map_lookup(&map, k * 4096 + 1));
	}
	util_mr_map_fini(&map);
}

Test(mr_map, insert_rejects_bad_registrations)
{
	struct iovec iov[5];
	struct fi_mr_attr attr = { .mr_iov = iov, .iov_count = 5 };
	uint64_t key;
	int i;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 4, true), 0);
	for (i = 0; i < 5; i++) {
		iov[i].iov_base = buf;
		iov[i].iov_len = 8;
	}
	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), -FI_EINVAL);
	attr.iov_count = 0;
	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), -FI_EINVAL);
	attr.iov_count = 1;
	attr.access = 1ULL << 62;
	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), -FI_EINVAL);
	attr.access = FI_REMOTE_READ;
	/* offset-based range that would wrap */
	attr.offset = UINT64_MAX - 4;
	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), -FI_EINVAL);
	/* local memory that would wrap */
	attr.offset = 0;
	iov[0].iov_base = (void *)(UINTPTR_MAX - 3);
	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), -FI_EINVAL);
	/* iov lengths whose sum wraps */
	iov[0].iov_base = buf;
	iov[0].iov_len = SIZE_MAX;
	iov[1].iov_len = 2;
	attr.iov_count = 2;
	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), -FI_EINVAL);
	cr_assert_eq(map.count, 0);
	util_mr_map_fini(&map);
}

/* ---- verify ---------------------------------------------------------------- */

#define V(addr, len, acc) util_mr_map_verify(&map, key, (addr), (len), (acc), &p)

Test(mr_map, verify_offset_based)
{
	void *p = NULL;
	uint64_t key;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	key = insert(0, sizeof(buf), FI_REMOTE_READ | FI_REMOTE_WRITE, 5, 0);

	cr_assert_eq(V(0, sizeof(buf), FI_REMOTE_READ), 0);
	cr_assert_eq(p, buf);
	cr_assert_eq(V(100, 10, FI_REMOTE_WRITE), 0);
	cr_assert_eq(p, buf + 100);
	cr_assert_eq(V(4095, 1, FI_REMOTE_READ | FI_REMOTE_WRITE), 0);
	cr_assert_eq(p, buf + 4095);
	cr_assert_eq(V(4096, 0, FI_REMOTE_READ), 0, "empty range at the end");
	cr_assert_eq(p, buf + 4096);
	cr_assert_eq(V(0, 0, FI_REMOTE_READ), 0);
	cr_assert_eq(p, buf);

	p = NULL;
	cr_assert_eq(V(4096, 1, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(4097, 0, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(0, 4097, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(1, 4096, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(1, SIZE_MAX, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(4095, SIZE_MAX, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(UINT64_MAX, 1, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(UINT64_MAX, 0, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(UINT64_MAX - 4095, 4096, FI_REMOTE_READ), -FI_EINVAL);
	/* addr + len wraps to a small number inside the region */
	cr_assert_eq(V(UINT64_MAX - 1, 10, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(2048, (size_t)(UINT64_MAX - 2047), FI_REMOTE_READ),
		     -FI_EINVAL);
	cr_assert_null(p, "failed verify wrote the output");
	util_mr_map_fini(&map);
}

Test(mr_map, verify_access_bits)
{
	void *p;
	uint64_t key;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	key = insert(0, 64, FI_REMOTE_READ, 1, 0);
	cr_assert_eq(V(0, 8, FI_REMOTE_READ), 0);
	cr_assert_eq(V(0, 8, FI_REMOTE_WRITE), -FI_EACCES);
	cr_assert_eq(V(0, 8, FI_REMOTE_READ | FI_REMOTE_WRITE), -FI_EACCES);
	cr_assert_eq(V(0, 8, FI_SEND), -FI_EACCES);
	/* access is checked even for out-of-range requests */
	cr_assert_eq(V(1000, 8, FI_REMOTE_WRITE), -FI_EACCES);
	key = insert(0, 64, 0, 2, 0);
	cr_assert_eq(V(0, 8, FI_REMOTE_READ), -FI_EACCES);
	key = insert(0, 64, FI_REMOTE_WRITE, 3, 0);
	cr_assert_eq(V(0, 8, FI_REMOTE_WRITE), 0);
	cr_assert_eq(V(0, 8, FI_REMOTE_READ), -FI_EACCES);
	key = 99;
	cr_assert_eq(V(0, 8, FI_REMOTE_READ), -FI_ENOKEY);
	cr_assert_eq(util_mr_map_verify(&map, 1, 0, 8, FI_REMOTE_READ, NULL),
		     -FI_EINVAL);
	util_mr_map_fini(&map);
}

Test(mr_map, verify_virt_addr)
{
	uint64_t base = (uintptr_t)buf;
	void *p;
	uint64_t key;

	cr_assert_eq(util_mr_map_init(&map, NULL, FI_MR_VIRT_ADDR, 0, true),
		     0);
	key = insert(0, 1024, FI_REMOTE_READ, 9, 0);
	cr_assert_eq(V(base, 1024, FI_REMOTE_READ), 0);
	cr_assert_eq(p, buf);
	cr_assert_eq(V(base + 1000, 24, FI_REMOTE_READ), 0);
	cr_assert_eq(p, buf + 1000);
	cr_assert_eq(V(base - 1, 1, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(base - 1, 2, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(0, 8, FI_REMOTE_READ), -FI_EINVAL, "offset 0 is not "
							   "valid under VIRT_ADDR");
	cr_assert_eq(V(base + 1023, 2, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(base + 1, SIZE_MAX, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(UINT64_MAX, 1, FI_REMOTE_READ), -FI_EINVAL);
	util_mr_map_fini(&map);
}

Test(mr_map, verify_region_at_top_of_address_space)
{
	void *p;
	uint64_t key;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	/* offset-based region whose last byte is peer address 2^64 - 2 */
	key = insert(UINT64_MAX - 4096, 4096, FI_REMOTE_READ, 11, 0);
	cr_assert_eq(V(UINT64_MAX - 4096, 4096, FI_REMOTE_READ), 0);
	cr_assert_eq(p, buf);
	cr_assert_eq(V(UINT64_MAX - 1, 1, FI_REMOTE_READ), 0);
	cr_assert_eq(p, buf + 4095);
	cr_assert_eq(V(UINT64_MAX - 1, 2, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(UINT64_MAX, 1, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(UINT64_MAX, 0, FI_REMOTE_READ), 0, "empty at the end");
	cr_assert_eq(V(UINT64_MAX - 1, SIZE_MAX, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(0, 1, FI_REMOTE_READ), -FI_EINVAL);
	cr_assert_eq(V(UINT64_MAX - 4097, 1, FI_REMOTE_READ), -FI_EINVAL);
	/* the largest region that does not wrap, and one byte more */
	insert(UINT64_MAX - 4096, 4097, FI_REMOTE_READ, 12, -FI_EINVAL);
	util_mr_map_fini(&map);
}

Test(mr_map, verify_vectored_registration)
{
	struct iovec iov[3] = { { buf, 100 }, { buf + 1000, 0 },
				{ buf + 2000, 100 } };
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = 3,
		.access = FI_REMOTE_WRITE,
		.requested_key = 77,
	};
	struct iovec out[2];
	size_t n;
	uint64_t key;
	void *p;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), 0);
	n = 2;
	cr_assert_eq(util_mr_map_verify_iov(&map, key, 50, 100,
					    FI_REMOTE_WRITE, out, &n),
		     0);
	cr_assert_eq(n, 2);
	cr_assert_eq(out[0].iov_base, buf + 50);
	cr_assert_eq(out[0].iov_len, 50);
	cr_assert_eq(out[1].iov_base, buf + 2000);
	cr_assert_eq(out[1].iov_len, 50);
	n = 1;
	cr_assert_eq(util_mr_map_verify_iov(&map, key, 50, 100,
					    FI_REMOTE_WRITE, out, &n),
		     -FI_ETOOSMALL);
	cr_assert_eq(V(50, 100, FI_REMOTE_WRITE), -FI_ETOOSMALL);
	cr_assert_eq(V(100, 100, FI_REMOTE_WRITE), 0);
	cr_assert_eq(p, buf + 2000);
	cr_assert_eq(V(150, 51, FI_REMOTE_WRITE), -FI_EINVAL);
	n = 2;
	cr_assert_eq(util_mr_map_verify_iov(&map, key, 200, 0,
					    FI_REMOTE_WRITE, out, &n),
		     0);
	cr_assert_eq(n, 0);
	util_mr_map_fini(&map);
}

/* ---- the MR object ------------------------------------------------------- */

static struct util_domain dom;

static void dom_setup(void)
{
	cr_assert_eq(util_domain_init(&dom, NULL, NULL, NULL), 0);
}

static void dom_teardown(void)
{
	cr_assert_eq(util_domain_fini(&dom), 0);
}

TestSuite(util_mr, .init = dom_setup, .fini = dom_teardown);

Test(util_mr, reg_key_desc_close)
{
	struct fid_mr *mr, *mr2;
	struct util_mr *umr;
	void *p;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	cr_assert_eq(util_mr_reg(&dom, &map, buf, 128,
				 FI_REMOTE_READ | FI_SEND, 0, 1234, 0, &mr,
				 &map),
		     0);
	cr_assert_eq(fi_mr_key(mr), 1234);
	umr = fi_mr_desc(mr);
	cr_assert_eq(umr, util_mr_from_fid(mr));
	cr_assert_eq(umr->iov[0].iov_base, buf);
	cr_assert_eq(mr->fid.context, &map);
	cr_assert_eq(atomic_load(&dom.ref), 1);
	cr_assert_eq(util_mr_map_lookup(&map, 1234), umr);
	cr_assert_eq(util_mr_map_verify(&map, 1234, 0, 128, FI_REMOTE_READ,
					&p),
		     0);
	cr_assert_eq(p, buf);
	cr_assert_eq(fi_mr_enable(mr), 0);

	cr_assert_eq(util_mr_reg(&dom, &map, buf, 128, FI_REMOTE_READ, 0,
				 1234, 0, &mr2, NULL),
		     -FI_ENOKEY);
	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_null(util_mr_map_lookup(&map, 1234));
	cr_assert_eq(util_mr_map_verify(&map, 1234, 0, 1, FI_REMOTE_READ, &p),
		     -FI_ENOKEY);
	cr_assert_eq(atomic_load(&dom.ref), 0);
	util_mr_map_fini(&map);
}

/*
 * A registration peers cannot reach (no FI_REMOTE_*) takes no key: fi_mr_key
 * says FI_KEY_NOTAVAIL and its requested key stays free, so a client that
 * registers every local buffer with requested key 0 (aws-ofi-nccl without
 * FI_RMA) is not refused the second time, as from libfabric 2.2 on.  It is
 * still checked as any registration is.
 */
Test(util_mr, local_registrations_take_no_key)
{
	struct fid_mr *a, *b, *r, *r2;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	cr_assert_eq(util_mr_reg(&dom, &map, buf, 64, FI_SEND | FI_RECV, 0, 0,
				 0, &a, NULL),
		     0);
	cr_assert_eq(util_mr_reg(&dom, &map, buf + 64, 64, FI_SEND | FI_READ,
				 0, 0, 0, &b, NULL),
		     0);
	cr_assert_eq(fi_mr_key(a), FI_KEY_NOTAVAIL);
	cr_assert_eq(fi_mr_key(b), FI_KEY_NOTAVAIL);
	cr_assert_null(util_mr_map_lookup(&map, 0));
	/* the key stays free for a registration peers reach */
	cr_assert_eq(util_mr_reg(&dom, &map, buf, 64, FI_REMOTE_WRITE, 0, 0, 0,
				 &r, NULL),
		     0);
	cr_assert_eq(fi_mr_key(r), 0);
	/* and those still collide */
	cr_assert_eq(util_mr_reg(&dom, &map, buf, 64, FI_REMOTE_READ, 0, 0, 0,
				 &r2, NULL),
		     -FI_ENOKEY);
	/* a local registration is validated all the same */
	cr_assert_eq(util_mr_reg(&dom, &map, buf, 64, 1ULL << 61, 0, 0, 0, &r2,
				 NULL),
		     -FI_EINVAL);
	cr_assert_eq(fi_close(&a->fid), 0);
	cr_assert_eq(fi_close(&b->fid), 0);
	cr_assert_eq(util_mr_map_lookup(&map, 0), util_mr_from_fid(r));
	cr_assert_eq(fi_close(&r->fid), 0);
	cr_assert_eq(atomic_load(&dom.ref), 0);
	util_mr_map_fini(&map);
}

Test(util_mr, reg_validates)
{
	struct fi_mr_attr attr = { .iov_count = 1, .access = FI_REMOTE_READ };
	struct iovec iov = { buf, 64 };
	struct fid_mr *mr;

	cr_assert_eq(util_mr_map_init(&map, NULL, FI_MR_PROV_KEY, 1, true), 0);
	cr_assert_eq(util_mr_reg(&dom, &map, buf, 64, 1ULL << 61, 0, 0, 0, &mr,
				 NULL),
		     -FI_EINVAL);
	cr_assert_eq(util_mr_reg(&dom, &map, buf, 64, FI_REMOTE_READ, 0, 0,
				 FI_TAGGED, &mr, NULL),
		     -FI_EBADFLAGS);
	cr_assert_eq(util_mr_regv(&dom, &map, NULL, 1, FI_REMOTE_READ, 0, 0, 0,
				  &mr, NULL),
		     -FI_EINVAL);
	{
		struct iovec two[2] = { { buf, 8 }, { buf + 8, 8 } };

		cr_assert_eq(util_mr_regv(&dom, &map, two, 2, FI_REMOTE_READ,
					  0, 0, 0, &mr, NULL),
			     -FI_EINVAL, "over the iov limit");
	}
	attr.mr_iov = &iov;
	attr.iface = FI_HMEM_CUDA;
	cr_assert_eq(util_mr_regattr(&dom, &map, &attr, 0, &mr), -FI_ENOSYS);
	cr_assert_eq(atomic_load(&dom.ref), 0);
	cr_assert_eq(map.count, 0);

	/* provider keys ignore the requested one */
	attr.iface = FI_HMEM_SYSTEM;
	attr.requested_key = 5;
	cr_assert_eq(util_mr_regattr(&dom, &map, &attr, 0, &mr), 0);
	cr_assert_neq(fi_mr_key(mr), FI_KEY_NOTAVAIL);
	cr_assert_eq(util_mr_map_lookup(&map, fi_mr_key(mr)),
		     util_mr_from_fid(mr));
	cr_assert_eq(fi_close(&mr->fid), 0);
	util_mr_map_fini(&map);
}

/*
 * A domain bound to an EQ with FI_REG_MR completes registrations there.
 * Its own domain and a real util EQ: the domain holds the EQ until
 * util_domain_fini, which must run before the EQ goes.
 */
Test(util_mr, async_registration_event)
{
	struct util_domain d;
	struct fi_eq_entry entry;
	struct fid_eq *eq;
	struct fid_mr *mr;
	uint32_t event;
	int ctx;

	cr_assert_eq(util_eq_open(NULL, NULL, &eq, NULL), 0);
	cr_assert_eq(util_domain_init(&d, NULL, NULL, NULL), 0);
	cr_assert_eq(util_domain_bind(&d.domain_fid.fid, &eq->fid, FI_REG_MR),
		     0);
	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	cr_assert_eq(util_mr_reg(&d, &map, buf, 64, FI_REMOTE_READ, 0, 3, 0,
				 &mr, &ctx),
		     0);
	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		     sizeof(entry));
	cr_assert_eq(event, FI_MR_COMPLETE);
	cr_assert_eq(entry.fid, &mr->fid);
	cr_assert_eq(entry.context, &ctx);
	cr_assert_eq(fi_eq_read(eq, &event, &entry, sizeof(entry), 0),
		     -FI_EAGAIN, "one registration, one event");
	cr_assert_eq(fi_close(&mr->fid), 0);
	util_mr_map_fini(&map);
	cr_assert_eq(util_domain_fini(&d), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
}

/*
 * A domain's key map is read by its endpoints' progress threads under
 * FI_PROGRESS_AUTO (targets look keys up and count) while the application
 * registers and closes: it takes its lock then, whatever the threading
 * model; under FI_THREAD_DOMAIN with manual progress it need not.
 */
static bool map_locked(enum fi_threading threading, enum fi_progress progress)
{
	struct fi_domain_attr dattr = { .threading = threading,
					.data_progress = progress };
	struct fi_info info = { .domain_attr = &dattr };
	struct util_mr_domain *d = calloc(1, sizeof(*d));
	struct util_fabric fab;
	bool locked;

	cr_assert_not_null(d);
	cr_assert_eq(util_fabric_init(&fab, &weft_core_prov, NULL, NULL), 0);
	cr_assert_eq(util_mr_domain_init(d, &fab, &info, NULL), 0);
	locked = d->mr_map.lock.needed;
	cr_assert_eq(util_mr_domain_close(&d->util.domain_fid.fid), 0);
	cr_assert_eq(util_fabric_fini(&fab), 0);
	return locked;
}

Test(util_mr, domain_map_locked_for_progress_threads)
{
	cr_assert(map_locked(FI_THREAD_DOMAIN, FI_PROGRESS_AUTO));
	cr_assert(map_locked(FI_THREAD_SAFE, FI_PROGRESS_MANUAL));
	cr_assert_not(map_locked(FI_THREAD_DOMAIN, FI_PROGRESS_MANUAL));
}

/* ---- counters bound to registrations (fi_mr_bind) ------------------------ */

static struct fid_cntr *mr_cntr_open(struct util_domain *d)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_NONE };
	struct fid_cntr *cntr = NULL;

	cr_assert_eq(util_cntr_open(d, &attr, &cntr, NULL), 0);
	return cntr;
}

static struct fid_mr *mr_reg_key(uint64_t key, size_t off)
{
	struct fid_mr *mr = NULL;

	cr_assert_eq(util_mr_reg(&dom, &map, buf + off, 256,
				 FI_REMOTE_READ | FI_REMOTE_WRITE, 0, key, 0,
				 &mr, NULL),
		     0);
	return mr;
}

/*
 * What fi_mr_bind takes and refuses, what each registration counts, and
 * closing in either order: a counter stays open while a registration
 * counts into it (fi_cntr(3): -FI_EBUSY), a registration closed while
 * bound lets its counters go.
 */
Test(util_mr, cntr_bind_count_close)
{
	struct fid_cntr *wc, *rc, *xc, *oc;
	struct fid_mr *m1, *m2, *m3;
	struct util_domain other;
	struct fi_rma_iov r[6] = {
		{ 0, 8, 1 }, { 64, 8, 1 }, { 0, 8, 2 },
		{ 0, 8, 3 }, { 0, 8, 99 }, { 0, 0, 2 },
	};

	cr_assert_eq(util_domain_init(&other, NULL, NULL, NULL), 0);
	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	wc = mr_cntr_open(&dom);
	rc = mr_cntr_open(&dom);
	xc = mr_cntr_open(&dom);
	oc = mr_cntr_open(&other);
	m1 = mr_reg_key(1, 0);
	m2 = mr_reg_key(2, 256);
	m3 = mr_reg_key(3, 512);
	cr_assert_not(util_mr_map_counting(&map));

	/* refused */
	cr_assert_eq(fi_mr_bind(m1, &wc->fid, 0), -FI_EBADFLAGS);
	cr_assert_eq(fi_mr_bind(m1, &wc->fid, FI_SEND), -FI_EBADFLAGS);
	cr_assert_eq(fi_mr_bind(m1, &wc->fid, FI_REMOTE_WRITE | FI_WRITE),
		     -FI_EBADFLAGS);
	cr_assert_eq(fi_mr_bind(m1, &oc->fid, FI_REMOTE_WRITE), -FI_EINVAL,
		     "a counter of another domain");
	cr_assert_eq(fi_mr_bind(m1, &m2->fid, 0), -FI_ENOSYS);
	cr_assert_not(util_mr_map_counting(&map), "a refused bind counts");

	/* one registration, two counters; another, one counter for both */
	cr_assert_eq(fi_mr_bind(m1, &wc->fid, FI_REMOTE_WRITE), 0);
	cr_assert_eq(fi_mr_bind(m1, &rc->fid, FI_REMOTE_READ), 0);
	cr_assert_eq(fi_mr_bind(m2, &wc->fid, FI_REMOTE_WRITE | FI_REMOTE_READ),
		     0);
	cr_assert_eq(fi_mr_bind(m1, &wc->fid, FI_REMOTE_WRITE), -FI_EALREADY,
		     "the same counter twice");
	cr_assert_eq(fi_mr_bind(m1, &xc->fid, FI_REMOTE_WRITE), -FI_EALREADY,
		     "a second counter for the same event");
	cr_assert_eq(fi_mr_bind(m2, &xc->fid, FI_REMOTE_READ), -FI_EALREADY);
	cr_assert(util_mr_map_counting(&map));

	/* key 1 named twice counts once; key 3 has no counter; 99 no
	 * registration; a range of no bytes nothing */
	util_mr_map_count(&map, r, 6, FI_REMOTE_WRITE);
	cr_assert_eq(fi_cntr_read(wc), 2);
	cr_assert_eq(fi_cntr_read(rc), 0);
	util_mr_map_count(&map, r, 2, FI_REMOTE_READ);
	cr_assert_eq(fi_cntr_read(rc), 1);
	cr_assert_eq(fi_cntr_read(wc), 2);
	/* a fetching atomic on m2: both events, one counter, one count */
	util_mr_map_count(&map, &r[2], 1, FI_REMOTE_READ | FI_REMOTE_WRITE);
	cr_assert_eq(fi_cntr_read(wc), 3);
	util_mr_map_count(&map, &r[5], 1, FI_REMOTE_WRITE);
	cr_assert_eq(fi_cntr_read(wc), 3, "a range of no bytes counted");
	cr_assert_eq(fi_cntr_read(xc), 0);
	cr_assert_eq(fi_cntr_readerr(wc), 0);

	/* closing */
	cr_assert_eq(fi_close(&wc->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&rc->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&m1->fid), 0);
	cr_assert_eq(fi_close(&rc->fid), 0, "m1 still holds its counter");
	cr_assert_eq(fi_close(&wc->fid), -FI_EBUSY, "m2 counts into it");
	util_mr_map_count(&map, r, 3, FI_REMOTE_WRITE);
	cr_assert_eq(fi_cntr_read(wc), 4, "a closed registration counts");
	cr_assert_eq(fi_close(&m2->fid), 0);
	cr_assert_not(util_mr_map_counting(&map));
	cr_assert_eq(fi_close(&wc->fid), 0);
	cr_assert_eq(fi_mr_bind(m3, &xc->fid, FI_REMOTE_READ), 0);
	cr_assert_eq(fi_close(&m3->fid), 0);
	cr_assert_eq(fi_close(&xc->fid), 0);
	cr_assert_eq(fi_close(&oc->fid), 0);
	util_mr_map_fini(&map);
	cr_assert_eq(util_domain_fini(&other), 0);
}

/* What each remote operation does to a registration's counters. */
Test(util_mr, rma_events_by_operation)
{
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_WRITE, FI_ATOMIC_OP_LAST),
		     FI_REMOTE_WRITE);
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_READ, FI_ATOMIC_OP_LAST),
		     FI_REMOTE_READ);
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_ATOMIC, FI_SUM),
		     FI_REMOTE_WRITE);
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_FETCH_ATOMIC, FI_SUM),
		     FI_REMOTE_WRITE | FI_REMOTE_READ);
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_FETCH_ATOMIC,
					FI_ATOMIC_READ),
		     FI_REMOTE_READ);
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_FETCH_ATOMIC,
					FI_ATOMIC_WRITE),
		     FI_REMOTE_WRITE | FI_REMOTE_READ);
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_COMPARE_ATOMIC, FI_CSWAP),
		     FI_REMOTE_WRITE | FI_REMOTE_READ);
	cr_assert_eq(util_rdm_mr_events(UTIL_RDM_TX_SEND, FI_ATOMIC_OP_LAST),
		     0);
}

/* A stand-in for an endpoint that serves the domain's registrations. */
struct fake_target {
	struct util_progress p;
	int calls;
};

static void fake_target_progress(struct util_progress *p)
{
	container_of(p, struct fake_target, p)->calls++;
}

/*
 * Under manual progress a counter bound only to registrations runs the
 * domain's targets when read, from the first binding to the last
 * registration's close; under automatic progress their threads do, and
 * the counter leaves them alone.
 */
static void targets_run_by(enum fi_progress progress, bool runs)
{
	struct fi_domain_attr dattr = { .data_progress = progress };
	struct fi_info info = { .domain_attr = &dattr };
	struct fake_target t = { .p = { .progress = fake_target_progress } };
	struct util_domain d;
	struct fid_cntr *c;
	struct fid_mr *m1, *m2;

	cr_assert_eq(util_domain_init(&d, NULL, &info, NULL), 0);
	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	util_domain_add_target(&d, &t.p);
	c = mr_cntr_open(&d);
	cr_assert_eq(util_mr_reg(&d, &map, buf, 64, FI_REMOTE_WRITE, 0, 1, 0,
				 &m1, NULL),
		     0);
	cr_assert_eq(util_mr_reg(&d, &map, buf + 64, 64, FI_REMOTE_WRITE, 0, 2,
				 0, &m2, NULL),
		     0);
	fi_cntr_read(c);
	cr_assert_eq(t.calls, 0, "nothing bound yet");
	cr_assert_eq(fi_mr_bind(m1, &c->fid, FI_REMOTE_WRITE), 0);
	cr_assert_eq(fi_mr_bind(m2, &c->fid, FI_REMOTE_WRITE), 0);
	fi_cntr_read(c);
	cr_assert_eq(fi_cntr_wait(c, 1, 20), -FI_ETIMEDOUT);
	if (runs)
		cr_assert_geq(t.calls, 2, "read and wait ran no target");
	else
		cr_assert_eq(t.calls, 0);
	cr_assert_eq(fi_close(&m1->fid), 0);
	t.calls = 0;
	fi_cntr_read(c);
	cr_assert_eq(t.calls, runs ? 1 : 0, "m2 is still bound");
	cr_assert_eq(fi_close(&m2->fid), 0);
	t.calls = 0;
	fi_cntr_read(c);
	cr_assert_eq(t.calls, 0, "runs the targets with nothing bound");
	cr_assert_eq(fi_close(&c->fid), 0);
	util_domain_del_target(&d, &t.p);
	util_mr_map_fini(&map);
	cr_assert_eq(util_domain_fini(&d), 0);
}

Test(util_mr, cntr_runs_targets_under_manual_progress)
{
	targets_run_by(FI_PROGRESS_MANUAL, true);
}

Test(util_mr, cntr_leaves_targets_to_auto_progress)
{
	targets_run_by(FI_PROGRESS_AUTO, false);
}

/* A publisher hears what a published registration's counters count. */
struct fake_pub {
	struct util_mr_publisher pub;
	uint64_t key, events;
	int published, changed;
};

static void fake_publish(struct util_mr_publisher *pub,
			 const struct util_mr_pub *reg)
{
	struct fake_pub *f = container_of(pub, struct fake_pub, pub);

	f->published++;
	f->key = reg->key;
	f->events = reg->events;
}

static void fake_withdraw(struct util_mr_publisher *pub, uint64_t key)
{
	(void)pub;
	(void)key;
}

static void fake_events(struct util_mr_publisher *pub, uint64_t key,
			uint64_t events)
{
	struct fake_pub *f = container_of(pub, struct fake_pub, pub);

	f->changed++;
	f->key = key;
	f->events = events;
}

Test(util_mr, publisher_hears_counted_events)
{
	struct fake_pub f = { .pub = { .publish = fake_publish,
				       .withdraw = fake_withdraw,
				       .events = fake_events } };
	struct fid_cntr *c = mr_cntr_open(&dom);
	struct fid_mr *m;

	cr_assert_eq(util_mr_map_init(&map, NULL, 0, 0, true), 0);
	m = mr_reg_key(7, 0);
	cr_assert_eq(fi_mr_bind(m, &c->fid, FI_REMOTE_WRITE), 0);
	cr_assert_eq(util_mr_map_attach(&map, &f.pub), 0);
	cr_assert_eq(f.published, 1);
	cr_assert_eq(f.events, FI_REMOTE_WRITE, "attach publishes the events");
	cr_assert_eq(fi_mr_bind(m, &c->fid, FI_REMOTE_READ), 0);
	cr_assert_eq(f.changed, 1);
	cr_assert_eq(f.key, 7);
	cr_assert_eq(f.events, FI_REMOTE_WRITE | FI_REMOTE_READ);
	cr_assert_eq(fi_mr_bind(m, &c->fid, FI_REMOTE_READ), -FI_EALREADY);
	cr_assert_eq(f.changed, 1, "a refused bind told the publisher");
	util_mr_map_detach(&map, &f.pub);
	cr_assert_eq(fi_close(&m->fid), 0);
	cr_assert_eq(fi_close(&c->fid), 0);
	util_mr_map_fini(&map);
}
