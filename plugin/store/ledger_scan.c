/*
 * ledger_scan.c - listing the jobs of a ledger and removing one (gc).
 */
#define _GNU_SOURCE
#include "ledger_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

typedef struct {
	uint32_t *ids;
	size_t n, cap;
} id_list;

static int id_push(id_list *list, uint32_t id)
{
	if (list->n == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 256;
		uint32_t *ids = realloc(list->ids, cap * sizeof(*ids));

		if (!ids)
			return -1;
		list->ids = ids;
		list->cap = cap;
	}
	list->ids[list->n++] = id;
	return 0;
}

/* Called by each_entry for one name of a directory (dir_fd): 0 goes on,
 * -1 (err set) stops. */
typedef int (*entry_fn)(int dir_fd, const char *name, void *ctx,
			rb_err *err);

/*
 * Call fn for each entry of the directory open as fd (taken: closed here).
 * 0, or -1 with err: fn's, or the directory's (path) when it cannot be
 * read, a failed readdir counting only where read_errors.
 */
static int each_entry(int fd, const char *path, bool read_errors,
		      entry_fn fn, void *ctx, rb_err *err)
{
	struct dirent *de;
	DIR *d = fdopendir(fd);
	int rc = 0;

	if (!d) {
		rb_err_set(err, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		rc = fn(fd, de->d_name, ctx, err);
		if (rc < 0)
			break;
	}
	if (!de && errno && read_errors)
		rc = rb_err_set(err, "%s: %s", path, strerror(errno));
	closedir(d);
	return rc;
}

/* What the walk of one bucket collects. */
typedef struct {
	id_list *list;
	unsigned bucket;   /* job_id % 1000 of the directory walked */
} bucket_walk;

/* Keep name if it is the "<id>.rec" regular file of a job of this bucket. */
static int on_bucket_entry(int dir_fd, const char *name, void *ctx,
			   rb_err *err)
{
	const bucket_walk *w = ctx;
	size_t len = strlen(name);
	struct stat st;
	uint64_t id;

	/* "<id>.rec", the id canonical: not "*.rec.tmp.*", "*.log", strangers */
	if (len <= 4 || strcmp(name + len - 4, ".rec") != 0 ||
	    rb_parse_u64(name, len - 4, &id) < 0 || id == 0 || id > UINT32_MAX)
		return 0;
	/* In another bucket than ours, rb_ledger_read cannot reach it: not a
	 * record. */
	if (id % 1000 != w->bucket)
		return 0;
	if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode))
		return 0;
	if (id_push(w->list, (uint32_t)id) < 0)
		return rb_err_set(err, "out of memory");
	return 0;
}

/* Collect the "<id>.rec" regular files of one bucket directory. */
static int scan_bucket(rb_ledger *l, const char *bname, unsigned bucket,
		       id_list *list, rb_err *err)
{
	char path[PATH_BUF];
	bucket_walk w = { list, bucket };
	int fd;

	snprintf(path, sizeof(path), "%s/%.3s", l->path, bname);
	fd = openat(l->dir_fd, bname,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* Removed meanwhile, or a symlink / file planted there: not
		 * a bucket of ours, nothing to list. */
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
			return 0;
		return rb_err_set(err, "%s: %s", path, strerror(errno));
	}
	return each_entry(fd, path, true, on_bucket_entry, &w, err);
}

typedef struct {
	rb_ledger *l;
	id_list *list;
} jobs_walk;

/* Scan name if it is a bucket: three digits. */
static int on_cluster_entry(int dir_fd, const char *s, void *ctx,
			    rb_err *err)
{
	const jobs_walk *w = ctx;

	(void)dir_fd;
	if (strlen(s) != 3 || s[0] < '0' || s[0] > '9' ||
	    s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9')
		return 0;
	return scan_bucket(w->l, s, (unsigned)((s[0] - '0') * 100 +
					       (s[1] - '0') * 10 + (s[2] - '0')),
			   w->list, err);
}

int rb_ledger_jobs(rb_ledger *l, rb_job_fn fn, void *ctx, rb_err *err)
{
	id_list list = { NULL, 0, 0 };
	jobs_walk w = { l, &list };
	size_t i;
	int fd;
	int rc = -1;

	/* A fresh fd: readdir's position must not be shared with dir_fd. */
	fd = openat(l->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rb_err_set(err, "%s: %s", l->path, strerror(errno));
		goto out;
	}
	if (each_entry(fd, l->path, true, on_cluster_entry, &w, err) < 0)
		goto out;
	/* Sorted, so that `list` prints the same way every time. */
	if (list.n)
		qsort(list.ids, list.n, sizeof(*list.ids), cmp_u32);
	for (i = 0; i < list.n; i++)
		if (fn(list.ids[i], ctx) != 0)
			break;
	rc = 0;
out:
	free(list.ids);
	return rc;
}

typedef struct {
	rb_job *j;
	const char *dirpath;
	char prefix[NAME_BUF];  /* "<id>." */
	size_t plen;
} tmp_walk;

static int on_tmp_entry(int dir_fd, const char *name, void *ctx,
			rb_err *err)
{
	const tmp_walk *w = ctx;

	(void)dir_fd;
	/* a record's temp, or a folded event log's (eventlog_fold.c) */
	if (strncmp(name, w->prefix, w->plen) != 0 ||
	    (strncmp(name + w->plen, "rec.tmp.", 8) != 0 &&
	     strncmp(name + w->plen, "log.tmp.", 8) != 0))
		return 0;
	if (unlinkat(w->j->bucket_fd, name, 0) < 0 && errno != ENOENT)
		return rb_err_set(err, "%s/%s: %s", w->dirpath, name,
				  strerror(errno));
	return 0;
}

/* Remove "<id>.rec.tmp.*" and "<id>.log.tmp.*" leftovers of crashed
 * writers of this job. A directory that fails part way through being read
 * is left as it is. */
static int remove_stale_tmp(rb_job *j, const char *dirpath, rb_err *err)
{
	tmp_walk w = { .j = j, .dirpath = dirpath };
	int fd;

	lg_file_name(j->job_id, ".", w.prefix, sizeof(w.prefix));
	w.plen = strlen(w.prefix);
	fd = openat(j->bucket_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return rb_err_set(err, "%s: %s", dirpath, strerror(errno));
	return each_entry(fd, dirpath, false, on_tmp_entry, &w, err);
}

/* Remove j's file "<id><suffix>" (already gone: fine). 0 or -1. */
static int remove_file(rb_job *j, const char *suffix, rb_err *err)
{
	char name[NAME_BUF], path[PATH_BUF];

	lg_file_name(j->job_id, suffix, name, sizeof(name));
	if (unlinkat(j->bucket_fd, name, 0) < 0 && errno != ENOENT)
		return rb_err_set(err, "%s: %s", lg_job_path(j->l, j->job_id, name,
				  path, sizeof(path)), strerror(errno));
	return 0;
}

int rb_ledger_remove(rb_job *j, rb_err *err)
{
	char path[PATH_BUF];

	/* The record first: a crash between the two leaves a log without a
	 * record, which reads as "no record" and is not listed; the other
	 * order would leave a record whose history is gone. The lock file
	 * last: our lock stays on it until unlock; waiters then see the name
	 * gone and start over (lock_named). */
	if (remove_file(j, ".rec", err) < 0 ||
	    remove_stale_tmp(j, lg_job_path(j->l, j->job_id, NULL, path,
					    sizeof(path)), err) < 0 ||
	    remove_file(j, ".log", err) < 0 || remove_file(j, ".lock", err) < 0)
		return -1;
	if (fsync(j->bucket_fd) < 0)
		return rb_err_set(err, "%s: fsync: %s", lg_job_path(j->l,
				  j->job_id, NULL, path, sizeof(path)),
				  strerror(errno));
	return 0;
}
