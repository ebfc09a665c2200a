/*
 * checkpoint_id.c - a checkpoint's file identity (taken, compared, as text
 * "dev:ino:size:mtime_ns" and back), and whether a file is one of a list
 * of marked checkpoints (docs/rule.md, "Checkpoint fallback").
 * Runs as the caller, like checkpoint.c: the batch step calls it as the
 * job's user.
 */
#include "checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void rb_file_id_of_stat(const struct stat *st, rb_file_id *id)
{
	id->dev = (uint64_t)st->st_dev;
	id->ino = (uint64_t)st->st_ino;
	id->size = st->st_size > 0 ? (uint64_t)st->st_size : 0;
	id->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL +
		       st->st_mtim.tv_nsec;
}

int rb_file_id_of(const char *path, rb_file_id *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (!path || !path[0] || stat(path, &st) < 0)
		return -1;
	rb_file_id_of_stat(&st, id);
	return 0;
}

bool rb_file_id_equal(const rb_file_id *a, const rb_file_id *b)
{
	return a->ino != 0 && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime_ns == b->mtime_ns;
}

bool rb_ckpt_marked(const rb_ckpt_marks *marks, const char *path,
		    const rb_file_id *id)
{
	for (size_t i = 0; marks && i < marks->n; i++)
		if (rb_file_id_equal(&marks->mark[i].id, id) &&
		    strcmp(marks->mark[i].path, path) == 0)
			return true;
	return false;
}

int rb_file_id_format(const rb_file_id *id, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRIu64 ":%" PRIu64 ":%" PRIu64 ":%" PRId64,
			 id->dev, id->ino, id->size, id->mtime_ns);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A decimal number (optionally negative) of s[*p, n) up to ':' or the
 * end, into *v; *p after it and its ':'. 0, or -1. */
static int id_number(const char *s, size_t n, size_t *p, bool sign,
		     uint64_t *v, bool *neg)
{
	size_t start;

	*v = 0;
	*neg = sign && *p < n && s[*p] == '-';
	*p += *neg;
	start = *p;
	for (; *p < n && s[*p] != ':'; (*p)++) {
		unsigned d = (unsigned)(s[*p] - '0');

		if (d > 9 || *v > (UINT64_MAX - d) / 10)
			return -1;
		*v = *v * 10 + d;
	}
	if (*p == start)
		return -1;
	if (*p < n)
		(*p)++;
	return 0;
}

int rb_file_id_parse(const char *s, size_t n, rb_file_id *id)
{
	uint64_t v[4];
	size_t p = 0;
	bool neg = false;

	memset(id, 0, sizeof(*id));
	for (int i = 0; i < 4; i++) {
		bool last = i == 3;

		if (id_number(s, n, &p, last, &v[i], &neg) < 0 ||
		    (last && p != n) || (!last && (p >= n || s[p - 1] != ':')))
			return -1;
	}
	if (v[1] == 0 || v[3] > (uint64_t)INT64_MAX)
		return -1;
	id->dev = v[0];
	id->ino = v[1];
	id->size = v[2];
	id->mtime_ns = neg ? -(int64_t)v[3] : (int64_t)v[3];
	return 0;
}
