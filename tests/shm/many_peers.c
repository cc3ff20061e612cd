/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shm: one endpoint receives from more than a thousand peers.
 *
 * Opens N sender endpoints and one receiver in this process (each endpoint
 * has its own region, so this is the same peer-table and queue traffic as
 * N processes), has every sender send its index to the receiver, and checks
 * that each message arrives once, intact, with FI_SOURCE naming its sender.
 * Uses only the public API: it runs over any libfabric.so.1 with shm.
 * Usage: many_peers [N]   (default 1100).  Exit 0 pass, 77 no shm, 1 fail.
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
#include <rdma/fi_tagged.h>

#include "shm_fix.h"


struct rx_state {
	struct fid_cq *cq;
	fi_addr_t *addr;
	uint64_t *seen;
	int n;
	int got;
};

/* Take one receive completion if there is one; 1 taken, 0 none, -1 bad. */
static int poll_rx(struct rx_state *st)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	uint64_t v;
	int i, ret;

	ret = (int)fi_cq_readfrom(st->cq, &e, 1, &src);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret != 1) {
		fprintf(stderr, "fi_cq_readfrom: %s\n", fi_strerror(-ret));
		return -1;
	}
	v = *(uint64_t *)e.buf;
	i = (int)(v & 0xffff);
	if ((v >> 48) != 0xabcd || i >= st->n || st->seen[i]) {
		fprintf(stderr, "bad or repeated message %#llx\n",
			(unsigned long long)v);
		return -1;
	}
	if (src != st->addr[i]) {
		fprintf(stderr, "message of sender %d reported from fi_addr "
			"%llu, expected %llu\n", i, (unsigned long long)src,
			(unsigned long long)st->addr[i]);
		return -1;
	}
	st->seen[i] = 1;
	st->got++;
	return 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1100, i, got = 0, spins = 0;
	struct fi_info *hints, *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *rcq, *scq;
	struct fid_ep *rx, **tx;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	fi_addr_t *addr, rx_addr;
	char name[FI_NAME_MAX];
	uint64_t *buf, *seen;
	struct rx_state st;
	size_t len;
	int ret;

	/* Small queues: a thousand regions stay small. */
	setenv("FI_SHM_QUEUE_SLOTS", "16", 0);
	setenv("FI_SHM_BOUNCE_COUNT", "1", 0);
	alarm(120);
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_SOURCE;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	if (ret) {
		fprintf(stderr, "no shm provider: %s\n", fi_strerror(-ret));
		return 77;
	}
	CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info, &domain, NULL));
	av_attr.count = (size_t)n + 1;
	CHECK(fi_av_open(domain, &av_attr, &av, NULL));
	cq_attr.size = (size_t)n * 2 + 16;
	CHECK(fi_cq_open(domain, &cq_attr, &rcq, NULL));
	CHECK(fi_cq_open(domain, &cq_attr, &scq, NULL));
	CHECK(fi_endpoint(domain, info, &rx, NULL));
	CHECK(fi_ep_bind(rx, &av->fid, 0));
	CHECK(fi_ep_bind(rx, &rcq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(rx));
	len = sizeof(name);
	CHECK(fi_getname(&rx->fid, name, &len));

	tx = calloc((size_t)n, sizeof(*tx));
	addr = calloc((size_t)n, sizeof(*addr));
	buf = calloc((size_t)n, sizeof(*buf));
	seen = calloc((size_t)n, sizeof(*seen));
	if (!tx || !addr || !buf || !seen)
		return 1;
	for (i = 0; i < n; i++) {
		CHECK(fi_endpoint(domain, info, &tx[i], NULL));
		CHECK(fi_ep_bind(tx[i], &av->fid, 0));
		CHECK(fi_ep_bind(tx[i], &scq->fid, FI_TRANSMIT | FI_RECV));
		CHECK(fi_enable(tx[i]));
		len = sizeof(name);
		CHECK(fi_getname(&tx[i]->fid, name, &len));
		if (fi_av_insert(av, name, 1, &addr[i], 0, NULL) != 1)
			return 1;
	}
	len = sizeof(name);
	CHECK(fi_getname(&rx->fid, name, &len));
	if (fi_av_insert(av, name, 1, &rx_addr, 0, NULL) != 1)
		return 1;

	for (i = 0; i < n; i++)
		CHECK(fi_trecv(rx, &buf[i], sizeof(buf[i]), NULL, FI_ADDR_UNSPEC,
			       0x77, 0, NULL));
	st.cq = rcq;
	st.addr = addr;
	st.seen = seen;
	st.n = n;
	st.got = 0;
	for (i = 0; i < n; i++) {
		uint64_t v = 0xabcd000000000000ULL | (uint64_t)i;

		/* The receiver's queue holds a few messages: drain it while
		 * senders find it full. */
		while ((ret = (int)fi_tinject(tx[i], &v, sizeof(v), rx_addr,
					     0x77)) == -FI_EAGAIN) {
			if (poll_rx(&st) < 0)
				return 1;
		}
		CHECK(ret);
	}
	/* Injects the receiver's queue had no room for wait with their
	 * senders (manual progress): reading the senders' CQ moves them. */
	while (st.got < n && spins < 50000000) {
		struct fi_cq_tagged_entry se;

		ret = poll_rx(&st);
		if (ret < 0)
			return 1;
		if (!ret) {
			spins++;
			ret = (int)fi_cq_read(scq, &se, 1);
			if (ret != -FI_EAGAIN) {
				fprintf(stderr, "a sender's completion: %d\n",
					ret);
				return 1;
			}
		}
	}
	got = st.got;
	if (got != n) {
		fprintf(stderr, "received %d of %d messages\n", got, n);
		return 1;
	}
	for (i = 0; i < n; i++)
		CHECK(fi_close(&tx[i]->fid));
	CHECK(fi_close(&rx->fid));
	CHECK(fi_close(&scq->fid));
	CHECK(fi_close(&rcq->fid));
	CHECK(fi_close(&av->fid));
	CHECK(fi_close(&domain->fid));
	CHECK(fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	free(tx);
	free(addr);
	free(buf);
	free(seen);
	printf("one endpoint received from %d peers, each message once, with "
	       "its source\n", n);
	return 0;
}
