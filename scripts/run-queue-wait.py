#!/usr/bin/env python3
"""What each source says a whole run waited runnable (issue 51).

Runs COMMAND under `sh -c`, pinned to CPU, N times, and prints per run: wall
time, CPU time, the reaped shell's own schedstat run-queue wait (read while
it is a zombie, as kdelta's `cmd` does), the system's /proc/pressure/cpu
`some` total, and the CPU's busy time from /proc/stat ticks less the run's.

    scripts/run-queue-wait.py 0 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' 5
    pid=$(../shared/tools/hog.sh on 0); scripts/run-queue-wait.py 0 '...' 5; kill $pid
"""
import os
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def psi():
    try:
        for line in open("/proc/pressure/cpu"):
            if line.startswith("some"):
                return int(line.split("total=")[1]) / 1e6
    except OSError:
        return None


def busy(cpu):
    for line in open("/proc/stat"):
        f = line.split()
        if f[0] == f"cpu{cpu}":
            v = list(map(int, f[1:]))
            return (sum(v[:8]) - v[3] - v[4]) / HZ


def main():
    cpu, cmd, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for _ in range(n):
        p0, b0, t0 = psi(), busy(cpu), time.monotonic()
        pid = os.posix_spawn("/usr/bin/taskset", ["taskset", "-c", cpu, "sh", "-c", cmd], os.environ)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        wall = time.monotonic() - t0
        delay = int(open(f"/proc/{pid}/schedstat").read().split()[1]) / 1e9
        _, _, ru = os.wait4(pid, 0)
        p1, b1 = psi(), busy(cpu)
        ours = ru.ru_utime + ru.ru_stime
        pct = lambda x: f"{x * 1e3:7.1f} ms ({x / wall * 100:5.1f} %)"
        some = pct(p1 - p0) if p0 is not None else "n/a"
        print(f"wall {wall * 1e3:7.1f} ms  cpu {ours * 1e3:7.1f} ms  schedstat wait {pct(delay)}"
              f"  pressure some {some}  cpu{cpu} others (ticks) {pct(max(0.0, (b1 - b0) - ours))}")


if __name__ == "__main__":
    main()
