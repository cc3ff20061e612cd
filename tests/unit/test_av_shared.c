/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Named AVs shared between processes (util_av_open_shared,
 * prov/util/util_av_shm.c): entries at the same fi_addr_t for every
 * opener, read-only openers, entries added after an open, and the
 * objects an opener must refuse or may replace.
 */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_domain.h>

#include "weft/util_av.h"
#include "weft/util_domain.h"

static struct util_domain dom;
static char name[64], path[128];

static void setup(void)
{
	cr_assert_eq(util_domain_init(&dom, NULL, NULL, NULL), 0);
	snprintf(name, sizeof(name), "test av/%d", (int)getpid());
	/* The object: the name with '/' and ' ' escaped (util_av_shm.c). */
	snprintf(path, sizeof(path), "/weft-av.%u.test%%20av%%2f%d",
		 (unsigned int)geteuid(), (int)getpid());
	shm_unlink(path);
}

static void teardown(void)
{
	shm_unlink(path);
	cr_assert_eq(util_domain_fini(&dom), 0);
}

static bool object_exists(void)
{
	int fd = shm_open(path, O_RDONLY, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int open_named(uint64_t flags, enum fi_av_type type,
		      struct fid_av **av)
{
	struct fi_av_attr attr = { .type = type, .name = name,
				   .flags = flags, .count = 100 };

	return util_av_open_shared(&dom, &attr, &util_av_sockaddr_in_ops, av,
				   NULL);
}

static struct sockaddr_in sin_n(unsigned int n)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(0x0a000001u);
	sin.sin_port = htons((in_port_t)(2000 + n));
	return sin;
}

static void assert_is(struct fid_av *av, fi_addr_t fa, unsigned int n)
{
	struct sockaddr_in got, want = sin_n(n);
	size_t len = sizeof(got);

	cr_assert_eq(fi_av_lookup(av, fa, &got, &len), 0,
		     "fi_av_lookup of entry %u", n);
	cr_assert_eq(got.sin_port, want.sin_port, "entry %u", n);
	cr_assert_not_null(util_av_addr(util_av_from_fid(av), fa),
			   "util_av_addr of entry %u", n);
}

TestSuite(av_shared, .init = setup, .fini = teardown);

Test(av_shared, reader_sees_entries_at_the_same_fi_addr)
{
	struct fid_av *w, *r, *w2;
	struct sockaddr_in a[6];
	fi_addr_t fa[6], got;
	unsigned int i;

	for (i = 0; i < 6; i++)
		a[i] = sin_n(i);
	cr_assert_eq(open_named(0, FI_AV_TABLE, &w), 0);
	cr_assert(object_exists());
	cr_assert_eq(fi_av_insert(w, a, 4, fa, 0, NULL), 4);
	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &r), 0);
	for (i = 0; i < 4; i++)
		assert_is(r, fa[i], i);
	/* Read-only: no insert, no remove. */
	{
		int err = 0;

		cr_assert_eq(fi_av_insert(r, &a[5], 1, &got, FI_SYNC_ERR,
					  &err),
			     0);
		cr_assert_eq(got, FI_ADDR_NOTAVAIL);
		cr_assert_eq(err, FI_EACCES);
	}
	cr_assert_eq(fi_av_remove(r, &fa[0], 1, 0), -FI_EACCES);
	/* Added after the reader opened: found on first use. */
	cr_assert_eq(fi_av_insert(w, &a[4], 1, &fa[4], 0, NULL), 1);
	cr_assert_not_null(util_av_addr(util_av_from_fid(r), fa[4]));
	assert_is(r, fa[4], 4);
	/* And by address (FI_SOURCE). */
	cr_assert_eq(fi_av_insert(w, &a[5], 1, &fa[5], 0, NULL), 1);
	cr_assert_eq(util_av_lookup_addr(util_av_from_fid(r), &a[5]), fa[5]);
	/* A second writer shares them too, and its inserts reach the
	 * first. */
	cr_assert_eq(open_named(0, FI_AV_UNSPEC, &w2), 0);
	assert_is(w2, fa[5], 5);
	{
		struct sockaddr_in x = sin_n(40);
		fi_addr_t fx;

		cr_assert_eq(fi_av_insert(w2, &x, 1, &fx, 0, NULL), 1);
		cr_assert(fx != fa[0] && fx != fa[5]);
		cr_assert_not_null(util_av_addr(util_av_from_fid(w), fx));
	}
	/* A removed entry is gone for later lookups elsewhere too. */
	cr_assert_eq(fi_av_remove(w, &fa[1], 1, 0), 0);
	cr_assert_eq(fi_av_insert(w2, &a[3], 1, &got, 0, NULL), 1);
	cr_assert_neq(got, fa[1], "an index removed is given again");
	cr_assert_eq(fi_close(&r->fid), 0);
	cr_assert_eq(fi_close(&w2->fid), 0);
	cr_assert(object_exists(), "unlinked while the writer has it open");
	cr_assert_eq(fi_close(&w->fid), 0);
	cr_assert(!object_exists(), "left behind by the last close");
}

/* A reader whose first entries are all removed elsewhere holds a slot
 * beyond slots it never made: it uses it, and closes. */
Test(av_shared, entries_removed_before_a_reader_came)
{
	struct fid_av *w, *r;
	struct sockaddr_in a[65];
	fi_addr_t fa[65];
	unsigned int i;

	for (i = 0; i < 65; i++)
		a[i] = sin_n(i);
	cr_assert_eq(open_named(0, FI_AV_TABLE, &w), 0);
	cr_assert_eq(fi_av_insert(w, a, 64, fa, 0, NULL), 64);
	cr_assert_eq(fi_av_remove(w, fa, 64, 0), 0);
	cr_assert_eq(fi_av_insert(w, &a[64], 1, &fa[64], 0, NULL), 1);
	cr_assert_eq(fa[64], 64);
	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &r), 0);
	assert_is(r, fa[64], 64);
	cr_assert_null(util_av_addr(util_av_from_fid(r), fa[3]));
	cr_assert_eq(fi_close(&r->fid), 0);
	cr_assert_eq(fi_close(&w->fid), 0);
}

Test(av_shared, map_type_and_mismatch)
{
	struct fid_av *w, *r;
	struct sockaddr_in a = sin_n(1);
	fi_addr_t fa;

	cr_assert_eq(open_named(0, FI_AV_MAP, &w), 0);
	cr_assert_eq(fi_av_insert(w, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(open_named(FI_READ, FI_AV_TABLE, &r), -FI_EINVAL);
	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &r), 0);
	assert_is(r, fa, 1);
	cr_assert_eq(fi_close(&r->fid), 0);
	cr_assert_eq(fi_close(&w->fid), 0);
}

Test(av_shared, read_only_needs_an_existing_av)
{
	struct fid_av *r;
	struct fi_av_attr attr = { .flags = FI_READ };

	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &r), -FI_ENOENT);
	cr_assert(!object_exists());
	/* FI_READ without a name */
	cr_assert_eq(util_av_open_shared(&dom, &attr, &util_av_sockaddr_in_ops,
					 &r, NULL),
		     -FI_EINVAL);
}

Test(av_shared, refused_where_not_offered)
{
	struct fi_av_attr attr = { .name = name };
	struct fid_av *r;

	cr_assert_eq(util_av_open(&dom, &attr, &util_av_sockaddr_in_ops, &r,
				  NULL),
		     -FI_ENOSYS);
	cr_assert(!object_exists());
}

/* An object of that name made by hand. */
static void plant(size_t size, mode_t mode, unsigned char fill)
{
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, mode);
	unsigned char *p;

	cr_assert(fd >= 0);
	cr_assert_eq(fchmod(fd, mode), 0);
	if (size) {
		cr_assert_eq(ftruncate(fd, (off_t)size), 0);
		p = mmap(NULL, size, PROT_WRITE, MAP_SHARED, fd, 0);
		cr_assert(p != MAP_FAILED);
		memset(p, fill, size);
		munmap(p, size);
	}
	close(fd);
}

Test(av_shared, garbage_is_refused_and_left_alone)
{
	struct fid_av *av;

	plant(1 << 16, 0600, 0x5a);
	cr_assert_eq(open_named(0, FI_AV_UNSPEC, &av), -FI_EINVAL);
	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &av), -FI_EINVAL);
	cr_assert(object_exists());
	shm_unlink(path);
	plant(10, 0600, 0); /* truncated */
	cr_assert_eq(open_named(0, FI_AV_UNSPEC, &av), -FI_EINVAL);
	cr_assert(object_exists());
}

Test(av_shared, an_object_others_can_reach_is_refused)
{
	struct fid_av *av;

	plant(0, 0644, 0);
	cr_assert_eq(open_named(0, FI_AV_UNSPEC, &av), -FI_EACCES);
	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &av), -FI_EACCES);
	cr_assert(object_exists());
}

Test(av_shared, a_creator_that_died_is_replaced)
{
	struct fid_av *av;
	struct sockaddr_in a = sin_n(3);
	fi_addr_t fa;
	pid_t pid;
	int status;

	/* Created empty and never filled: after a wait, a writer takes
	 * the name, a reader finds nothing. */
	plant(0, 0600, 0);
	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &av), -FI_ENOENT);
	cr_assert_eq(open_named(0, FI_AV_UNSPEC, &av), 0);
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert(!object_exists());

	/* Every process that had it exited without closing. */
	pid = fork();
	cr_assert(pid >= 0);
	if (!pid) {
		if (open_named(0, FI_AV_UNSPEC, &av) ||
		    fi_av_insert(av, &a, 1, &fa, 0, NULL) != 1)
			_exit(1);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	cr_assert(object_exists());
	cr_assert_eq(open_named(FI_READ, FI_AV_UNSPEC, &av), -FI_ENOENT);
	cr_assert_eq(open_named(0, FI_AV_UNSPEC, &av), 0);
	/* A fresh one: the dead process's entry is not in it. */
	cr_assert_null(util_av_addr(util_av_from_fid(av), 0));
	cr_assert_eq(fi_close(&av->fid), 0);
	cr_assert(!object_exists());
}
