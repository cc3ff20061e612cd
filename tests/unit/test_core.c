/* SPDX-License-Identifier: BSD-2-Clause */
/* The core: version, parameters, logging, fi_open, fi_fabric. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <rdma/fabric.h>
#include <rdma/fi_ext.h>

#include "weft/core.h"

static struct fi_provider prov_a = { .name = "alpha" };
static struct fi_provider prov_b = { .name = "beta" };

Test(core, version)
{
	/* the newest API weft implements: 2.6 */
	cr_assert_eq(fi_version(), FI_VERSION(2, 6));
}

Test(param, types_and_env_names)
{
	char *s;
	int i, b;
	size_t z;

	cr_assert_eq(fi_param_define(&prov_a, "greeting", FI_PARAM_STRING,
				     "a %s", "string"), 0);
	cr_assert_eq(fi_param_define(&prov_a, "count", FI_PARAM_INT, "n"), 0);
	cr_assert_eq(fi_param_define(&prov_a, "flag", FI_PARAM_BOOL, "b"), 0);
	cr_assert_eq(fi_param_define(&prov_a, "size", FI_PARAM_SIZE_T, "z"), 0);
	/* The same name under another provider is another parameter. */
	cr_assert_eq(fi_param_define(&prov_b, "count", FI_PARAM_INT, "n"), 0);
	cr_assert_eq(fi_param_define(&prov_a, "count", FI_PARAM_INT, "n"),
		     -FI_EALREADY);

	cr_assert_eq(fi_param_get(&prov_a, "greeting", &s), -FI_ENODATA);
	setenv("FI_ALPHA_GREETING", "hello", 1);
	setenv("FI_ALPHA_COUNT", "-42", 1);
	setenv("FI_BETA_COUNT", "0x10", 1);
	setenv("FI_ALPHA_FLAG", "yes", 1);
	setenv("FI_ALPHA_SIZE", "1048576", 1);
	cr_assert_eq(fi_param_get_str(&prov_a, "greeting", &s), 0);
	cr_assert_str_eq(s, "hello");
	cr_assert_eq(fi_param_get_int(&prov_a, "count", &i), 0);
	cr_assert_eq(i, -42);
	cr_assert_eq(fi_param_get_int(&prov_b, "count", &i), 0);
	cr_assert_eq(i, 16);
	cr_assert_eq(fi_param_get_bool(&prov_a, "flag", &b), 0);
	cr_assert_eq(b, 1);
	setenv("FI_ALPHA_FLAG", "off", 1);
	cr_assert_eq(fi_param_get_bool(&prov_a, "flag", &b), 0);
	cr_assert_eq(b, 0);
	cr_assert_eq(fi_param_get_size_t(&prov_a, "size", &z), 0);
	cr_assert_eq(z, 1048576);
	cr_assert_eq(fi_param_get(&prov_a, "nosuch", &i), -FI_ENOENT);
}

Test(param, bad_values_are_rejected)
{
	int i = 7, b = 7;
	size_t z = 7;

	cr_assert_eq(fi_param_define(&prov_a, "count", FI_PARAM_INT, "n"), 0);
	cr_assert_eq(fi_param_define(&prov_a, "flag", FI_PARAM_BOOL, "b"), 0);
	cr_assert_eq(fi_param_define(&prov_a, "size", FI_PARAM_SIZE_T, "z"), 0);
	setenv("FI_ALPHA_COUNT", "12abc", 1);
	setenv("FI_ALPHA_FLAG", "maybe", 1);
	setenv("FI_ALPHA_SIZE", "-1", 1);
	cr_assert_eq(fi_param_get_int(&prov_a, "count", &i), -FI_EINVAL);
	cr_assert_eq(fi_param_get_bool(&prov_a, "flag", &b), -FI_EINVAL);
	cr_assert_eq(fi_param_get_size_t(&prov_a, "size", &z), -FI_EINVAL);
	setenv("FI_ALPHA_COUNT", "99999999999", 1);
	cr_assert_eq(fi_param_get_int(&prov_a, "count", &i), -FI_EINVAL);
	/* Untouched on failure. */
	cr_assert_eq(i, 7);
	cr_assert_eq(b, 7);
	cr_assert_eq(z, 7);
	cr_assert_eq(fi_param_define(&prov_a, NULL, FI_PARAM_INT, "x"),
		     -FI_EINVAL);
}

Test(param, getparams_lists_definitions)
{
	struct fi_param *params;
	int n, i, found = 0;

	cr_assert_eq(fi_param_define(NULL, "core_knob", FI_PARAM_INT,
				     "a core knob"), 0);
	cr_assert_eq(fi_param_define(&prov_b, "knob", FI_PARAM_STRING, "h"), 0);
	setenv("FI_BETA_KNOB", "v", 1);
	cr_assert_eq(fi_getparams(&params, &n), 0);
	cr_assert_geq(n, 2);
	for (i = 0; i < n; i++) {
		if (!strcmp(params[i].name, "FI_CORE_KNOB")) {
			cr_assert_str_eq(params[i].help_string, "a core knob");
			cr_assert_null(params[i].value);
			found++;
		}
		if (!strcmp(params[i].name, "FI_BETA_KNOB")) {
			cr_assert_str_eq(params[i].value, "v");
			cr_assert_eq(params[i].type, FI_PARAM_STRING);
			found++;
		}
	}
	cr_assert_eq(found, 2);
	cr_assert_null(params[n].name);
	fi_freeparams(params);
}

Test(log, level_prov_and_subsys_filters)
{
	/* Off by default. */
	cr_assert_not(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));

	setenv("FI_LOG_LEVEL", "info", 1);
	weft_log_fini();
	weft_log_init();
	cr_assert(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CORE));
	cr_assert(fi_log_enabled(&prov_a, FI_LOG_INFO, FI_LOG_CQ));
	cr_assert_not(fi_log_enabled(&prov_a, FI_LOG_DEBUG, FI_LOG_CQ));

	setenv("FI_LOG_PROV", "^alpha", 1);
	setenv("FI_LOG_SUBSYS", "cq,av", 1);
	weft_log_fini();
	weft_log_init();
	cr_assert_not(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CQ));
	cr_assert(fi_log_enabled(&prov_b, FI_LOG_WARN, FI_LOG_CQ));
	cr_assert(fi_log_enabled(&prov_b, FI_LOG_WARN, FI_LOG_AV));
	cr_assert_not(fi_log_enabled(&prov_b, FI_LOG_WARN, FI_LOG_EQ));

	setenv("FI_LOG_PROV", "alpha", 1);
	setenv("FI_LOG_SUBSYS", "^cq", 1);
	weft_log_fini();
	weft_log_init();
	cr_assert(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_EQ));
	cr_assert_not(fi_log_enabled(&prov_a, FI_LOG_WARN, FI_LOG_CQ));
	cr_assert_not(fi_log_enabled(&prov_b, FI_LOG_WARN, FI_LOG_EQ));
}

Test(log, sparse_logging_is_rate_limited)
{
	uint64_t showtime = 0;

	setenv("FI_LOG_LEVEL", "warn", 1);
	weft_log_fini();
	weft_log_init();
	cr_assert(fi_log_ready(&prov_a, FI_LOG_WARN, FI_LOG_CORE, &showtime));
	cr_assert_not(fi_log_ready(&prov_a, FI_LOG_WARN, FI_LOG_CORE,
				   &showtime));
	cr_assert_not(fi_log_ready(&prov_a, FI_LOG_TRACE, FI_LOG_CORE,
				   &(uint64_t){ 0 }));
}

static int n_logged;
static char last_msg[256];

static int imp_enabled(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, uint64_t flags)
{
	return level <= FI_LOG_INFO;
}

static void imp_log(const struct fi_provider *prov, enum fi_log_level level,
		    enum fi_log_subsys subsys, const char *func, int line,
		    const char *msg)
{
	n_logged++;
	snprintf(last_msg, sizeof(last_msg), "%s|%s", prov->name, msg);
}

Test(log, imported_callbacks_receive_messages)
{
	static struct fi_ops_log ops = { .enabled = imp_enabled,
					 .log = imp_log };
	static struct fid_logging lf = { .ops = &ops };

	cr_assert_eq(fi_import_log(FI_VERSION(1, 17), 0, &lf), 0);
	cr_assert(fi_log_enabled(&prov_a, FI_LOG_INFO, FI_LOG_CORE));
	cr_assert_not(fi_log_enabled(&prov_a, FI_LOG_DEBUG, FI_LOG_CORE));
	FI_WARN(&prov_a, FI_LOG_CORE, "value %d", 42);
	cr_assert_eq(n_logged, 1);
	cr_assert_str_eq(last_msg, "alpha|value 42");
	FI_DBG(&prov_a, FI_LOG_CORE, "never");
	cr_assert_eq(n_logged, 1);
}

/*
 * No callback runs once fi_close on the client's fid has returned, even
 * while another thread logs: the client may free what its callbacks use.
 */
static atomic_bool race_closed, race_stop;
static atomic_int race_in_cb, race_late;

static int race_enabled(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			uint64_t flags)
{
	return 1;
}

static void race_log(const struct fi_provider *prov, enum fi_log_level level,
		     enum fi_log_subsys subsys, const char *func, int line,
		     const char *msg)
{
	atomic_fetch_add(&race_in_cb, 1);
	usleep(200);
	if (atomic_load(&race_closed))
		atomic_fetch_add(&race_late, 1);
}

static void *race_logger(void *arg)
{
	while (!atomic_load(&race_stop))
		FI_WARN(&prov_a, FI_LOG_CORE, "busy");
	return NULL;
}

Test(log, close_waits_for_callbacks_under_way)
{
	static struct fi_ops_log ops = { .enabled = race_enabled,
					 .log = race_log };
	static struct fid_logging lf = { .ops = &ops };
	pthread_t t;
	int round;

	for (round = 0; round < 20; round++) {
		atomic_store(&race_closed, false);
		atomic_store(&race_stop, false);
		atomic_store(&race_in_cb, 0);
		cr_assert_eq(fi_import_log(FI_VERSION(1, 17), 0, &lf), 0);
		cr_assert_eq(pthread_create(&t, NULL, race_logger, NULL), 0);
		while (atomic_load(&race_in_cb) < 3)
			usleep(50);
		cr_assert_eq(fi_close(&lf.fid), 0);
		atomic_store(&race_closed, true);
		usleep(1000);
		atomic_store(&race_stop, true);
		pthread_join(t, NULL);
	}
	cr_assert_eq(atomic_load(&race_late), 0,
		     "%d callbacks ran after fi_close returned",
		     atomic_load(&race_late));
}

Test(open, logging_object_and_unknown_names)
{
	struct fid *fid;

	cr_assert_eq(fi_open(FI_VERSION(1, 17), "logging", NULL, 0, 0, &fid,
			     NULL), 0);
	cr_assert_eq(fid->fclass, FI_CLASS_LOG);
	/* Binding something that is not a logging object is refused. */
	cr_assert_eq(fi_import_fid(fid, fid, 0), -FI_EINVAL);
	cr_assert_eq(fi_close(fid), 0);
	cr_assert_eq(fi_open(FI_VERSION(1, 17), "nosuch", NULL, 0, 0, &fid,
			     NULL), -FI_ENOSYS);
	cr_assert_eq(fi_open(FI_VERSION(1, 17), NULL, NULL, 0, 0, &fid, NULL),
		     -FI_EINVAL);
}

Test(fabric, unknown_provider)
{
	struct fi_fabric_attr attr = { .prov_name = "nosuch" };
	struct fid_fabric *fabric;

	cr_assert_eq(fi_fabric(&attr, &fabric, NULL), -FI_ENODEV);
	cr_assert_eq(fi_fabric(NULL, &fabric, NULL), -FI_EINVAL);
}

Test(getinfo, no_provider_built_in)
{
	struct fi_info *info;

	/* This program registers no provider. */
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info),
		     -FI_ENODATA);
	cr_assert_null(info);
	cr_assert_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, NULL),
		     -FI_EINVAL);
}

/* weft_pid / weft_tid: cached, and right again in a forked child. */
static void *tid_of_thread(void *arg)
{
	pid_t *out = arg;

	out[0] = weft_tid();
	out[1] = (pid_t)syscall(SYS_gettid);
	return NULL;
}

Test(proc, pid_and_tid_are_cached_and_follow_fork)
{
	pid_t parent = getpid(), t[2], child;
	pthread_t th;
	int status, fds[2];

	cr_assert_eq(weft_pid(), parent);
	cr_assert_eq(weft_tid(), (pid_t)syscall(SYS_gettid));
	cr_assert_eq(pthread_create(&th, NULL, tid_of_thread, t), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(t[0], t[1], "a thread's id is its own");
	cr_assert_neq(t[0], weft_tid(), "not the main thread's");

	/* The child learns its own values, not the parent's cached ones. */
	cr_assert_eq(pipe(fds), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (!child) {
		pid_t got[4] = { weft_pid(), getpid(), weft_tid(),
				 (pid_t)syscall(SYS_gettid) };

		_exit(write(fds[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	{
		pid_t got[4];

		cr_assert_eq(read(fds[0], got, sizeof(got)),
			     (ssize_t)sizeof(got));
		cr_assert_eq(got[0], got[1], "child pid %d, cached %d", got[1],
			     got[0]);
		cr_assert_neq(got[0], parent);
		cr_assert_eq(got[2], got[3], "child tid %d, cached %d", got[3],
			     got[2]);
	}
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(weft_pid(), parent, "the parent's own stays");
}
