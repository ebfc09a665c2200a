/*
 * config_lex.c - the config file's trusted read and the guard that runs
 * before libconfig sees the text (docs/security.md).
 *
 * The file is read into memory, refused if anyone but root could change
 * it, and scanned by a small lexer for two things libconfig 1.5 gets wrong
 * for us:
 *
 *  - `@include`: libconfig opens included files relative to the include dir,
 *    or to the process's working directory when none is set, and has no way
 *    to turn includes off (config_set_include_func only exists from 1.7).
 *    The file is read as root at every job start; an include would let a
 *    file outside the admin's reviewed config (or a relative path resolved
 *    in slurmd's cwd) change the limits. config_set_include_dir() cannot
 *    fix that: it only prefixes the path, "../" still escapes. So includes
 *    are refused outright, with file:line.
 *  - integer overflow: libconfig 1.5 stores a literal that does not fit in
 *    32 bits silently truncated (4294967295 becomes -1 = unlimited,
 *    4294967297 becomes 1). The lexer records every such literal; the value
 *    lookup (cf_read_int) reports it as out of range instead of using the
 *    wrapped value.
 */
#include "config_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

#define RB_CONFIG_MAX_BYTES (1024L * 1024)

/* ---- the trusted read --------------------------------------------------- */

/* -1 with err set and errno the reason when the file at path (st) must not
 * be read: not a regular file, too large, or others could change it. */
static int refuse_file(const char *path, const struct stat *st, rb_err *err)
{
	int why;

	if (S_ISDIR(st->st_mode)) {
		why = EISDIR;
		rb_err_set(err, "%s: cannot read: %s", path, strerror(why));
	} else if (!S_ISREG(st->st_mode)) {
		why = EINVAL;
		rb_err_set(err, "%s: cannot read: not a regular file", path);
	} else if (st->st_mode & S_IWOTH) {
		why = EPERM;
		rb_err_set(err,
			   "%s: refusing a file every user may write: anyone could change the limits (run chmod o-w %s)",
			   path, path);
	} else if (!rb_root_trusted(st)) {
		/* Only root may be able to change it, or its owner could
		 * raise everyone's caps. Whatever our euid: the batch step
		 * reads it as the job's user and then writes the ledger as
		 * root with it. */
		why = EPERM;
		rb_err_set(err,
			   "%s: refusing a file owned by uid %u with mode %04o: only root may be able to change the limits (run chown root %s; chmod go-w %s)",
			   path, (unsigned)st->st_uid,
			   (unsigned)(st->st_mode & 07777), path, path);
	} else if (st->st_size > RB_CONFIG_MAX_BYTES) {
		why = EFBIG;
		rb_err_set(err, "%s: cannot read: larger than %ld bytes", path,
			   RB_CONFIG_MAX_BYTES);
	} else {
		return 0;
	}
	errno = why;
	return -1;
}

/* Up to size bytes of fd into buf; *len is what was read (short at EOF). */
static int read_all(int fd, char *buf, size_t size, size_t *len)
{
	*len = 0;
	while (*len < size) {
		ssize_t n = read(fd, buf + *len, size - *len);

		if (n > 0)
			*len += (size_t)n;
		else if (n == 0)
			return 0; /* shorter than fstat said: what is there */
		else if (errno != EINTR)
			return -1;
	}
	return 0;
}

/* (config_int.h) */
int cf_read_text(const char *path, char **out, size_t *outlen, rb_err *err)
{
	int fd, saved;
	char *buf = NULL;
	size_t len = 0;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto fail_errno;
	if (refuse_file(path, &st, err) < 0)
		goto fail;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || read_all(fd, buf, (size_t)st.st_size, &len) < 0)
		goto fail_errno;
	buf[len] = '\0';
	close(fd);
	*out = buf;
	*outlen = len;
	return 0;

fail_errno:
	saved = errno;
	rb_err_set(err, "%s: cannot read: %s", path, strerror(saved));
	errno = saved;
fail:
	saved = errno;
	free(buf);
	if (fd >= 0)
		close(fd);
	errno = saved;
	return -1;
}

/* ---- the guard: a pre-scan as libconfig's lexer would walk the text ---- */

static int add_big(load_ctx *ctx, unsigned int line, const char *name,
		   unsigned int name_line, const char *text, size_t len)
{
	big_literal *b;
	char lit[sizeof(b->text)];
	size_t n = len < sizeof(lit) - 1 ? len : sizeof(lit) - 1;

	b = realloc(ctx->big, (ctx->n_big + 1) * sizeof(*b));
	if (!b)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	ctx->big = b;
	b = &ctx->big[ctx->n_big++];
	memset(b, 0, sizeof(*b));
	b->line = line;
	b->name_line = name_line;
	rb_strlcpy(b->name, name, sizeof(b->name));
	memcpy(lit, text, n);
	lit[n] = '\0';
	if (n < len && n >= 3)
		memcpy(lit + n - 3, "...", 3);
	memcpy(b->text, lit, sizeof(lit));
	return 0;
}

static bool is_suffix_l(const char *p, const char *end)
{
	size_t n = (size_t)(end - p);

	return (n == 1 && p[0] == 'L') || (n == 2 && p[0] == 'L' && p[1] == 'L');
}

/* One numeric token text[0..len): record it if libconfig would wrap it. */
static int check_literal(load_ctx *ctx, unsigned int line, const char *name,
			 unsigned int name_line, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	const char *digits_end;
	bool hex, big = false;

	if (*p == '-' || *p == '+')
		p++;
	hex = p + 1 < end && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
	if (!hex && (memchr(text, '.', len) || memchr(text, 'e', len) ||
		     memchr(text, 'E', len)))
		return 0; /* a float */
	errno = 0;
	if (hex) {
		char *e;
		unsigned long long u = strtoull(p, &e, 16);

		digits_end = e;
		if (digits_end == end)
			big = errno == ERANGE || u > INT_MAX;
		else if (is_suffix_l(digits_end, end))
			big = errno == ERANGE || u > LLONG_MAX;
		else
			return 0; /* libconfig reports the syntax error */
	} else {
		char *e;
		long long v = strtoll(text, &e, 10);

		digits_end = e;
		if (digits_end == end)
			big = errno == ERANGE || v < INT_MIN || v > INT_MAX;
		else if (is_suffix_l(digits_end, end))
			big = errno == ERANGE;
		else
			return 0;
	}
	return big ? add_big(ctx, line, name, name_line, text, len) : 0;
}

static bool is_name_start(char c)
{
	return isalpha((unsigned char)c) || c == '*';
}

static bool is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '*';
}

/* Past the comment that starts at text[i] ("/" "*"), counting lines. */
static size_t skip_block_comment(const char *text, size_t len, size_t i,
				 unsigned int *line)
{
	for (i += 2; i < len; i++) {
		if (text[i] == '*' && text[i + 1] == '/')
			return i + 2;
		*line += text[i] == '\n';
	}
	return i;
}

/* Past the string that starts at text[i] ('"'), counting lines. */
static size_t skip_string(const char *text, size_t len, size_t i,
			  unsigned int *line)
{
	for (i++; i < len && text[i] != '"'; i++) {
		if (text[i] == '\\' && i + 1 < len)
			i++;
		*line += text[i] == '\n';
	}
	return i + 1;
}

/* The end of the number literal that starts at text[i] (digits, letters,
 * '.', and a sign after an exponent's e). */
static size_t number_end(const char *text, size_t len, size_t i)
{
	size_t j = i + 1;

	while (j < len &&
	       (isalnum((unsigned char)text[j]) || text[j] == '.' ||
		((text[j] == '-' || text[j] == '+') &&
		 (text[j - 1] == 'e' || text[j - 1] == 'E'))))
		j++;
	return j;
}

/* -1 naming the line of the first NUL byte, if text has one. */
static int refuse_nul(load_ctx *ctx, const char *text, size_t len)
{
	unsigned int line = 1;
	const char *nul = memchr(text, '\0', len);

	if (!nul)
		return 0;
	for (const char *p = text; p < nul; p++)
		/* p < nul < text + len: cf_read_text() filled all of it
		 * (the analyzer does not model memchr's bound) */
		line += *p == '\n'; // NOLINT(clang-analyzer-core.UndefinedBinaryOperatorResult)
	return rb_err_set(ctx->err, "%s:%u: syntax error: a NUL byte (%s)",
			  ctx->path, line, FILE_HINT);
}

/* Where the pre-scan is: the line, the last name seen and the name the
 * last '=' or ':' assigned to (the key of a number that follows). */
typedef struct {
	unsigned int line;
	unsigned int last_line, pending_line;
	char last[64], pending[64];
} scan_state;

/* Past the name that starts at text[i], remembered as the last one. */
static size_t take_name(scan_state *st, const char *text, size_t len,
			size_t i)
{
	size_t j = i, n;

	while (j < len && is_name_char(text[j]))
		j++;
	n = j - i < sizeof(st->last) - 1 ? j - i : sizeof(st->last) - 1;
	memcpy(st->last, text + i, n);
	st->last[n] = '\0';
	st->last_line = st->line;
	return j;
}

/* Does a number literal start at text[i]? (text is NUL-terminated) */
static bool starts_number(const char *text, size_t i)
{
	char c = text[i];

	return isdigit((unsigned char)c) ||
	       ((c == '-' || c == '+' || c == '.') &&
		(isdigit((unsigned char)text[i + 1]) || text[i + 1] == '.'));
}

/*
 * Walk the text as libconfig's lexer would (comments, strings, names,
 * numbers): refuse `@include` and NUL bytes, record oversized integers.
 */
int cf_prescan(load_ctx *ctx, const char *text, size_t len)
{
	scan_state st = { .line = 1 };
	size_t i = 0;

	if (refuse_nul(ctx, text, len) < 0)
		return -1;
	while (i < len) {
		char c = text[i];

		if (c == '\n') {
			st.line++;
			i++;
		} else if (c == '#' || (c == '/' && text[i + 1] == '/')) {
			while (i < len && text[i] != '\n')
				i++;
		} else if (c == '/' && text[i + 1] == '*') {
			i = skip_block_comment(text, len, i, &st.line);
		} else if (c == '"') {
			i = skip_string(text, len, i, &st.line);
		} else if (c == '@') {
			if (strncmp(text + i + 1, "include", 7) == 0)
				return rb_err_set(ctx->err,
					"%s:%u: @include is not allowed: put every setting in this one file (an included file could change the limits from outside it; %s)",
					ctx->path, st.line, FILE_HINT);
			i++;
		} else if (is_name_start(c)) {
			i = take_name(&st, text, len, i);
		} else if (c == '=' || c == ':') {
			memcpy(st.pending, st.last, sizeof(st.pending));
			st.pending_line = st.last_line;
			i++;
		} else if (starts_number(text, i)) {
			size_t j = number_end(text, len, i);

			if (check_literal(ctx, st.line, st.pending,
					  st.pending_line, text + i, j - i))
				return -1;
			i = j;
		} else {
			i++;
		}
	}
	return 0;
}

/* Every oversized literal in a key we read was reported by then; one left
 * over sits where no integer belongs. Never let a wrapped value pass. */
int cf_no_big_left(load_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_big; i++)
		if (!ctx->big[i].used)
			return rb_err_set(ctx->err,
					  "%s:%u: %s%s%s is out of range: integers must fit in 32 bits (%s)",
					  ctx->path, ctx->big[i].line,
					  ctx->big[i].name,
					  ctx->big[i].name[0] ? " = " : "",
					  ctx->big[i].text, FIX_HINT);
	return 0;
}
