/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A preload library for the MPI tests: logs to stderr the threading model
 * each fi_getinfo call asks for and the one its first answer offers, so
 * that run.sh can check what an MPI library asks of libfabric.  One line
 * per call:
 *   getinfo_log: hints threading FI_THREAD_SAFE, got FI_THREAD_SAFE (tcp)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include <rdma/fabric.h>

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);

static const char *threading_name(const struct fi_domain_attr *d)
{
	if (!d)
		return "(no domain_attr)";
	switch (d->threading) {
	case FI_THREAD_UNSPEC: return "FI_THREAD_UNSPEC";
	case FI_THREAD_SAFE: return "FI_THREAD_SAFE";
	case FI_THREAD_FID: return "FI_THREAD_FID";
	case FI_THREAD_DOMAIN: return "FI_THREAD_DOMAIN";
	case FI_THREAD_COMPLETION: return "FI_THREAD_COMPLETION";
	case FI_THREAD_ENDPOINT: return "FI_THREAD_ENDPOINT";
	default: return "(unknown)";
	}
}

int fi_getinfo(uint32_t version, const char *node, const char *service,
	       uint64_t flags, const struct fi_info *hints,
	       struct fi_info **info)
{
	static getinfo_fn real;
	int ret;

	if (!real)
		real = (getinfo_fn)dlsym(RTLD_NEXT, "fi_getinfo");
	if (!real)
		return -FI_ENOSYS;
	ret = real(version, node, service, flags, hints, info);
	fprintf(stderr, "getinfo_log: hints threading %s, got %s (%s)\n",
		hints ? threading_name(hints->domain_attr) : "(no hints)",
		!ret && *info ? threading_name((*info)->domain_attr) : "nothing",
		!ret && *info && (*info)->fabric_attr &&
				(*info)->fabric_attr->prov_name ?
			(*info)->fabric_attr->prov_name : "-");
	return ret;
}
