/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the shm test programs share, over the public API only: CHECK, which
 * ends the program on a failed call, and one tagged RDM endpoint over shm
 * with its fabric, domain, AV and CQ.
 */
#ifndef WEFT_TESTS_SHM_FIX_H
#define WEFT_TESTS_SHM_FIX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define CHECK(call)                                                            \
	do {                                                                   \
		int ret_ = (int)(call);                                        \
		if (ret_) {                                                    \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, \
				#call, fi_strerror(-ret_));                    \
			exit(1);                                               \
		}                                                              \
	} while (0)

struct shm_fix {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/*
 * Open an enabled endpoint with FI_TAGGED and `caps`, a tagged-format CQ of
 * cq_size entries bound for both directions and a table AV sized av_count;
 * named `name` (fi_setname) when not NULL.  Returns fi_getinfo's error when
 * there is no shm provider; any later failure ends the program.
 */
static inline int shm_fix_open(struct shm_fix *f, uint64_t caps,
			       size_t cq_size, size_t av_count,
			       const char *name)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE,
				      .count = av_count };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .size = cq_size };
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | caps;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &f->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	CHECK(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
	CHECK(fi_domain(f->fabric, f->info, &f->domain, NULL));
	CHECK(fi_av_open(f->domain, &av_attr, &f->av, NULL));
	CHECK(fi_cq_open(f->domain, &cq_attr, &f->cq, NULL));
	CHECK(fi_endpoint(f->domain, f->info, &f->ep, NULL));
	CHECK(fi_ep_bind(f->ep, &f->av->fid, 0));
	CHECK(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
	if (name)
		CHECK(fi_setname(&f->ep->fid, (void *)name, strlen(name) + 1));
	CHECK(fi_enable(f->ep));
	return 0;
}

static inline void shm_fix_close(struct shm_fix *f)
{
	CHECK(fi_close(&f->ep->fid));
	CHECK(fi_close(&f->cq->fid));
	CHECK(fi_close(&f->av->fid));
	CHECK(fi_close(&f->domain->fid));
	CHECK(fi_close(&f->fabric->fid));
	fi_freeinfo(f->info);
}

#endif /* WEFT_TESTS_SHM_FIX_H */
