/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * weft core: definitions shared by the core (src/) and every provider.
 *
 * Naming: weft_ for the core, util_ for prov/util, and the directory name
 * (shm_, tcp_, verbs_) inside a provider.
 */
#ifndef WEFT_CORE_H
#define WEFT_CORE_H

#include <config.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "weft/ofi.h"

#define WEFT_EXPORT __attribute__((visibility("default")))

/*
 * Bind an implementation to an older version node of an exported symbol,
 * e.g. WEFT_COMPAT_SYMVER(fi_getinfo_1_0, fi_getinfo, FABRIC_1.0).  The
 * default version of each symbol is a plain definition named in
 * libfabric.map.
 */
#define WEFT_COMPAT_SYMVER(impl, api, node)                                    \
	__asm__(".symver " #impl "," #api "@" #node)

#define WEFT_PROV_VERSION                                                      \
	FI_VERSION(WEFT_PROV_VERSION_MAJOR, WEFT_PROV_VERSION_MINOR)
/* The newest API this library implements. */
#define WEFT_API_VERSION FI_VERSION(2, 6)
/*
 * The API a fabric opened without one (fabric_attr->api_version 0, as a
 * caller that asked fi_getinfo for version 0 gets back) is served: 1.17,
 * the layout weft's callers had before it implemented later ones.  A
 * later layout is longer (fi_cq_err_entry 1.20), so it is never assumed.
 */
#define WEFT_API_VERSION_UNSAID FI_VERSION(1, 17)

#ifndef container_of
#define container_of(ptr, type, member)                                        \
	((type *)((char *)(ptr)-offsetof(type, member)))
#endif

#define weft_likely(x) __builtin_expect(!!(x), 1)
#define weft_unlikely(x) __builtin_expect(!!(x), 0)
#define WEFT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define WEFT_CACHELINE 64
#define weft_cacheline_aligned __attribute__((aligned(WEFT_CACHELINE)))
#define WEFT_MIN(a, b) ((a) < (b) ? (a) : (b))

/* CLOCK_MONOTONIC in nanoseconds (the vDSO: no system call). */
static inline uint64_t weft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC_COARSE in milliseconds: cheaper, a tick's precision. */
static inline uint64_t weft_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
#define WEFT_MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * Translate a positive errno from a failed system call into weft's return
 * convention (a negative FI_E* code).  Call it once, where the call is made.
 * The FI_E* codes below 256 are the errno values themselves.
 */
static inline int weft_errno(int err)
{
	return err > 0 ? -err : -FI_EOTHER;
}

/* ---- provider registry ------------------------------------------------ */

/*
 * A provider compiled into libfabric.so registers itself with
 * WEFT_PROVIDER(my_prov), where my_prov is its struct fi_provider.  The
 * macro drops a pointer into the "weft_providers" section; the core walks
 * that section, so adding a provider edits no list in the core.
 *
 * Contract of the fi_provider ops, as the core uses them:
 *  getinfo  called by fi_getinfo with the caller's hints (may be NULL) after
 *           the core has applied FI_PROVIDER and prov_name filtering.  Returns
 *           0 and a list the caller owns (freed by fi_freeinfo), or -FI_ENODATA
 *           having explained the first unmet hint with weft_explain().  May
 *           block briefly (device discovery); never waits on a peer.
 *  fabric   opens the fabric named by attr (attr->prov_name is the provider's
 *           own name or a layered name it answers to).
 *  cleanup  called once when the library is unloaded.
 */
#define WEFT_PROVIDER(prov)                                                    \
	static const struct fi_provider *const weft_prov_entry_##prov          \
		__attribute__((used, section("weft_providers"),                \
			       aligned(sizeof(void *)))) = &(prov)

/* Iterate over the compiled-in providers; returns NULL past the end. */
const struct fi_provider *weft_prov_at(size_t i);

/*
 * Layered provider names clients of 1.17 select RDM by ("tcp;ofi_rxm").  A
 * provider that answers to such a name lists it here; fi_getinfo reports
 * back the name the caller asked for.
 */
bool weft_prov_name_matches(const struct fi_provider *prov,
			    const char *asked);

/*
 * How a provider's entries look under a name of libfabric 1.17 that it
 * answers to without having it: "tcp;ofi_rxm" offers RDM only and says
 * FI_PROTO_RXM, "sockets" says FI_PROTO_SOCK_TCP, as 1.17 answers under
 * those names (clients put the protocol in their hints).
 */
struct weft_name_look {
	enum fi_ep_type type; /* the one type offered, or FI_EP_UNSPEC: all */
	uint32_t protocol; /* ep_attr->protocol, or FI_PROTO_UNSPEC: own */
	uint32_t protocol_version;
};

/*
 * The look of entries under `name` (maybe NULL): true and *look filled for
 * a layered name or an alias, false for a provider's own name.  Never
 * blocks.  fi_getinfo applies it to hints and answers; fi_endpoint
 * accepts the protocol it names.
 */
bool weft_name_look(const char *name, struct weft_name_look *look);

/* The core's own identity in logs ("core"). */
extern struct fi_provider weft_core_prov;

/* ---- explaining why nothing matched ------------------------------------ */

/*
 * Record why `prov` could not satisfy a fi_getinfo request: logged at warn
 * level as "<prov>: <reason>", e.g. "tcp: FI_ATOMIC is not supported".
 */
void weft_explain(const struct fi_provider *prov, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- parameters (src/param.c) ------------------------------------------ */

/* Drop every parameter a provider defined (at unload). */
void weft_param_cleanup(void);

/* ---- logging (src/log.c) ------------------------------------------------ */

void weft_log_init(void);
void weft_log_fini(void);

/*
 * fi_open("logging"): the object a client binds its struct fid_logging to
 * (fi_import_log).  Returns 0 or -FI_ENOMEM; the caller closes it.
 */
int weft_log_open(struct fid **fid, void *context);

/* ---- this process (src/proc.c) ----------------------------------------- */

/*
 * This process's pid and the calling thread's id, from a cache: glibc
 * caches neither, and a lock or a check on a data path must not cost a
 * system call each time.  A fork makes the child look both up again.
 */
pid_t weft_pid(void);
pid_t weft_tid(void);

/* ---- fi_info lists (src/info.c) ---------------------------------------- */

/*
 * Copies for the fi_info code: NULL for a NULL source (or len 0); on an
 * allocation failure NULL and *failed set, so a caller copies every field
 * and checks once.
 */
void *weft_dup_mem(const void *src, size_t len, bool *failed);
char *weft_dup_str(const char *src, bool *failed);

/* Deep copy of one fi_info (not its ->next); NULL on allocation failure. */
struct fi_info *weft_info_dup(const struct fi_info *info);
/*
 * An fi_info and the attribute structs it points at, side by side (on the
 * stack): a shallow copy that borrows every pointer (strings, addresses,
 * keys, the NIC), for code that adjusts what a caller passed before weft
 * reads it.
 */
struct weft_info_copy {
	struct fi_info info;
	struct fi_tx_attr tx;
	struct fi_rx_attr rx;
	struct fi_ep_attr ep;
	struct fi_domain_attr domain;
	struct fi_fabric_attr fabric;
};
/* Fill c from src, an fi_info of FABRIC_1.3 or later (its domain_attr read
 * as far as every such layout reaches); c->info points at c's attributes
 * where src has them, and has no ->next. */
void weft_info_copy_shallow(struct weft_info_copy *c,
			    const struct fi_info *src);

/* Free one fi_info (not its ->next). */
void weft_info_free(struct fi_info *info);
/* Free a whole list, as fi_freeinfo does. */
void weft_info_free_list(struct fi_info *info);

/*
 * A fi_ops.tostr for struct fid_nic objects: appends the "    nic:" section
 * of fi_info text for the NIC behind fid to buf (at most len bytes,
 * NUL-terminated).  Returns 0, or -FI_EINVAL for a NULL fid or buffer.
 */
int weft_tostr_nic(const struct fid *fid, char *buf, size_t len);

/* The cores of fi_getinfo and fi_fabric; src/compat.c has the entry
 * points of every symbol version node. */
int weft_getinfo(uint32_t version, const char *node, const char *service,
		 uint64_t flags, const struct fi_info *hints,
		 struct fi_info **info);
int weft_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		void *context);

#endif /* WEFT_CORE_H */
