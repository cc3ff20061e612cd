/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shm: a server and a client that find each other by node and service
 * alone, the way test suites written for libfabric 1.17 address them.
 *
 *   name_pair [-s SRC] [-B PORT]          server: fi_getinfo(SRC, PORT,
 *                                          FI_SOURCE); prints "ready NAME"
 *   name_pair [-s SRC] -P PORT DST        client: a source address from
 *                                          fi_getinfo(SRC, NULL, FI_SOURCE)
 *                                          copied into hints->src_addr, then
 *                                          fi_getinfo(DST, PORT, 0, hints)
 *
 * The client sends its name and a pattern to the server's dest_addr; the
 * server inserts the client's name, checks the pattern and answers with
 * another, which the client checks.  Both print what fi_getname reports.
 * Uses only the public API: it runs over any libfabric.so.1 with shm.
 * Exit 0 pass, 77 no shm, 1 fail; gives up after 30 seconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "shm_fix.h"


#define PATTERN_LEN 1000

struct msg {
	char name[FI_NAME_MAX]; /* the sender's, terminated */
	unsigned char data[PATTERN_LEN];
};

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(1);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG;
	h->addr_format = FI_ADDR_STR;
	h->fabric_attr->prov_name = strdup("shm");
	return h;
}

static void fill(unsigned char *p, unsigned seed)
{
	int i;

	for (i = 0; i < PATTERN_LEN; i++)
		p[i] = (unsigned char)(seed * 31 + (unsigned)i * 7);
}

static int check(const unsigned char *p, unsigned seed)
{
	unsigned char want[PATTERN_LEN];

	fill(want, seed);
	return memcmp(p, want, sizeof(want));
}

/* Send, retrying while the provider asks to (progressing cq meanwhile). */
static void send_msg(struct fid_ep *ep, struct fid_cq *cq, const void *buf,
		     size_t len, fi_addr_t to)
{
	ssize_t ret;

	while ((ret = fi_send(ep, buf, len, NULL, to, NULL)) == -FI_EAGAIN)
		(void)fi_cq_read(cq, NULL, 0);
	CHECK(ret);
}

/* Wait for one completion on cq; exits on error. */
static void wait_cq(struct fid_cq *cq, const char *what)
{
	struct fi_cq_err_entry err;
	struct fi_cq_entry e;
	ssize_t ret;

	while ((ret = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN)
		;
	if (ret == 1)
		return;
	if (ret == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1)
		fprintf(stderr, "%s: %s\n", what, fi_strerror(err.err));
	else
		fprintf(stderr, "%s: %s\n", what, fi_strerror((int)-ret));
	exit(1);
}

int main(int argc, char **argv)
{
	const char *src = NULL, *src_port = NULL, *dst_port = NULL;
	struct fi_info *hints, *info, *srcinfo;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct msg in, out;
	fi_addr_t peer;
	size_t len;
	int opt, ret;

	while ((opt = getopt(argc, argv, "s:B:P:")) != -1) {
		switch (opt) {
		case 's':
			src = optarg;
			break;
		case 'B':
			src_port = optarg;
			break;
		case 'P':
			dst_port = optarg;
			break;
		default:
			return 2;
		}
	}
	alarm(30);
	hints = hints_new();
	if (optind < argc) {
		/* client */
		if (src) {
			ret = fi_getinfo(FI_VERSION(1, 17), src, src_port,
					 FI_SOURCE, hints, &srcinfo);
			if (ret)
				goto no_shm;
			hints->src_addr = malloc(srcinfo->src_addrlen);
			memcpy(hints->src_addr, srcinfo->src_addr,
			       srcinfo->src_addrlen);
			hints->src_addrlen = srcinfo->src_addrlen;
			fi_freeinfo(srcinfo);
		}
		ret = fi_getinfo(FI_VERSION(1, 17), argv[optind], dst_port, 0,
				 hints, &info);
	} else {
		ret = fi_getinfo(FI_VERSION(1, 17), src, src_port,
				 src || src_port ? FI_SOURCE : 0, hints, &info);
	}
	if (ret)
		goto no_shm;
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
	CHECK(fi_endpoint(domain, info, &ep, NULL));
	CHECK(fi_ep_bind(ep, &av->fid, 0));
	CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(ep));
	memset(&out, 0, sizeof(out));
	len = sizeof(out.name) - 1;
	CHECK(fi_getname(&ep->fid, out.name, &len));
	CHECK(fi_recv(ep, &in, sizeof(in), NULL, FI_ADDR_UNSPEC, NULL));

	if (optind < argc) {
		if (!info->dest_addr) {
			fprintf(stderr, "no destination address\n");
			return 1;
		}
		if (fi_av_insert(av, info->dest_addr, 1, &peer, 0, NULL) != 1)
			return 1;
		printf("client %s -> %s\n", out.name, (char *)info->dest_addr);
		fflush(stdout);
		fill(out.data, 1);
		send_msg(ep, cq, &out, sizeof(out), peer);
		wait_cq(cq, "send");
		wait_cq(cq, "receive");
		if (check(in.data, 2)) {
			fprintf(stderr, "the server's answer is corrupt\n");
			return 1;
		}
		/* The server closes once it knows the answer arrived. */
		send_msg(ep, cq, &out, 1, peer);
		wait_cq(cq, "send");
	} else {
		printf("ready %s\n", out.name);
		fflush(stdout);
		wait_cq(cq, "receive");
		if (check(in.data, 1)) {
			fprintf(stderr, "the client's message is corrupt\n");
			return 1;
		}
		in.name[sizeof(in.name) - 1] = '\0';
		if (fi_av_insert(av, in.name, 1, &peer, 0, NULL) != 1)
			return 1;
		CHECK(fi_recv(ep, &in, sizeof(in), NULL, FI_ADDR_UNSPEC,
			      NULL));
		fill(out.data, 2);
		send_msg(ep, cq, &out, sizeof(out), peer);
		wait_cq(cq, "send");
		wait_cq(cq, "receive");
	}
	CHECK(fi_close(&ep->fid));
	CHECK(fi_close(&cq->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("passed\n");
	return 0;

no_shm:
	fprintf(stderr, "fi_getinfo: %s\n", fi_strerror(-ret));
	return 77;
}
