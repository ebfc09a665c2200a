/*
 * admin_comment.c - the plugin's line in a job's AdminComment, merged into
 * the site's text (admin_comment.h; docs/rule.md, "Where the reason shows").
 */
#include "admin_comment.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"

#define ELLIPSIS "..."

/* A byte that must not reach the comment: it would break the line (or a
 * terminal showing it). Bytes >= 0x80 are kept: UTF-8 text is fine. */
static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* Where a cut at `n` bytes of s lands on a character boundary: never
 * inside a UTF-8 sequence (continuation bytes are 10xxxxxx). */
static size_t char_boundary(const char *s, size_t n)
{
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

void rb_admin_comment_line(const char *kind, const char *reason, char *out,
			   size_t len)
{
	char line[RB_ADMIN_LINE_MAX * 2];
	size_t n, cap = len - 1 < RB_ADMIN_LINE_MAX ? len - 1 :
						     RB_ADMIN_LINE_MAX;

	if (len <= sizeof(ELLIPSIS)) {
		if (len > 0)
			out[0] = '\0';
		return;
	}
	snprintf(line, sizeof(line), RB_PREFIX "%s: %s", kind, reason);
	for (char *p = line; *p; p++)
		if (is_control((unsigned char)*p))
			*p = ' ';
	n = strlen(line);
	if (n > cap) {
		n = char_boundary(line, cap - strlen(ELLIPSIS));
		memcpy(line + n, ELLIPSIS, sizeof(ELLIPSIS));
	}
	rb_strlcpy(out, line, len);
}

/* Is this line of the comment the plugin's own? */
static bool is_own_line(const char *s, size_t n)
{
	size_t p = strlen(RB_PREFIX);

	return n >= p && memcmp(s, RB_PREFIX, p) == 0;
}

/* The merged comment as it is built. */
typedef struct {
	char *out;
	size_t len;
	size_t used;
	size_t lines;
} comment_buf;

/* Append n bytes of s as the next line ('\n' before all but the first).
 * 0, or -1 if it does not fit. */
static int add_line(comment_buf *b, const char *s, size_t n)
{
	size_t sep = b->lines > 0 ? 1 : 0;

	if (b->used + sep + n + 1 > b->len ||
	    b->used + sep + n > RB_ADMIN_COMMENT_MAX)
		return -1;
	if (sep)
		b->out[b->used++] = '\n';
	memcpy(b->out + b->used, s, n);
	b->used += n;
	b->out[b->used] = '\0';
	b->lines++;
	return 0;
}

int rb_admin_comment_merge(const char *old, const char *line, char *out,
			   size_t len)
{
	comment_buf b = { out, len, 0, 0 };
	const char *p = old;
	bool placed = false;

	if (len == 0)
		return -1;
	out[0] = '\0';
	/* every '\n' separates two lines (a final one: an empty last line) */
	for (;;) {
		size_t n = strcspn(p, "\n");
		bool own = is_own_line(p, n), last = p[n] == '\0';
		int rc = 0;

		if (last && n == 0 && !placed)
			break; /* the line is appended in its place */
		if (!own)
			rc = add_line(&b, p, n);
		else if (!placed)
			rc = add_line(&b, line, strlen(line));
		placed = placed || own;
		if (rc < 0)
			return -1;
		if (last)
			break;
		p += n + 1;
	}
	if (!placed)
		return add_line(&b, line, strlen(line));
	return 0;
}

int rb_admin_comment_parse(const char *text, uint32_t job_id, char *out,
			   size_t len)
{
	char id[16];
	size_t idlen, n;
	const char *body;

	snprintf(id, sizeof(id), "%" PRIu32 "|", job_id);
	idlen = strlen(id);
	if (strncmp(text, id, idlen) != 0)
		return -1;
	body = text + idlen;
	n = strlen(body);
	if (n > 0 && body[n - 1] == '\n')
		n--;
	/* the comment's own '|' are inside: the field ends at the last one */
	if (n == 0 || body[n - 1] != '|' || n - 1 >= len)
		return -1;
	n--;
	memcpy(out, body, n);
	out[n] = '\0';
	if (strcmp(out, "(null)") == 0)
		out[0] = '\0';
	return 0;
}
