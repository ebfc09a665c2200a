/*
 * ledger.c - opening a ledger, reading a record and replacing one
 * atomically (see ledger.h and docs/architecture.md, "The ledger";
 * docs/security.md).
 *
 * Crash safety: a record is never written in place. The new text goes to
 * "<id>.rec.tmp.<pid>", is fsynced, renamed over "<id>.rec", and the
 * directory is fsynced. Readers open "<id>.rec" by its exact name, so a
 * half-written or never-renamed temp file left by a crash is invisible to
 * them; the next write by the same pid removes its own leftover, and
 * rb_ledger_remove (gc) removes a job's leftovers.
 * TODO(gc): temp files of a job whose very first write crashed before the
 * rename have no "<id>.rec" beside them and are not listed by
 * rb_ledger_jobs; gc should sweep "*.rec.tmp.*" older than a day.
 */
/* O_PATH (see ledger_new) is only declared with _GNU_SOURCE. */
#define _GNU_SOURCE
#include "ledger_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int lg_write_temp(rb_job *j, const char *tmp, int flags, gid_t gid,
		  const char *a, size_t alen, const char *b, size_t blen)
{
	int fd, e;

	flags |= O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	fd = openat(j->bucket_fd, tmp, flags, RB_LEDGER_FILE_MODE);
	if (fd < 0 && errno == EEXIST &&
	    (unlinkat(j->bucket_fd, tmp, 0) == 0 || errno == ENOENT))
		fd = openat(j->bucket_fd, tmp, flags, RB_LEDGER_FILE_MODE);
	if (fd < 0)
		return -1;
	if (fchown(fd, 0, gid) == 0 && fchmod(fd, RB_LEDGER_FILE_MODE) == 0 &&
	    write_all(fd, a, alen) == 0 && write_all(fd, b, blen) == 0 &&
	    fsync(fd) == 0)
		return fd;
	e = errno;
	close(fd);
	unlinkat(j->bucket_fd, tmp, 0);
	errno = e;
	return -1;
}

/* ---- open and close ------------------------------------------------------ */

/* A ledger for cluster under state_dir, nothing opened yet; NULL with err
 * set for a bad name or path. */
static rb_ledger *ledger_new(const char *state_dir, const char *cluster,
			     rb_ledger_mode mode, rb_err *err)
{
	rb_ledger *l;
	size_t slen, clen;

	if (lg_check_cluster(cluster, err) < 0)
		return NULL;
	slen = state_dir ? strlen(state_dir) : 0;
	if (slen == 0 || slen > RB_PATH_MAX - 256) {
		rb_err_set(err, "state_dir is empty or too long");
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		rb_err_set(err, "out of memory");
		return NULL;
	}
	l->dir_fd = -1;
	l->mode = mode;
	/* lg_check_cluster: at most CLUSTER_MAX bytes */
	clen = strlen(cluster);
	memcpy(l->cluster, cluster, clen + 1);
	/* Drop trailing slashes so that messages name clean paths. */
	while (slen > 1 && state_dir[slen - 1] == '/')
		slen--;
	/* "<state_dir>/<cluster>": slen <= RB_PATH_MAX - 256, so it fits */
	memcpy(l->path, state_dir, slen);
	l->path[slen] = '/';
	memcpy(l->path + slen + 1, cluster, clen + 1);
	/* WRITE mode is root's (and fails for anyone else anyway) */
	l->dir_flag = mode == RB_LEDGER_WRITE || geteuid() == 0 ? O_PATH :
								   O_RDONLY;
	return l;
}

/* missing_ok (READ mode): a cluster directory that does not exist is not an
 * error: returns 1 with *out = NULL. */
static int ledger_open(const char *state_dir, const char *cluster,
		       rb_ledger_mode mode, bool missing_ok, rb_ledger **out,
		       rb_err *err)
{
	rb_ledger *l = ledger_new(state_dir, cluster, mode, err);
	int sfd = -1, rc = -1;

	*out = NULL;
	if (!l)
		return -1;
	sfd = lg_open_state_dir(state_dir, l->dir_flag, err);
	if (sfd < 0)
		goto out;
	rc = lg_open_cluster_dir(l, sfd, mode == RB_LEDGER_WRITE, err);
	if (rc == 1 && !(missing_ok && mode == RB_LEDGER_READ)) {
		rb_err_set(err, "%s: no ledger for cluster '%s' (nothing "
			   "recorded yet)", l->path, cluster);
		rc = -1;
	}
	if (rc == 0) {
		*out = l;
		l = NULL;
	}
out:
	if (sfd >= 0)
		close(sfd);
	free(l);
	return rc == 0 || rc == 1 ? rc : -1;
}

int rb_ledger_open(const char *state_dir, const char *cluster,
		   rb_ledger_mode mode, rb_ledger **out, rb_err *err)
{
	return ledger_open(state_dir, cluster, mode, false, out, err);
}

int rb_ledger_open_read(const char *state_dir, const char *cluster,
			rb_ledger **out, rb_err *err)
{
	return ledger_open(state_dir, cluster, RB_LEDGER_READ, true, out, err);
}

void rb_ledger_close(rb_ledger *l)
{
	if (!l)
		return;
	if (l->dir_fd >= 0)
		close(l->dir_fd);
	free(l);
}

/* ---- the record ---------------------------------------------------------- */

/*
 * Read a record file (fd) whole: up to RB_RECORD_TEXT_MAX + 1 bytes, one
 * more than a record may have, so that one that grew after fstat is still
 * caught as too big. Into `small` first (a record is ~1 KiB): a 128 KiB
 * malloc+free per read made glibc trim and regrow its heap (brk) on every
 * event; *big (freed by the caller) only when it does not fit. A short read
 * of a regular file is its end: no extra read() just to hear 0. *text and
 * *len: what was read. -1 with errno on a read error or ENOMEM.
 */
static int read_text(int fd, char *small, size_t small_len, char **big,
		     char **text, size_t *len)
{
	char *buf = small;
	size_t cap = small_len, have = 0;

	*big = NULL;
	for (;;) {
		ssize_t n;

		if (have == cap) {
			if (cap == RB_RECORD_TEXT_MAX + 1)
				break;
			*big = malloc(RB_RECORD_TEXT_MAX + 1);
			if (!*big) {
				errno = ENOMEM;
				return -1;
			}
			memcpy(*big, small, have);
			buf = *big;
			cap = RB_RECORD_TEXT_MAX + 1;
		}
		n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		have += (size_t)n;
		if (have < cap)
			break;
	}
	*text = buf;
	*len = have;
	return 0;
}

/* The record in the open file fd (st: its fstat) into rec, which is only
 * written on success: never zeros for a bad record. 0 or -1. */
static int read_record_fd(rb_ledger *l, uint32_t job_id, const char *name,
			  int fd, const struct stat *st, rb_record *rec,
			  rb_err *err)
{
	char path[PATH_BUF], small[4096];
	char *buf = NULL, *big = NULL;
	size_t have = 0;
	rb_err perr;
	int rc = -1;

	if (st->st_size > RB_RECORD_TEXT_MAX)
		return rb_err_set(err, "%s: corrupt record: %lld bytes, more than "
				  "the %ld a record can have",
				  lg_job_path(l, job_id, name, path, sizeof(path)),
				  (long long)st->st_size, RB_RECORD_TEXT_MAX);
	if (read_text(fd, small, sizeof(small), &big, &buf, &have) < 0) {
		if (errno == ENOMEM)
			rb_err_set(err, "out of memory");
		else
			rb_err_set(err, "%s: read: %s",
				   lg_job_path(l, job_id, name, path,
					    sizeof(path)),
				   strerror(errno));
	} else if (rb_record_parse(buf, have, rec, &perr) < 0) {
		rb_err_set(err, "%s: corrupt record: %s",
			   lg_job_path(l, job_id, name, path, sizeof(path)),
			   perr.msg);
	} else {
		rc = 0;
	}
	free(big);
	return rc;
}

/* job_id's record, through the bucket held open (held_bucket >= 0) or
 * one opened here: 0, 1 (no record: rec initialized),
 * RB_LEDGER_NOT_READABLE or -1, err set for both. */
static int read_at(rb_ledger *l, int held_bucket, uint32_t job_id,
		   rb_record *rec, rb_err *err)
{
	char name[NAME_BUF];
	struct stat st;
	int bucket_fd = -1, fd = -1;
	int rc = -1, r;

	if (lg_check_job_id(job_id, err) < 0)
		goto out;
	lg_file_name(job_id, ".rec", name, sizeof(name));
	if (held_bucket >= 0)
		r = 0;
	else
		r = lg_open_bucket(l, job_id, false, &bucket_fd, err);
	if (r == 0)
		r = lg_open_file_ro(l, held_bucket >= 0 ? held_bucket : bucket_fd,
				    job_id, name, &fd, &st, err);
	if (r == 0)
		rc = read_record_fd(l, job_id, name, fd, &st, rec, err);
	else if (r == 1)
		rb_record_init(rec);
	if (r > 0)
		rc = r;
out:
	if (fd >= 0)
		close(fd);
	if (bucket_fd >= 0)
		close(bucket_fd);
	return rc;
}

/* rb_ledger_read's callers know three outcomes; only a listing also asks
 * whether the record is another group's (docs/security.md, "Who reads
 * what"). */
static int not_readable_is_an_error(int rc)
{
	return rc == RB_LEDGER_NOT_READABLE ? -1 : rc;
}

int rb_ledger_read(rb_ledger *l, uint32_t job_id, rb_record *rec, rb_err *err)
{
	return not_readable_is_an_error(read_at(l, -1, job_id, rec, err));
}

int rb_ledger_read_for_listing(rb_ledger *l, uint32_t job_id, rb_record *rec,
			       rb_err *err)
{
	return read_at(l, -1, job_id, rec, err);
}

int rb_ledger_read_locked(rb_job *j, rb_record *rec, rb_err *err)
{
	return not_readable_is_an_error(read_at(j->l, j->bucket_fd, j->job_id,
						rec, err));
}

/* The event log is made (under the lock) before the job's group is known:
 * give it the record's group and mode. A failure only leaves it root's:
 * logged, nothing lost. */
static void share_log(rb_job *j, uint32_t gid)
{
	struct stat st;

	if (j->log_fd < 0 || fstat(j->log_fd, &st) < 0)
		return;
	if (st.st_gid == gid && (st.st_mode & 07777) == RB_LEDGER_FILE_MODE)
		return;
	if (fchown(j->log_fd, 0, gid) < 0 ||
	    fchmod(j->log_fd, RB_LEDGER_FILE_MODE) < 0)
		rb_log(RB_LOG_WARNING, "job %u: cannot give its event log to group %u: %s",
		       j->job_id, gid, strerror(errno));
}

/* Messages only: built when one is needed. */
#define PATH() lg_job_path(j->l, j->job_id, name, path, sizeof(path))

/* A record names its job: never file one under another's name. Then
 * stamp it (seq, updated, created). */
static int stamp_record(rb_job *j, rb_record *rec, const char *name,
			rb_err *err)
{
	char path[PATH_BUF];

	if (rec->job_id == 0)
		rec->job_id = j->job_id;
	if (!rec->cluster[0])
		rb_strlcpy(rec->cluster, j->l->cluster, sizeof(rec->cluster));
	if (rec->job_id != j->job_id || strcmp(rec->cluster, j->l->cluster) != 0)
		return rb_err_set(err, "%s: refusing to store the record of job %" PRIu32
				  " on cluster %.63s here", PATH(), rec->job_id,
				  rec->cluster);
	rec->seq++;
	rec->updated = (int64_t)time(NULL);
	if (rec->created == 0)
		rec->created = rec->updated;
	return 0;
}

/*
 * Format rec and parse it back: never write a record that the next reader
 * would refuse (e.g. a counter out of range), or the job would lose its
 * budget history. A record is ~1 KiB: it is formatted into small, and only
 * if it does not fit there into *big, of the largest size a record may
 * have (a 128 KiB malloc+free per write made glibc trim its heap each
 * time). Returns the length (*text: which buffer) or -1.
 */
static ssize_t format_checked(rb_job *j, const rb_record *rec,
			      const char *name, char *small, size_t smalllen,
			      char **big, const char **text, rb_err *err)
{
	char path[PATH_BUF];
	rb_record *check = malloc(sizeof(*check));
	rb_err perr;
	ssize_t n = -1;

	if (!check)
		return rb_err_set(err, "out of memory");
	*text = small;
	n = rb_record_format(rec, small, smalllen);
	if (n < 0) {
		*big = malloc(RB_RECORD_TEXT_MAX + 1);
		if (!*big) {
			free(check);
			return rb_err_set(err, "out of memory");
		}
		*text = *big;
		n = rb_record_format(rec, *big, RB_RECORD_TEXT_MAX + 1);
	}
	if (n < 0)
		rb_err_set(err, "%s: cannot format the record (an enum value "
			   "has no name or the text exceeds %ld bytes)", PATH(),
			   RB_RECORD_TEXT_MAX);
	else if (rb_record_parse(*text, (size_t)n, check, &perr) < 0)
		n = rb_err_set(err, "%s: refusing to write a record that would "
			       "not read back: %s", PATH(), perr.msg);
	free(check);
	return n;
}

/* Write text into the temp file tmp (lg_write_temp), closed: close()
 * reports delayed write errors on NFS. *made says whether it exists. */
static int write_temp(rb_job *j, const char *tmp, const char *name,
		      const char *text, size_t n, uint32_t gid, bool *made,
		      rb_err *err)
{
	char path[PATH_BUF];
	int fd = lg_write_temp(j, tmp, O_WRONLY, gid, text, n, NULL, 0);

	if (fd < 0)
		return rb_err_set(err, "%s.tmp.%ld: %s", PATH(), (long)getpid(),
				  strerror(errno));
	*made = true;
	if (close(fd) < 0)
		return rb_err_set(err, "%s.tmp.%ld: close: %s", PATH(),
				  (long)getpid(), strerror(errno));
	return 0;
}

/* Put tmp in name's place, durably. *renamed: the new record is there. */
static int install(rb_job *j, const char *tmp, const char *name,
		   bool *renamed, rb_err *err)
{
	char path[PATH_BUF];

	/* rename() replaces a symlink planted as <id>.rec itself, never its
	 * target. */
	if (renameat(j->bucket_fd, tmp, j->bucket_fd, name) < 0)
		return rb_err_set(err, "%s: rename: %s", PATH(), strerror(errno));
	*renamed = true;
	/*
	 * The rename lives in the directory, not in the file: until the
	 * directory is on disk, a power loss can bring back the old record
	 * although we already acted on the new one (told the job its budget,
	 * let an attempt run, refused one). Only after this fsync is the new
	 * record the one every node will see after a crash.
	 */
	if (fsync(j->bucket_fd) < 0)
		return rb_err_set(err, "%s: fsync of the directory: %s", PATH(),
				  strerror(errno));
	return 0;
}
#undef PATH

int rb_ledger_write(rb_job *j, rb_record *rec, rb_err *err)
{
	char name[NAME_BUF], tmp[2 * NAME_BUF];
	char old_cluster[RB_NAME_MAX];
	uint32_t old_job_id = rec->job_id;
	uint64_t old_seq = rec->seq;
	int64_t old_created = rec->created, old_updated = rec->updated;
	char small[4096];
	char *big = NULL;
	const char *text;
	bool tmp_made = false, renamed = false;
	ssize_t n;
	int rc = -1;

	memcpy(old_cluster, rec->cluster, sizeof(old_cluster));
	lg_file_name(j->job_id, ".rec", name, sizeof(name));
	lg_tmp_name(name, (long)getpid(), tmp, sizeof(tmp));
	if (stamp_record(j, rec, name, err) < 0)
		goto fail;
	n = format_checked(j, rec, name, small, sizeof(small), &big, &text, err);
	if (n < 0 ||
	    write_temp(j, tmp, name, text, (size_t)n, rec->gid, &tmp_made,
		       err) < 0)
		goto fail;
	/* once renamed, a failed fsync of the directory still fails the
	 * write, but the new record is in place */
	if (install(j, tmp, name, &renamed, err) < 0)
		goto fail;
	share_log(j, rec->gid);
	rc = 0;
fail:
	if (tmp_made && !renamed)
		unlinkat(j->bucket_fd, tmp, 0);
	if (rc < 0 && !renamed) {
		/* Nothing reached the disk: give the caller back its record. */
		rec->job_id = old_job_id;
		memcpy(rec->cluster, old_cluster, sizeof(rec->cluster));
		rec->seq = old_seq;
		rec->created = old_created;
		rec->updated = old_updated;
	}
	free(big);
	return rc;
}
