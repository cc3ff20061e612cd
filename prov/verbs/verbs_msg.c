/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * verbs FI_EP_MSG endpoints: passive endpoints, rdma_cm connection
 * management, and the data path straight onto one RC QP.
 */
#include "verbs.h"

int verbs_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS; /* not written yet */
}

int verbs_msg_ep_open(struct verbs_domain *domain, struct fi_info *info,
		      struct fid_ep **ep, void *context)
{
	return -FI_ENOSYS; /* not written yet */
}
