// SPDX-License-Identifier: BSD-2-Clause
/*
 * Preloaded into Criterion test programs built with ThreadSanitizer, by
 * contrib/tsan-tests.sh through tests/criterion-tap.sh; never part of the
 * library.
 *
 * Criterion's runner maps its shared arena at a random 16 MiB step above
 * 0x200000000000: it draws the step with rand_r(), masked to 22 bits,
 * tries ten times, and gives up ("Could not initialize inheritable arena",
 * Criterion issue #274) when every draw lands on mapped memory.  Under
 * ThreadSanitizer nearly all of that range is the sanitizer's (shadow,
 * metadata, reserved gaps); what stays free is the top of the program's own
 * range, 0x566000000000 to 0x568000000000, above where the kernel puts a
 * PIE program and its heap.  This rand_r draws steps there only.  Criterion
 * still checks that every page of the step is unmapped before it maps, so
 * a wrong guess fails the run loudly, never silently.
 *
 * No test that runs under ThreadSanitizer calls rand_r itself.
 */
#define ARENA_STEP_LO 0x366000u /* (0x566000000000 - 0x200000000000) >> 24 */
#define ARENA_STEPS 0x2000u	/* up to 0x568000000000 */

int rand_r(unsigned int *seed);

int rand_r(unsigned int *seed)
{
	return (int)(ARENA_STEP_LO + (*seed)++ % ARENA_STEPS);
}
