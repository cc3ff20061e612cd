/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A main() for the libFuzzer harnesses of tests/fuzz built without
 * libFuzzer (any compiler): it hands every file named on the command line,
 * and every regular file of every directory named there, to
 * LLVMFuzzerTestOneInput once.  `make check` replays the checked-in
 * corpora (tests/fuzz/corpus/<harness>/) this way, the inputs of past
 * findings among them; a harness aborts on a broken promise, so a
 * regression fails the replay.  Prints how many inputs it replayed.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t n;
	FILE *fp = fopen(path, "rb");

	if (!fp || fstat(fileno(fp), &st)) {
		perror(path);
		if (fp)
			fclose(fp);
		return -1;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		fclose(fp);
		return -1;
	}
	n = fread(buf, 1, (size_t)st.st_size, fp);
	fclose(fp);
	if (n != (size_t)st.st_size) {
		fprintf(stderr, "%s: short read\n", path);
		free(buf);
		return -1;
	}
	/* The harness sees a buffer of exactly the input's size. */
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	char path[4096];
	struct dirent *d;
	struct stat st;
	int i, count = 0;
	DIR *dir;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st)) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]))
				return 1;
			count++;
			continue;
		}
		dir = opendir(argv[i]);
		if (!dir) {
			perror(argv[i]);
			return 1;
		}
		while ((d = readdir(dir))) {
			snprintf(path, sizeof(path), "%s/%s", argv[i],
				 d->d_name);
			if (stat(path, &st) || !S_ISREG(st.st_mode))
				continue;
			if (replay_file(path)) {
				closedir(dir);
				return 1;
			}
			count++;
		}
		closedir(dir);
	}
	printf("%s: %d inputs replayed, none broke a promise\n", argv[0],
	       count);
	return 0;
}
