/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the MPI test programs share: a failure that ends the whole job with
 * a non-zero status, byte patterns that differ per message, and a report
 * of which libfabric.so the process mapped (the runner checks that it is
 * the build's own).
 */
#ifndef WEFT_MPITEST_H
#define WEFT_MPITEST_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mt_prog = "mpi";

/* A wrong byte, a lost or doubled message, an error code: say what and
 * where, then end every rank (MPI_Abort's status is the job's). */
static void mt_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void mt_fail(const char *fmt, ...)
{
	int rank = -1;
	va_list ap;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	fprintf(stderr, "%s: rank %d: FAIL: ", mt_prog, rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 3);
	exit(3);
}

/* Every MPI call's result is looked at: errors are returned, not fatal. */
#define MT_CHECK(call)                                                      \
	do {                                                                \
		int mt_rc_ = (call);                                        \
		if (mt_rc_ != MPI_SUCCESS) {                                \
			char mt_s_[MPI_MAX_ERROR_STRING];                   \
			int mt_l_ = 0;                                      \
			MPI_Error_string(mt_rc_, mt_s_, &mt_l_);            \
			mt_fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, \
				mt_s_);                                     \
		}                                                           \
	} while (0)

/* The byte at offset i of a message that seed names. */
static inline uint8_t mt_byte(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + i / 8;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (uint8_t)(x >> (8 * (i % 8)));
}

static inline void mt_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = mt_byte(seed, i);
}

/* Offset of the first wrong byte, or -1. */
static inline long mt_verify(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != mt_byte(seed, i))
			return (long)i;
	return -1;
}

static inline uint64_t mt_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	return ((a * 1000003 + b) * 1000033 + c) * 1000037 + d + 1;
}

/* Initialise MPI, make errors return, and have rank 0 print the
 * libfabric.so this process mapped ("libfabric: PATH" or "libfabric:
 * none") and the host of every rank ("hosts: NAME NAME ..."). */
static void mt_init(int *argc, char ***argv, const char *prog, int required,
		    int *provided)
{
	int rank, p = MPI_THREAD_SINGLE;

	mt_prog = prog;
	if (required == MPI_THREAD_SINGLE) {
		if (MPI_Init(argc, argv) != MPI_SUCCESS) {
			fprintf(stderr, "%s: MPI_Init failed\n", prog);
			exit(2);
		}
	} else if (MPI_Init_thread(argc, argv, required, &p) != MPI_SUCCESS) {
		fprintf(stderr, "%s: MPI_Init_thread failed\n", prog);
		exit(2);
	}
	if (provided)
		*provided = p;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	{
		char name[MPI_MAX_PROCESSOR_NAME] = "", *all = NULL;
		int n, len;

		MPI_Comm_size(MPI_COMM_WORLD, &n);
		MPI_Get_processor_name(name, &len);
		if (rank == 0)
			all = calloc(n, sizeof(name));
		if (MPI_Gather(name, sizeof(name), MPI_CHAR, all, sizeof(name),
			       MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
			fprintf(stderr, "%s: MPI_Gather failed\n", prog);
			exit(2);
		}
		if (rank == 0 && all) {
			printf("%s: hosts:", prog);
			for (int i = 0; i < n; i++)
				printf(" %s", all + (size_t)i * sizeof(name));
			printf("\n");
		}
		free(all);
	}
	if (rank == 0) {
		FILE *f = fopen("/proc/self/maps", "r");
		char line[4096], *lib = NULL;

		while (f && fgets(line, sizeof(line), f)) {
			char *s = strchr(line, '/');

			if (s && strstr(s, "/libfabric.so")) {
				s[strcspn(s, "\n")] = '\0';
				lib = s;
				break;
			}
		}
		printf("%s: libfabric: %s\n", prog, lib ? lib : "none");
		fflush(stdout);
		if (f)
			fclose(f);
	}
}

#endif
