/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shm regions trust nobody.  Another user's file under our region name, a
 * header whose sections do not fit its file, a truncated or sparse file,
 * slots whose fields point out of bounds, and a /dev/shm with no room all
 * give errors, never a crash and never a message delivered where it should
 * not be.  Tests that switch users or mount a small /dev/shm of their own
 * need root, and skip, saying why, without it.
 */
#define _GNU_SOURCE 1 /* unshare */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "dead_pid.h"
#include "weft/core.h"
#include "weft/util_rdm.h"
#include "shm_region.h"

/* Linked from the convenience library, the provider's object is pulled in
 * only if something refers to it: this does, so fi_getinfo finds shm. */
extern struct fi_provider shm_prov;
static struct fi_provider *const link_shm __attribute__((used)) = &shm_prov;

/* tcp too, for its endpoints that embed shm */
extern struct fi_provider tcp_prov;
static struct fi_provider *const link_tcp __attribute__((used)) = &tcp_prov;


/* Unprivileged users for the tests that need two of them. */
#define VICTIM_UID 65533
#define ATTACKER_UID 65534

/* Small regions made by hand. */
static const struct shm_region_attr attr = {
	.queue_slots = 64,
	.max_peers = 16,
	.bounce_count = 4,
	.bounce_size = 1024,
	.small_count = 8,
	.small_size = 256,
};

/* The sizes weft uses by default (a region of about 1.5 MiB). */
static const struct shm_region_attr default_attr = {
	.queue_slots = 1024,
	.max_peers = 4096,
	.bounce_count = 16,
	.bounce_size = 65536,
};

static void unique_name(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "trust-%s-%d", what, (int)getpid());
}

static void region_path(char *buf, size_t len, unsigned uid, const char *name)
{
	snprintf(buf, len, "/weft-shm.%u.%s", uid, name);
}

static struct shm_queue *raw_queue(struct shm_region_hdr *h)
{
	return (struct shm_queue *)((char *)h + h->queue_off);
}

static struct shm_peer *raw_peers(struct shm_region_hdr *h)
{
	return (struct shm_peer *)((char *)h + h->peers_off);
}

/* ---- endpoints over the public API ------------------------------------- */

struct tep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/*
 * Open an enabled shm endpoint with its own fabric, domain, AV and CQ,
 * named `name` unless NULL.  Returns 0 or the first failure (fi_enable's
 * included).  Asserts nothing, so that children may use it.
 */
static int tep_open(struct tep *t, const char *name)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };
	struct fi_info *hints = fi_allocinfo();
	char addr[FI_NAME_MAX];
	int ret;

	memset(t, 0, sizeof(*t));
	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &t->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(t->info->fabric_attr, &t->fabric, NULL);
	if (!ret)
		ret = fi_domain(t->fabric, t->info, &t->domain, NULL);
	if (!ret)
		ret = fi_av_open(t->domain, &av_attr, &t->av, NULL);
	if (!ret)
		ret = fi_cq_open(t->domain, &cq_attr, &t->cq, NULL);
	if (!ret)
		ret = fi_endpoint(t->domain, t->info, &t->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(t->ep, &t->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret && name) {
		snprintf(addr, sizeof(addr), "fi_shm://%s", name);
		ret = fi_setname(&t->ep->fid, addr, strlen(addr) + 1);
	}
	if (!ret)
		ret = fi_enable(t->ep);
	return ret;
}

static void tep_close(struct tep *t)
{
	if (t->ep)
		fi_close(&t->ep->fid);
	if (t->cq)
		fi_close(&t->cq->fid);
	if (t->av)
		fi_close(&t->av->fid);
	if (t->domain)
		fi_close(&t->domain->fid);
	if (t->fabric)
		fi_close(&t->fabric->fid);
	fi_freeinfo(t->info);
}

/*
 * Send 8 bytes to the endpoint called `name`, retrying a bounded number of
 * times while the send says "try again".  Returns the last fi_inject's
 * answer.
 */
static int tep_send(struct tep *t, const char *name)
{
	struct fi_cq_msg_entry e;
	char addr[FI_NAME_MAX];
	uint64_t v = 0x5ec2e75ec2e7;
	int ret = -FI_EAGAIN, i;
	fi_addr_t dest;

	snprintf(addr, sizeof(addr), "fi_shm://%s", name);
	if (fi_av_insert(t->av, addr, 1, &dest, 0, NULL) != 1)
		return -FI_EINVAL;
	for (i = 0; i < 1000 && ret == -FI_EAGAIN; i++) {
		ret = (int)fi_inject(t->ep, &v, sizeof(v), dest);
		if (ret == -FI_EAGAIN)
			fi_cq_read(t->cq, &e, 1);
	}
	return ret;
}

/* A send to a region that must be refused: an error, not "try again". */
#define assert_send_refused(t, name, what)                                     \
	do {                                                                   \
		int r_ = tep_send(t, name);                                    \
		cr_assert(r_ < 0 && r_ != -FI_EAGAIN,                          \
			  "%s: the send gave %d (%s), not an error", what, r_, \
			  fi_strerror(-r_));                                   \
	} while (0)

/* ---- children: other users, other mounts -------------------------------- */

/* Become `uid` (and its gid) for good; false when that is not allowed. */
static bool become(uid_t uid)
{
	return !setgroups(0, NULL) && !setgid(uid) && !setuid(uid) &&
	       getuid() == uid;
}

/*
 * A mount namespace of this process's own with a tmpfs of `size` over
 * /dev/shm; false when that cannot be had (not root, no namespaces).
 */
static bool small_dev_shm(const char *size)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "size=%s,mode=1777", size);
	return !geteuid() && !unshare(CLONE_NEWNS) &&
	       !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) &&
	       !mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
		      opts);
}

/*
 * Wait for a child that exits 0 (passed), 77 (could not set itself up:
 * the test is skipped with `why`) or anything else (failed).  Dying of a
 * signal is the failure these tests look for.
 */
static void child_result(pid_t pid, const char *what, const char *why)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_not(WIFSIGNALED(status), "%s: killed by signal %d (%s)", what,
		      WTERMSIG(status), strsignal(WTERMSIG(status)));
	if (WEXITSTATUS(status) == 77)
		cr_skip_test("%s", why);
	cr_assert_eq(WEXITSTATUS(status), 0, "%s: exit status %d", what,
		     WEXITSTATUS(status));
}

/* ---- region files -------------------------------------------------------- */

enum corruption {
	QUEUE_FAR, /* queue_off = 2^40 */
	PEERS_PAST_END, /* peers_off beyond the file */
	SLOTS_HUGE, /* queue_slots (and the queue's own count) 2^31 */
	PEERS_HUGE, /* max_peers 2^32 - 1 */
	BOUNCE_COUNT_HUGE, /* bounce_count 2^32 - 1 */
	BOUNCE_SIZE_HUGE, /* bounce_size near 2^32 */
	SMALL_COUNT_HUGE, /* small_count 2^32 - 1 */
	SMALL_SIZE_HUGE, /* small_size near 2^32 */
	SMALL_OVER_BOUNCE, /* small_off inside the bounce buffers */
	SMALL_PAST_END, /* small buffers beyond the file */
	CORRUPTIONS
};

static void corrupt(struct shm_region_hdr *h, enum corruption c)
{
	struct shm_queue *q = raw_queue(h);

	switch (c) {
	case QUEUE_FAR:
		h->queue_off = 1ull << 40;
		break;
	case PEERS_PAST_END:
		h->peers_off = h->total_size + 4096;
		break;
	case SLOTS_HUGE:
		h->queue_slots = 1u << 31;
		q->slots = 1u << 31;
		atomic_store(&q->tail, (1ull << 30) + 3);
		break;
	case PEERS_HUGE:
		h->max_peers = UINT32_MAX;
		break;
	case BOUNCE_COUNT_HUGE:
		h->bounce_count = UINT32_MAX;
		break;
	case BOUNCE_SIZE_HUGE:
		h->bounce_size = UINT32_MAX - 63;
		break;
	case SMALL_COUNT_HUGE:
		h->small_count = UINT32_MAX;
		break;
	case SMALL_SIZE_HUGE:
		h->small_size = UINT32_MAX - 63;
		break;
	case SMALL_OVER_BOUNCE:
		h->small_off = h->bounce_off;
		break;
	case SMALL_PAST_END:
		h->small_off = h->total_size - 4096;
		h->small_count = 64;
		break;
	case CORRUPTIONS:
		break;
	}
}

Test(shm_trust, hostile_header_is_refused, .timeout = 60)
{
	struct shm_map own, peer;
	char name[SHM_NAME_MAX], what[16];
	struct tep tx;
	int c, ret;

	cr_assert_eq(tep_open(&tx, NULL), 0);
	for (c = 0; c < CORRUPTIONS; c++) {
		snprintf(what, sizeof(what), "hdr%d", c);
		unique_name(name, sizeof(name), what);
		cr_assert_eq(shm_region_create(name, &attr, &own), 0);
		corrupt(own.hdr, (enum corruption)c);
		ret = shm_region_map(name, &peer);
		if (!ret)
			shm_region_unmap(&peer);
		cr_assert_eq(ret, -FI_EINVAL, "corruption %d: mapping gave %d",
			     c, ret);
		snprintf(what, sizeof(what), "corruption %d", c);
		assert_send_refused(&tx, name, what);
		shm_region_unmap(&own);
	}
	tep_close(&tx);
}

/*
 * The queue's own fields are rewritten after the region was mapped: the
 * sender masks positions with the count it checked, and a slot ahead of a
 * tail that never moves does not make it spin.  The queue looks full:
 * the transport takes nothing (nothing is claimed or written), and each
 * inject waits in the sender's engine (util_rdm.h) until its share of
 * tx_size is used, then -FI_EAGAIN.
 */
Test(shm_trust, queue_rewritten_after_mapping, .timeout = 60)
{
	struct shm_map own;
	char name[SHM_NAME_MAX];
	struct shm_queue *q;
	struct tep tx;
	int n;

	cr_assert_eq(tep_open(&tx, NULL), 0);
	unique_name(name, sizeof(name), "queue");
	cr_assert_eq(shm_region_create(name, &attr, &own), 0);
	cr_assert_eq(tep_send(&tx, name), 0); /* mapped now */
	q = raw_queue(own.hdr);
	q->slots = 1u << 31;
	atomic_store(&q->tail, (1ull << 30) + 3);
	cr_assert_eq(tep_send(&tx, name), 0, "huge slot count: it waits");
	cr_assert_eq(atomic_load(&q->tail), (1ull << 30) + 3,
		     "huge slot count: nothing claimed");
	/* A tail that stays behind a slot's sequence number. */
	atomic_store(&q->tail, 5);
	atomic_store(&q->slot[5].seq, 1000);
	for (n = 0; n < 4096 && !tep_send(&tx, name); n++)
		;
	cr_assert_lt(n, 4096, "slot ahead of tail: -FI_EAGAIN once the "
			      "sender holds its share");
	cr_assert_eq(atomic_load(&q->tail), 5, "slot ahead of tail: nothing "
					       "claimed");
	cr_assert_eq(atomic_load(&q->slot[5].seq), 1000);
	/* The owner is gone: the sender's close drops what waits. */
	atomic_store(&own.hdr->gone, 1);
	shm_region_unmap(&own);
	tep_close(&tx);
}

Test(shm_trust, truncated_region_is_refused)
{
	struct shm_map own, peer;
	char name[SHM_NAME_MAX], path[128];
	struct tep tx;
	size_t cut[] = { 100, 0 };
	int i, fd;

	cr_assert_eq(tep_open(&tx, NULL), 0);
	for (i = 0; i < 2; i++) {
		unique_name(name, sizeof(name), i ? "cut-half" : "cut-100");
		cr_assert_eq(shm_region_create(name, &attr, &own), 0);
		region_path(path, sizeof(path), getuid(), name);
		fd = shm_open(path, O_RDWR, 0);
		cr_assert_geq(fd, 0);
		cr_assert_eq(ftruncate(fd, (off_t)(cut[i] ? cut[i] :
							    own.size / 2)),
			     0);
		close(fd);
		/* Not a region being set up: an error, not "try again". */
		cr_assert_eq(shm_region_map(name, &peer), -FI_EINVAL,
			     "cut %d", i);
		assert_send_refused(&tx, name, name);
		shm_region_unmap(&own);
	}
	tep_close(&tx);
}

Test(shm_trust, region_others_may_write_is_refused)
{
	struct shm_map own, peer;
	char name[SHM_NAME_MAX], path[128];
	struct tep tx;
	int fd;

	cr_assert_eq(tep_open(&tx, NULL), 0);
	unique_name(name, sizeof(name), "mode");
	cr_assert_eq(shm_region_create(name, &attr, &own), 0);
	region_path(path, sizeof(path), getuid(), name);
	fd = shm_open(path, O_RDWR, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fchmod(fd, 0666), 0);
	close(fd);
	cr_assert_eq(shm_region_map(name, &peer), -FI_EACCES);
	assert_send_refused(&tx, name, "mode 0666");
	shm_region_unmap(&own);
	tep_close(&tx);
}

/* Copy a valid region's first `len` bytes into a new file of `size` bytes
 * (sparse beyond what is written) at path; returns the open fd. */
static int copy_region(const char *path, const void *from, size_t len,
		       size_t size, mode_t mode)
{
	int fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, mode);

	if (fd < 0)
		return -1;
	if (fchmod(fd, mode) || ftruncate(fd, (off_t)size) ||
	    pwrite(fd, from, len, 0) != (ssize_t)len) {
		close(fd);
		shm_unlink(path);
		return -1;
	}
	return fd;
}

Test(shm_trust, sparse_region_is_refused)
{
	struct shm_map tmpl, peer;
	char name[SHM_NAME_MAX], tname[SHM_NAME_MAX], path[128];
	int fd;

	unique_name(tname, sizeof(tname), "sparse-tmpl");
	unique_name(name, sizeof(name), "sparse");
	cr_assert_eq(shm_region_create(tname, &attr, &tmpl), 0);
	region_path(path, sizeof(path), getuid(), name);
	/* A valid header over memory nobody reserved. */
	fd = copy_region(path, tmpl.hdr, 4096, tmpl.size, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(shm_region_map(name, &peer), -FI_ENOSPC);
	shm_unlink(path);
	shm_region_unmap(&tmpl);
}

/*
 * Another user makes a file under the victim's region name, writable by
 * all, with a valid header.  The victim's send to that name must fail, and
 * nothing of the victim's (payload, name, pid) may land in the file.
 */
Test(shm_trust, other_users_file_is_not_used, .timeout = 60)
{
	char name[SHM_NAME_MAX], path[128], tname[SHM_NAME_MAX];
	struct shm_region_hdr *hdr;
	struct shm_map tmpl;
	struct stat st;
	void *copy;
	size_t size;
	pid_t pid;
	int fd;

	if (geteuid())
		cr_skip_test("needs root to act as two other users");
	unique_name(tname, sizeof(tname), "user-tmpl");
	unique_name(name, sizeof(name), "user");
	cr_assert_eq(shm_region_create(tname, &attr, &tmpl), 0);
	size = tmpl.size;
	copy = malloc(size);
	cr_assert_not_null(copy);
	memcpy(copy, tmpl.hdr, size);
	shm_region_unmap(&tmpl);
	region_path(path, sizeof(path), VICTIM_UID, name);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		/* The attacker: a complete, valid-looking region, 0666. */
		if (!become(ATTACKER_UID))
			_exit(77);
		fd = copy_region(path, copy, size, size, 0666);
		_exit(fd < 0 ? 1 : 0);
	}
	child_result(pid, "attacker", "cannot switch to an unprivileged user");

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		struct tep t;
		int ret;

		if (!become(VICTIM_UID))
			_exit(77);
		if (tep_open(&t, NULL))
			_exit(2);
		ret = tep_send(&t, name);
		fprintf(stderr, "victim's send to %s: %d\n", name, ret);
		tep_close(&t);
		_exit(ret < 0 && ret != -FI_EAGAIN ? 0 : 1);
	}
	child_result(pid, "victim", "cannot switch to an unprivileged user");

	/* Nothing of the victim's is in the attacker's file. */
	fd = shm_open(path, O_RDONLY, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq(st.st_uid, ATTACKER_UID);
	hdr = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(hdr, MAP_FAILED);
	cr_assert_eq(atomic_load(&raw_queue(hdr)->tail), 0,
		     "the victim's message is in the attacker's queue");
	cr_assert_eq(atomic_load(&raw_peers(hdr)[0].state), SHM_PEER_FREE,
		     "the victim's name and pid are in the attacker's table");
	munmap(hdr, size);
	shm_unlink(path);
	free(copy);
}

/* ---- a full /dev/shm ------------------------------------------------------ */

Test(shm_trust, full_dev_shm_fails_enable, .timeout = 60)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		struct tep t;
		int ret;

		/* Room for less than one region of the default size. */
		if (!small_dev_shm("256k"))
			_exit(77);
		ret = tep_open(&t, NULL);
		fprintf(stderr, "fi_enable on a 256 KiB /dev/shm: %d\n", ret);
		_exit(ret == -FI_ENOSPC ? 0 : 1);
	}
	child_result(pid, "endpoint on a full /dev/shm",
		     "cannot mount a small /dev/shm (needs root and mount "
		     "namespaces)");
}

/* Fill what is left of /dev/shm with a file of ours; its path in `path`. */
static bool fill_dev_shm(char *path, size_t size)
{
	static const char zero[65536];
	int fd;

	snprintf(path, size, "/dev/shm/weft-test-filler-%d", (int)getpid());
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (fd < 0)
		return false;
	while (write(fd, zero, sizeof(zero)) > 0)
		;
	close(fd);
	return true;
}

/* How many of /dev/shm's entries start with prefix. */
static int dev_shm_count(const char *prefix)
{
	struct dirent *d;
	DIR *dir = opendir("/dev/shm");
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += !strncmp(d->d_name, prefix, strlen(prefix));
	closedir(dir);
	return n;
}

/*
 * A scalable endpoint's pair 0 starts; then /dev/shm fills and a context
 * of pair 1 is made: fi_tx_context (or its fi_enable) fails with
 * -FI_ENOSPC and leaves no file, and once there is room again the
 * context is made and enabled; everything closes.
 */
static int full_dev_shm_context(void)
{
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .rx_ctx_bits = 1};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG};
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *sep, *tx1 = NULL, *tx0;
	char filler[128];
	int ret, before;

	if (!hints)
		return 2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_NAMED_RX_CTX;
	hints->ep_attr->tx_ctx_cnt = 2;
	hints->ep_attr->rx_ctx_cnt = 2;
	hints->fabric_attr->prov_name = strdup("shm");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret || fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL) ||
	    fi_av_open(domain, &av_attr, &av, NULL) ||
	    fi_cq_open(domain, &cq_attr, &cq, NULL) ||
	    fi_scalable_ep(domain, info, &sep, NULL) ||
	    fi_scalable_ep_bind(sep, &av->fid, 0) || fi_enable(sep) ||
	    fi_tx_context(sep, 0, NULL, &tx0, NULL) ||
	    fi_ep_bind(tx0, &cq->fid, FI_TRANSMIT) || fi_enable(tx0))
		return 3;
	before = dev_shm_count("");
	if (!fill_dev_shm(filler, sizeof(filler)))
		return 4;
	/* The scalable endpoint is enabled: the pair starts with its first
	 * context, or at the latest when that context is enabled. */
	ret = fi_tx_context(sep, 1, NULL, &tx1, NULL);
	fprintf(stderr, "fi_tx_context on a full /dev/shm: %d\n", ret);
	if (!ret) {
		if (fi_ep_bind(tx1, &cq->fid, FI_TRANSMIT))
			return 5;
		ret = fi_enable(tx1);
		fprintf(stderr, "its fi_enable: %d\n", ret);
	}
	if (ret != -FI_ENOSPC)
		return 6;
	/* Nothing left behind but our filler. */
	if (dev_shm_count("") != before + 1)
		return 7;
	unlink(filler);
	if (!tx1) {
		ret = fi_tx_context(sep, 1, NULL, &tx1, NULL);
		fprintf(stderr, "fi_tx_context with room again: %d\n", ret);
		if (ret || fi_ep_bind(tx1, &cq->fid, FI_TRANSMIT))
			return 8;
	}
	ret = fi_enable(tx1);
	fprintf(stderr, "fi_enable with room again: %d\n", ret);
	if (ret)
		return 8;
	if (fi_close(&tx1->fid) || fi_close(&tx0->fid) ||
	    fi_close(&sep->fid) || fi_close(&cq->fid) ||
	    fi_close(&av->fid) || fi_close(&domain->fid) ||
	    fi_close(&fabric->fid))
		return 9;
	fi_freeinfo(info);
	return 0;
}

Test(shm_trust, full_dev_shm_fails_context_enable, .timeout = 60)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		if (!small_dev_shm("64m"))
			_exit(77);
		_exit(full_dev_shm_context());
	}
	child_result(pid, "a context pair on a full /dev/shm",
		     "cannot mount a small /dev/shm (needs root and mount "
		     "namespaces)");
}

/*
 * A peer's region whose memory was never reserved (made by ftruncate alone)
 * on a full /dev/shm: writing into it would fault, so sending to it fails.
 */
Test(shm_trust, full_dev_shm_fails_send_to_unreserved_peer, .timeout = 60)
{
	char tname[SHM_NAME_MAX], name[SHM_NAME_MAX];
	static char hdr_page[4096];
	struct shm_map tmpl;
	size_t size;
	pid_t pid;

	unique_name(tname, sizeof(tname), "full-tmpl");
	unique_name(name, sizeof(name), "full-peer");
	cr_assert_eq(shm_region_create(tname, &default_attr, &tmpl), 0);
	memcpy(hdr_page, tmpl.hdr, sizeof(hdr_page));
	size = tmpl.size;
	shm_region_unmap(&tmpl);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		static char fill[65536];
		char path[128];
		struct tep t;
		int ret, fd;

		if (!small_dev_shm("512k"))
			_exit(77);
		/* Our own region, small enough to fit. */
		setenv("FI_SHM_QUEUE_SLOTS", "16", 1);
		setenv("FI_SHM_MAX_PEERS", "2", 1);
		setenv("FI_SHM_BOUNCE_COUNT", "1", 1);
		setenv("FI_SHM_BOUNCE_SIZE", "4096", 1);
		if (tep_open(&t, NULL))
			_exit(2);
		region_path(path, sizeof(path), getuid(), name);
		fd = copy_region(path, hdr_page, sizeof(hdr_page), size, 0600);
		if (fd < 0)
			_exit(2);
		close(fd);
		/* Fill /dev/shm. */
		fd = shm_open("/trust-filler", O_RDWR | O_CREAT, 0600);
		while (fd >= 0 && write(fd, fill, sizeof(fill)) > 0)
			;
		ret = tep_send(&t, name);
		fprintf(stderr, "send to an unreserved region: %d\n", ret);
		_exit(ret < 0 && ret != -FI_EAGAIN ? 0 : 1);
	}
	child_result(pid, "send on a full /dev/shm",
		     "cannot mount a small /dev/shm (needs root and mount "
		     "namespaces)");
}

/* Whether /dev/shm holds a registration table (weft-shm-mrt.*). */
static bool dev_shm_has_table(void)
{
	struct dirent *d;
	bool found = false;
	DIR *dir = opendir("/dev/shm");

	while (dir && (d = readdir(dir)))
		found |= !strncmp(d->d_name, "weft-shm-mrt.", 13);
	if (dir)
		closedir(dir);
	return found;
}

/*
 * Two endpoints on a /dev/shm with room for their regions but not for a
 * registration table (child of full_dev_shm_without_room_for_the_table):
 * a write into and a read from a registration of b, and a message from a
 * to b, all checked.  Exit status 0 if all is well.
 */
static int no_table_traffic(bool want_table)
{
	static uint8_t tgt[8192], src[8192], back[8192];
	struct fi_cq_msg_entry e;
	uint64_t raddr;
	struct fid_mr *mr;
	struct tep a, b;
	char name[FI_NAME_MAX];
	size_t len = sizeof(name);
	fi_addr_t dest;
	uint64_t msg = 0, v = 0x7ab1e5;
	int got = 0, i;

	setenv("FI_SHM_QUEUE_SLOTS", "16", 1);
	setenv("FI_SHM_MAX_PEERS", "2", 1);
	setenv("FI_SHM_BOUNCE_COUNT", "1", 1);
	setenv("FI_SHM_BOUNCE_SIZE", "4096", 1);
	if (tep_open(&a, NULL) || tep_open(&b, NULL))
		return 2;
	if (dev_shm_has_table() != want_table) {
		fprintf(stderr, "a registration table is%s there\n",
			want_table ? " not" : "");
		return 3;
	}
	if (fi_getname(&b.ep->fid, name, &len) ||
	    fi_av_insert(a.av, name, 1, &dest, 0, NULL) != 1)
		return 4;
	if (fi_mr_reg(b.domain, tgt, sizeof(tgt),
		      FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr, NULL))
		return 5;
	raddr = b.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			(uint64_t)(uintptr_t)tgt : 0;
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	if (fi_recv(b.ep, &msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, NULL) ||
	    fi_write(a.ep, src, sizeof(src), NULL, dest, raddr, fi_mr_key(mr),
		     &a) ||
	    fi_inject(a.ep, &v, sizeof(v), dest))
		return 6;
	/* The write needs b's progress: it has no table to do without. */
	for (i = 0; i < 200000 && got < 2; i++) {
		if (fi_cq_read(a.cq, &e, 1) == 1)
			got++;
		if (fi_cq_read(b.cq, &e, 1) == 1)
			got++;
	}
	if (got < 2 || memcmp(tgt, src, sizeof(src)) || msg != v) {
		struct fi_cq_err_entry err = { 0 };

		fprintf(stderr, "%d completions, data %s, message %#llx\n",
			got, memcmp(tgt, src, sizeof(src)) ? "wrong" : "right",
			(unsigned long long)msg);
		if (fi_cq_readerr(a.cq, &err, 0) == 1 ||
		    fi_cq_readerr(b.cq, &err, 0) == 1)
			fprintf(stderr, "error completion: %d (%s)\n", err.err,
				fi_strerror(err.err));
		return 7;
	}
	if (fi_read(a.ep, back, sizeof(back), NULL, dest, raddr, fi_mr_key(mr),
		    &a))
		return 8;
	for (i = 0, got = 0; i < 200000 && !got; i++) {
		got = fi_cq_read(a.cq, &e, 1) == 1;
		fi_cq_read(b.cq, &e, 1);
	}
	if (!got || memcmp(back, src, sizeof(src)))
		return 9;
	fi_close(&mr->fid);
	tep_close(&a);
	tep_close(&b);
	return 0;
}

/*
 * Room for two small regions and not for the domain's registration table:
 * the endpoints enable without one, and one-sided RMA goes through the
 * target's progress instead, data intact.  The control, with room, has
 * its table.
 */
Test(shm_trust, full_dev_shm_without_room_for_the_table, .timeout = 60)
{
	static const char *const size[2] = { "96k", "2m" };
	int i;

	for (i = 0; i < 2; i++) {
		pid_t pid = fork();

		cr_assert_geq(pid, 0);
		if (!pid) {
			int ret;

			if (!small_dev_shm(size[i]))
				_exit(77);
			ret = no_table_traffic(i == 1);
			fprintf(stderr, "on a %s /dev/shm: %d\n", size[i], ret);
			_exit(ret);
		}
		child_result(pid, "RMA without a registration table",
			     "cannot mount a small /dev/shm (needs root and "
			     "mount namespaces)");
	}
}

/* ---- an older layout, another user's bell ---------------------------------- */

/* A region a weft of the previous layout made: refused, not misread. */
Test(shm_trust, older_layout_version_is_refused)
{
	char tname[SHM_NAME_MAX], name[SHM_NAME_MAX], path[128];
	struct shm_region_hdr *old;
	struct shm_map tmpl;
	struct tep t;
	int fd;

	unique_name(tname, sizeof(tname), "old-tmpl");
	unique_name(name, sizeof(name), "old");
	cr_assert_eq(shm_region_create(tname, &attr, &tmpl), 0);
	old = malloc(tmpl.size);
	cr_assert_not_null(old);
	memcpy(old, tmpl.hdr, tmpl.size);
	old->version = SHM_VERSION - 1;
	snprintf(old->name, sizeof(old->name), "%s", name);
	region_path(path, sizeof(path), geteuid(), name);
	fd = copy_region(path, old, tmpl.size, tmpl.size, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(tep_open(&t, NULL), 0);
	assert_send_refused(&t, name, "a region of layout version N-1");
	tep_close(&t);
	shm_unlink(path);
	shm_region_unmap(&tmpl);
	free(old);
}

/*
 * Another user made a file where our bell goes, before our endpoint took
 * the name: the endpoint works without a bell (its waits poll), and nothing
 * is ever written into that file.
 */
Test(shm_trust, other_users_bell_is_not_used, .timeout = 60)
{
	char name[SHM_NAME_MAX], bell[160];
	struct stat st;
	pid_t pid;
	int fd;

	if (geteuid())
		cr_skip_test("needs root to act as two other users");
	unique_name(name, sizeof(name), "bell");
	snprintf(bell, sizeof(bell), "/dev/shm/weft-bell.%u.%s", VICTIM_UID,
		 name);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		if (!become(ATTACKER_UID))
			_exit(77);
		fd = open(bell, O_RDWR | O_CREAT | O_EXCL, 0666);
		_exit(fd < 0 ? 1 : 0);
	}
	child_result(pid, "attacker", "cannot switch to an unprivileged user");

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG,
					      .wait_obj = FI_WAIT_UNSPEC };
		struct fi_cq_msg_entry e;
		struct fid_cq *wcq;
		uint64_t got = 0;
		struct tep t;
		pid_t sender;
		ssize_t n;
		int status;

		if (!become(VICTIM_UID))
			_exit(77);
		if (tep_open(&t, name))
			_exit(2);
		/* A second CQ that can be waited on, for receives. */
		if (fi_cq_open(t.domain, &cq_attr, &wcq, NULL))
			_exit(2);
		fi_close(&t.ep->fid);
		if (fi_endpoint(t.domain, t.info, &t.ep, NULL) ||
		    fi_ep_bind(t.ep, &t.av->fid, 0) ||
		    fi_ep_bind(t.ep, &t.cq->fid, FI_TRANSMIT) ||
		    fi_ep_bind(t.ep, &wcq->fid, FI_RECV))
			_exit(2);
		{
			char addr[FI_NAME_MAX];

			snprintf(addr, sizeof(addr), "fi_shm://%s", name);
			if (fi_setname(&t.ep->fid, addr, strlen(addr) + 1) ||
			    fi_enable(t.ep))
				_exit(2);
		}
		if (fi_recv(t.ep, &got, sizeof(got), NULL, FI_ADDR_UNSPEC,
			    NULL))
			_exit(2);
		sender = fork();
		if (!sender) {
			struct tep s;

			usleep(200 * 1000); /* the receiver is asleep by now */
			if (tep_open(&s, NULL))
				_exit(2);
			n = tep_send(&s, name);
			/* Until the receiver has it: our sends are progressed
			 * by us, the receiver only polls its queue. */
			usleep(300 * 1000);
			tep_close(&s);
			_exit(n ? 3 : 0);
		}
		n = fi_cq_sread(wcq, &e, 1, NULL, 10000);
		fprintf(stderr, "receive with another user's file as bell: "
				"%zd, %#llx\n",
			n, (unsigned long long)got);
		waitpid(sender, &status, 0);
		fi_close(&t.ep->fid);
		fi_close(&wcq->fid);
		t.ep = NULL;
		tep_close(&t);
		_exit(n == 1 && got == 0x5ec2e75ec2e7 && WIFEXITED(status) &&
				      !WEXITSTATUS(status) ?
			      0 :
			      1);
	}
	child_result(pid, "victim", "cannot switch to an unprivileged user");

	/* The attacker's file: still theirs, still empty. */
	cr_assert_eq(stat(bell, &st), 0, "the attacker's file was removed");
	cr_assert_eq(st.st_uid, ATTACKER_UID);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_size, 0, "%lld bytes were written into it",
		     (long long)st.st_size);
	unlink(bell);
}

/* Whether this process maps a weft shm region. */
static bool maps_a_region(void)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/dev/shm/weft-shm.") != NULL;
	fclose(f);
	return found;
}

/* Two tcp RDM endpoints on 127.0.0.1 exchange a message each way; 0 when
 * both arrive intact.  *mapped: whether a region was mapped meanwhile. */
static int tcp_exchange(bool *mapped)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_av *av = NULL;
	struct fid_cq *cq[2] = { NULL };
	struct fid_ep *ep[2] = { NULL };
	fi_addr_t dest[2];
	char name[2][64];
	uint64_t got[2] = { 0 }, v[2] = { 0x1111, 0x2222 };
	struct fi_cq_msg_entry e;
	int i, ret, done = 0, spins;
	size_t len;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->addr_format = FI_SOCKADDR_IN;
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE,
			 hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	if (!ret)
		ret = fi_av_open(domain, &av_attr, &av, NULL);
	for (i = 0; i < 2 && !ret; i++) {
		ret = fi_cq_open(domain, &cq_attr, &cq[i], NULL);
		if (!ret)
			ret = fi_endpoint(domain, info, &ep[i], NULL);
		if (!ret)
			ret = fi_ep_bind(ep[i], &av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(ep[i], &cq[i]->fid,
					 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(ep[i]);
		len = sizeof(name[i]);
		if (!ret)
			ret = fi_getname(&ep[i]->fid, name[i], &len);
		if (!ret && fi_av_insert(av, name[i], 1, &dest[i], 0, NULL) != 1)
			ret = -FI_EINVAL;
	}
	for (i = 0; i < 2 && !ret; i++)
		ret = (int)fi_recv(ep[i], &got[i], sizeof(got[i]), NULL,
				   FI_ADDR_UNSPEC, &got[i]);
	for (i = 0; i < 2 && !ret; i++)
		ret = (int)fi_send(ep[i], &v[i], sizeof(v[i]), NULL,
				   dest[1 - i], &v[i]);
	for (spins = 0; !ret && done < 4 && spins < 2000000; spins++) {
		for (i = 0; i < 2; i++) {
			ssize_t n = fi_cq_read(cq[i], &e, 1);

			if (n == 1)
				done++;
			else if (n != -FI_EAGAIN)
				ret = (int)n;
		}
	}
	if (!ret && (done != 4 || got[0] != v[1] || got[1] != v[0]))
		ret = -FI_EIO;
	*mapped = maps_a_region();
	for (i = 0; i < 2; i++) {
		if (ep[i])
			fi_close(&ep[i]->fid);
		if (cq[i])
			fi_close(&cq[i]->fid);
	}
	if (av)
		fi_close(&av->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	fi_freeinfo(info);
	return ret;
}

/*
 * tcp reaches peers of its host through shared memory; with no room in
 * /dev/shm for its region it reaches them through the network instead.
 * The control first: with room, the same exchange maps a region.
 */
Test(shm_trust, tcp_falls_back_on_full_dev_shm, .timeout = 60)
{
	pid_t pid;

	unsetenv("FI_TCP_SHM");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		bool mapped = false;
		int ret = tcp_exchange(&mapped);

		fprintf(stderr, "tcp, room in /dev/shm: %d, region %s\n", ret,
			mapped ? "mapped" : "none");
		_exit(ret == -FI_ENODATA ? 77 : ret || !mapped ? 1 : 0);
	}
	child_result(pid, "tcp with room in /dev/shm", "no tcp provider");

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		bool mapped = true;
		int ret;

		if (!small_dev_shm("64k"))
			_exit(77);
		ret = tcp_exchange(&mapped);
		fprintf(stderr, "tcp, a 64 KiB /dev/shm: %d, region %s\n", ret,
			mapped ? "mapped" : "none");
		_exit(ret || mapped ? 1 : 0);
	}
	child_result(pid, "tcp on a full /dev/shm",
		     "cannot mount a small /dev/shm (needs root and mount "
		     "namespaces)");
}

/* ---- hostile slots --------------------------------------------------------- */

/*
 * A receiver endpoint, and a sender driven by hand: its region is made
 * with shm_region_create (BOUNCE slots point into its bounce buffers) and
 * it writes the receiver's queue and peer table directly, as any process
 * that maps the region can.
 */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct hostile {
	struct tep rx;
	char rx_name[SHM_NAME_MAX];
	char tx_name[SHM_NAME_MAX];
	struct shm_map tx; /* the sender's own region */
	struct shm_map rxm; /* the receiver's, as the sender maps it */
	char *buf; /* the receive buffer */
};

#define HOSTILE_BUF (1u << 20)
#define SRC0 (0u | 1u << 16) /* entry 0, generation 1 */

static void hostile_open(struct hostile *h, const char *what)
{
	struct shm_peer *p;
	char n[32];

	snprintf(n, sizeof(n), "rx-%s", what);
	unique_name(h->rx_name, sizeof(h->rx_name), n);
	snprintf(n, sizeof(n), "tx-%s", what);
	unique_name(h->tx_name, sizeof(h->tx_name), n);
	cr_assert_eq(tep_open(&h->rx, h->rx_name), 0);
	cr_assert_eq(shm_region_create(h->tx_name, &attr, &h->tx), 0);
	cr_assert_eq(shm_region_map(h->rx_name, &h->rxm), 0);
	p = &raw_peers(h->rxm.hdr)[0];
	p->pid = getpid();
	snprintf(p->name, sizeof(p->name), "%s", h->tx_name);
	p->gen = 1;
	atomic_store(&p->state, SHM_PEER_ACTIVE);
	h->buf = calloc(1, HOSTILE_BUF);
	cr_assert_not_null(h->buf);
	cr_assert_eq(fi_recv(h->rx.ep, h->buf, HOSTILE_BUF, NULL,
			     FI_ADDR_UNSPEC, NULL),
		     0);
}

static void hostile_close(struct hostile *h)
{
	shm_region_unmap(&h->rxm);
	shm_region_unmap(&h->tx);
	tep_close(&h->rx);
	free(h->buf);
}

/* Publish a slot in a region's queue, as its only producer. */
static void put_slot(struct shm_region_hdr *hdr, const struct shm_slot *in)
{
	struct shm_queue *q = raw_queue(hdr);
	uint64_t pos = atomic_load(&q->tail);
	struct shm_slot *s = &q->slot[pos & (hdr->queue_slots - 1)];

	cr_assert_eq(atomic_load(&s->seq), pos, "the queue is full");
	atomic_store(&q->tail, pos + 1);
	memcpy((char *)s + sizeof(s->seq), (const char *)in + sizeof(in->seq),
	       sizeof(*s) - sizeof(s->seq));
	atomic_store(&s->seq, pos + 1);
}

/*
 * Send an honest 8-byte message after whatever was queued, let the
 * receiver read everything, and check that the honest message alone
 * arrived: what came before it was dropped, not delivered.
 */
static void expect_only_marker(struct hostile *h)
{
	struct shm_slot s = { .op = SHM_OP_INLINE, .src = SRC0, .len = 8 };
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_msg_entry e;
	ssize_t n = -FI_EAGAIN;
	int i;

	memcpy(s.payload, "MARKER!!", 8);
	put_slot(h->rxm.hdr, &s);
	for (i = 0; i < 100000 && n == -FI_EAGAIN; i++)
		n = fi_cq_read(h->rx.cq, &e, 1);
	if (n == -FI_EAVAIL) {
		fi_cq_readerr(h->rx.cq, &err, 0);
		cr_assert_fail("receive completed in error %d (%s)", err.err,
			       fi_strerror(err.err));
	}
	cr_assert_eq(n, 1, "no message arrived (%zd)", n);
	cr_assert_eq(e.len, 8, "a hostile message was delivered (%zu bytes)",
		     e.len);
	cr_assert_arr_eq(h->buf, "MARKER!!", 8,
			 "a hostile message was delivered");
	cr_assert_eq(fi_cq_read(h->rx.cq, &e, 1), -FI_EAGAIN);
}

/*
 * A sender that marked its entry as claiming, claimed a slot of our queue
 * and died before saying which: the slot is skipped, and the queue moves
 * on; while the marked sender lives, nothing is skipped.
 */
Test(shm_trust, sender_dead_inside_its_claim, .timeout = 60)
{
	struct shm_slot s = { .op = SHM_OP_INLINE, .src = SRC0, .len = 8 };
	struct shm_queue *q;
	struct shm_peer *p;
	struct fi_cq_msg_entry e;
	struct hostile h;
	ssize_t n = -FI_EAGAIN;
	uint64_t until;
	pid_t dead;

	dead = dead_pid();

	hostile_open(&h, "claim");
	q = raw_queue(h.rxm.hdr);
	p = &raw_peers(h.rxm.hdr)[1];
	p->pid = getpid(); /* alive, for now */
	snprintf(p->name, sizeof(p->name), "claimer");
	p->gen = 1;
	atomic_store(&p->claim, SHM_CLAIMING);
	atomic_store(&p->state, SHM_PEER_ACTIVE);
	/* Its claim: the tail moves, the slot stays unpublished. */
	atomic_fetch_add(&q->tail, 1);
	memcpy(s.payload, "MARKER!!", 8);
	put_slot(h.rxm.hdr, &s);

	/* A live claimer: 200 ms of progress deliver nothing. */
	for (until = now_ms() + 200; now_ms() < until && n == -FI_EAGAIN;)
		n = fi_cq_read(h.rx.cq, &e, 1);
	cr_assert_eq(n, -FI_EAGAIN, "a live claimer's slot was skipped (%zd)",
		     n);
	/* It dies inside its claim: within 5 s the marker arrives. */
	p->pid = dead;
	for (until = now_ms() + 5000; now_ms() < until && n == -FI_EAGAIN;)
		n = fi_cq_read(h.rx.cq, &e, 1);
	cr_assert_eq(n, 1, "the queue stayed stuck behind a dead claimer "
			   "(%zd)", n);
	cr_assert_arr_eq(h.buf, "MARKER!!", 8);
	cr_assert_eq(atomic_load(&p->claim), 0);
	hostile_close(&h);
}

Test(shm_trust, inline_length_out_of_bounds)
{
	struct shm_slot s = { .op = SHM_OP_INLINE, .src = SRC0, .len = 4000 };
	struct hostile h;

	hostile_open(&h, "inline");
	put_slot(h.rxm.hdr, &s);
	expect_only_marker(&h);
	hostile_close(&h);
}

Test(shm_trust, bounce_length_out_of_bounds)
{
	struct shm_slot s = {
		.op = SHM_OP_BOUNCE, .src = SRC0, .len = HOSTILE_BUF, .aux = 0
	};
	struct hostile h;

	hostile_open(&h, "bounce");
	put_slot(h.rxm.hdr, &s);
	expect_only_marker(&h);
	hostile_close(&h);
}

/* A slot naming a table entry nobody claimed (generation 0). */
Test(shm_trust, unclaimed_peer_entry)
{
	struct shm_slot s = { .op = SHM_OP_BOUNCE, .src = 1, .len = 8 };
	struct hostile h;

	hostile_open(&h, "unclaimed");
	put_slot(h.rxm.hdr, &s);
	expect_only_marker(&h);
	hostile_close(&h);
}

/* A table entry whose name fills it with no terminating NUL. */
Test(shm_trust, peer_name_not_terminated)
{
	struct shm_slot s = { .op = SHM_OP_INLINE, .src = 2 | 1u << 16,
			      .len = 8 };
	struct shm_peer *p;
	struct hostile h;

	hostile_open(&h, "noname");
	p = &raw_peers(h.rxm.hdr)[2];
	memset(p->name, 'x', sizeof(p->name));
	p->gen = 1;
	atomic_store(&p->state, SHM_PEER_ACTIVE);
	memcpy(s.payload, "BADNAME!", 8);
	put_slot(h.rxm.hdr, &s);
	expect_only_marker(&h);
	hostile_close(&h);
}

/*
 * A peer rewrites the receiver's own header to widen its peer table, and
 * writes an entry past the table's end (in the receiver's bounce buffers).
 */
Test(shm_trust, own_header_rewritten)
{
	struct shm_slot s = { .op = SHM_OP_INLINE, .len = 8 };
	uint32_t idx = (uint32_t)default_attr.max_peers + 4;
	struct shm_peer *p;
	struct hostile h;

	hostile_open(&h, "ownhdr");
	cr_assert_eq(h.rxm.hdr->max_peers, default_attr.max_peers);
	h.rxm.hdr->max_peers = 2 * default_attr.max_peers;
	p = &raw_peers(h.rxm.hdr)[idx];
	snprintf(p->name, sizeof(p->name), "%s", h.tx_name);
	p->gen = 1;
	atomic_store(&p->state, SHM_PEER_ACTIVE);
	s.src = idx | 1u << 16;
	memcpy(s.payload, "WIDENED!", 8);
	put_slot(h.rxm.hdr, &s);
	expect_only_marker(&h);
	hostile_close(&h);
}

/*
 * A rendezvous descriptor with more iovecs than it has room for: refused,
 * and its sender, who waits for an answer, is told FI_EIO.
 */
Test(shm_trust, rts_descriptor_out_of_bounds)
{
	struct shm_slot s = { .op = SHM_OP_RTS, .src = SRC0 };
	struct shm_rts rts = { .tx_id = 55, .msg_len = 8, .iov_count = 1000,
			       .push = 1 };
	struct shm_slot *ack;
	struct hostile h;

	hostile_open(&h, "rts");
	rts.pid = getpid();
	memcpy(s.payload, &rts, sizeof(rts));
	put_slot(h.rxm.hdr, &s);
	expect_only_marker(&h);
	ack = &raw_queue(h.tx.hdr)->slot[0];
	cr_assert_eq(atomic_load(&ack->seq), 1, "no answer to the RTS");
	cr_assert_eq(ack->op, SHM_OP_ACK);
	cr_assert_eq(ack->tag, 55);
	cr_assert_eq(ack->aux, FI_EIO);
	hostile_close(&h);
}

/*
 * A message pushed through bounce buffers, whose DATA slot claims 1 MiB of
 * the sender's 1 KiB bounce buffer: the receive completes with FI_EIO and
 * the sender is told so.
 */
Test(shm_trust, pushed_data_out_of_bounds)
{
	struct shm_slot s = { .op = SHM_OP_RTS, .src = SRC0 };
	struct shm_rts rts = { .tx_id = 66, .msg_len = 8, .iov_count = 1,
			       .len = { 8 }, .push = 1 };
	struct fi_cq_err_entry err = { 0 };
	struct shm_slot *cts, *ack;
	struct fi_cq_msg_entry e;
	struct shm_queue *txq;
	struct hostile h;
	ssize_t n = -FI_EAGAIN;
	int i;

	hostile_open(&h, "push");
	txq = raw_queue(h.tx.hdr);
	rts.pid = getpid();
	memcpy(s.payload, &rts, sizeof(rts));
	put_slot(h.rxm.hdr, &s);
	/* The receive matches and asks for the data. */
	cts = &txq->slot[0];
	for (i = 0; i < 100000 && atomic_load(&cts->seq) != 1; i++)
		cr_assert_eq(fi_cq_read(h.rx.cq, &e, 1), -FI_EAGAIN);
	cr_assert_eq(atomic_load(&cts->seq), 1, "no CTS");
	cr_assert_eq(cts->op, SHM_OP_CTS);
	cr_assert_eq(cts->tag, 66);
	cr_assert_eq(cts->data, 8);

	memset(&s, 0, sizeof(s));
	s.op = SHM_OP_DATA;
	s.src = SRC0;
	s.tag = cts->aux; /* the receiver's pull */
	s.aux = 0;
	s.data = 0;
	s.len = HOSTILE_BUF;
	put_slot(h.rxm.hdr, &s);
	for (i = 0; i < 100000 && n == -FI_EAGAIN; i++)
		n = fi_cq_read(h.rx.cq, &e, 1);
	cr_assert_eq(n, -FI_EAVAIL, "the receive did not fail (%zd)", n);
	cr_assert_eq(fi_cq_readerr(h.rx.cq, &err, 0), 1);
	cr_assert_eq(err.err, FI_EIO);
	ack = &txq->slot[1];
	cr_assert_eq(atomic_load(&ack->seq), 2, "the sender was not told");
	cr_assert_eq(ack->op, SHM_OP_ACK);
	cr_assert_eq(ack->tag, 66);
	cr_assert_eq(ack->aux, FI_EIO);
	hostile_close(&h);
}

/*
 * An RMA write whose data, the request says, fills 1 MiB of the sender's
 * bounce buffer 0 (of 1 KiB): refused with FI_EIO, target memory untouched.
 */
Test(shm_trust, rma_request_out_of_bounds)
{
	struct shm_slot s = { .op = SHM_OP_RMA, .src = SRC0 };
	struct shm_rma_req req = { 0 };
	struct shm_slot *resp;
	struct fid_mr *mr;
	struct hostile h;
	char *target;
	size_t i;

	hostile_open(&h, "rma");
	target = calloc(1, HOSTILE_BUF);
	cr_assert_not_null(target);
	cr_assert_eq(fi_mr_reg(h.rx.domain, target, HOSTILE_BUF,
			       FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL),
		     0);
	req.tx_id = 77;
	req.len = HOSTILE_BUF;
	req.pid = getpid();
	req.bounce = 0;
	req.kind = UTIL_RDM_TX_WRITE;
	req.rma_count = 1;
	req.rma[0].addr = (uintptr_t)target;
	req.rma[0].len = HOSTILE_BUF;
	req.rma[0].key = fi_mr_key(mr);
	req.flags = SHM_RMA_F_LAST;
	memcpy(s.payload, &req, sizeof(req));
	put_slot(h.rxm.hdr, &s);
	expect_only_marker(&h);
	/* The answer, in the sender's queue. */
	resp = &raw_queue(h.tx.hdr)->slot[0];
	cr_assert_eq(atomic_load(&resp->seq), 1, "no answer to the request");
	cr_assert_eq(resp->op, SHM_OP_RMA_RESP);
	cr_assert_eq(resp->tag, 77);
	cr_assert_eq(resp->aux, FI_EIO);
	for (i = 0; i < HOSTILE_BUF; i++)
		cr_assert_eq(target[i], 0, "target byte %zu written", i);
	fi_close(&mr->fid);
	free(target);
	hostile_close(&h);
}
