/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * This process's pid and each thread's id, looked up once.  A fork bumps
 * a generation in the child (pthread_atfork), which makes both caches
 * stale there; the pid cache is also cleared, so the child never reports
 * its parent's pid.
 */
#include "weft/core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_uint proc_gen = 1;
static _Atomic pid_t proc_pid;
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void proc_forked(void)
{
	atomic_store_explicit(&proc_pid, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&proc_gen, 1, memory_order_relaxed);
}

static void proc_init(void)
{
	pthread_atfork(NULL, NULL, proc_forked);
}

pid_t weft_pid(void)
{
	pid_t pid = atomic_load_explicit(&proc_pid, memory_order_relaxed);

	if (weft_likely(pid))
		return pid;
	/* The handler first: a fork after the lookup must clear it. */
	pthread_once(&proc_once, proc_init);
	pid = getpid();
	atomic_store_explicit(&proc_pid, pid, memory_order_relaxed);
	return pid;
}

pid_t weft_tid(void)
{
	static __thread pid_t tid;
	static __thread unsigned int gen;
	unsigned int g = atomic_load_explicit(&proc_gen, memory_order_relaxed);

	if (weft_unlikely(!tid || gen != g)) {
		pthread_once(&proc_once, proc_init);
		tid = (pid_t)syscall(SYS_gettid);
		gen = atomic_load_explicit(&proc_gen, memory_order_relaxed);
	}
	return tid;
}
