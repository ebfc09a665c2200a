/* diag.c - logging sink and error buffers for the core. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static rb_log_sink current_sink;

static void stderr_sink(rb_log_level level, const char *msg)
{
	if (level <= RB_LOG_WARNING)
		fprintf(stderr, "%s\n", msg);
}

void rb_log_set_sink(rb_log_sink sink)
{
	current_sink = sink;
}

void rb_log(rb_log_level level, const char *fmt, ...)
{
	char msg[RB_ERR_MAX + 64];
	size_t prefix = sizeof(RB_PREFIX) - 1;
	va_list ap;

	memcpy(msg, RB_PREFIX, prefix);
	va_start(ap, fmt);
	vsnprintf(msg + prefix, sizeof(msg) - prefix, fmt, ap);
	va_end(ap);
	/* Messages carry user-chosen names (checkpoint paths): a newline in
	 * one must not forge a line in slurmd's log. */
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	(current_sink ? current_sink : stderr_sink)(level, msg);
}

void rb_err_setf(rb_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

int rb_strlcpy(char *dst, const char *src, size_t dstlen)
{
	size_t n = strlen(src);

	if (dstlen == 0)
		return -1;
	if (n >= dstlen) {
		memcpy(dst, src, dstlen - 1);
		dst[dstlen - 1] = '\0';
		return -1;
	}
	memcpy(dst, src, n + 1);
	return 0;
}
