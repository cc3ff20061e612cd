/* Older ABI versions of fi_getinfo & co: placeholder. */
#include "weft/core.h"
