/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A client that imports its log callbacks the way RPC libraries do: from a
 * constructor, before main, and closes its own struct fid_logging from a
 * destructor, after main.  It must exit 0 over any libfabric.so.1 that
 * offers fi_open("logging").
 *
 * Checked on the way: messages reach the callbacks while imported, once
 * each; a second import while one is in place is refused with
 * -FI_EALREADY; the client's fid is a live object after the import (fi_close
 * works on it, also from the destructor); after a close nothing reaches the
 * callbacks, and importing again works.  run-import-client.sh checks that
 * messages after a close reach the library's own sink (stderr).
 *
 * Exit status: 0 pass; 2..12 name the check that failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_ext.h>
#include <rdma/providers/fi_log.h>

static struct fi_provider client_prov = {
	.version = FI_VERSION(1, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = "logclient",
};

static int n_logged;
static char last_msg[256];

static int client_enabled(const struct fi_provider *prov,
			  enum fi_log_level level, enum fi_log_subsys subsys,
			  uint64_t flags)
{
	return level <= FI_LOG_WARN;
}

static int client_ready(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			uint64_t flags, uint64_t *showtime)
{
	return level <= FI_LOG_WARN;
}

static void client_log(const struct fi_provider *prov, enum fi_log_level level,
		       enum fi_log_subsys subsys, const char *func, int line,
		       const char *msg)
{
	/* Only this client's own messages are counted: the library may log
	 * for itself through the same callbacks. */
	if (prov != &client_prov)
		return;
	n_logged++;
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
}

static struct fi_ops_log client_ops = {
	.size = sizeof(struct fi_ops_log),
	.enabled = client_enabled,
	.ready = client_ready,
	.log = client_log,
};

static struct fid_logging client_log_fid = { .ops = &client_ops };

static void fail(int code, const char *what)
{
	fprintf(stderr, "import_client: %s\n", what);
	fflush(stderr);
	_exit(code);
}

__attribute__((constructor)) static void client_init(void)
{
	int ret = fi_import_log(FI_VERSION(1, 17), 0, &client_log_fid);

	if (ret) {
		fprintf(stderr, "import_client: fi_import_log: %d\n", ret);
		_exit(2);
	}
	if (!client_log_fid.fid.ops || !client_log_fid.fid.ops->close)
		fail(3, "the imported fid has no close op");
}

__attribute__((destructor)) static void client_fini(void)
{
	int before;

	if (fi_close(&client_log_fid.fid))
		fail(4, "fi_close on the imported fid failed");
	before = n_logged;
	FI_WARN(&client_prov, FI_LOG_CORE, "after-close marker\n");
	if (n_logged != before)
		fail(5, "a message after the close reached the callbacks");
	fflush(stderr);
}

int main(void)
{
	struct fi_info *info = NULL;

	FI_WARN(&client_prov, FI_LOG_CORE, "imported marker %d\n", 1);
	if (n_logged != 1 || !strstr(last_msg, "imported marker 1"))
		fail(6, "a message did not reach the imported callbacks");

	/* The library itself works while its messages go to the client. */
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info) == 0)
		fi_freeinfo(info);

	/* One import at a time: a second one is refused and the first
	 * stays in place, each message delivered once. */
	if (fi_import_log(FI_VERSION(1, 17), 0, &client_log_fid) !=
	    -FI_EALREADY)
		fail(7, "a second import was not refused with -FI_EALREADY");
	FI_WARN(&client_prov, FI_LOG_CORE, "second import marker\n");
	if (n_logged != 2 || !strstr(last_msg, "second import marker"))
		fail(8, "after a second import a message arrived other than once");

	/* Closing ends the import; importing again after it works. */
	if (fi_close(&client_log_fid.fid))
		fail(9, "fi_close on the imported fid failed");
	FI_WARN(&client_prov, FI_LOG_CORE, "between imports marker\n");
	if (n_logged != 2)
		fail(10, "a message after the close reached the callbacks");
	if (fi_import_log(FI_VERSION(1, 17), 0, &client_log_fid))
		fail(11, "importing again after the close failed");
	FI_WARN(&client_prov, FI_LOG_CORE, "reimport marker\n");
	if (n_logged != 3 || !strstr(last_msg, "reimport marker"))
		fail(12, "a message did not reach the callbacks imported again");
	printf("import_client: %d messages through the callbacks\n", n_logged);
	return 0;
}
