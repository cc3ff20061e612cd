/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_HOOK=perf: per object (endpoint, context, CQ, counter, EQ), per
 * family of calls (weft_hook_kind): calls, calls that succeeded, calls
 * answered -FI_EAGAIN, bytes moved (data calls that succeeded) or entries
 * read (CQ and EQ reads), and the time spent in the provider, measured
 * with clock_gettime(CLOCK_MONOTONIC) (the vDSO: no system call).  The
 * table of an object is printed when it is closed: through the log at
 * info level when the log shows that level (FI_LOG_LEVEL=info or debug,
 * or a sink a client imported that takes it), else on stderr.
 *
 * FI_HOOK_PERF_SIGNAL names a signal (USR1, SIGUSR2, or a number) on
 * which the tables of every object still open are printed as well: the
 * handler only writes a byte to a pipe (async-signal-safe), and a thread
 * of ours, blocked on the pipe, prints them under the registry's lock.
 */
#include "weft/hook.h"

#include "weft/core.h"
#include "weft/list.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct fi_provider perf_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "hook_perf",
};

struct perf_row {
	uint64_t calls, ok, eagain, amount, ns;
};

struct perf_obj {
	struct perf_row row[WEFT_HK_COUNT];
	struct dlist_entry entry; /* on perf_objs, under perf_objs_lock */
	struct weft_hook_fid *hf;
};

/* The objects open, for the signal's dump. */
static struct dlist_entry perf_objs = { &perf_objs, &perf_objs };
static pthread_mutex_t perf_objs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t perf_signal_once = PTHREAD_ONCE_INIT;
static int perf_pipe[2] = { -1, -1 };

static bool perf_counted(size_t fclass)
{
	switch (fclass) {
	case FI_CLASS_EP:
	case FI_CLASS_SEP:
	case FI_CLASS_TX_CTX:
	case FI_CLASS_RX_CTX:
	case FI_CLASS_SRX_CTX:
	case FI_CLASS_CQ:
	case FI_CLASS_CNTR:
	case FI_CLASS_EQ:
		return true;
	default:
		return false;
	}
}

static void perf_signal_setup(void);

static int perf_open(struct weft_hook_fid *hf, unsigned slot)
{
	struct perf_obj *p;

	if (!perf_counted(weft_hook_fclass(hf)))
		return 0;
	pthread_once(&perf_signal_once, perf_signal_setup);
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	p->hf = hf;
	pthread_mutex_lock(&perf_objs_lock);
	dlist_insert_tail(&p->entry, &perf_objs);
	pthread_mutex_unlock(&perf_objs_lock);
	hf->priv[slot] = p;
	return 0;
}

static void perf_before(struct weft_hook_call *c, unsigned slot)
{
	if (c->hf->priv[slot] && c->kind > WEFT_HK_OTHER &&
	    c->kind < WEFT_HK_CLOSE)
		c->scratch[slot] = weft_now_ns();
}

static void perf_line(bool to_log, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void perf_line(bool to_log, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (to_log)
		fi_log(&perf_prov, FI_LOG_INFO, FI_LOG_CORE, "perf", 0, "%s\n",
		       line);
	else
		fprintf(stderr, "libfabric:%d:hook_perf: %s\n", (int)weft_pid(),
			line);
}

/* The table of one object: a header, then a row per family called. */
static void perf_print(struct weft_hook_fid *hf, const struct perf_obj *p)
{
	bool to_log = fi_log_enabled(&perf_prov, FI_LOG_INFO, FI_LOG_CORE);
	bool any = false;
	size_t k;

	for (k = 0; k < WEFT_HK_COUNT; k++)
		any |= __atomic_load_n(&p->row[k].calls, __ATOMIC_RELAXED) != 0;
	if (!any)
		return;
	perf_line(to_log, "%s %p (context %p):",
		  weft_hook_class_name(weft_hook_fclass(hf)),
		  (void *)&hf->u.fid, hf->u.fid.context);
	perf_line(to_log, "  %-16s %12s %12s %10s %16s %14s %10s", "op",
		  "calls", "ok", "eagain", "bytes/entries", "ns", "ns/call");
	for (k = 0; k < WEFT_HK_COUNT; k++) {
		/* (Read while other threads may count: each figure whole,
		 * the row as of about now.) */
		struct perf_row r = {
			__atomic_load_n(&p->row[k].calls, __ATOMIC_RELAXED),
			__atomic_load_n(&p->row[k].ok, __ATOMIC_RELAXED),
			__atomic_load_n(&p->row[k].eagain, __ATOMIC_RELAXED),
			__atomic_load_n(&p->row[k].amount, __ATOMIC_RELAXED),
			__atomic_load_n(&p->row[k].ns, __ATOMIC_RELAXED),
		};

		if (!r.calls)
			continue;
		perf_line(to_log,
			  "  %-16s %12llu %12llu %10llu %16llu %14llu %10llu",
			  weft_hook_kind_name(k), (unsigned long long)r.calls,
			  (unsigned long long)r.ok,
			  (unsigned long long)r.eagain,
			  (unsigned long long)r.amount,
			  (unsigned long long)r.ns,
			  (unsigned long long)(r.ns / r.calls));
	}
}

/* ---- the dump on a signal ------------------------------------------------ */

static void perf_on_signal(int sig)
{
	int saved = errno;
	char b = (char)sig;

	(void)!write(perf_pipe[1], &b, 1);
	errno = saved;
}

static void *perf_dumper(void *arg)
{
	struct dlist_entry *e;
	char b;

	(void)arg;
	for (;;) {
		ssize_t n = read(perf_pipe[0], &b, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		pthread_mutex_lock(&perf_objs_lock);
		perf_line(fi_log_enabled(&perf_prov, FI_LOG_INFO, FI_LOG_CORE),
			  "signal %d: the objects open", (int)b);
		dlist_foreach(&perf_objs, e) {
			struct perf_obj *p =
				container_of(e, struct perf_obj, entry);

			perf_print(p->hf, p);
		}
		pthread_mutex_unlock(&perf_objs_lock);
	}
}

/* FI_HOOK_PERF_SIGNAL's number, or 0 (unset, or not a signal). */
static int perf_signal_number(void)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
		{ "QUIT", SIGQUIT }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH },
	};
	const char *v = getenv("FI_HOOK_PERF_SIGNAL");
	char *end;
	long n;
	size_t i;

	if (!v || !*v)
		return 0;
	if (!strncmp(v, "SIG", 3))
		v += 3;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i].name))
			return names[i].sig;
	n = strtol(v, &end, 10);
	if (*end || n <= 0 || n >= NSIG || n == SIGKILL || n == SIGSTOP)
		return 0;
	return (int)n;
}

static void perf_signal_setup(void)
{
	struct sigaction sa;
	pthread_attr_t attr;
	pthread_t th;
	int sig = perf_signal_number();

	if (!sig) {
		if (getenv("FI_HOOK_PERF_SIGNAL"))
			FI_WARN(&perf_prov, FI_LOG_CORE,
				"FI_HOOK_PERF_SIGNAL=%s: not a signal this "
				"hook takes\n", getenv("FI_HOOK_PERF_SIGNAL"));
		return;
	}
	if (pipe(perf_pipe))
		return;
	fcntl(perf_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(perf_pipe[1], F_SETFD, FD_CLOEXEC);
	fcntl(perf_pipe[1], F_SETFL, O_NONBLOCK);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, perf_dumper, NULL)) {
		pthread_attr_destroy(&attr);
		close(perf_pipe[0]);
		close(perf_pipe[1]);
		perf_pipe[0] = perf_pipe[1] = -1;
		return;
	}
	pthread_attr_destroy(&attr);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = perf_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void perf_after(struct weft_hook_call *c, unsigned slot)
{
	struct perf_obj *p = c->hf->priv[slot];
	struct perf_row *r;
	uint64_t amount = 0;

	if (!p)
		return;
	if (c->kind == WEFT_HK_CLOSE) {
		if (!c->ret)
			perf_print(c->hf, p);
		return;
	}
	if (c->kind <= WEFT_HK_OTHER || c->kind >= WEFT_HK_CLOSE)
		return;
	r = &p->row[c->kind];
	switch (c->kind) {
	case WEFT_HK_CQ_READ:
	case WEFT_HK_CQ_READFROM:
	case WEFT_HK_CQ_READERR:
	case WEFT_HK_CQ_SREAD:
	case WEFT_HK_CQ_SREADFROM:
	case WEFT_HK_EQ_READ:
	case WEFT_HK_EQ_SREAD:
	case WEFT_HK_EQ_READERR:
		amount = c->ret > 0 ? (uint64_t)c->ret : 0;
		if (c->kind >= WEFT_HK_EQ_READ || c->kind == WEFT_HK_CQ_READERR)
			amount = c->ret > 0; /* events, not bytes */
		break;
	case WEFT_HK_CNTR_READ:
	case WEFT_HK_CNTR_READERR:
	case WEFT_HK_CNTR_WAIT:
		break;
	default:
		amount = c->ret == 0 ? c->len : 0;
		break;
	}
	/* An endpoint is used by one thread at a time in the common models;
	 * relaxed atomics keep the figures whole under FI_THREAD_SAFE too. */
	__atomic_fetch_add(&r->calls, 1, __ATOMIC_RELAXED);
	if (c->ret == -FI_EAGAIN)
		__atomic_fetch_add(&r->eagain, 1, __ATOMIC_RELAXED);
	else if (c->ret >= 0 || c->kind == WEFT_HK_CNTR_READ ||
		 c->kind == WEFT_HK_CNTR_READERR)
		__atomic_fetch_add(&r->ok, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->amount, amount, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r->ns, weft_now_ns() - c->scratch[slot],
			   __ATOMIC_RELAXED);
}

static void perf_release(struct weft_hook_fid *hf, unsigned slot)
{
	struct perf_obj *p = hf->priv[slot];

	if (p) {
		pthread_mutex_lock(&perf_objs_lock);
		dlist_remove(&p->entry);
		pthread_mutex_unlock(&perf_objs_lock);
	}
	free(p);
	hf->priv[slot] = NULL;
}

const struct weft_hook_ops weft_hook_perf = {
	.name = "perf",
	.open = perf_open,
	.before = perf_before,
	.after = perf_after,
	.release = perf_release,
};
