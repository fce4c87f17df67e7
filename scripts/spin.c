/* spin N: a CPU-bound loop of N iterations (about 1 ns each here), branches,
 * loads and stores over a 16 KiB table as well as a multiply chain, so that it
 * feels what a busy neighbour CPU does to a shell loop. Used by
 * scripts/verdict-rates.py: `spin 8500000` against `spin 8755000` (about 60 ms here) is a
 * command against a copy with 3 % more work. Prints a checksum so the loop
 * cannot be optimised away. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 60000000UL;
    static unsigned int table[4096];
    unsigned long x = 88172645463325252UL, sum = 0;
    for (unsigned long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned int k = (unsigned int)(x & 4095);
        if (x & (1UL << 20))
            table[k] += (unsigned int)i;
        else
            sum += table[k];
    }
    printf("%lu\n", sum);
    return 0;
}
