/*
 * bench_config.c - what one rb_config_load + rb_config_free costs, in
 * microseconds (issue 20: the copied libconfig tree was dropped without a
 * measured need; this is the measure). Not built by make; from the top:
 *
 *   make -s all && cc -O2 -iquote plugin -iquote plugin/config \
 *     -o build/bench_config tests/bench/bench_config.c \
 *     $(find build/core -name '*.o') -lconfig
 *   build/bench_config config/restore_budget.conf 10000
 *
 * The file must pass the trusted read (root-owned, not group/world
 * writable). Prints "<us> us/load"; run it a few times on a quiet machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "config.h"

int main(int argc, char **argv)
{
	struct timespec a, b;
	int n = argc > 2 ? atoi(argv[2]) : 10000;
	rb_config *cfg;
	rb_err err;

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: bench_config FILE [LOADS]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		if (rb_config_load(argv[1], &cfg, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return 1;
		}
		rb_config_free(cfg);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.2f us/load\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 +
				  (double)(b.tv_nsec - a.tv_nsec)) / 1e3 / n);
	return 0;
}
