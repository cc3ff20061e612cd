/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_strerror: print the text fi_strerror() gives for an error code.
 *
 * The code may be written in decimal, hexadecimal (0x...) or octal (0...),
 * with or without a sign; its absolute value is looked up, so both 61 and
 * the -61 a function returned give "No data available".  Everything goes to
 * stdout, as with the 1.17 tool.
 */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

static void usage(void)
{
	printf("Usage: fi_strerror FI_ERROR_CODE\n"
	       "\n"
	       "Displays the error string for the given numeric FI_ERROR_CODE.\n"
	       "FI_ERROR_CODE may be a hexadecimal, octal, or decimal constant.\n"
	       "For convenience, the absolute value of FI_ERROR_CODE will be used.\n");
}

/* Parse a whole int in any C base; 0, -FI_EINVAL or -FI_EOVERFLOW. */
static int parse_code(const char *arg, int *code)
{
	char *end;
	long val;

	errno = 0;
	val = strtol(arg, &end, 0);
	if (end == arg || *end)
		return -FI_EINVAL;
	if (errno == ERANGE || val < INT_MIN || val > INT_MAX)
		return -FI_EOVERFLOW;
	*code = (int)val;
	return 0;
}

int main(int argc, char **argv)
{
	int code, ret;

	if (argc != 2) {
		usage();
		return EXIT_FAILURE;
	}
	if (!strcmp(argv[1], "-h")) {
		usage();
		return EXIT_SUCCESS;
	}
	ret = parse_code(argv[1], &code);
	if (ret) {
		if (ret == -FI_EOVERFLOW)
			printf("ERROR: '%s' is out of range\n\n", argv[1]);
		else
			printf("ERROR: unable to parse '%s'\n\n", argv[1]);
		usage();
		return EXIT_FAILURE;
	}
	/* -INT_MIN does not fit an int; the library takes either sign. */
	printf("%s\n", fi_strerror(code == INT_MIN ? code : abs(code)));
	return EXIT_SUCCESS;
}
