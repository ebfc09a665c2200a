/*
 * diag.h - logging and error reporting for the restore_budget core.
 *
 * The core never talks to Slurm. It logs through a sink that the caller
 * installs (the SPANK glue routes to slurm_error/slurm_info, the CLI to
 * stderr, tests capture it), and it reports errors through an rb_err buffer
 * the caller owns, so an error message can reach the place a person reads it
 * (sbatch's terminal, the job's stderr, slurmd's log, the CLI).
 */
#ifndef RB_DIAG_H
#define RB_DIAG_H

#include <stddef.h>

#define RB_PREFIX "restore_budget: "
#define RB_ERR_MAX 1024

typedef enum {
	RB_LOG_ERROR = 0,
	RB_LOG_WARNING,
	RB_LOG_INFO,
	RB_LOG_DEBUG,
} rb_log_level;

/* A sink receives the finished message, already prefixed with RB_PREFIX. */
typedef void (*rb_log_sink)(rb_log_level level, const char *msg);

/* Install the sink; NULL restores the default (stderr, errors and warnings). */
void rb_log_set_sink(rb_log_sink sink);

void rb_log(rb_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* An error message the caller can show: "file:line: message" and the like. */
typedef struct {
	char msg[RB_ERR_MAX];
} rb_err;

/* Set err->msg (no prefix is added; callers add RB_PREFIX where they print).
 * err may be NULL. */
void rb_err_setf(rb_err *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* rb_err_setf, as an expression worth -1, so that `return rb_err_set(...)`
 * works and static analyzers see the -1 in every caller. */
#define rb_err_set(err, ...) ({ rb_err_setf((err), __VA_ARGS__); -1; })

/* Copy src into dst (size dstlen), always NUL-terminated.
 * Returns 0, or -1 if src did not fit (dst then holds a truncated copy). */
int rb_strlcpy(char *dst, const char *src, size_t dstlen);

#endif
