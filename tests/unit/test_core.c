#include <criterion/criterion.h>

#include "weft/core.h"

Test(core, version)
{
	cr_assert_eq(fi_version(), FI_VERSION(1, 17));
}
