/* SPDX-License-Identifier: BSD-2-Clause */
/* The unit tests' one way to name a process that is surely gone. */
#ifndef WEFT_TESTS_DEAD_PID_H
#define WEFT_TESTS_DEAD_PID_H

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

/* A child that exited and was reaped: its pid names no process (until
 * the kernel hands it out again, far later). */
static inline pid_t dead_pid(void)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return pid;
}

#endif
