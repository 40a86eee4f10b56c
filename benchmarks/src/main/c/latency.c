/* A latency-sensitive request loop: N times, a fixed CPU-bound step then a short sleep. Prints each step's duration
 * in microseconds, one per line. Built static by the noisy-neighbour benchmark and run inside a sandbox. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: latency ITERATIONS WORK SLEEP_US\n");
        return 2;
    }
    long iterations = atol(argv[1]), work = atol(argv[2]), sleep_us = atol(argv[3]);
    volatile double acc = 1.0;
    struct timespec pause = {sleep_us / 1000000, (sleep_us % 1000000) * 1000};
    for (long i = 0; i < iterations; i++) {
        long long t0 = now_us();
        for (long k = 0; k < work; k++) {
            acc = acc * 1.0000001 + 0.5;
        }
        printf("%lld\n", now_us() - t0);
        nanosleep(&pause, NULL);
    }
    return 0;
}
