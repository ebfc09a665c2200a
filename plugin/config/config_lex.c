/*
 * config_lex.c - the config file's trusted read and the guard that runs
 * before libconfig sees the text (docs/security.md).
 *
 * The file is read into memory, refused if anyone but root could change
 * it, and scanned as libconfig's lexer would walk it for two things
 * libconfig 1.5 gets wrong for us:
 *  - `@include` opens a file relative to the include dir or slurmd's cwd
 *    ("../" escapes either) and cannot be turned off before 1.7: an included
 *    file outside the admin's reviewed config could change the limits, so
 *    includes are refused outright, with file:line.
 *  - a literal that does not fit in 32 bits is stored silently truncated
 *    (4294967295 becomes -1 = unlimited). Each one is recorded; the integer
 *    read (config.c) reports it as out of range instead.
 */
#include "config_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RB_CONFIG_MAX_BYTES (1024L * 1024)

/* -1 with err set and errno the reason when the file at path (st) must not
 * be read: not a regular file, too large, or others could change it. */
static int refuse_file(const char *path, const struct stat *st, rb_err *err)
{
	int why = EPERM;

	if (S_ISDIR(st->st_mode)) {
		why = EISDIR;
		rb_err_set(err, "%s: cannot read: %s", path, strerror(why));
	} else if (!S_ISREG(st->st_mode)) {
		why = EINVAL;
		rb_err_set(err, "%s: cannot read: not a regular file", path);
	} else if (st->st_mode & S_IWOTH) {
		rb_err_set(err,
			   "%s: refusing a file every user may write: anyone could change the limits (run chmod o-w %s)",
			   path, path);
	} else if (!rb_root_trusted(st)) {
		/* Only root may be able to change it, or its owner could
		 * raise everyone's caps, whatever our euid: the batch step
		 * reads it as the job's user, then writes the ledger as root. */
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

/* (config_int.h) */
int cf_read_text(const char *path, char **out, size_t *outlen, rb_err *err)
{
	int fd, saved;
	char *buf = NULL;
	size_t len = 0;
	ssize_t n = 1;
	struct stat st;
	bool said = false; /* refuse_file() worded it */

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto fail;
	said = refuse_file(path, &st, err) < 0;
	if (said)
		goto fail;
	if (!(buf = malloc((size_t)st.st_size + 1)))
		goto fail;
	/* a file shorter than fstat said: what is there */
	while (len < (size_t)st.st_size && n != 0) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno != EINTR)
			goto fail;
		len += n > 0 ? (size_t)n : 0;
	}
	buf[len] = '\0';
	close(fd);
	*out = buf;
	*outlen = len;
	return 0;

fail:
	saved = errno;
	if (!said)
		rb_err_set(err, "%s: cannot read: %s", path, strerror(saved));
	free(buf);
	if (fd >= 0)
		close(fd);
	errno = saved;
	return -1;
}

/* ---- the guard: a pre-scan as libconfig's lexer would walk the text ---- */

/* Where the pre-scan is: the line, the last name seen and the name the
 * last '=' or ':' assigned to (the key of a number that follows). */
typedef struct {
	unsigned int line, last_line, pending_line;
	char last[64], pending[64];
} scan_state;

static int add_big(load_ctx *ctx, const scan_state *st, const char *text,
		   size_t len)
{
	big_literal *b = realloc(ctx->big, (ctx->n_big + 1) * sizeof(*b));
	size_t n = len < sizeof(b->text) - 1 ? len : sizeof(b->text) - 1;

	if (!b)
		return rb_err_set(ctx->err, "%s: out of memory", ctx->path);
	ctx->big = b;
	b = &ctx->big[ctx->n_big++];
	*b = (big_literal){ .line = st->line, .name_line = st->pending_line };
	rb_strlcpy(b->name, st->pending, sizeof(b->name));
	memcpy(b->text, text, n);
	if (n < len && n >= 3)
		memcpy(b->text + n - 3, "...", 4);
	return 0;
}

/* One numeric token text[0..len): record it if libconfig would wrap it.
 * An L suffix makes it 64-bit; anything else libconfig reports itself. */
static int check_literal(load_ctx *ctx, const scan_state *st,
			 const char *text, size_t len)
{
	const char *p = text + (*text == '-' || *text == '+'), *end = text + len;
	bool hex = p + 1 < end && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
	bool big, l64;
	char *e;
	long long v = 0;
	unsigned long long u = 0;

	if (!hex && (memchr(text, '.', len) || memchr(text, 'e', len) ||
		     memchr(text, 'E', len)))
		return 0; /* a float */
	errno = 0;
	if (hex)
		u = strtoull(p, &e, 16);
	else
		v = strtoll(text, &e, 10);
	l64 = (end - e == 1 && e[0] == 'L') ||
	      (end - e == 2 && e[0] == 'L' && e[1] == 'L');
	if (e != end && !l64)
		return 0;
	if (hex)
		big = errno == ERANGE || u > (l64 ? LLONG_MAX : INT_MAX);
	else
		big = errno == ERANGE || (!l64 && (v < INT_MIN || v > INT_MAX));
	return big ? add_big(ctx, st, text, len) : 0;
}

static bool is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '*';
}

/* Past the comment or string that starts at text[i], counting lines. */
static size_t skip_quoted(const char *text, size_t len, size_t i,
			  unsigned int *line)
{
	bool str = text[i] == '"';

	for (i += str ? 1 : 2; i < len; i++) {
		if (str && text[i] == '"')
			return i + 1;
		if (!str && text[i] == '*' && text[i + 1] == '/')
			return i + 2;
		if (str && text[i] == '\\' && i + 1 < len)
			i++;
		*line += text[i] == '\n';
	}
	return str ? i + 1 : i;
}

/* Past the name (*num false) or the number literal (digits, letters, '.',
 * a sign after an exponent's e) that starts at text[i]. */
static size_t token_end(const char *text, size_t len, size_t i, bool num)
{
	size_t j = i + 1;

	while (j < len && (num ? isalnum((unsigned char)text[j]) ||
				 text[j] == '.' ||
				 ((text[j] == '-' || text[j] == '+') &&
				  (text[j - 1] == 'e' || text[j - 1] == 'E')) :
			       is_name_char(text[j])))
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

/* One token at text[i] that is not a comment or a string: the index past
 * it, or 0 with err set. (text is NUL-terminated) */
static size_t scan_token(load_ctx *ctx, scan_state *st, const char *text,
			 size_t len, size_t i)
{
	char c = text[i];
	size_t j = i + 1, n;

	if (c == '@' && strncmp(text + i + 1, "include", 7) == 0) {
		rb_err_set(ctx->err,
			   "%s:%u: @include is not allowed: put every setting in this one file (an included file could change the limits from outside it; %s)",
			   ctx->path, st->line, FILE_HINT);
		return 0;
	} else if (isalpha((unsigned char)c) || c == '*') {
		j = token_end(text, len, i, false);
		n = j - i < sizeof(st->last) - 1 ? j - i : sizeof(st->last) - 1;
		memcpy(st->last, text + i, n);
		st->last[n] = '\0';
		st->last_line = st->line;
	} else if (c == '=' || c == ':') {
		memcpy(st->pending, st->last, sizeof(st->pending));
		st->pending_line = st->last_line;
	} else if (isdigit((unsigned char)c) ||
		   ((c == '-' || c == '+' || c == '.') &&
		    (isdigit((unsigned char)text[i + 1]) || text[i + 1] == '.'))) {
		j = token_end(text, len, i, true);
		if (check_literal(ctx, st, text + i, j - i) < 0)
			return 0;
	}
	return j;
}

/* (config_int.h) */
int cf_prescan(load_ctx *ctx, const char *text, size_t len)
{
	scan_state st = { .line = 1 };
	size_t i = 0;

	if (refuse_nul(ctx, text, len) < 0)
		return -1;
	while (i < len) {
		if (text[i] == '\n') {
			st.line++;
			i++;
		} else if (text[i] == '#' || (text[i] == '/' && text[i + 1] == '/')) {
			while (i < len && text[i] != '\n')
				i++;
		} else if (text[i] == '"' || (text[i] == '/' && text[i + 1] == '*')) {
			i = skip_quoted(text, len, i, &st.line);
		} else if (!(i = scan_token(ctx, &st, text, len, i))) {
			return -1;
		}
	}
	return 0;
}

/* (config_int.h) Every oversized literal in a key we read was reported by
 * then; one left over sits where no integer belongs. Never let a wrapped
 * value pass. */
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
