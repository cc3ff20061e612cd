/* SPDX-License-Identifier: BSD-2-Clause */
/* A field of /proc/self/status in KiB (VmRSS, VmHWM, ...); 0 if unknown. */
#ifndef WEFT_TESTS_PROC_STATUS_H
#define WEFT_TESTS_PROC_STATUS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline long proc_status_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = strlen(field);
	char line[128];
	long v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			v = atol(line + n + 1);
	fclose(f);
	return v;
}

#endif /* WEFT_TESTS_PROC_STATUS_H */
