/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Typed stubs for ops a provider does not implement.  Each returns -FI_ENOSYS
 * (or the op's documented "not supported" answer) with the exact signature
 * of the op it stands for, so no ops table ever holds a cast function.
 */
#ifndef WEFT_STUBS_H
#define WEFT_STUBS_H

#include <rdma/fabric.h>

/* struct fi_ops */
int weft_no_close(struct fid *fid);
int weft_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int weft_no_control(struct fid *fid, int command, void *arg);
int weft_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int weft_no_tostr(const struct fid *fid, char *buf, size_t len);
int weft_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);

/* struct fi_ops_av */
struct fi_av_set_attr;
struct fid_av_set;
struct fid_av;
int weft_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		   struct fid_av_set **av_set, void *context);

#endif /* WEFT_STUBS_H */
