/*
 * ledger_fs.c - the ledger's names and its safe opens (see ledger.h and
 * docs/security.md, "Trust").
 *
 * state_dir is opened once, with O_NOFOLLOW, and must be owned by root and
 * not writable by group or others (rb_root_trusted, in READ mode too);
 * everything below it is reached with *at() calls from
 * directory fds, again with O_NOFOLLOW, so a symlink planted anywhere below
 * state_dir is never followed. In WRITE mode (root) every directory and
 * file we open must also be root-owned and not writable by group or
 * others: a user who could write there could edit a budget.
 */
/* O_PATH is only declared with _GNU_SOURCE. */
#define _GNU_SOURCE
#include "ledger_int.h"
#include "base/base.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- names --------------------------------------------------------------- */

int lg_check_cluster(const char *cluster, rb_err *err)
{
	char shown[CLUSTER_MAX * 3 + 1];

	if (rb_cluster_name_ok(cluster))
		return 0;
	if (!cluster || rb_kv_escape(cluster, shown, sizeof(shown)) < 0)
		rb_strlcpy(shown, "(too long)", sizeof(shown));
	return rb_err_set(err, "invalid cluster name '%s': expected "
			  RB_CLUSTER_NAME_RULE, shown);
}

/* Slurm never hands out job id 0; seeing it means a caller bug. */
int lg_check_job_id(uint32_t job_id, rb_err *err)
{
	if (job_id == 0)
		return rb_err_set(err, "invalid job id 0");
	return 0;
}

/* Names are built on every event: no snprintf (its cost showed in the
 * profile). Both give the same text as "%03u" and "%u%s". */
static void bucket_name(uint32_t job_id, char *buf, size_t len)
{
	unsigned b = (unsigned)(job_id % 1000);

	if (len < 4) {
		if (len)
			buf[0] = '\0';
		return;
	}
	buf[0] = (char)('0' + b / 100);
	buf[1] = (char)('0' + b / 10 % 10);
	buf[2] = (char)('0' + b % 10);
	buf[3] = '\0';
}

void lg_file_name(uint32_t job_id, const char *suffix, char *buf,
		      size_t len)
{
	char digits[24];
	size_t n = rb_fmt_u64(job_id, digits), slen = strlen(suffix);

	if (n + slen + 1 > len) {
		if (len)
			buf[0] = '\0';
		return;
	}
	memcpy(buf, digits, n);
	memcpy(buf + n, suffix, slen + 1);
}

void lg_tmp_name(const char *name, long pid, char *buf, size_t len)
{
	char digits[24];
	size_t n = rb_fmt_u64(pid < 0 ? 0 : (uint64_t)pid, digits);
	size_t nlen = strlen(name);

	if (nlen + 5 + n + 1 > len) {
		if (len)
			buf[0] = '\0';
		return;
	}
	memcpy(buf, name, nlen);
	memcpy(buf + nlen, ".tmp.", 5);
	memcpy(buf + nlen + 5, digits, n);
	buf[nlen + 5 + n] = '\0';
}

/* "<state_dir>/<cluster>/<bucket>[/<name>]" for messages. Built only when
 * a message needs it, often in the same argument list as strerror(errno):
 * errno is kept whatever snprintf does to it. */
int rb_ledger_record_path(const char *state_dir, const char *cluster,
			  uint32_t job_id, char *buf, size_t len)
{
	char b[8];
	int n;

	bucket_name(job_id, b, sizeof(b));
	n = snprintf(buf, len, "%s/%s/%s/%u.rec", state_dir, cluster, b,
		     job_id);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

const char *lg_job_path(const rb_ledger *l, uint32_t job_id,
			    const char *name, char *buf, size_t len)
{
	int saved = errno;
	char b[8];

	bucket_name(job_id, b, sizeof(b));
	if (name)
		snprintf(buf, len, "%s/%s/%s", l->path, b, name);
	else
		snprintf(buf, len, "%s/%s", l->path, b);
	errno = saved;
	return buf;
}

/* ---- trust --------------------------------------------------------------- */

/* 0 if st is owned by root and not writable by group or others, else -1
 * with err naming path and the fix. */
static int check_trusted(const struct stat *st, const char *path, rb_err *err)
{
	bool dir = S_ISDIR(st->st_mode);

	if (rb_root_trusted(st))
		return 0;
	return rb_err_set(err, "%s is owned by uid %u with mode %04o; it must "
			  "be owned by root and not writable by group or "
			  "others (fix: chown root:root %s; chmod %s %s)",
			  path, (unsigned)st->st_uid,
			  (unsigned)(st->st_mode & 07777), path,
			  dir ? "755" : "644", path);
}

/* The message for a state_dir that open() refused: errno e. */
static int state_dir_open_failed(const char *state_dir, int e, rb_err *err)
{
	if (e == ELOOP || e == ENOTDIR)
		return rb_err_set(err, "state_dir %s: refused: a symlink or "
				  "not a directory (give the real directory's "
				  "path)", state_dir);
	return rb_err_set(err, "state_dir %s: %s%s", state_dir, strerror(e),
			  e == ENOENT ? " (create it: mkdir -m 755 DIR on "
					"storage shared by all compute nodes)" :
					"");
}

/*
 * Open state_dir itself: the real directory (O_NOFOLLOW applies to the last
 * component only: the admin's path to it is trusted, but state_dir must
 * not be a symlink, so that its owner and mode below are the ones in
 * force), root's and not group/other-writable, in READ mode too: a ledger
 * a user can write is not one the CLI should report as the truth.
 */
int lg_open_state_dir(const char *state_dir, int dir_flag, rb_err *err)
{
	struct stat st;
	int sfd = open(state_dir, dir_flag | O_DIRECTORY | O_NOFOLLOW |
				  O_CLOEXEC);

	if (sfd < 0)
		return state_dir_open_failed(state_dir, errno, err);
	if (fstat(sfd, &st) < 0)
		rb_err_set(err, "state_dir %s: %s", state_dir, strerror(errno));
	else if (rb_root_trusted(&st))
		return sfd;
	else
		rb_err_set(err, "state_dir %s is owned by uid %u with mode %04o; "
			   "it must be owned by root and not writable by group "
			   "or others, or a user could edit job budgets "
			   "(fix: chown root:root %s; chmod 755 %s)", state_dir,
			   (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			   state_dir, state_dir);
	close(sfd);
	return -1;
}

/* ---- directories below state_dir ----------------------------------------- */

/* The path open_subdir names in its messages: the cluster directory
 * (job_id 0) or a job's bucket. Built only when a message needs it. */
static const char *subdir_path(const rb_ledger *l, uint32_t job_id,
			       char *buf, size_t len)
{
	return job_id ? lg_job_path(l, job_id, NULL, buf, len) : l->path;
}

/* A directory that is only ever a base for *at() calls (and fstat) needs no
 * more than an O_PATH fd, which is cheaper to open and close: the cluster
 * directory, and a bucket in READ mode (l->dir_flag: O_PATH for root, who
 * passes every permission check either way; other users keep O_RDONLY, so
 * that a directory they may not read fails where it did, with the same
 * message). A bucket in WRITE mode is fsynced after a rename: a real fd. */
static int subdir_flags(rb_ledger_mode mode, const rb_ledger *l,
			uint32_t job_id)
{
	return (mode == RB_LEDGER_WRITE && job_id != 0 ? O_RDONLY :
							 l->dir_flag) |
	       O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
}

/* Create the missing directory `name` (mode 0755; another may have made it
 * first) and open it into *fd. 0 (*fd < 0 with errno if that open failed),
 * or -1 with err when it cannot be created. */
static int create_subdir(int dir_fd, const char *name, const rb_ledger *l,
			 uint32_t job_id, bool *made, int *fd, rb_err *err)
{
	char path[PATH_BUF];

	if (mkdirat(dir_fd, name, 0755) == 0)
		*made = true;
	else if (errno != EEXIST)
		return rb_err_set(err, "%s: cannot create directory: %s",
				  subdir_path(l, job_id, path, sizeof(path)),
				  strerror(errno));
	*fd = openat(dir_fd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return 0;
}

/* open_subdir's answer when the directory could not be opened (errno e):
 * 1 if it does not exist and was not to be created, else -1 with err. */
static int subdir_open_failed(int e, bool create, const rb_ledger *l,
			      uint32_t job_id, rb_err *err)
{
	char path[PATH_BUF];

	if (e == ENOENT && !create)
		return 1;
	if (e == ELOOP || e == ENOTDIR)
		return rb_err_set(err, "%s: refused: a symlink or not a "
				  "directory (remove it)",
				  subdir_path(l, job_id, path, sizeof(path)));
	return rb_err_set(err, "%s: %s",
			  subdir_path(l, job_id, path, sizeof(path)),
			  strerror(e));
}

/* The opened directory fd: a new one (made) gets mode 0755, since mkdirat's
 * mode is cut by the umask (readable by the CLI's users, never
 * group-writable); in WRITE mode it must be trusted. 0 or -1 with err. */
static int check_subdir(int fd, bool made, rb_ledger_mode mode,
			const rb_ledger *l, uint32_t job_id, rb_err *err)
{
	char path[PATH_BUF];
	struct stat st;

	if (made && fchmod(fd, 0755) < 0)
		return rb_err_set(err, "%s: chmod: %s",
				  subdir_path(l, job_id, path, sizeof(path)),
				  strerror(errno));
	if (mode != RB_LEDGER_WRITE)
		return 0;
	if (fstat(fd, &st) < 0)
		return rb_err_set(err, "%s: %s",
				  subdir_path(l, job_id, path, sizeof(path)),
				  strerror(errno));
	return check_trusted(&st, subdir_path(l, job_id, path, sizeof(path)),
				err);
}

/*
 * Open directory `name` under dir_fd without following a symlink, creating
 * it if asked. Returns 0, 1 if it does not exist and create is false, or
 * -1. In WRITE mode it must be trusted (in READ mode O_DIRECTORY is all we
 * ask, so no fstat). Messages name the cluster directory of l (job_id 0)
 * or the bucket of job_id.
 */
static int open_subdir(int dir_fd, const char *name, bool create,
		       rb_ledger_mode mode, const rb_ledger *l,
		       uint32_t job_id, int *out, rb_err *err)
{
	bool made = false;
	int fd;

	fd = openat(dir_fd, name, subdir_flags(mode, l, job_id));
	if (fd < 0 && errno == ENOENT && create &&
	    create_subdir(dir_fd, name, l, job_id, &made, &fd, err) < 0)
		return -1;
	if (fd < 0)
		return subdir_open_failed(errno, create, l, job_id, err);
	if (check_subdir(fd, made, mode, l, job_id, err) < 0) {
		close(fd);
		return -1;
	}
	*out = fd;
	return 0;
}

int lg_open_cluster_dir(rb_ledger *l, int state_fd, bool create,
			rb_err *err)
{
	return open_subdir(state_fd, l->cluster, create, l->mode, l, 0,
			   &l->dir_fd, err);
}

int lg_open_bucket(rb_ledger *l, uint32_t job_id, bool create, int *out,
		       rb_err *err)
{
	char b[NAME_BUF];

	bucket_name(job_id, b, sizeof(b));
	return open_subdir(l->dir_fd, b, create, l->mode, l, job_id, out, err);
}

/* ---- files of a bucket --------------------------------------------------- */

int lg_check_opened_file(rb_ledger *l, int fd, uint32_t job_id,
			 const char *name, struct stat *st, bool must_be_root,
			 rb_err *err)
{
	char path[PATH_BUF];

	if (fstat(fd, st) < 0)
		return rb_err_set(err, "%s: %s",
				  lg_job_path(l, job_id, name, path, sizeof(path)),
				  strerror(errno));
	if (!S_ISREG(st->st_mode))
		return rb_err_set(err, "%s: refused: not a regular file",
				  lg_job_path(l, job_id, name, path, sizeof(path)));
	if (must_be_root)
		return check_trusted(st, lg_job_path(l, job_id, name, path,
							sizeof(path)), err);
	return 0;
}

int lg_open_file_ro(rb_ledger *l, int bucket_fd, uint32_t job_id,
			const char *name, int *out, struct stat *st,
			rb_err *err)
{
	char path[PATH_BUF];
	int fd;

	fd = openat(bucket_fd, name,
		    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT)
			return 1;
		lg_job_path(l, job_id, name, path, sizeof(path));
		if (e == ELOOP)
			return rb_err_set(err, "%s: refused: it is a symlink",
					  path);
		if (e == EACCES) {
			rb_err_setf(err, "%s: not readable by you: a job's record and event log are readable by root and the job's group only",
				    path);
			return RB_LEDGER_NOT_READABLE;
		}
		return rb_err_set(err, "%s: %s", path, strerror(e));
	}
	if (lg_check_opened_file(l, fd, job_id, name, st,
				 l->mode == RB_LEDGER_WRITE, err) < 0) {
		close(fd);
		return -1;
	}
	*out = fd;
	return 0;
}
