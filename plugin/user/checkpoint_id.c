/*
 * checkpoint_id.c - a checkpoint's file identity, and whether a file is one
 * of a list of marked checkpoints (docs/rule.md, "Checkpoint fallback").
 * Runs as the caller, like checkpoint.c: the batch step calls it as the
 * job's user.
 */
#include "checkpoint.h"

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
