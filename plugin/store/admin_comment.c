/*
 * admin_comment.c - the plugin's line in a job's AdminComment, merged into
 * the site's text (admin_comment.h; docs/rule.md, "Where the reason shows").
 */
#include "admin_comment.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

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

/* Is this line of the comment the tag's (the reason's, or the budget's)? */
static bool is_own_line(const char *s, size_t n, const char *tag)
{
	size_t p = strlen(tag);

	return n >= p && memcmp(s, tag, p) == 0;
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
	return rb_admin_comment_merge_tagged(old, RB_PREFIX, line, out, len);
}

int rb_admin_comment_merge_tagged(const char *old, const char *tag,
				  const char *line, char *out, size_t len)
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
		bool own = is_own_line(p, n, tag), last = p[n] == '\0';
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

/* Skip a run of digits: past it, or NULL if there is none. */
static const char *digits(const char *p)
{
	const char *q = p;

	while (*q >= '0' && *q <= '9')
		q++;
	return q > p ? q : NULL;
}

bool rb_squeue_is_head(const char *p)
{
	size_t k;

	p = digits(p);
	if (!p || *p++ != '|' || !(p = digits(p)))
		return false;
	if (*p == '_' && p[1] == '[') { /* pending tasks: "7_[4-9%2]" */
		k = strcspn(p + 2, "]|\n");
		if (p[2 + k] != ']')
			return false;
		p += 2 + k + 1;
	} else if (*p == '_' || *p == '+') {
		p = digits(p + 1);
	}
	return p && *p == '|';
}

size_t rb_squeue_head(const char *p, uint32_t job_id, const char *addr)
{
	char id[16];
	size_t n, a;
	const char *q;

	snprintf(id, sizeof(id), "%" PRIu32 "|", job_id);
	n = strlen(id);
	if (strncmp(p, id, n) != 0 || !rb_squeue_is_head(p))
		return 0;
	q = p + n;
	a = strcspn(q, "|");
	if (strchr(addr, '_')) /* an array task: exactly its address */
		return a == strlen(addr) && memcmp(q, addr, a) == 0 ?
			       n + a + 1 : 0;
	/* no array task: a line that names none ("7", or "7+1") */
	return memchr(q, '_', a) ? 0 : n + a + 1;
}

/* The next line of text after the one at p, or NULL. */
static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');

	return nl ? nl + 1 : NULL;
}

int rb_admin_comment_parse(const char *text, uint32_t job_id,
			   const char *addr, char *out, size_t len)
{
	const char *line = NULL, *body, *end = NULL;
	bool others = false;
	size_t n;

	for (const char *p = text; p; p = next_line(p)) {
		if (rb_squeue_head(p, job_id, addr)) {
			if (line)
				return -1; /* listed twice: which is it? */
			line = p;
		} else if (rb_squeue_is_head(p)) {
			others = true;
			if (line && !end)
				end = p;
		}
	}
	if (!line)
		return -1;
	body = line + rb_squeue_head(line, job_id, addr);
	/* the record ends where the next job's line starts */
	n = end ? (size_t)(end - body) : strlen(body);
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
	return others ? 1 : 0;
}
