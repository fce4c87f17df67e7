/* The process lat.proc.fork forks from by default (parent=small): a C
 * program linked against the C library alone, as small as LMbench's
 * lat_proc, because fork's cost grows with the forking process's mappings
 * and resident pages. Built by build.rs; run once per sample by the worker.
 *
 * usage: forker N
 * Does N times what lat_proc fork does: fork, the child leaves through the
 * C library's exit(), the parent waits for it. Like lat_proc's do_fork, the
 * parent keeps the child's pid in a global and clears it after the wait, and
 * both parent (once, before the loop) and child (before exit) look up a
 * scheduling request in the environment, as lat_proc's handle_scheduler()
 * does with getenv("LMBENCH_SCHED"). Those touch a data page and library
 * text that fork left unmapped or shared, so they cost the child and parent
 * page faults that are part of what lat_proc measures: traced with
 * exceptions:page_fault_user, 27 faults per fork for lat_proc and 28 for
 * forker with them, 23 without (docs/fidelity.md). Then prints three lines: the
 * loop's wall time in nanoseconds (CLOCK_MONOTONIC), its own
 * /proc/self/statm line, and the number of lines of /proc/self/maps (read
 * after the loop, so the reading adds nothing to what was forked). Exit
 * status 0, or 1 with a message on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The child being waited for, 0 between forks (lat_proc's child_pid). */
static volatile pid_t child_pid;

/* lat_proc's handle_scheduler() with no placement asked for: one getenv. */
static __attribute__((noinline)) int placement_requested(void)
{
	return getenv("KDELTA_FORKER_SCHED") != NULL;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	char statm[256] = "";
	long n, i, maps = 0;
	FILE *f;
	int c;

	if (argc != 2 || (n = atol(argv[1])) < 1) {
		fprintf(stderr, "usage: forker N (N >= 1)\n");
		return 1;
	}
	placement_requested();
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		pid_t pid = child_pid = fork();
		int st;

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			placement_requested();
			exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forker: child %d did not exit cleanly\n", (int)pid);
			return 1;
		}
		child_pid = 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if ((f = fopen("/proc/self/statm", "r")) != NULL) {
		if (!fgets(statm, sizeof statm, f))
			statm[0] = '\0';
		statm[strcspn(statm, "\n")] = '\0';
		fclose(f);
	}
	if ((f = fopen("/proc/self/maps", "r")) != NULL) {
		while ((c = getc(f)) != EOF)
			maps += c == '\n';
		fclose(f);
	}
	printf("%lld\n%s\n%ld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec), statm, maps);
	return 0;
}
