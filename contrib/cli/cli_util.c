/* cli_util.c - messages, small parsers and formatters for the CLI. */
#include "cli.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"

void cli_verror(const char *tail, const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs(CLI_PREFIX, stderr);
	vfprintf(stderr, fmt, ap);
	fputs(tail, stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_verror("\n", fmt, ap);
	va_end(ap);
}

/* The core prefixes its messages with "restore_budget: "; on a terminal
 * the tool's own name reads better, and one prefix is enough. */
static void stderr_sink(rb_log_level level, const char *msg)
{
	size_t plen = sizeof(RB_PREFIX) - 1;
	char safe[RB_ERR_MAX * 3 + 64];

	if (level > RB_LOG_WARNING)
		return;
	if (strncmp(msg, RB_PREFIX, plen) == 0)
		msg += plen;
	fflush(stdout);
	fprintf(stderr, CLI_PREFIX "%s%s\n",
		level == RB_LOG_WARNING ? "warning: " : "",
		cli_safe(msg, safe, sizeof(safe)));
}

void cli_install_log_sink(void)
{
	rb_log_set_sink(stderr_sink);
}

int cli_parse_uint(const char *s, long long max, long long *out)
{
	long long v = 0;
	size_t i;

	if (!s || !s[0] || strlen(s) > 19)
		return -1;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > max)
			return -1;
	}
	*out = v;
	return 0;
}

void cli_format_time(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (t <= 0 || !localtime_r(&tt, &tm) ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, len, "%s", t <= 0 ? "-" : "?");
}

void cli_format_duration(int64_t secs, char *buf, size_t len)
{
	if (secs < 0)
		snprintf(buf, len, "?");
	else if (secs < 60)
		snprintf(buf, len, "%" PRId64 "s", secs);
	else if (secs < 3600)
		snprintf(buf, len, "%" PRId64 "m%02" PRId64 "s", secs / 60,
			 secs % 60);
	else if (secs < 86400)
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", secs / 3600,
			 secs % 3600 / 60);
	else
		snprintf(buf, len, "%" PRId64 "d%02" PRId64 "h", secs / 86400,
			 secs % 86400 / 3600);
}

size_t cli_utf8_char(const unsigned char *s, unsigned *cp)
{
	size_t n, i;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		*cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		*cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		*cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 2 && *cp < 0x80) || (n == 3 && *cp < 0x800) ||
	    (n == 4 && *cp < 0x10000) || *cp > 0x10ffff ||
	    (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return n;
}

bool cli_cp_is_control(unsigned cp)
{
	/* C0 and DEL; C1 (a lone U+009B is CSI, as ESC [ is); the bidi marks,
	 * overrides and isolates that reorder what a terminal shows */
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e ||
	       cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

const char *cli_safe(const char *s, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0;

	if (len == 0)
		return "";
	while (*p) {
		unsigned cp;
		size_t n = cli_utf8_char(p, &cp);

		if (n == 0 || cli_cp_is_control(cp)) {
			/* a control, or a byte that is no printable UTF-8 */
			if (o + 4 > len)
				break;
			buf[o++] = '%';
			buf[o++] = hex[*p >> 4];
			buf[o++] = hex[*p & 15];
			p++;
		} else {
			if (o + n + 1 > len)
				break;
			memcpy(buf + o, p, n);
			o += n;
			p += n;
		}
	}
	buf[o] = '\0';
	return buf;
}

void cli_format_fm(const rb_budget *b, const rb_limits *l, char *buf,
		   size_t len)
{
	if (l->max_failures < 0)
		snprintf(buf, len, "%d/unlimited", b->failures);
	else if (b->granted > 0)
		snprintf(buf, len, "%d/%d+%d", b->failures, l->max_failures,
			 b->granted);
	else
		snprintf(buf, len, "%d/%d", b->failures, l->max_failures);
}

void cli_format_left(const rb_budget *b, char *buf, size_t len)
{
	int64_t left;

	if (b->cur.attempt < 0) {
		snprintf(buf, len, "-");
		return;
	}
	left = rb_engine_restores_left(b, &b->cur.limits);
	if (left < 0)
		snprintf(buf, len, "unlimited");
	else
		snprintf(buf, len, "%" PRId64, left);
}

const char *const cli_state_names[CLI_ST_COUNT] = {
	[CLI_ST_RUNNING] = "running",
	[CLI_ST_RESTORING] = "restoring",
	[CLI_ST_EXHAUSTED] = "exhausted",
	[CLI_ST_ENDED] = "ended",
};

cli_state cli_job_state_id(const rb_record *rec)
{
	const rb_budget *b = &rec->budget;

	/* exhausted wins: a refused attempt has no end of its own yet */
	if (b->exhausted || b->cur.refused)
		return CLI_ST_EXHAUSTED;
	if (b->cur.attempt < 0 || b->cur.end != RB_END_NONE)
		return CLI_ST_ENDED;
	return b->cur.phase == RB_PHASE_RESTORING ? CLI_ST_RESTORING :
						    CLI_ST_RUNNING;
}

int cli_ledger_row(rb_ledger *ledger, uint32_t job_id, rb_record *rec,
		   cli_row_fn fn, void *arg, size_t *hidden)
{
	cli_row row = { .job_id = job_id };
	rb_err err;
	int rc = rb_ledger_read_for_listing(ledger, job_id, rec, &err);

	if (rc == 1)
		return 0; /* removed since the scan (gc) */
	if (rc == RB_LEDGER_NOT_READABLE) {
		(*hidden)++; /* another group's job (docs/security.md) */
		return 0;
	}
	if (rc < 0)
		row.corrupt = err.msg;
	else
		row.rec = rec;
	return fn(&row, arg);
}

cli_state cli_row_state(const cli_row *row)
{
	cli_state s = cli_job_state_id(row->rec);

	return row->ended && s != CLI_ST_EXHAUSTED ? CLI_ST_ENDED : s;
}

const char *cli_job_state(const rb_record *rec)
{
	return cli_state_names[cli_job_state_id(rec)];
}

/* The commands that change the ledger run as root only. */
int cli_need_root(const char *what)
{
	if (geteuid() == 0)
		return CLI_OK;
	cli_error("%s changes the ledger and needs root (run it with sudo)",
		  what);
	return CLI_EPERM;
}
