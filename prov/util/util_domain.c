/* SPDX-License-Identifier: BSD-2-Clause */
/* Base fabric and domain objects (weft/util_domain.h). */
#include "weft/util_domain.h"

#include <stdlib.h>

#include "weft/stubs.h"
#include "weft/util_eq.h"
#include "weft/util_wait.h"

#include <stdlib.h>
#include <string.h>

int util_fabric_init(struct util_fabric *fabric, const struct fi_provider *prov,
		     const struct fi_fabric_attr *attr, void *context)
{
	int ret;

	memset(fabric, 0, sizeof(*fabric));
	fabric->prov = prov;
	fabric->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fabric->fabric_fid.fid.context = context;
	fabric->fabric_fid.api_version = attr ? attr->api_version : 0;
	atomic_init(&fabric->ref, 0);
	if (attr && attr->name) {
		fabric->name = strdup(attr->name);
		if (!fabric->name)
			return -FI_ENOMEM;
	}
	ret = weft_lock_init(&fabric->lock, true);
	if (ret) {
		free(fabric->name);
		fabric->name = NULL;
	}
	return ret;
}

int util_fabric_fini(struct util_fabric *fabric)
{
	if (atomic_load(&fabric->ref))
		return -FI_EBUSY;
	weft_lock_destroy(&fabric->lock);
	free(fabric->name);
	fabric->name = NULL;
	return 0;
}

int util_domain_init(struct util_domain *domain, struct util_fabric *fabric,
		     const struct fi_info *info, void *context)
{
	const struct fi_domain_attr *attr = info ? info->domain_attr : NULL;
	int ret;

	memset(domain, 0, sizeof(*domain));
	domain->fabric = fabric;
	domain->prov = fabric ? fabric->prov : &weft_core_prov;
	domain->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	domain->domain_fid.fid.context = context;
	domain->threading = attr && attr->threading != FI_THREAD_UNSPEC ?
				    attr->threading :
				    FI_THREAD_SAFE;
	domain->control_progress = attr && attr->control_progress ?
					   attr->control_progress :
					   FI_PROGRESS_MANUAL;
	domain->data_progress = attr && attr->data_progress ?
					attr->data_progress :
					FI_PROGRESS_MANUAL;
	domain->resource_mgmt = attr ? attr->resource_mgmt : FI_RM_UNSPEC;
	domain->av_type = attr ? attr->av_type : FI_AV_UNSPEC;
	domain->mr_mode = attr ? attr->mr_mode : 0;
	domain->cq_data_size = attr ? attr->cq_data_size : 0;
	domain->caps = info ? info->caps : 0;
	domain->mode = info ? info->mode : 0;
	atomic_init(&domain->ref, 0);
	dlist_init(&domain->sweep_eps);
	pthread_mutex_init(&domain->sweep_lock, NULL);
	dlist_init(&domain->targets);
	pthread_mutex_init(&domain->target_lock, NULL);
	dlist_init(&domain->triggers);
	pthread_mutex_init(&domain->trig_lock, NULL);
	if (attr && attr->name) {
		domain->name = strdup(attr->name);
		if (!domain->name)
			return -FI_ENOMEM;
	}
	ret = weft_lock_init(&domain->lock,
			     weft_threading_needs_lock(domain->threading));
	if (ret)
		goto err_free_name;
	if (fabric)
		atomic_fetch_add(&fabric->ref, 1);
	return 0;

err_free_name:
	free(domain->name);
	domain->name = NULL;
	return ret;
}

int util_domain_fini(struct util_domain *domain)
{
	if (atomic_load_explicit(&domain->ref, memory_order_acquire))
		return -FI_EBUSY;
	if (domain->eq)
		util_eq_put(util_eq_of(domain->eq));
	if (domain->fabric)
		atomic_fetch_sub(&domain->fabric->ref, 1);
	weft_lock_destroy(&domain->lock);
	pthread_mutex_destroy(&domain->sweep_lock);
	pthread_mutex_destroy(&domain->target_lock);
	pthread_mutex_destroy(&domain->trig_lock);
	free(domain->name);
	domain->name = NULL;
	return 0;
}

void util_domain_add_target(struct util_domain *domain,
			    struct util_progress *source)
{
	pthread_mutex_lock(&domain->target_lock);
	dlist_insert_tail(&source->entry, &domain->targets);
	pthread_mutex_unlock(&domain->target_lock);
}

void util_domain_del_target(struct util_domain *domain,
			    struct util_progress *source)
{
	pthread_mutex_lock(&domain->target_lock);
	dlist_remove(&source->entry);
	pthread_mutex_unlock(&domain->target_lock);
}

void util_domain_target_progress(struct util_domain *domain)
{
	struct dlist_entry *e;

	pthread_mutex_lock(&domain->target_lock);
	dlist_foreach(&domain->targets, e) {
		struct util_progress *p =
			container_of(e, struct util_progress, entry);

		p->progress(p);
	}
	pthread_mutex_unlock(&domain->target_lock);
}

int util_domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_domain *domain =
		container_of(fid, struct util_domain, domain_fid.fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (domain->eq)
		return -FI_EALREADY;
	domain->eq = container_of(bfid, struct fid_eq, fid);
	domain->eq_flags = flags;
	/* fi_close of the EQ answers -FI_EBUSY while the domain holds it. */
	util_eq_get(util_eq_of(domain->eq));
	return 0;
}

static int fabric_close(struct fid *fid)
{
	struct util_fabric *fabric =
		container_of(fid, struct util_fabric, fabric_fid.fid);
	int ret;

	ret = util_fabric_fini(fabric);
	if (ret)
		return ret;
	free(fabric);
	return 0;
}

static struct fi_ops util_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = weft_no_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int util_fabric_open(const struct fi_provider *prov,
		     struct fi_fabric_attr *attr, struct fi_ops_fabric *ops,
		     struct fid_fabric **fabric_fid, void *context)
{
	struct util_fabric *fabric;
	int ret;

	fabric = calloc(1, sizeof(*fabric));
	if (!fabric)
		return -FI_ENOMEM;
	ret = util_fabric_init(fabric, prov, attr, context);
	if (ret) {
		free(fabric);
		return ret;
	}
	fabric->fabric_fid.fid.ops = &util_fabric_fi_ops;
	fabric->fabric_fid.ops = ops;
	*fabric_fid = &fabric->fabric_fid;
	return 0;
}

int util_fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			struct fid_domain **domain, uint64_t flags,
			void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return fabric->ops->domain(fabric, info, domain, context);
}

int util_domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return domain->ops->endpoint(domain, info, ep, context);
}
