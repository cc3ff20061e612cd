/* fi_tostr, fi_tostr_r: placeholder until the full printer lands. */
#include "weft/core.h"

WEFT_EXPORT char *fi_tostr_r(char *buf, size_t len, const void *data,
			     enum fi_type datatype)
{
	if (buf && len)
		buf[0] = '\0';
	return buf;
}

WEFT_EXPORT char *fi_tostr(const void *data, enum fi_type datatype)
{
	static __thread char buf[8192];

	return fi_tostr_r(buf, sizeof(buf), data, datatype);
}
