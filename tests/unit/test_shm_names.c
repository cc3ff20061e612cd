/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How shm endpoints are named: the addresses fi_getinfo forms from node and
 * service, the source address it reports, fi_getname agreeing with it, names
 * read only within their length, and names another user cannot block.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#define PREFIX "fi_shm://"

struct opened {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static struct fi_info *shm_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	cr_assert_not_null(h);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG;
	h->fabric_attr->prov_name = strdup("shm");
	return h;
}

/* fi_getinfo over shm; returns the error, the list in *info. */
static int shm_getinfo(const char *node, const char *service, uint64_t flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *h = hints ? fi_dupinfo(hints) : shm_hints();
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), node, service, flags, h, info);
	fi_freeinfo(h);
	return ret;
}

/* Opens an endpoint of `info` and enables it; returns fi_enable's result. */
static int open_ep(struct fi_info *info, struct opened *o)
{
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };

	memset(o, 0, sizeof(*o));
	cr_assert_eq(fi_fabric(info->fabric_attr, &o->fabric, NULL), 0);
	cr_assert_eq(fi_domain(o->fabric, info, &o->domain, NULL), 0);
	cr_assert_eq(fi_av_open(o->domain, &av_attr, &o->av, NULL), 0);
	cr_assert_eq(fi_cq_open(o->domain, &cq_attr, &o->cq, NULL), 0);
	cr_assert_eq(fi_endpoint(o->domain, info, &o->ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(o->ep, &o->av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV),
		     0);
	return fi_enable(o->ep);
}

static void close_ep(struct opened *o)
{
	fi_close(&o->ep->fid);
	fi_close(&o->cq->fid);
	fi_close(&o->av->fid);
	fi_close(&o->domain->fid);
	fi_close(&o->fabric->fid);
}

static void getname(struct opened *o, char *buf, size_t size)
{
	size_t len = size;

	cr_assert_eq(fi_getname(&o->ep->fid, buf, &len), 0);
	cr_assert_eq(len, strlen(buf) + 1);
}

/* A string no other run of this test uses. */
static void unique(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "%s%d", what, (int)getpid());
}

/*
 * For each way of asking, the source address fi_getinfo reports is set, is
 * a terminated "fi_shm://..." string of src_addrlen bytes, and is what
 * fi_getname says once the endpoint is enabled.
 */
static void src_is_name(const char *node, const char *service, uint64_t flags)
{
	struct fi_info *info;
	struct opened o;
	char name[256];

	cr_assert_eq(shm_getinfo(node, service, flags, NULL, &info), 0);
	cr_assert_not_null(info->src_addr, "node %s service %s flags %llx: "
			   "no source address", node ? node : "-",
			   service ? service : "-",
			   (unsigned long long)flags);
	cr_assert_eq(info->addr_format, FI_ADDR_STR);
	cr_assert_eq(info->src_addrlen, strlen(info->src_addr) + 1);
	cr_assert_eq(strncmp(info->src_addr, PREFIX, strlen(PREFIX)), 0);
	cr_assert_eq(open_ep(info, &o), 0);
	getname(&o, name, sizeof(name));
	cr_assert_str_eq(name, info->src_addr);
	close_ep(&o);
	fi_freeinfo(info);
}

Test(shm_names, src_addr_is_the_endpoint_name)
{
	char node[32], service[16];
	struct fi_info *info;

	unique(node, sizeof(node), "srcnode");
	snprintf(service, sizeof(service), "%d", 20000 + getpid() % 20000);
	src_is_name(NULL, NULL, 0);
	/* As fi_getinfo(3) has it: FI_SOURCE needs a node or a service. */
	cr_assert_eq(shm_getinfo(NULL, NULL, FI_SOURCE, NULL, &info),
		     -FI_EINVAL);
	src_is_name(node, NULL, FI_SOURCE);
	src_is_name(node, service, FI_SOURCE);
	src_is_name(NULL, service, FI_SOURCE);
	src_is_name(NULL, service, 0);
	src_is_name(node, NULL, 0);
	src_is_name(node, service, 0);
}

/* Two calls without a node give two different names. */
Test(shm_names, default_names_differ)
{
	struct fi_info *a, *b;

	cr_assert_eq(shm_getinfo(NULL, NULL, 0, NULL, &a), 0);
	cr_assert_eq(shm_getinfo(NULL, NULL, 0, NULL, &b), 0);
	cr_assert_not_null(a->src_addr);
	cr_assert_not_null(b->src_addr);
	cr_assert_str_neq(a->src_addr, b->src_addr);
	fi_freeinfo(a);
	fi_freeinfo(b);
}

/*
 * The server asks for node+service with FI_SOURCE; a client built the way
 * 1.17's test suites build one (a source address from the node alone with
 * FI_SOURCE, copied into hints->src_addr, then node+service of the server
 * without FI_SOURCE) gets the server's name as its destination and a
 * source of its own.  Another port gives another name.
 */
Test(shm_names, client_finds_server_by_node_and_service)
{
	struct fi_info *srv, *srv2, *cli_src, *cli, *h;
	char p1[16], p2[16];

	snprintf(p1, sizeof(p1), "%d", 20000 + getpid() % 20000);
	snprintf(p2, sizeof(p2), "%d", 40001 + getpid() % 20000);
	cr_assert_eq(shm_getinfo("127.0.0.1", p1, FI_SOURCE, NULL, &srv), 0);
	cr_assert_eq(shm_getinfo("127.0.0.1", p2, FI_SOURCE, NULL, &srv2), 0);
	cr_assert_str_neq(srv->src_addr, srv2->src_addr);

	cr_assert_eq(shm_getinfo("127.0.0.1", NULL, FI_SOURCE, NULL, &cli_src),
		     0);
	h = shm_hints();
	h->src_addr = malloc(cli_src->src_addrlen);
	memcpy(h->src_addr, cli_src->src_addr, cli_src->src_addrlen);
	h->src_addrlen = cli_src->src_addrlen;
	cr_assert_eq(shm_getinfo("127.0.0.1", p1, 0, h, &cli), 0);
	cr_assert_not_null(cli->dest_addr);
	cr_assert_str_eq(cli->dest_addr, srv->src_addr);
	cr_assert_str_eq(cli->src_addr, cli_src->src_addr);
	/* The client's source is not the server's name, nor the bare node
	 * every client of this host would ask for. */
	cr_assert_str_neq(cli->src_addr, srv->src_addr);
	cr_assert_str_neq(cli->src_addr, PREFIX "127.0.0.1");
	fi_freeinfo(h);
	fi_freeinfo(cli);
	fi_freeinfo(cli_src);
	fi_freeinfo(srv2);
	fi_freeinfo(srv);
}

/*
 * Processes asking with the same node and different services, or with the
 * same node and no service, all get endpoints: nobody takes the bare node
 * as its name.
 */
Test(shm_names, same_node_in_several_processes, .timeout = 60)
{
	char port[16];
	int i, status, fds[2];
	pid_t pids[4];
	char c;

	cr_assert_eq(pipe(fds), 0);
	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		cr_assert_geq(pids[i], 0);
		if (!pids[i]) {
			struct fi_info *info;
			struct opened o;
			int ret;

			close(fds[1]);
			snprintf(port, sizeof(port), "%d",
				 20000 + (getpid() % 20000));
			ret = shm_getinfo("127.0.0.1", i < 2 ? port : NULL,
					  FI_SOURCE, NULL, &info);
			if (ret)
				_exit(2);
			ret = open_ep(info, &o);
			/* Hold the endpoint until every process has one. */
			if (read(fds[0], &c, 1) < 0)
				_exit(4);
			if (!ret)
				close_ep(&o);
			_exit(ret ? 3 : 0);
		}
	}
	close(fds[0]);
	sleep(1); /* not a verdict: only gives the children time to overlap */
	close(fds[1]);
	for (i = 0; i < 4; i++) {
		cr_assert_eq(waitpid(pids[i], &status, 0), pids[i]);
		cr_assert(WIFEXITED(status) && !WEXITSTATUS(status),
			  "process %d: status %d", i, status);
	}
}

/* Two endpoints of one fi_info with a chosen name: the first gets it, the
 * second the name followed by ".N"; fi_getname tells each. */
Test(shm_names, chosen_name_shared_by_two_endpoints)
{
	struct fi_info *info;
	struct opened a, b;
	char node[64], na[256], nb[256];

	unique(node, sizeof(node), PREFIX "shared");
	cr_assert_eq(shm_getinfo(node, NULL, FI_SOURCE, NULL, &info), 0);
	cr_assert_eq(open_ep(info, &a), 0);
	cr_assert_eq(open_ep(info, &b), 0);
	getname(&a, na, sizeof(na));
	getname(&b, nb, sizeof(nb));
	cr_assert_str_eq(na, node);
	cr_assert_eq(strncmp(nb, node, strlen(node)), 0);
	cr_assert_eq(nb[strlen(node)], '.', "second endpoint: %s", nb);
	close_ep(&b);
	close_ep(&a);
	fi_freeinfo(info);
}

#define RACERS 8
#define ROUNDS 50

struct racer {
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_info *info;
	pthread_barrier_t *start;
	struct fid_ep *ep;
	struct fid_cq *cq;
	int ret;
};

static void *race_enable(void *arg)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };
	struct racer *r = arg;

	r->ret = fi_cq_open(r->domain, &cq_attr, &r->cq, NULL);
	if (!r->ret)
		r->ret = fi_endpoint(r->domain, r->info, &r->ep, NULL);
	if (!r->ret)
		r->ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!r->ret)
		r->ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	pthread_barrier_wait(r->start);
	if (!r->ret)
		r->ret = fi_enable(r->ep);
	return NULL;
}

/*
 * Endpoints of one fi_info enabled by several threads at once: each gets a
 * name and a region of its own, and a message sent to each name reaches
 * that endpoint.
 */
Test(shm_names, endpoints_of_one_info_enabled_at_once, .timeout = 120)
{
	struct racer r[RACERS];
	pthread_t t[RACERS];
	pthread_barrier_t start;
	struct fi_info *info;
	struct opened o;
	char names[RACERS][256];
	fi_addr_t addr;
	uint64_t v, got;
	struct fi_cq_msg_entry e;
	int round, i, j;

	cr_assert_eq(shm_getinfo(NULL, NULL, 0, NULL, &info), 0);
	cr_assert_eq(open_ep(info, &o), 0); /* the sender */
	for (round = 0; round < ROUNDS; round++) {
		pthread_barrier_init(&start, NULL, RACERS);
		for (i = 0; i < RACERS; i++) {
			r[i] = (struct racer){ .domain = o.domain,
					       .av = o.av,
					       .info = info,
					       .start = &start };
			cr_assert_eq(pthread_create(&t[i], NULL, race_enable,
						    &r[i]), 0);
		}
		for (i = 0; i < RACERS; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&start);
		for (i = 0; i < RACERS; i++) {
			size_t len = sizeof(names[i]);

			cr_assert_eq(r[i].ret, 0, "round %d: endpoint %d: %d",
				     round, i, r[i].ret);
			cr_assert_eq(fi_getname(&r[i].ep->fid, names[i], &len),
				     0);
			for (j = 0; j < i; j++)
				cr_assert_str_neq(names[i], names[j],
						  "round %d: two endpoints "
						  "named %s", round, names[i]);
			cr_assert_eq(fi_av_insert(o.av, names[i], 1, &addr, 0,
						  NULL), 1);
			cr_assert_eq(fi_recv(r[i].ep, &got, sizeof(got), NULL,
					     FI_ADDR_UNSPEC, NULL), 0);
			v = (uint64_t)round << 32 | (uint64_t)i;
			cr_assert_eq(fi_inject(o.ep, &v, sizeof(v), addr), 0);
			while (fi_cq_read(r[i].cq, &e, 1) == -FI_EAGAIN)
				(void)fi_cq_read(o.cq, &e, 0);
			cr_assert_eq(got, v, "round %d: endpoint %s got the "
				     "message of %d", round, names[i],
				     (int)(got & 0xffff));
		}
		for (i = 0; i < RACERS; i++) {
			fi_close(&r[i].ep->fid);
			fi_close(&r[i].cq->fid);
		}
	}
	close_ep(&o);
	fi_freeinfo(info);
}

/* Names are read within their length, never to a NUL beyond it. */
Test(shm_names, src_addr_read_within_its_length)
{
	struct fi_info *info;
	struct opened o;
	char want[64], name[256], *buf;
	size_t len;

	cr_assert_eq(shm_getinfo(NULL, NULL, 0, NULL, &info), 0);
	unique(want, sizeof(want), PREFIX "unterminated");
	len = strlen(want);
	/* The bytes after src_addrlen are not the caller's name. */
	buf = malloc(len + 8);
	memcpy(buf, want, len);
	memcpy(buf + len, "GARBAGE", 8);
	free(info->src_addr);
	info->src_addr = buf;
	info->src_addrlen = len;
	cr_assert_eq(open_ep(info, &o), 0);
	getname(&o, name, sizeof(name));
	cr_assert_str_eq(name, want);
	close_ep(&o);
	fi_freeinfo(info);
}

/*
 * A destination in the hints is read within dest_addrlen too, and the
 * answer hands it on terminated: clients insert info->dest_addr into their
 * AV as it is, and an unterminated string would be read past its end.
 */
Test(shm_names, dest_addr_read_within_its_length)
{
	struct fi_info *hints = shm_hints(), *info;
	char want[64], *buf;
	size_t len;

	unique(want, sizeof(want), PREFIX "dest");
	len = strlen(want);
	buf = malloc(len);
	cr_assert_not_null(buf);
	memcpy(buf, want, len); /* no NUL */
	hints->addr_format = FI_ADDR_STR;
	hints->dest_addr = buf;
	hints->dest_addrlen = len;
	cr_assert_eq(shm_getinfo(NULL, NULL, 0, hints, &info), 0);
	cr_assert_not_null(info->dest_addr);
	cr_assert_not_null(memchr(info->dest_addr, '\0', info->dest_addrlen),
			   "dest_addr handed on unterminated");
	cr_assert_str_eq(info->dest_addr, want);
	fi_freeinfo(info);

	/* Not an shm address: no answer. */
	memcpy(buf, "fi_shm://a/b", 12);
	hints->dest_addrlen = 12;
	cr_assert_eq(shm_getinfo(NULL, NULL, 0, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
}

/*
 * A directory where the region's file goes fails fi_enable, without a
 * crash; once it is gone the same endpoint enables under its name, and
 * nothing the failed enable set up is lost (LeakSanitizer would say).
 */
Test(shm_names, enable_again_after_failure)
{
	struct fi_info *info;
	struct opened o;
	char node[64], name[256], path[128];

	unique(node, sizeof(node), PREFIX "dir");
	snprintf(path, sizeof(path), "/dev/shm/weft-shm.%u.%s",
		 (unsigned)getuid(), node + strlen(PREFIX));
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(shm_getinfo(node, NULL, FI_SOURCE, NULL, &info), 0);
	cr_assert_neq(open_ep(info, &o), 0, "enabled over a directory");
	cr_assert_eq(rmdir(path), 0);
	cr_assert_eq(fi_enable(o.ep), 0);
	getname(&o, name, sizeof(name));
	cr_assert_str_eq(name, node);
	close_ep(&o);
	fi_freeinfo(info);
}

/* A source address that names no region is refused, not swapped for a
 * name of weft's choosing that fi_getname would then report. */
Test(shm_names, bad_src_addr_refused_by_fi_endpoint)
{
	/* '#' names a scalable endpoint's context: never chosen. */
	static const char *const bad[] = { "fi_shm://a/b", "fi_shm://", "",
					   "fi_shm://a#1" };
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	size_t i;

	cr_assert_eq(shm_getinfo(NULL, NULL, 0, NULL, &info), 0);
	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		free(info->src_addr);
		info->src_addr = strdup(bad[i]);
		info->src_addrlen = strlen(bad[i]) + 1;
		ep = NULL;
		cr_assert_eq(fi_endpoint(domain, info, &ep, NULL), -FI_EINVAL,
			     "src_addr \"%s\"", bad[i]);
	}
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

Test(shm_names, setname_reads_within_its_length)
{
	struct fi_info *info;
	struct opened o;
	char want[64], name[256], buf[80];
	size_t len;

	cr_assert_eq(shm_getinfo(NULL, NULL, 0, NULL, &info), 0);
	unique(want, sizeof(want), PREFIX "setname");
	len = strlen(want);
	memcpy(buf, want, len);
	memcpy(buf + len, "GARBAGE", 8);
	{
		struct fi_av_attr av_attr = { .type = FI_AV_MAP };
		struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };

		cr_assert_eq(fi_fabric(info->fabric_attr, &o.fabric, NULL), 0);
		cr_assert_eq(fi_domain(o.fabric, info, &o.domain, NULL), 0);
		cr_assert_eq(fi_av_open(o.domain, &av_attr, &o.av, NULL), 0);
		cr_assert_eq(fi_cq_open(o.domain, &cq_attr, &o.cq, NULL), 0);
		cr_assert_eq(fi_endpoint(o.domain, info, &o.ep, NULL), 0);
		cr_assert_eq(fi_setname(&o.ep->fid, buf, len), 0);
		cr_assert_eq(fi_ep_bind(o.ep, &o.av->fid, 0), 0);
		cr_assert_eq(fi_ep_bind(o.ep, &o.cq->fid,
					FI_TRANSMIT | FI_RECV), 0);
		cr_assert_eq(fi_enable(o.ep), 0);
	}
	getname(&o, name, sizeof(name));
	cr_assert_str_eq(name, want);
	close_ep(&o);
	fi_freeinfo(info);
}

/* ---- another user on the host --------------------------------------------
 *
 * The victim runs as an unprivileged user (nobody), the files in its way
 * belong to root: the victim can neither open nor remove them, as with any
 * two users.  Without root (to switch users) the tests are skipped.
 */

static uid_t victim_uid;
static gid_t victim_gid;

static void need_two_users(void)
{
	struct passwd *pw;

	if (geteuid() != 0)
		cr_skip_test("needs root, to run a process as a second user");
	pw = getpwnam("nobody");
	if (!pw || pw->pw_uid == 0)
		cr_skip_test("no unprivileged user \"nobody\" to act as");
	victim_uid = pw->pw_uid;
	victim_gid = pw->pw_gid;
}

/* A file of root's in the way of the victim's region `name`. */
static void squat(const char *name, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "/weft-shm.%u.%s", (unsigned)victim_uid, name);
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "cannot create %s", path);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	close(fd);
}

/*
 * Fork a victim that becomes the second user, reports through `to_parent`
 * and waits for a byte on `from_parent` before going on; run(arg) is its
 * body, whose result is its exit status.
 */
static pid_t victim(int (*run)(int, int), int *to_parent, int *from_parent)
{
	int up[2], down[2];
	pid_t pid;

	cr_assert_eq(pipe(up), 0);
	cr_assert_eq(pipe(down), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		close(up[0]);
		close(down[1]);
		if (setgid(victim_gid) || setuid(victim_uid))
			_exit(10);
		_exit(run(up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	*to_parent = up[0];
	*from_parent = down[1];
	return pid;
}

static int wait_victim(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "victim status %d", status);
	return WEXITSTATUS(status);
}

/* Victim: tell the parent the name getinfo chose, enable an endpoint once
 * the parent has put a file there, exit 0 if it got another name. */
static int default_name_victim(int up, int down)
{
	struct fi_info *info;
	struct opened o;
	char name[256], c;
	size_t len;

	if (shm_getinfo(NULL, NULL, 0, NULL, &info) || !info->src_addr)
		return 2;
	len = strlen(info->src_addr) + 1;
	if (write(up, info->src_addr, len) != (ssize_t)len)
		return 3;
	if (read(down, &c, 1) != 1)
		return 4;
	if (open_ep(info, &o))
		return 5;
	len = sizeof(name);
	if (fi_getname(&o.ep->fid, name, &len))
		return 6;
	if (!strcmp(name, info->src_addr))
		return 7;
	close_ep(&o);
	fi_freeinfo(info);
	return 0;
}

/* A default name taken by another user's file: the endpoint gets another. */
Test(shm_names, default_name_taken_by_other_user, .timeout = 60)
{
	char addr[256], path[128];
	int up, down, ret;
	ssize_t n;
	pid_t pid;

	need_two_users();
	pid = victim(default_name_victim, &up, &down);
	n = read(up, addr, sizeof(addr));
	cr_assert_gt(n, (ssize_t)strlen(PREFIX), "victim status %d",
		     n ? 0 : wait_victim(pid));
	squat(addr + strlen(PREFIX), path, sizeof(path));
	cr_assert_eq(write(down, "", 1), 1);
	ret = wait_victim(pid);
	shm_unlink(path);
	cr_assert_eq(ret, 0, "victim failed at step %d", ret);
}

/* Victim: endpoints without a source address, after the parent has put
 * files on every name of the form it could predict. */
static int unguessable_victim(int up, int down)
{
	struct fi_info *info;
	struct opened o[4];
	char c;
	int i;

	if (read(down, &c, 1) != 1)
		return 4;
	if (shm_getinfo(NULL, NULL, 0, NULL, &info))
		return 2;
	free(info->src_addr);
	info->src_addr = NULL;
	info->src_addrlen = 0;
	for (i = 0; i < 4; i++)
		if (open_ep(info, &o[i]))
			return 5;
	while (i--)
		close_ep(&o[i]);
	fi_freeinfo(info);
	return 0;
}

/*
 * Names that follow from the pid (the victim's pid and a counter, the
 * way endpoints were once named) are no hold over another user's
 * endpoints.
 */
Test(shm_names, default_names_not_guessable, .timeout = 60)
{
	char name[64], path[16][128];
	int up, down, i, ret;
	pid_t pid;

	need_two_users();
	pid = victim(unguessable_victim, &up, &down);
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), "%d.%d", (int)pid, i);
		squat(name, path[i], sizeof(path[i]));
	}
	cr_assert_eq(write(down, "", 1), 1);
	ret = wait_victim(pid);
	for (i = 0; i < 16; i++)
		shm_unlink(path[i]);
	cr_assert_eq(ret, 0, "victim failed at step %d", ret);
}

/* Victim: a name of its choosing that the parent took: -FI_EADDRINUSE. */
static int chosen_name_victim(int up, int down)
{
	struct fi_info *info;
	struct opened o;
	char node[64];
	int ret;

	if (read(down, node, sizeof(node)) <= 0)
		return 4;
	if (shm_getinfo(node, NULL, FI_SOURCE, NULL, &info))
		return 2;
	ret = open_ep(info, &o);
	if (write(up, &ret, sizeof(ret)) != sizeof(ret))
		return 3;
	if (!ret)
		close_ep(&o);
	fi_freeinfo(info);
	return 0;
}

Test(shm_names, chosen_name_taken_by_other_user, .timeout = 60)
{
	char name[64], node[80], path[128];
	int up, down, ret = 0, status;
	pid_t pid;

	need_two_users();
	unique(name, sizeof(name), "chosen");
	snprintf(node, sizeof(node), PREFIX "%s", name);
	squat(name, path, sizeof(path));
	pid = victim(chosen_name_victim, &up, &down);
	if (write(down, node, strlen(node) + 1) != (ssize_t)strlen(node) + 1 ||
	    read(up, &ret, sizeof(ret)) != sizeof(ret))
		ret = 1;
	status = wait_victim(pid);
	shm_unlink(path);
	cr_assert_eq(status, 0, "victim failed at step %d", status);
	cr_assert_eq(ret, -FI_EADDRINUSE, "fi_enable: %d", ret);
}

/* Victim: an endpoint named as the parent's own; exit 0 once enabled. */
static int same_name_victim(int up, int down)
{
	struct fi_info *info;
	struct opened o;
	char node[64];

	if (read(down, node, sizeof(node)) <= 0)
		return 4;
	if (shm_getinfo(node, NULL, FI_SOURCE, NULL, &info))
		return 2;
	if (open_ep(info, &o))
		return 5;
	close_ep(&o);
	fi_freeinfo(info);
	return 0;
}

/* Two users' endpoints of one name are two endpoints. */
Test(shm_names, names_are_per_user, .timeout = 60)
{
	struct fi_info *info;
	struct opened o;
	char name[64], node[80];
	int up, down;
	pid_t pid;

	need_two_users();
	unique(name, sizeof(name), "peruser");
	snprintf(node, sizeof(node), PREFIX "%s", name);
	cr_assert_eq(shm_getinfo(node, NULL, FI_SOURCE, NULL, &info), 0);
	cr_assert_eq(open_ep(info, &o), 0);
	pid = victim(same_name_victim, &up, &down);
	cr_assert_eq(write(down, node, strlen(node) + 1),
		     (ssize_t)strlen(node) + 1);
	cr_assert_eq(wait_victim(pid), 0);
	close_ep(&o);
	fi_freeinfo(info);
}

/* A scalable endpoint's contexts have names of their own ('#' and the
 * index after its name); nobody can insert or choose such a name. */
Test(shm_names, context_names_are_reserved)
{
	struct fi_info *info;
	struct opened o;
	fi_addr_t fa = 0;
	int ret;

	cr_assert_eq(shm_getinfo(NULL, NULL, 0, NULL, &info), 0);
	cr_assert_eq(open_ep(info, &o), 0);
	ret = fi_av_insert(o.av, "fi_shm://someone#2", 1, &fa, 0, NULL);
	cr_assert_eq(ret, 0, "fi_av_insert of a context's name: %d", ret);
	cr_assert_eq(fa, FI_ADDR_NOTAVAIL);
	cr_assert_eq(fi_setname(&o.ep->fid, "fi_shm://mine#1", 16),
		     -FI_EINVAL);
	close_ep(&o);
	fi_freeinfo(info);
}

/* Victim: a scalable endpoint under a chosen name; once the parent put a
 * file of its own at the region of context pair 2, pair 2 must fail to
 * start (never use or take that file) while pair 1 starts and serves. */
static int context_squat_victim(int up, int down)
{
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *sep, *tx1, *tx2 = NULL;
	struct fi_av_attr av_attr = { .type = FI_AV_MAP, .rx_ctx_bits = 2 };
	char name[64], c;
	int ret, len;

	len = snprintf(name, sizeof(name), PREFIX "sq-%d", (int)getpid()) + 1;
	if (shm_getinfo(NULL, NULL, 0, NULL, &info))
		return 2;
	info->ep_attr->tx_ctx_cnt = info->ep_attr->rx_ctx_cnt = 4;
	if (fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL) ||
	    fi_av_open(domain, &av_attr, &av, NULL) ||
	    fi_scalable_ep(domain, info, &sep, NULL) ||
	    fi_scalable_ep_bind(sep, &av->fid, 0) ||
	    fi_setname(&sep->fid, name, (size_t)len) || fi_enable(sep))
		return 3;
	if (write(up, name + strlen(PREFIX), strlen(name + strlen(PREFIX)) + 1) <= 0 ||
	    read(down, &c, 1) != 1)
		return 4;
	ret = fi_tx_context(sep, 2, NULL, &tx2, NULL);
	if (!ret)
		return 5; /* it took or used another user's file */
	if (fi_tx_context(sep, 1, NULL, &tx1, NULL))
		return 6;
	fi_close(&tx1->fid);
	if (fi_close(&sep->fid))
		return 7;
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}

/* Another user's file at a context pair's region (NAME#2): that context
 * is refused, the others are not. */
Test(shm_names, context_region_taken_by_other_user, .timeout = 60)
{
	char base[256], name[300], path[400];
	int up, down, ret;
	ssize_t n;
	pid_t pid;

	need_two_users();
	pid = victim(context_squat_victim, &up, &down);
	n = read(up, base, sizeof(base));
	cr_assert_gt(n, 0, "victim status %d", n ? 0 : wait_victim(pid));
	snprintf(name, sizeof(name), "%s#2", base);
	squat(name, path, sizeof(path));
	cr_assert_eq(write(down, "", 1), 1);
	ret = wait_victim(pid);
	shm_unlink(path);
	cr_assert_eq(ret, 0, "victim failed at step %d", ret);
}
