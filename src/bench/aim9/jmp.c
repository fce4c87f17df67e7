/* kdelta's aim9.jmp_test: AIM9's non-local goto loop, in C because Rust has
 * no sound setjmp/longjmp. Each of `n` rounds saves the context with setjmp,
 * recurses `frames` frames deep and longjmps back from the bottom. Built by
 * build.rs with -O1 (AIM9's `gcc -O`) and no sibling-call optimisation, so the
 * recursion keeps its frames as in AIM9's build. Every jump stays inside this
 * file: no Rust frame is ever jumped over.
 *
 * Returns how many times setjmp returned from a longjmp (n when all went
 * well), or -1 if setjmp returned a value no longjmp gave. */
#include <setjmp.h>

__attribute__((noinline)) static void kdelta_aim9_dive(jmp_buf buf, int count)
{
	if (count == 0)
		longjmp(buf, 1);
	kdelta_aim9_dive(buf, --count);
}

int kdelta_aim9_jmp(int n, int frames)
{
	/* AIM9 makes these static so they survive the longjmp; volatile locals
	 * do the same (memory, not registers) and keep the routine reentrant */
	volatile int i, jumped;
	jmp_buf buf;

	jumped = 0;
	for (i = 0; i < n; i++) {
		switch (setjmp(buf)) {
		case 0:
			kdelta_aim9_dive(buf, frames);
			/* the dive never returns; falling through would be a bug */
			return -1;
		case 1:
			jumped++;
			break;
		default:
			return -1;
		}
	}
	return jumped;
}
