#include "conformance.h"
const struct cf_case cf_cases_misc[] = { { NULL } };
