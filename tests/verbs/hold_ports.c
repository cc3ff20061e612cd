/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hold_ports ADDR FIRST COUNT: listen on TCP ports FIRST .. FIRST+COUNT-1
 * of ADDR (those already taken are left), print "holding N", and wait to
 * be killed.  tests/verbs/port-busy.sh makes rdma_cm's local ports of an
 * iWARP device collide with TCP's with it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_in sin;
	int first, count, i, n = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: %s ADDR FIRST COUNT\n", argv[0]);
		return 2;
	}
	first = atoi(argv[2]);
	count = atoi(argv[3]);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) {
		fprintf(stderr, "%s: not an IPv4 address\n", argv[1]);
		return 2;
	}
	for (i = 0; i < count; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		sin.sin_port = htons((uint16_t)(first + i));
		if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
		    listen(fd, 1)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		n++;
	}
	printf("holding %d\n", n);
	fflush(stdout);
	for (;;)
		pause();
}
