/* fi_strerror: placeholder until the full table lands. */
#include "weft/core.h"

#include <string.h>

WEFT_EXPORT const char *fi_strerror(int errnum)
{
	return strerror(errnum < 0 ? -errnum : errnum);
}
