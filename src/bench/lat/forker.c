/* The process lat.proc.fork forks from by default (parent=small): a C
 * program linked against the C library alone, as small as LMbench's
 * lat_proc, because fork's cost grows with the forking process's mappings
 * and resident pages. Built by build.rs; run once per sample by the worker.
 *
 * usage: forker N
 * Does N times what lat_proc fork does: fork, the child leaves through the
 * C library's exit(), the parent waits for it. Then prints three lines: the
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
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++) {
		pid_t pid = fork();
		int st;

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			exit(0);
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "forker: child %d did not exit cleanly\n", (int)pid);
			return 1;
		}
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
