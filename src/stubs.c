/* SPDX-License-Identifier: BSD-2-Clause */
/* Typed -FI_ENOSYS stubs for ops a provider leaves out (weft/stubs.h). */
#include "weft/core.h"
#include "weft/stubs.h"

int weft_no_close(struct fid *fid)
{
	return -FI_ENOSYS;
}

int weft_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int weft_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int weft_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int weft_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context)
{
	return -FI_ENOSYS;
}

int weft_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		   struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}
