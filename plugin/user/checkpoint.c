/*
 * checkpoint.c - find the newest checkpoint in a job's directory
 * (docs/rule.md, "Finding the checkpoint").
 *
 * Runs with the caller's credentials (the job's user, from user_init), so the
 * user's own symlinks are followed, but every step is bounded: one directory
 * fd, at most RB_CHECKPOINT_SCAN_LIMIT entries examined, at most
 * CKPT_POINTER_READ_MAX bytes read from a pointer file, a pointer is followed
 * one level only (symlink loops end in ELOOP and fall back to the scan).
 * Nothing in the directory is ever written, renamed or deleted: the only
 * calls on it are open, fstatat, readlinkat, read, readdir and realpath.
 *
 * Only the job's user's checkpoints are handed out: an entry (or `latest`,
 * or what either leads to) owned by another user than the caller or root is
 * skipped as if absent, so a writer sharing the directory cannot hand the
 * job a checkpoint of theirs (README, "A shared checkpoint directory").
 */
#include "checkpoint.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rule/rule.h" /* RB_PATH_MAX */

/* The unit test lowers this to exercise the bound without 100000 files. */
#ifndef RB_CHECKPOINT_SCAN_LIMIT
#define RB_CHECKPOINT_SCAN_LIMIT RB_CHECKPOINT_SCAN_MAX
#endif

/* A pointer file's first line is read from at most this many bytes. */
#define CKPT_POINTER_READ_MAX 4096

#define CKPT_AS_USER "(it is resolved as the job's user)"

/* Paths in error messages are cut to this many bytes, so that the cause
 * always fits in an rb_err (RB_ERR_MAX). */
#define CKPT_SHOW 600

static bool ckpt_has_suffix(const char *name, size_t len, const char *suffix)
{
	size_t slen = strlen(suffix);

	return len >= slen && memcmp(name + len - slen, suffix, slen) == 0;
}

/* Names that are never checkpoints: hidden, in progress, or oversized. */
static bool ckpt_name_skipped(const char *name)
{
	size_t len = strlen(name);

	return len == 0 || len > NAME_MAX || name[0] == '.' ||
	       ckpt_has_suffix(name, len, ".tmp") ||
	       ckpt_has_suffix(name, len, ".partial");
}

/* A checkpoint is a regular file or a directory; never a FIFO, socket or
 * device (stat on those is harmless, opening them is not). */
static bool ckpt_usable_type(mode_t mode)
{
	return S_ISREG(mode) || S_ISDIR(mode);
}

/*
 * May a file owned by uid be handed to the job? Its user's (the caller's
 * euid: user_init runs as the job's user) or root's, whom nobody can plant
 * as (an admin restoring a backup as root). Not another user's: anyone
 * sharing the directory could plant a newer one (README, "A shared
 * checkpoint directory").
 */
static bool ckpt_owner_ok(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

/* The uid that makes the entry (*lst, not followed) or what it leads to
 * (*st) another user's; only called when one of them is. */
static unsigned ckpt_foreign_uid(const struct stat *lst, const struct stat *st)
{
	return (unsigned)(ckpt_owner_ok(lst->st_uid) ? st->st_uid :
						      lst->st_uid);
}

/*
 * Join name onto base into out: name itself if it is absolute, else
 * "base/name". Returns 0, or -1 if the result does not fit in outlen.
 */
static int ckpt_join(char *out, size_t outlen, const char *base,
		     const char *name)
{
	size_t blen = strlen(base);
	const char *sep = (blen > 0 && base[blen - 1] == '/') ? "" : "/";
	int n;

	if (name[0] == '/')
		n = snprintf(out, outlen, "%s", name);
	else
		n = snprintf(out, outlen, "%s%s%s", base, sep, name);
	return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

/* A pointer that cannot be used, and why: the scan is used instead. */
static void ckpt_pointer_ignored(const char *dpath, const char *name,
				 const char *why)
{
	rb_log(RB_LOG_WARNING, "checkpoint pointer %.*s/%s: %s; ignored",
	       CKPT_SHOW, dpath, name, why);
}

/*
 * Open the regular file <dfd>/<name> for reading, without following a
 * symlink and without blocking (a FIFO swapped in after the lstat is
 * refused). The fd, or -1 (logged).
 */
static int ckpt_open_pointer(int dfd, const char *dpath, const char *name)
{
	struct stat st;
	int fd;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			       O_CLOEXEC);
	if (fd < 0) {
		ckpt_pointer_ignored(dpath, name, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ckpt_pointer_ignored(dpath, name, "not a regular file");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Read fd into buf (CKPT_POINTER_READ_MAX + 1 bytes) up to the first
 * newline or CKPT_POINTER_READ_MAX bytes, whichever comes first; buf is
 * NUL-terminated, *lenp is what was read. 0, or -1 (logged).
 */
static int ckpt_read_head(int fd, const char *dpath, const char *name,
			  char *buf, size_t *lenp)
{
	size_t len = 0;

	while (len < CKPT_POINTER_READ_MAX) {
		ssize_t n = read(fd, buf + len, CKPT_POINTER_READ_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ckpt_pointer_ignored(dpath, name, strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (memchr(buf + len - (size_t)n, '\n', (size_t)n))
			break;
	}
	buf[len] = '\0';
	*lenp = len;
	return 0;
}

/*
 * The first line of buf (len bytes read, NUL-terminated) into line (size
 * linelen), trailing whitespace stripped. 0, or -1 (logged) if it is too
 * long, holds a NUL byte, is empty or does not fit.
 */
static int ckpt_first_line(char *buf, size_t len, const char *dpath,
			   const char *name, char *line, size_t linelen)
{
	char *nl = memchr(buf, '\n', len);

	if (nl) {
		len = (size_t)(nl - buf);
		buf[len] = '\0';
	} else if (len == CKPT_POINTER_READ_MAX) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: first line longer than %d bytes; ignored",
		       CKPT_SHOW, dpath, name, CKPT_POINTER_READ_MAX);
		return -1;
	}
	if (strlen(buf) != len) {
		ckpt_pointer_ignored(dpath, name, "holds a NUL byte");
		return -1;
	}
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		buf[--len] = '\0';
	if (len == 0) {
		ckpt_pointer_ignored(dpath, name, "empty");
		return -1;
	}
	if (rb_strlcpy(line, buf, linelen) < 0) {
		ckpt_pointer_ignored(dpath, name, "name too long");
		return -1;
	}
	return 0;
}

/*
 * Read the first line of the regular file <dfd>/<name> into line (size
 * linelen), trailing whitespace stripped. Returns 0, or -1 (logged) if it
 * is unreadable, empty, too long or holds a NUL byte.
 */
static int ckpt_read_first_line(int dfd, const char *dpath, const char *name,
				char *line, size_t linelen)
{
	char buf[CKPT_POINTER_READ_MAX + 1];
	size_t len = 0;
	int fd = ckpt_open_pointer(dfd, dpath, name);
	int rc;

	if (fd < 0)
		return -1;
	rc = ckpt_read_head(fd, dpath, name, buf, &len);
	if (rc == 0)
		rc = ckpt_first_line(buf, len, dpath, name, line, linelen);
	close(fd);
	return rc;
}

/*
 * What the pointer entry <dfd>/<latest> names, into target (size
 * targetlen): a symlink's target, or a regular file's first line; *lst is
 * the entry itself (not followed). 0, or -1 (no such entry, or logged).
 */
static int ckpt_read_pointer(int dfd, const char *dpath, const char *latest,
			     struct stat *lst, char *target, size_t targetlen)
{
	if (fstatat(dfd, latest, lst, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			ckpt_pointer_ignored(dpath, latest, strerror(errno));
		return -1;
	}
	if (S_ISLNK(lst->st_mode)) {
		ssize_t n = readlinkat(dfd, latest, target, targetlen - 1);

		if (n < 0 || (size_t)n >= targetlen - 1) {
			ckpt_pointer_ignored(dpath, latest,
					     n < 0 ? strerror(errno) :
						     "target too long");
			return -1;
		}
		target[n] = '\0';
		return 0;
	}
	if (S_ISREG(lst->st_mode))
		return ckpt_read_first_line(dfd, dpath, latest, target,
					    targetlen);
	ckpt_pointer_ignored(dpath, latest,
			     "neither a symlink nor a regular file");
	return -1;
}

/*
 * Does cand, what the pointer entry (*lst) leads to, name a checkpoint? One
 * stat, following the user's symlinks: a loop ends in ELOOP. 1 yes, 0 no
 * (logged).
 */
static int ckpt_target_usable(const char *dpath, const char *latest,
			      const struct stat *lst, const char *cand)
{
	struct stat st, cl;

	if (stat(cand, &st) < 0 || lstat(cand, &cl) < 0) {
		rb_log(RB_LOG_INFO,
		       "checkpoint pointer %.*s/%s: target %s; using the newest match instead",
		       CKPT_SHOW, dpath, latest, strerror(errno));
		return 0;
	}
	if (!ckpt_usable_type(st.st_mode)) {
		ckpt_pointer_ignored(dpath, latest,
				     "target is not a file or directory");
		return 0;
	}
	if (S_ISREG(lst->st_mode) && st.st_dev == lst->st_dev &&
	    st.st_ino == lst->st_ino) {
		ckpt_pointer_ignored(dpath, latest, "names itself");
		return 0;
	}
	if (!ckpt_owner_ok(cl.st_uid) || !ckpt_owner_ok(st.st_uid)) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: its target %.*s is owned by uid %u, not by the job's user (uid %u) or root; ignored as if absent",
		       CKPT_SHOW, dpath, latest, CKPT_SHOW, cand,
		       ckpt_foreign_uid(&cl, &st), (unsigned)geteuid());
		return 0;
	}
	return 1;
}

/*
 * The pointer entry <dir>/<latest>: a symlink, or a regular file whose first
 * line is a name (relative to the directory) or an absolute path. On success
 * cand holds the path it leads to (absolute, not yet canonical).
 * Returns 1 if it leads to an existing file or directory, 0 otherwise (no
 * pointer, dangling, loop, unreadable: the caller falls back to the scan).
 */
static int ckpt_follow_pointer(int dfd, const char *dpath, const char *latest,
			       char *cand, size_t candlen)
{
	char target[RB_PATH_MAX];
	struct stat lst;

	/* A name in the directory; a relative symlink target or pointer line
	 * is taken from the directory itself. */
	if (strchr(latest, '/')) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer \"%s\": not a plain name; ignored",
		       latest);
		return 0;
	}
	if (ckpt_read_pointer(dfd, dpath, latest, &lst, target,
			      sizeof(target)) < 0)
		return 0;
	if (!ckpt_owner_ok(lst.st_uid)) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: owned by uid %u, not by the job's user (uid %u) or root; ignored as if absent",
		       CKPT_SHOW, dpath, latest, (unsigned)lst.st_uid,
		       (unsigned)geteuid());
		return 0;
	}
	if (target[0] == '\0' ||
	    ckpt_join(cand, candlen, dpath, target) < 0) {
		ckpt_pointer_ignored(dpath, latest, "target empty or too long");
		return 0;
	}
	return ckpt_target_usable(dpath, latest, &lst, cand);
}

/*
 * Is the entry name of dpath (stat *st, its symlinks followed) one of skip?
 * The identity is compared first: the real path is only worked out for a
 * file that is one of them (docs/rule.md, "Checkpoint fallback").
 */
static bool ckpt_entry_skipped(const char *dpath, const char *name,
			       const struct stat *st, const rb_ckpt_marks *skip)
{
	char path[RB_PATH_MAX];
	rb_file_id id;
	bool maybe = false;
	char *real;

	if (!skip || skip->n == 0)
		return false;
	rb_file_id_of_stat(st, &id);
	for (size_t i = 0; i < skip->n && !maybe; i++)
		maybe = rb_file_id_equal(&skip->mark[i].id, &id);
	if (!maybe || ckpt_join(path, sizeof(path), dpath, name) < 0)
		return false;
	real = realpath(path, NULL);
	maybe = real && rb_ckpt_marked(skip, real, &id);
	free(real);
	return maybe;
}

/* Is the pointer's target cand one of skip? Then the scan decides. */
static bool ckpt_target_skipped(const char *dpath, const char *latest,
				const char *cand, const rb_ckpt_marks *skip)
{
	char *real;
	rb_file_id id;
	bool marked;

	if (!skip || skip->n == 0)
		return false;
	real = realpath(cand, NULL);
	marked = real && rb_file_id_of(real, &id) == 0 &&
		 rb_ckpt_marked(skip, real, &id);
	free(real);
	if (marked)
		rb_log(RB_LOG_INFO,
		       "checkpoint pointer %.*s/%s: its target is marked bad; using the newest match not marked bad",
		       CKPT_SHOW, dpath, latest);
	return marked;
}

/*
 * May the entry <dfd>/<name> be a candidate? It must lead to a file or
 * directory (*st, its symlinks followed: dangling or looping ones are
 * skipped) and both the entry and what it leads to must be the job's
 * user's or root's. Another user's is skipped as if absent; the first is
 * logged and all are counted in *foreign.
 */
static bool ckpt_entry_usable(int dfd, const char *dpath, const char *name,
			      struct stat *st, long *foreign)
{
	struct stat lst;

	if (fstatat(dfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (!S_ISLNK(lst.st_mode))
		*st = lst;
	else if (fstatat(dfd, name, st, 0) < 0)
		return false;
	if (!ckpt_usable_type(st->st_mode))
		return false;
	if (ckpt_owner_ok(lst.st_uid) && ckpt_owner_ok(st->st_uid))
		return true;
	if ((*foreign)++ == 0)
		rb_log(RB_LOG_WARNING,
		       "checkpoint %.*s/%s: owned by uid %u, not by the job's user (uid %u) or root; skipped as if absent",
		       CKPT_SHOW, dpath, name, ckpt_foreign_uid(&lst, st),
		       (unsigned)geteuid());
	return false;
}

/* After the scan: how many other users' entries were skipped, if more than
 * the one already logged. */
static void ckpt_foreign_summary(const char *dpath, long foreign)
{
	if (foreign > 1)
		rb_log(RB_LOG_WARNING,
		       "checkpoint directory %.*s: %ld entries owned by other users skipped as if absent",
		       CKPT_SHOW, dpath, foreign);
}

static bool ckpt_newer(const struct stat *st, const char *name,
		       const struct timespec *best_mtime, const char *best)
{
	if (st->st_mtim.tv_sec != best_mtime->tv_sec)
		return st->st_mtim.tv_sec > best_mtime->tv_sec;
	if (st->st_mtim.tv_nsec != best_mtime->tv_nsec)
		return st->st_mtim.tv_nsec > best_mtime->tv_nsec;
	return strcmp(name, best) > 0;
}

/*
 * The newest entry of dirp matching pattern (mtime, then the greater name),
 * its name in best. At most RB_CHECKPOINT_SCAN_LIMIT entries are examined.
 * Returns 1 found, 0 none, -1 with err if reading the directory failed.
 */
static int ckpt_scan(DIR *dirp, const char *dpath, const char *pattern,
		     const char *latest, const rb_ckpt_marks *skip,
		     char *best, size_t bestlen, rb_err *err)
{
	struct timespec best_mtime = { 0, 0 };
	struct dirent *de;
	struct stat st;
	long examined = 0, foreign = 0;
	int dfd = dirfd(dirp);
	int rc = 0;

	best[0] = '\0';
	for (;;) {
		errno = 0;
		de = readdir(dirp);
		if (!de) {
			if (errno != 0)
				rc = rb_err_set(err,
						"checkpoint directory %.*s: %s " CKPT_AS_USER,
						CKPT_SHOW, dpath,
						strerror(errno));
			goto out;
		}
		if (examined == RB_CHECKPOINT_SCAN_LIMIT) {
			rb_log(RB_LOG_WARNING,
			       "checkpoint directory %.*s: more than %d entries, only the first %d were examined; a newer checkpoint may be missed",
			       CKPT_SHOW, dpath, RB_CHECKPOINT_SCAN_LIMIT,
			       RB_CHECKPOINT_SCAN_LIMIT);
			goto out;
		}
		examined++;
		if (ckpt_name_skipped(de->d_name))
			continue;
		if (latest && strcmp(de->d_name, latest) == 0)
			continue;
		if (fnmatch(pattern, de->d_name, FNM_PERIOD) != 0)
			continue;
		if (!ckpt_entry_usable(dfd, dpath, de->d_name, &st, &foreign))
			continue;
		if (ckpt_entry_skipped(dpath, de->d_name, &st, skip))
			continue;
		if (rc == 1 && !ckpt_newer(&st, de->d_name, &best_mtime, best))
			continue;
		if (rb_strlcpy(best, de->d_name, bestlen) < 0)
			continue;
		best_mtime = st.st_mtim;
		rc = 1;
	}
out:
	ckpt_foreign_summary(dpath, foreign);
	return rc;
}

/*
 * Open the checkpoint directory (dir, relative to work_dir) as the caller
 * and find its canonical path, on which every candidate is built. 0 with
 * *dfd and *rdir (malloc'd), or -1 (errno as the failing call left it: the
 * glue tells a directory not made yet, ENOENT, from a real error).
 */
static int open_ckpt_dir(const char *work_dir, const char *dir, int *dfd,
			 char **rdir, rb_err *err)
{
	char path[RB_PATH_MAX];

	if (!dir || dir[0] == '\0')
		return rb_err_set(err, "checkpoint directory: empty name");
	if (dir[0] != '/' && (!work_dir || work_dir[0] != '/'))
		return rb_err_set(err,
				  "checkpoint directory %.*s: relative, and the working directory \"%.*s\" is not absolute",
				  CKPT_SHOW / 2, dir, CKPT_SHOW / 2,
				  work_dir ? work_dir : "");
	if (ckpt_join(path, sizeof(path), work_dir ? work_dir : "", dir) < 0)
		return rb_err_set(err,
				  "checkpoint directory %.*s: path longer than %d bytes",
				  CKPT_SHOW, dir, RB_PATH_MAX - 1);
	*dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dfd < 0)
		return rb_err_set(err, "checkpoint directory %.*s: %s " CKPT_AS_USER,
				  CKPT_SHOW, path, strerror(errno));
	*rdir = realpath(path, NULL);
	if (!*rdir)
		return rb_err_set(err, "checkpoint directory %.*s: %s " CKPT_AS_USER,
				  CKPT_SHOW, path, strerror(errno));
	return 0;
}

/*
 * The newest checkpoint's path into cand: the `latest` pointer's target if
 * it names one, else the newest entry matching pattern. *dfd is handed to
 * *dirp when the directory has to be read (the caller closes whichever is
 * set). 1 found, 0 none, -1 error.
 */
static int newest_candidate(int *dfd, DIR **dirp, const char *rdir,
			    const char *pattern, const char *latest,
			    const rb_ckpt_marks *skip, char *cand,
			    size_t candlen, rb_err *err)
{
	char best[NAME_MAX + 1];
	int found = 0;

	if (latest && latest[0] != '\0')
		found = ckpt_follow_pointer(*dfd, rdir, latest, cand, candlen) &&
			!ckpt_target_skipped(rdir, latest, cand, skip);
	if (found)
		return 1;
	*dirp = fdopendir(*dfd);
	if (!*dirp)
		return rb_err_set(err, "checkpoint directory %.*s: %s " CKPT_AS_USER,
				  CKPT_SHOW, rdir, strerror(errno));
	*dfd = -1; /* owned by dirp now */
	found = ckpt_scan(*dirp, rdir, (pattern && pattern[0]) ? pattern : "*",
			  latest, skip, best, sizeof(best), err);
	if (found > 0 && ckpt_join(cand, candlen, rdir, best) < 0)
		return rb_err_set(err,
				  "checkpoint %s in %.*s: path longer than %d bytes",
				  best, CKPT_SHOW, rdir, RB_PATH_MAX - 1);
	return found;
}

/* The candidate's real path into out. 1, or -1. */
static int resolve_candidate(const char *cand, char *out, size_t outlen,
			     rb_err *err)
{
	char *real = realpath(cand, NULL);
	int rc = 1;

	if (!real)
		return rb_err_set(err, "checkpoint %.*s: %s " CKPT_AS_USER,
				  CKPT_SHOW, cand, strerror(errno));
	if (strlen(real) >= outlen || strlen(real) >= RB_PATH_MAX)
		rc = rb_err_set(err,
				"checkpoint %.*s: path is %zu bytes, longer than the %zu allowed",
				CKPT_SHOW, real, strlen(real),
				(outlen < RB_PATH_MAX ? outlen : RB_PATH_MAX) - 1);
	else
		rb_strlcpy(out, real, outlen);
	free(real);
	return rc;
}

int rb_checkpoint_find(const char *work_dir, const char *dir,
		       const char *pattern, const char *latest,
		       char *out, size_t outlen, rb_err *err)
{
	return rb_checkpoint_find_except(work_dir, dir, pattern, latest, NULL,
					 out, outlen, err);
}

int rb_checkpoint_find_except(const char *work_dir, const char *dir,
			      const char *pattern, const char *latest,
			      const rb_ckpt_marks *skip, char *out,
			      size_t outlen, rb_err *err)
{
	char cand[RB_PATH_MAX];
	char *rdir = NULL;
	DIR *dirp = NULL;
	int dfd = -1;
	int rc = -1;

	if (!out || outlen == 0)
		return rb_err_set(err, "checkpoint: no room for the result");
	out[0] = '\0';
	if (open_ckpt_dir(work_dir, dir, &dfd, &rdir, err) < 0)
		goto out;
	rc = newest_candidate(&dfd, &dirp, rdir, pattern, latest, skip, cand,
			      sizeof(cand), err);
	if (rc > 0)
		rc = resolve_candidate(cand, out, outlen, err);
out:
	free(rdir);
	if (dirp)
		closedir(dirp);
	else if (dfd >= 0)
		close(dfd);
	if (rc < 0)
		out[0] = '\0';
	return rc;
}
