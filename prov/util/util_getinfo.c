/* Matching a provider's capabilities against fi_getinfo hints. */
#include "weft/core.h"
