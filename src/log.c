/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Logging: fi_log, fi_log_enabled, fi_log_ready, and the "logging" object
 * of fi_open through which a client imports its own log callbacks.
 *
 * Environment: FI_LOG_LEVEL (warn, trace, info, debug; default: off),
 * FI_LOG_PROV (a provider name, or ^name to exclude one) and FI_LOG_SUBSYS
 * (core, fabric, domain, ep_ctrl, ep_data, av, cq, eq, mr, cntr; a
 * comma-separated list, or ^list to exclude).
 */
#include "weft/core.h"

#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "weft/ofi.h"

#include "weft/stubs.h"

static const char *const level_names[] = {
	[FI_LOG_WARN] = "warn",
	[FI_LOG_TRACE] = "trace",
	[FI_LOG_INFO] = "info",
	[FI_LOG_DEBUG] = "debug",
};

static const char *const subsys_names[] = {
	[FI_LOG_CORE] = "core",	  [FI_LOG_FABRIC] = "fabric",
	[FI_LOG_DOMAIN] = "domain", [FI_LOG_EP_CTRL] = "ep_ctrl",
	[FI_LOG_EP_DATA] = "ep_data", [FI_LOG_AV] = "av",
	[FI_LOG_CQ] = "cq",	  [FI_LOG_EQ] = "eq",
	[FI_LOG_MR] = "mr",	  [FI_LOG_CNTR] = "cntr",
};

/* Minimum gap between two FI_LOG_SPARSE messages from one site, in ms. */
#define LOG_SPARSE_INTERVAL_MS 2000

static struct {
	int level; /* highest level shown; -1: off */
	char *prov; /* provider filter, NULL: all */
	bool prov_exclude;
	uint64_t subsys_mask; /* bit per subsystem shown */
} log_cfg = { .level = -1, .subsys_mask = ~0ULL };

/*
 * The client's object imported through fi_open("logging"), or NULL for the
 * library's own sink (stderr).  Read on every message, possibly by several
 * threads while another imports or closes: one atomic pointer.
 */
static _Atomic(struct fid_logging *) log_import;

/*
 * Calls into the client's callbacks under way.  fi_close on the client's
 * fid waits for them to return, so the client may free its object (or
 * unload the code behind its callbacks) as soon as fi_close returns, even
 * while other threads log.  Sequentially consistent on both sides: either
 * a caller sees the import gone, or the closer sees the caller counted.
 */
static atomic_uint log_calls;
/* Of those, this thread's own (a callback that logs, or closes). */
static __thread unsigned log_calls_mine;

/* The imported callbacks for one call, then import_leave(); or NULL. */
static struct fi_ops_log *import_enter(void)
{
	struct fid_logging *client;

	if (!atomic_load_explicit(&log_import, memory_order_relaxed))
		return NULL;
	atomic_fetch_add(&log_calls, 1);
	client = atomic_load(&log_import);
	if (!client) {
		atomic_fetch_sub(&log_calls, 1);
		return NULL;
	}
	log_calls_mine++;
	return client->ops;
}

static void import_leave(void)
{
	log_calls_mine--;
	atomic_fetch_sub_explicit(&log_calls, 1, memory_order_release);
}

static uint64_t subsys_parse(const char *list)
{
	bool exclude = *list == '^';
	uint64_t mask = 0;
	char *copy, *tok, *save;
	size_t i;

	copy = strdup(exclude ? list + 1 : list);
	if (!copy)
		return ~0ULL;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < WEFT_ARRAY_SIZE(subsys_names); i++)
			if (!strcasecmp(tok, subsys_names[i]))
				mask |= 1ULL << i;
	}
	free(copy);
	return exclude ? ~mask : mask;
}

void weft_log_init(void)
{
	const char *env;
	size_t i;

	env = getenv("FI_LOG_LEVEL");
	if (env) {
		for (i = 0; i < WEFT_ARRAY_SIZE(level_names); i++)
			if (!strcasecmp(env, level_names[i]))
				log_cfg.level = (int)i;
		if (log_cfg.level < 0 && *env)
			fprintf(stderr,
				"libfabric: FI_LOG_LEVEL=%s is not one of warn, "
				"trace, info, debug; logging stays off\n",
				env);
	}
	env = getenv("FI_LOG_PROV");
	if (env && *env) {
		log_cfg.prov_exclude = *env == '^';
		log_cfg.prov = strdup(log_cfg.prov_exclude ? env + 1 : env);
	}
	env = getenv("FI_LOG_SUBSYS");
	if (env && *env)
		log_cfg.subsys_mask = subsys_parse(env);
}

void weft_log_fini(void)
{
	free(log_cfg.prov);
	log_cfg.prov = NULL;
	atomic_store(&log_import, NULL);
}

static bool prov_shown(const struct fi_provider *prov)
{
	bool match;

	if (!log_cfg.prov)
		return true;
	match = prov && prov->name && !strcasecmp(prov->name, log_cfg.prov);
	return log_cfg.prov_exclude ? !match : match;
}

static int default_enabled(const struct fi_provider *prov,
			   enum fi_log_level level, enum fi_log_subsys subsys,
			   uint64_t flags)
{
	if ((int)level > log_cfg.level || (unsigned)subsys >= 64)
		return 0;
	if (!(log_cfg.subsys_mask & (1ULL << subsys)))
		return 0;
	return prov_shown(prov);
}

WEFT_EXPORT int fi_log_enabled(const struct fi_provider *prov,
			       enum fi_log_level level,
			       enum fi_log_subsys subsys)
{
	struct fi_ops_log *ops = import_enter();
	int ret;

	if (!ops)
		return default_enabled(prov, level, subsys, 0);
	ret = ops->enabled(prov, level, subsys, 0);
	import_leave();
	return ret;
}

WEFT_EXPORT int fi_log_ready(const struct fi_provider *prov,
			     enum fi_log_level level,
			     enum fi_log_subsys subsys, uint64_t *showtime)
{
	struct fi_ops_log *ops = import_enter();
	uint64_t now;
	int ret;

	if (ops) {
		ret = ops->ready ? ops->ready(prov, level, subsys, 0, showtime) :
				   -1;
		import_leave();
		if (ret >= 0)
			return ret;
	}
	if (!fi_log_enabled(prov, level, subsys))
		return 0;
	now = (weft_now_ns() / 1000000);
	if (now < *showtime)
		return 0;
	*showtime = now + LOG_SPARSE_INTERVAL_MS;
	return 1;
}

WEFT_EXPORT void fi_log(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			const char *func, int line, const char *fmt, ...)
{
	struct fi_ops_log *ops;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	ops = import_enter();
	if (ops) {
		ops->log(prov, level, subsys, func, line, msg);
		import_leave();
		return;
	}
	/* Upstream's layout, so log scrapers keep working. */
	fprintf(stderr, "libfabric:%d:%ld::%s:%s:%s():%d<%s> %s%s",
		(int)getpid(), (long)time(NULL),
		prov && prov->name ? prov->name : "core",
		(unsigned)subsys < WEFT_ARRAY_SIZE(subsys_names) ?
			subsys_names[subsys] :
			"?",
		func ? func : "", line,
		(unsigned)level < WEFT_ARRAY_SIZE(level_names) ?
			level_names[level] :
			"?",
		msg, msg[0] && msg[strlen(msg) - 1] == '\n' ? "" : "\n");
}

/* ---- fi_open("logging") -------------------------------------------------- */

/*
 * fi_import_log(): the client fills a struct fid_logging with its callbacks
 * and binds it to the object fi_open("logging") returned, then closes that
 * object.  From the bind on, the client's fid is a live object of its own:
 * every message goes to its callbacks until fi_close() on the client's fid
 * ends the import and the library's own sink (stderr, FI_LOG_*) takes over
 * again.  One import is in place at a time; a second bind gives
 * -FI_EALREADY until the first is closed.  Clients import from a
 * constructor and close from a destructor, so closing must work whenever
 * the library is mapped; closing twice is harmless.
 */
static int imported_close(struct fid *fid)
{
	struct fid_logging *client = container_of(fid, struct fid_logging, fid);

	/* A second close finds the import gone and changes nothing. */
	if (!atomic_compare_exchange_strong(&log_import, &client, NULL))
		return 0;
	/* Calls already in the client's callbacks finish first.  (A
	 * callback that closes its own import would wait for itself: the
	 * count it holds is its own, so that one is not waited for.) */
	while (atomic_load(&log_calls) > log_calls_mine)
		sched_yield();
	return 0;
}

static int imported_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

static const struct fi_ops imported_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = imported_close,
	.bind = imported_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static const struct fi_ops log_fid_ops;

static int log_fid_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static int log_fid_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct fid_logging *client, *expected;
	struct fi_ops_log *ops;

	/* Only a client's struct fid_logging: the library's own logging
	 * objects are of the same class but are no fid_logging. */
	if (!bfid || bfid->fclass != FI_CLASS_LOG || bfid->ops == &log_fid_ops)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	client = container_of(bfid, struct fid_logging, fid);
	ops = client->ops;
	if (!ops || ops->size < offsetof(struct fi_ops_log, log) +
					sizeof(ops->log) ||
	    !ops->enabled || !ops->log)
		return -FI_EINVAL;
	/* One import at a time, as in libfabric 1.17: a second one, of
	 * this object or another, waits for the first to be closed. */
	expected = NULL;
	if (!atomic_compare_exchange_strong_explicit(
		    &log_import, &expected, client, memory_order_acq_rel,
		    memory_order_acquire))
		return -FI_EALREADY;
	/* The client's fid becomes a live object: fi_close on it ends the
	 * import.  Its context stays the client's. */
	bfid->ops = (struct fi_ops *)&imported_fid_ops;
	return 0;
}

static const struct fi_ops log_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = log_fid_close,
	.bind = log_fid_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int weft_log_open(struct fid **fid, void *context)
{
	struct fid *f = calloc(1, sizeof(*f));

	if (!f)
		return -FI_ENOMEM;
	f->fclass = FI_CLASS_LOG;
	f->context = context;
	f->ops = (struct fi_ops *)&log_fid_ops;
	*fid = f;
	return 0;
}
