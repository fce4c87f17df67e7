/* The program lat.proc.exec and lat.proc.shell start by default, built by
 * build.rs with the target's C compiler and linked dynamically against the C
 * library, so each exec pays for the dynamic loader and the C library's
 * start-up as LMbench's `hello` does. One line to standard output (which the
 * benchmark has closed: the write fails with EBADF, as in LMbench), then
 * return from main, so the C library's exit path runs too. */
#include <unistd.h>

int main(void)
{
	static const char line[] = "Hello world\n";

	write(1, line, sizeof line - 1);
	return 0;
}
