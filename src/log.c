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

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_ext.h>

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
	/* A client's callbacks imported through fi_open("logging"). */
	struct fi_ops_log *imported;
} log_cfg = { .level = -1, .subsys_mask = ~0ULL };

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
	log_cfg.imported = NULL;
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

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

WEFT_EXPORT int fi_log_enabled(const struct fi_provider *prov,
			       enum fi_log_level level,
			       enum fi_log_subsys subsys)
{
	struct fi_ops_log *ops = log_cfg.imported;

	if (ops)
		return ops->enabled(prov, level, subsys, 0);
	return default_enabled(prov, level, subsys, 0);
}

WEFT_EXPORT int fi_log_ready(const struct fi_provider *prov,
			     enum fi_log_level level,
			     enum fi_log_subsys subsys, uint64_t *showtime)
{
	struct fi_ops_log *ops = log_cfg.imported;
	uint64_t now;

	if (ops && ops->ready)
		return ops->ready(prov, level, subsys, 0, showtime);
	if (!fi_log_enabled(prov, level, subsys))
		return 0;
	now = now_ms();
	if (now < *showtime)
		return 0;
	*showtime = now + LOG_SPARSE_INTERVAL_MS;
	return 1;
}

WEFT_EXPORT void fi_log(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			const char *func, int line, const char *fmt, ...)
{
	struct fi_ops_log *ops = log_cfg.imported;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (ops) {
		ops->log(prov, level, subsys, func, line, msg);
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
 * The object fi_open("logging") returns.  Binding a struct fid_logging to it
 * (fi_import_log) makes the client's callbacks receive every message from
 * then on; closing the object keeps the import in place, as fi_import does.
 */
static int log_fid_close(struct fid *fid)
{
	free(fid);
	return 0;
}

static int log_fid_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct fid_logging *client;

	if (!bfid || bfid->fclass != FI_CLASS_LOG)
		return -FI_EINVAL;
	client = container_of(bfid, struct fid_logging, fid);
	if (!client->ops || !client->ops->enabled || !client->ops->log ||
	    client->ops->size < offsetof(struct fi_ops_log, log) +
					sizeof(client->ops->log))
		return -FI_EINVAL;
	log_cfg.imported = client->ops;
	return 0;
}

static struct fi_ops log_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = log_fid_close,
	.bind = log_fid_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

int weft_log_open(struct fid **fid, void *context);

int weft_log_open(struct fid **fid, void *context)
{
	struct fid *f = calloc(1, sizeof(*f));

	if (!f)
		return -FI_ENOMEM;
	f->fclass = FI_CLASS_LOG;
	f->context = context;
	f->ops = &log_fid_ops;
	*fid = f;
	return 0;
}
