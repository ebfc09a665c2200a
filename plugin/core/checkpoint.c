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

#include "engine.h" /* RB_PATH_MAX */

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

/*
 * Read the first line of the regular file <dfd>/<name> into line (size
 * linelen), trailing whitespace stripped. Opened without following a symlink
 * and without blocking (a FIFO swapped in after the lstat is refused).
 * Returns 0, or -1 (logged) if it is unreadable, empty, too long or holds a
 * NUL byte.
 */
static int ckpt_read_first_line(int dfd, const char *dpath, const char *name,
				char *line, size_t linelen)
{
	char buf[CKPT_POINTER_READ_MAX + 1];
	struct stat st;
	size_t len = 0;
	char *nl;
	int fd;
	int rc = -1;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
			       O_CLOEXEC);
	if (fd < 0) {
		rb_log(RB_LOG_WARNING, "checkpoint pointer %.*s/%s: %s; ignored",
		       CKPT_SHOW, dpath, name, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: not a regular file; ignored",
		       CKPT_SHOW, dpath, name);
		goto out;
	}
	while (len < CKPT_POINTER_READ_MAX) {
		ssize_t n = read(fd, buf + len, CKPT_POINTER_READ_MAX - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rb_log(RB_LOG_WARNING,
			       "checkpoint pointer %.*s/%s: %s; ignored",
			       CKPT_SHOW, dpath, name, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (memchr(buf + len - (size_t)n, '\n', (size_t)n))
			break;
	}
	buf[len] = '\0';
	nl = memchr(buf, '\n', len);
	if (nl) {
		len = (size_t)(nl - buf);
		buf[len] = '\0';
	} else if (len == CKPT_POINTER_READ_MAX) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: first line longer than %d bytes; ignored",
		       CKPT_SHOW, dpath, name, CKPT_POINTER_READ_MAX);
		goto out;
	}
	if (strlen(buf) != len) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: holds a NUL byte; ignored",
		       CKPT_SHOW, dpath, name);
		goto out;
	}
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		buf[--len] = '\0';
	if (len == 0) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: empty; ignored", CKPT_SHOW, dpath, name);
		goto out;
	}
	if (rb_strlcpy(line, buf, linelen) < 0) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: name too long; ignored",
		       CKPT_SHOW, dpath, name);
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
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
	struct stat lst, st;
	int rc = 0;

	/* A name in the directory; a relative symlink target or pointer line
	 * is taken from the directory itself. */
	if (strchr(latest, '/')) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer \"%s\": not a plain name; ignored",
		       latest);
		goto out;
	}
	if (fstatat(dfd, latest, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			rb_log(RB_LOG_WARNING,
			       "checkpoint pointer %.*s/%s: %s; ignored",
			       CKPT_SHOW, dpath, latest, strerror(errno));
		goto out;
	}
	if (S_ISLNK(lst.st_mode)) {
		ssize_t n = readlinkat(dfd, latest, target, sizeof(target) - 1);

		if (n < 0 || (size_t)n >= sizeof(target) - 1) {
			rb_log(RB_LOG_WARNING,
			       "checkpoint pointer %.*s/%s: %s; ignored",
			       CKPT_SHOW, dpath, latest,
			       n < 0 ? strerror(errno) : "target too long");
			goto out;
		}
		target[n] = '\0';
	} else if (S_ISREG(lst.st_mode)) {
		if (ckpt_read_first_line(dfd, dpath, latest, target,
					 sizeof(target)) < 0)
			goto out;
	} else {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: neither a symlink nor a regular file; ignored",
		       CKPT_SHOW, dpath, latest);
		goto out;
	}
	if (target[0] == '\0' ||
	    ckpt_join(cand, candlen, dpath, target) < 0) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: target empty or too long; ignored",
		       CKPT_SHOW, dpath, latest);
		goto out;
	}
	/* One stat, following the user's symlinks: a loop ends in ELOOP. */
	if (stat(cand, &st) < 0) {
		rb_log(RB_LOG_INFO,
		       "checkpoint pointer %.*s/%s: target %s; using the newest match instead",
		       CKPT_SHOW, dpath, latest, strerror(errno));
		goto out;
	}
	if (!ckpt_usable_type(st.st_mode)) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: target is not a file or directory; ignored",
		       CKPT_SHOW, dpath, latest);
		goto out;
	}
	if (S_ISREG(lst.st_mode) && st.st_dev == lst.st_dev &&
	    st.st_ino == lst.st_ino) {
		rb_log(RB_LOG_WARNING,
		       "checkpoint pointer %.*s/%s: names itself; ignored",
		       CKPT_SHOW, dpath, latest);
		goto out;
	}
	rc = 1;
out:
	return rc;
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
		     const char *latest, char *best, size_t bestlen,
		     rb_err *err)
{
	struct timespec best_mtime = { 0, 0 };
	struct dirent *de;
	struct stat st;
	long examined = 0;
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
		/* Follows the user's symlinks; dangling or looping ones and
		 * anything not a file or directory are skipped. */
		if (fstatat(dfd, de->d_name, &st, 0) < 0 ||
		    !ckpt_usable_type(st.st_mode))
			continue;
		if (rc == 1 && !ckpt_newer(&st, de->d_name, &best_mtime, best))
			continue;
		if (rb_strlcpy(best, de->d_name, bestlen) < 0)
			continue;
		best_mtime = st.st_mtim;
		rc = 1;
	}
out:
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
			    char *cand, size_t candlen, rb_err *err)
{
	char best[NAME_MAX + 1];
	int found = 0;

	if (latest && latest[0] != '\0')
		found = ckpt_follow_pointer(*dfd, rdir, latest, cand, candlen);
	if (found)
		return 1;
	*dirp = fdopendir(*dfd);
	if (!*dirp)
		return rb_err_set(err, "checkpoint directory %.*s: %s " CKPT_AS_USER,
				  CKPT_SHOW, rdir, strerror(errno));
	*dfd = -1; /* owned by dirp now */
	found = ckpt_scan(*dirp, rdir, (pattern && pattern[0]) ? pattern : "*",
			  latest, best, sizeof(best), err);
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
	rc = newest_candidate(&dfd, &dirp, rdir, pattern, latest, cand,
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
