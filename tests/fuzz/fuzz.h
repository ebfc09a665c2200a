/*
 * fuzz.h - shared bits of the libFuzzer targets (tests/fuzz/fuzz_*.c).
 *
 * A property that does not hold is a bug: FUZZ_CHECK prints what and where,
 * then abort()s so that libFuzzer saves the input as a crash artifact.
 */
#ifndef RB_FUZZ_H
#define RB_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#include "diag.h"

#define FUZZ_CHECK(cond, ...)                                               \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "%s:%d: property failed: %s: ",     \
				__FILE__, __LINE__, #cond);                 \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			abort();                                            \
		}                                                           \
	} while (0)

/* The core logs warnings through a sink; the fuzzer only wants crashes. */
static void fuzz_quiet_sink(rb_log_level level, const char *msg)
{
	(void)level;
	(void)msg;
}

static inline void fuzz_quiet(void)
{
	rb_log_set_sink(fuzz_quiet_sink);
}

/* An error message must be a non-empty C string that fits its buffer. */
static inline int fuzz_err_ok(const rb_err *err)
{
	size_t i;

	for (i = 0; i < sizeof(err->msg); i++)
		if (err->msg[i] == '\0')
			return i > 0;
	return 0;
}

#endif
