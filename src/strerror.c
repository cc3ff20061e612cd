/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_strerror: the text for an FI_E* code, given as -FI_Exxx or FI_Exxx.
 *
 * Codes below FI_ERRNO_OFFSET are errno values and read as strerror()
 * words them; the OFI-specific codes from FI_ERRNO_OFFSET up have texts of
 * their own.  Anything else gets a generic "Unknown error" text, never NULL.
 */
#include "weft/core.h"

#include <limits.h>
#include <string.h>

static const char *const strerror_fi_codes[] = {
	[FI_EOTHER - FI_ERRNO_OFFSET] = "Unspecified error",
	[FI_ETOOSMALL - FI_ERRNO_OFFSET] = "Buffer too small for the result",
	[FI_EOPBADSTATE - FI_ERRNO_OFFSET] =
		"Operation not allowed in the object's current state",
	[FI_EAVAIL - FI_ERRNO_OFFSET] =
		"Error available: read it from the error queue",
	[FI_EBADFLAGS - FI_ERRNO_OFFSET] = "Flags not supported",
	[FI_ENOEQ - FI_ERRNO_OFFSET] = "No event queue bound or available",
	[FI_EDOMAIN - FI_ERRNO_OFFSET] = "Object belongs to another domain",
	[FI_ENOCQ - FI_ERRNO_OFFSET] =
		"No completion queue bound or available",
	[FI_ECRC - FI_ERRNO_OFFSET] = "Data failed its CRC check",
	[FI_ETRUNC - FI_ERRNO_OFFSET] =
		"Message truncated: larger than the receive buffer",
	[FI_ENOKEY - FI_ERRNO_OFFSET] = "Required key not available",
	[FI_ENOAV - FI_ERRNO_OFFSET] = "No address vector bound or available",
	[FI_EOVERRUN - FI_ERRNO_OFFSET] =
		"Queue overrun: entries were lost",
	[FI_ENORX - FI_ERRNO_OFFSET] =
		"Receiver not ready: no receive buffer posted",
	/* 1.20 and 2.x */
	[WEFT_FI_ENOMR - FI_ERRNO_OFFSET] =
		"No more memory registrations available",
	[WEFT_FI_EFIREWALLADDR - FI_ERRNO_OFFSET] =
		"Host unreachable: it is behind a firewall",
};

WEFT_EXPORT const char *fi_strerror(int errnum)
{
	int code;

	if (errnum == INT_MIN)
		return "Unknown error";
	code = errnum < 0 ? -errnum : errnum;

	if (code < FI_ERRNO_OFFSET)
		return strerror(code);
	if (code < WEFT_ERRNO_MAX && strerror_fi_codes[code - FI_ERRNO_OFFSET])
		return strerror_fi_codes[code - FI_ERRNO_OFFSET];
	return "Unknown error";
}
