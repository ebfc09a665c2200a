/*
 * fuzz_admin_comment.c - libFuzzer target for the AdminComment text
 * (admin_comment.c): squeue's answer, the site's comment and the reason are
 * all text the plugin does not control.
 *
 * Input: byte 0 picks the parse buffer size, the rest is split at the first
 * NUL into the squeue answer / old comment and the reason.
 *
 * Properties:
 *   - parse never writes past its buffer and returns a NUL-terminated
 *     string shorter than it;
 *   - the plugin's line is one line of at most RB_ADMIN_LINE_MAX bytes, with
 *     no control byte, starting with RB_PREFIX;
 *   - a merge fits RB_ADMIN_COMMENT_MAX, holds the line exactly once as a
 *     whole line, keeps every other line of the old comment in order, and
 *     merging again changes nothing.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "admin_comment.h"
#include "fuzz.h"

static bool is_own(const char *s, size_t n)
{
	size_t pl = strlen(RB_PREFIX);

	return n >= pl && memcmp(s, RB_PREFIX, pl) == 0;
}

/* Does the comment hold a plugin line? */
static bool has_own(const char *s)
{
	for (;;) {
		size_t n = strcspn(s, "\n");

		if (is_own(s, n))
			return true;
		if (!s[n])
			return false;
		s += n + 1;
	}
}

/* The comment's lines that are not the plugin's, each followed by '\n',
 * into out: every '\n' separates two lines; an empty last one is left out
 * when the comment holds no plugin line (merge puts its line there). */
static void site_lines(const char *s, char *out, size_t len)
{
	bool drop_empty_last = !has_own(s);
	size_t used = 0;

	out[0] = '\0';
	for (;;) {
		size_t n = strcspn(s, "\n");
		bool last = s[n] == '\0';

		if (last && n == 0 && drop_empty_last)
			break;
		if (!is_own(s, n) && used + n + 2 < len) {
			memcpy(out + used, s, n);
			used += n;
			out[used++] = '\n';
			out[used] = '\0';
		}
		if (last)
			break;
		s += n + 1;
	}
}

static void check_line(const char *line)
{
	FUZZ_CHECK(strlen(line) <= RB_ADMIN_LINE_MAX, "line too long");
	FUZZ_CHECK(strncmp(line, RB_PREFIX, strlen(RB_PREFIX)) == 0,
		   "line without prefix");
	for (const char *p = line; *p; p++)
		FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f,
			   "control byte 0x%02x in the line", (unsigned char)*p);
}

static void check_merge(const char *old, const char *line)
{
	static char out[RB_ADMIN_COMMENT_MAX + 1], again[RB_ADMIN_COMMENT_MAX + 1];
	static char want[2 * RB_ADMIN_COMMENT_MAX], got[2 * RB_ADMIN_COMMENT_MAX];
	size_t ll = strlen(line), count = 0;

	if (rb_admin_comment_merge(old, line, out, sizeof(out)) < 0)
		return;
	FUZZ_CHECK(strlen(out) <= RB_ADMIN_COMMENT_MAX, "merge too long");
	for (const char *p = out; *p;) {
		size_t n = strcspn(p, "\n");

		count += n == ll && memcmp(p, line, ll) == 0;
		p += n + (p[n] == '\n');
	}
	FUZZ_CHECK(count == 1, "the line is there %zu times", count);
	site_lines(old, want, sizeof(want));
	site_lines(out, got, sizeof(got));
	FUZZ_CHECK(strcmp(want, got) == 0, "the site's lines changed");
	FUZZ_CHECK(rb_admin_comment_merge(out, line, again, sizeof(again)) == 0 &&
			   strcmp(out, again) == 0,
		   "merge is not idempotent");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[RB_ADMIN_LINE_MAX + 1];
	char *text, *out, *reason;
	size_t outlen;

	if (size < 1)
		return 0;
	fuzz_quiet();
	outlen = (size_t)data[0] + 1;
	text = malloc(size);
	out = malloc(outlen);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	reason = text + strlen(text);
	reason += reason < text + size - 1;
	if (rb_admin_comment_parse(text, 42, "42", out, outlen) >= 0)
		FUZZ_CHECK(strlen(out) < outlen, "parse overran");
	/* an array task's record among others (docs/arrays.md) */
	if (rb_admin_comment_parse(text, 1, "1_7", out, outlen) >= 0)
		FUZZ_CHECK(strlen(out) < outlen, "parse of a task overran");
	rb_admin_comment_line("refused", reason, line, sizeof(line));
	check_line(line);
	check_merge(text, line);
	free(out);
	free(text);
	return 0;
}
