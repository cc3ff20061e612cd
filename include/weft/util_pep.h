/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Passive endpoints (fi_passive_ep, fi_cm(3)), shared by the providers
 * whose FI_EP_MSG endpoints connect by IP address (tcp, verbs).
 *
 * The base does what fi_cm(3) asks of every passive endpoint: the fid and
 * its ops, the EQ binding (fi_listen without one is -FI_ENOEQ), the name
 * checks (fi_setname after fi_listen is -FI_EOPBADSTATE), fi_reject's
 * argument checks, FI_OPT_CM_DATA_SIZE, the FI_CONNREQ event (a copy of
 * the passive endpoint's info naming the request's handle and the
 * addresses of both sides), and close in order: the EQ lets go of the
 * progress first, so no event is written once the provider's part is
 * torn down.  A provider embeds struct util_pep and names what only it
 * knows in a const struct util_pep_ops.
 *
 * The provider's work is done by the EQ's progress (the application
 * reading the EQ), under the passive endpoint's lock, and its fd (a
 * listening socket's epoll set, an rdma_cm event channel) wakes
 * fi_eq_sread.
 */
#ifndef WEFT_UTIL_PEP_H
#define WEFT_UTIL_PEP_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "weft/ofi.h"

#include "weft/util_eq.h"

struct util_pep;

struct util_pep_ops {
	/* Handle what arrived (connection requests), with the lock held. */
	void (*progress)(struct util_pep *pep);
	/* Bind to sa (AF_INET or AF_INET6, len bytes); not listening yet. */
	int (*bind)(struct util_pep *pep, const struct sockaddr_storage *sa,
		    size_t len);
	/* The address bound (or listened on): 0 and sa, or -FI_E*. */
	int (*local)(struct util_pep *pep, struct sockaddr_storage *sa);
	/* Start listening (an EQ is bound, not listening yet). */
	int (*listen)(struct util_pep *pep);
	/* Refuse the request behind handle (a FI_CLASS_CONNREQ fid of this
	 * provider's) with paramlen (<= cm_data_max) bytes of private data. */
	int (*reject)(struct util_pep *pep, fid_t handle, const void *param,
		      size_t paramlen);
	/* Tear the provider's part down and free the structure that embeds
	 * the base (the EQ no longer runs progress). */
	void (*close)(struct util_pep *pep);
	size_t cm_data_max; /* FI_OPT_CM_DATA_SIZE */
};

struct util_pep {
	struct fid_pep pep_fid;
	const struct util_pep_ops *ops;
	struct fi_info *info; /* the passive endpoint's: FI_CONNREQ's copies */
	struct util_eq *eq;
	struct util_progress cm_progress;
	pthread_mutex_t lock;
	int fd; /* readable when progress has work (util_pep_start) */
	bool listening;
};

/*
 * Set up pep (zeroed, inside the provider's structure) for fi_passive_ep:
 * -FI_EINVAL unless info asks for FI_EP_MSG, -FI_ENOMEM.  On failure
 * nothing needs undoing but the provider's own allocation.
 */
int util_pep_init(struct util_pep *pep, const struct fi_info *info,
		  const struct util_pep_ops *ops, void *context);

/*
 * Once the provider's part exists (fd: what wakes the EQ's sleeper):
 * bind to info's src_addr, or to any IPv4 address.  On 0 *pep_fid is the
 * application's; on failure the passive endpoint is closed.
 */
int util_pep_start(struct util_pep *pep, int fd, struct fid_pep **pep_fid);

/* fi_close: what util_pep_start's failure does too. */
int util_pep_close(struct fid *fid);

/*
 * A connection request arrived: an FI_CONNREQ whose info is a copy of the
 * passive endpoint's with handle, dest_addr peer and (when known) src_addr
 * local, and cm_len bytes of private data.  0, or -FI_E* (no EQ, no
 * memory): the caller refuses the request.
 */
int util_pep_connreq(struct util_pep *pep, struct fid *handle,
		     const struct sockaddr *peer, const struct sockaddr *local,
		     const void *cm, size_t cm_len);

/*
 * fi_getname's and fi_getpeer's copy out of a socket address: len bytes
 * of sa into addr when *addrlen holds them, else -FI_ETOOSMALL; *addrlen
 * says len either way.
 */
int util_name_out(const void *sa, size_t len, void *addr, size_t *addrlen);

#endif /* WEFT_UTIL_PEP_H */
