/*
 * ledger.c - the per-job records under state_dir (see ledger.h and
 * docs/architecture.md, "The ledger"; docs/security.md).
 *
 * Trust: state_dir is opened once, with O_NOFOLLOW, and must be owned by
 * root and not writable by group or others; everything below it is reached
 * with *at() calls from directory fds, again with O_NOFOLLOW, so a symlink
 * planted anywhere below state_dir is never followed. In WRITE mode (root)
 * every directory and file we open must also be root-owned and not writable
 * by group or others: a user who could write there could edit a budget.
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
/* F_OFD_SETLKW (see lock_whole_file) is only declared with _GNU_SOURCE. */
#define _GNU_SOURCE
#include "ledger.h"
#include "trust.h"

#include <dirent.h>
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

#include "ledger_int.h"

/* ---- names and checks ---------------------------------------------------- */

static bool valid_cluster(const char *s)
{
	size_t i;

	if (!s || !s[0] || s[0] == '.')
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (i >= CLUSTER_MAX)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return false;
	}
	return true;
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

/* "<name>.tmp.<pid>": the temp file of a record write. */
static void tmp_name(const char *name, long pid, char *buf, size_t len)
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

/*
 * A directory or file root relies on must be owned by root and not writable
 * by group or others; otherwise a user could replace or edit a budget.
 */
static int check_trusted(const struct stat *st, const char *path,
			 rb_err *err)
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

/* The path open_subdir names in its messages: the cluster directory
 * (job_id 0) or a job's bucket. Built only when a message needs it. */
static const char *subdir_path(const rb_ledger *l, uint32_t job_id,
			       char *buf, size_t len)
{
	return job_id ? lg_job_path(l, job_id, NULL, buf, len) : l->path;
}

/*
 * Open directory `name` under dir_fd without following a symlink, creating
 * it (mode 0755 whatever the umask) if asked. Returns 0, 1 if it does not
 * exist and create is false, or -1. In WRITE mode it must be trusted (in
 * READ mode O_DIRECTORY is all we ask, so no fstat). Messages name the
 * cluster directory of l (job_id 0) or the bucket of job_id.
 */
static int open_subdir(int dir_fd, const char *name, bool create,
		       rb_ledger_mode mode, const rb_ledger *l,
		       uint32_t job_id, int *out, rb_err *err)
{
	char path[PATH_BUF];
	struct stat st;
	bool made = false;
	int fd = -1;

	/* A directory that is only ever a base for *at() calls (and fstat)
	 * needs no more than an O_PATH fd, which is cheaper to open and
	 * close: the cluster directory, and a bucket in READ mode (l->dir_flag:
	 * O_PATH for root, who passes every permission check either way; other
	 * users keep O_RDONLY, so that a directory they may not read fails
	 * where it did, with the same message). A bucket in WRITE mode is
	 * fsynced after a rename: a real fd. */
	fd = openat(dir_fd, name, (mode == RB_LEDGER_WRITE && job_id != 0 ?
				   O_RDONLY : l->dir_flag) |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dir_fd, name, 0755) == 0)
			made = true;
		else if (errno != EEXIST) {
			rb_err_set(err, "%s: cannot create directory: %s",
				   subdir_path(l, job_id, path, sizeof(path)),
				   strerror(errno));
			goto fail;
		}
		fd = openat(dir_fd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		int e = errno;

		if (e == ENOENT && !create)
			return 1;
		if (e == ELOOP || e == ENOTDIR)
			rb_err_set(err, "%s: refused: a symlink or not a "
				   "directory (remove it)",
				   subdir_path(l, job_id, path, sizeof(path)));
		else
			rb_err_set(err, "%s: %s",
				   subdir_path(l, job_id, path, sizeof(path)),
				   strerror(e));
		goto fail;
	}
	/* mkdirat's mode is cut by the umask; make a new directory readable
	 * by the CLI's users and never group-writable. */
	if (made && fchmod(fd, 0755) < 0) {
		rb_err_set(err, "%s: chmod: %s",
			   subdir_path(l, job_id, path, sizeof(path)),
			   strerror(errno));
		goto fail;
	}
	if (mode == RB_LEDGER_WRITE) {
		if (fstat(fd, &st) < 0) {
			rb_err_set(err, "%s: %s",
				   subdir_path(l, job_id, path, sizeof(path)),
				   strerror(errno));
			goto fail;
		}
		if (!rb_root_trusted(&st)) {
			check_trusted(&st, subdir_path(l, job_id, path,
						       sizeof(path)), err);
			goto fail;
		}
	}
	*out = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int lg_open_bucket(rb_ledger *l, uint32_t job_id, bool create, int *out,
		       rb_err *err)
{
	char b[NAME_BUF];

	bucket_name(job_id, b, sizeof(b));
	return open_subdir(l->dir_fd, b, create, l->mode, l, job_id, out, err);
}

/*
 * A file of job_id's bucket just opened as fd: it must be a regular file,
 * and, where root writes (must_be_root), owned by root and not writable by
 * group or others. 0, or -1 with err (the caller closes fd).
 */
static int check_opened_file(rb_ledger *l, int fd, uint32_t job_id,
			     const char *name, struct stat *st,
			     bool must_be_root, rb_err *err)
{
	char path[PATH_BUF];

	if (fstat(fd, st) < 0)
		return rb_err_set(err, "%s: %s",
				  lg_job_path(l, job_id, name, path, sizeof(path)),
				  strerror(errno));
	if (!S_ISREG(st->st_mode))
		return rb_err_set(err, "%s: refused: not a regular file",
				  lg_job_path(l, job_id, name, path, sizeof(path)));
	if (must_be_root && !rb_root_trusted(st)) {
		check_trusted(st, lg_job_path(l, job_id, name, path, sizeof(path)),
			      err);
		return -1;
	}
	return 0;
}

/*
 * Open file `name` of job_id's bucket for reading: regular, not a symlink,
 * not blocking on a FIFO. Returns 0, 1 if absent, -1.
 */
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
			errno = EACCES; /* callers that list skip these */
			return -1;
		}
		return rb_err_set(err, "%s: %s", path, strerror(e));
	}
	if (check_opened_file(l, fd, job_id, name, st,
			      l->mode == RB_LEDGER_WRITE, err) < 0)
		goto fail;
	*out = fd;
	return 0;
fail:
	close(fd);
	return -1;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- open and close ------------------------------------------------------ */

/* A ledger for cluster under state_dir, nothing opened yet; NULL with err
 * set for a bad name or path. */
static rb_ledger *ledger_new(const char *state_dir, const char *cluster,
			     rb_ledger_mode mode, rb_err *err)
{
	rb_ledger *l;
	size_t slen, clen;

	if (!valid_cluster(cluster)) {
		char shown[CLUSTER_MAX * 3 + 1];

		if (!cluster || rb_kv_escape(cluster, shown, sizeof(shown)) < 0)
			rb_strlcpy(shown, "(too long)", sizeof(shown));
		rb_err_set(err, "invalid cluster name '%s': expected 1 to %d of "
			   "[A-Za-z0-9_.-], not starting with '.'", shown,
			   CLUSTER_MAX);
		return NULL;
	}
	slen = state_dir ? strlen(state_dir) : 0;
	if (slen == 0 || slen > RB_PATH_MAX - 256) {
		rb_err_set(err, "state_dir is empty or too long");
		return NULL;
	}
	/* not calloc: every member is set below (path and cluster as C
	 * strings), and zeroing the 4 KiB path buffer showed in profiles */
	l = malloc(sizeof(*l));
	if (!l) {
		rb_err_set(err, "out of memory");
		return NULL;
	}
	l->dir_fd = -1;
	l->mode = mode;
	/* valid_cluster: at most CLUSTER_MAX bytes */
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

/*
 * Open state_dir itself: the real directory (O_NOFOLLOW applies to the last
 * component only: the admin's path to it is trusted, but state_dir must
 * not be a symlink, so that its owner and mode below are the ones in
 * force), root's and not group/other-writable, in READ mode too: a ledger
 * a user can write is not one the CLI should report as the truth.
 */
static int open_state_dir(const char *state_dir, int dir_flag, rb_err *err)
{
	struct stat st;
	int sfd = open(state_dir, dir_flag | O_DIRECTORY | O_NOFOLLOW |
				  O_CLOEXEC);

	if (sfd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return rb_err_set(err, "state_dir %s: refused: a symlink or "
					  "not a directory (give the real directory's "
					  "path)", state_dir);
		return rb_err_set(err, "state_dir %s: %s%s", state_dir,
				  strerror(errno), errno == ENOENT ?
				  " (create it: mkdir -m 755 DIR on storage "
				  "shared by all compute nodes)" : "");
	}
	if (fstat(sfd, &st) < 0) {
		rb_err_set(err, "state_dir %s: %s", state_dir, strerror(errno));
	} else if (!rb_root_trusted(&st)) {
		rb_err_set(err, "state_dir %s is owned by uid %u with mode %04o; "
			   "it must be owned by root and not writable by group "
			   "or others, or a user could edit job budgets "
			   "(fix: chown root:root %s; chmod 755 %s)", state_dir,
			   (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			   state_dir, state_dir);
	} else {
		return sfd;
	}
	close(sfd);
	return -1;
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
	sfd = open_state_dir(state_dir, l->dir_flag, err);
	if (sfd < 0)
		goto out;
	rc = open_subdir(sfd, cluster, mode == RB_LEDGER_WRITE, mode, l, 0,
			 &l->dir_fd, err);
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

/* ---- lock ---------------------------------------------------------------- */

/* How long rb_ledger_lock waits for another holder (rb_ledger_set_lock_wait). */
static long lock_wait_ms = RB_LEDGER_LOCK_WAIT_MS;

void rb_ledger_set_lock_wait(long ms)
{
	lock_wait_ms = ms > 0 ? ms : RB_LEDGER_LOCK_WAIT_MS;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One non-blocking try: 0 = locked, 1 = held by someone, -1 = error. */
static int try_lock(int fd, int cmd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	for (;;) {
		if (fcntl(fd, cmd, &fl) == 0)
			return 0;
		if (errno == EAGAIN || errno == EACCES)
			return 1;
		if (errno != EINTR)
			return -1;
	}
}

/*
 * Take a write lock on the whole lock file, for at most lock_wait_ms: a
 * root context never waits without a deadline (docs/security.md, "The job lock"). The lock
 * file is root's alone (0600 in a root-owned directory), so only another
 * root context of this job can hold it: another node's prolog or epilog,
 * or one stuck on the shared file system. Polled, not F_OFD_SETLKW: a
 * blocking wait cannot be given a deadline without signals, which are the
 * host's. 0, 1 = still held at the deadline, -1 = error (errno).
 *
 * Open-file-description locks are tried first: classic POSIX locks belong
 * to the process, so closing *any* fd of the file in this process would
 * silently drop the lock. OFD locks conflict with classic ones, and the
 * Linux NFS client forwards both to the server. A child forked while the
 * lock is held shares it until it exits or execs (the fd is O_CLOEXEC):
 * children are only ever spawned and exec'd (plugin/core/child.c).
 */
static int lock_whole_file(int fd)
{
	long long deadline = now_ms() + lock_wait_ms;
	useconds_t pause_us = 1000;
	int cmd = F_SETLK, rc;

#ifdef F_OFD_SETLK
	cmd = F_OFD_SETLK;
#endif
	for (;;) {
		rc = try_lock(fd, cmd);
#ifdef F_OFD_SETLK
		if (rc < 0 && cmd == F_OFD_SETLK && errno == EINVAL) {
			/* old kernel, or a file system that refuses them */
			cmd = F_SETLK;
			continue;
		}
#endif
		if (rc <= 0)
			return rc;
		if (now_ms() >= deadline)
			return 1;
		usleep(pause_us);
		if (pause_us < 50000)
			pause_us *= 2;
	}
}

/*
 * Open (creating, mode 0600) "<id>.lock" of job_id's bucket. It must be a
 * regular file owned by root; a root-owned one that someone made readable
 * is put back to 0600 (only root could have), since any user who can open
 * a file can lock it and stall every root context of the job.
 */
static int open_lock_file(rb_ledger *l, int bucket_fd, uint32_t job_id,
			  const char *name, struct stat *st, rb_err *err)
{
	char path[PATH_BUF];
	int fd;

	fd = openat(bucket_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = openat(bucket_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW |
			    O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;

		lg_job_path(l, job_id, name, path, sizeof(path));
		return rb_err_set(err, "%s: %s%s", path, strerror(e),
				  e == ELOOP ? " (a symlink: remove it)" : "");
	}
	if (check_opened_file(l, fd, job_id, name, st, true, err) < 0)
		goto fail;
	if ((st->st_mode & 077) && fchmod(fd, 0600) < 0) {
		rb_err_set(err, "%s: chmod 0600: %s",
			   lg_job_path(l, job_id, name, path, sizeof(path)),
			   strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* Open (creating) "<id>.log" of job_id's bucket for append, and check it
 * (regular, root-owned, not writable by group or others) before anything
 * locks or writes it. Returns the fd (st: its fstat) or -1. */
static int open_log_rw(rb_ledger *l, int bucket_fd, uint32_t job_id,
		       const char *name, struct stat *st, rb_err *err)
{
	char path[PATH_BUF];
	int fd = -1;
	int tries;

	/* O_EXCL first so that we know whether we made it and must fix its
	 * mode against the umask; a race with gc can make both opens miss. */
	fd = openat(bucket_fd, name, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	for (tries = 0; fd < 0 && errno == ENOENT && tries < LOCK_RETRIES; tries++) {
		fd = openat(bucket_fd, name, O_RDWR | O_APPEND | O_CREAT |
			    O_EXCL | O_NOFOLLOW | O_CLOEXEC, RB_LEDGER_FILE_MODE);
		if (fd >= 0) {
			if (fchmod(fd, RB_LEDGER_FILE_MODE) < 0) {
				rb_err_set(err, "%s: chmod: %s",
					   lg_job_path(l, job_id, name, path,
						    sizeof(path)),
					   strerror(errno));
				goto fail;
			}
			break;
		}
		if (errno != EEXIST)
			break;
		fd = openat(bucket_fd, name,
			    O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 || errno != ENOENT)
			break;
	}
	if (fd < 0) {
		int e = errno;

		lg_job_path(l, job_id, name, path, sizeof(path));
		if (e == ELOOP)
			rb_err_set(err, "%s: refused: it is a symlink (remove "
				   "it)", path);
		else
			rb_err_set(err, "%s: %s", path, strerror(e));
		goto fail;
	}
	if (check_opened_file(l, fd, job_id, name, st, true, err) < 0)
		goto fail;
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/*
 * Lock j's file `name` (its lock file), retrying when gc removed it while we
 * waited: we would then hold a lock on a file nobody else will ever open,
 * while a new one with its own lock appears beside it. Only a lock on the
 * file that still carries the name counts.
 */
static int lock_named(rb_job *j, const char *name, rb_err *err)
{
	char path[PATH_BUF];

	for (int tries = 0; tries < LOCK_RETRIES; tries++) {
		struct stat held, named;
		int rc;

		j->lock_fd = open_lock_file(j->l, j->bucket_fd, j->job_id, name,
					    &held, err);
		if (j->lock_fd < 0)
			return -1;
		rc = lock_whole_file(j->lock_fd);
		if (rc != 0) {
			lg_job_path(j->l, j->job_id, name, path, sizeof(path));
			if (rc > 0)
				return rb_err_set(err, "%s: still locked after %ld ms by another root context of this job (another node's prolog or epilog, or one stuck on the shared file system)",
						  path, lock_wait_ms);
			return rb_err_set(err, "%s: lock: %s", path,
					  strerror(errno));
		}
		if (fstatat(j->bucket_fd, name, &named, AT_SYMLINK_NOFOLLOW) == 0) {
			if (named.st_ino == held.st_ino &&
			    named.st_dev == held.st_dev)
				return 0;
		} else if (errno != ENOENT) {
			return rb_err_set(err, "%s: %s",
					  lg_job_path(j->l, j->job_id, name, path,
						   sizeof(path)),
					  strerror(errno));
		}
		close(j->lock_fd);
		j->lock_fd = -1;
	}
	return rb_err_set(err, "%s: removed under us %d times while locking",
			  lg_job_path(j->l, j->job_id, name, path, sizeof(path)),
			  LOCK_RETRIES);
}

int rb_ledger_lock(rb_ledger *l, uint32_t job_id, rb_job **out, rb_err *err)
{
	char name[NAME_BUF];
	rb_job *j = NULL;

	*out = NULL;
	if (l->mode != RB_LEDGER_WRITE) {
		rb_err_set(err, "%s: locking needs the ledger opened for "
			   "writing", l->path);
		goto fail;
	}
	if (lg_check_job_id(job_id, err) < 0)
		goto fail;
	j = calloc(1, sizeof(*j));
	if (!j) {
		rb_err_set(err, "out of memory");
		goto fail;
	}
	j->l = l;
	j->job_id = job_id;
	j->bucket_fd = -1;
	j->lock_fd = -1;
	j->log_fd = -1;
	j->log_size = -1;
	if (lg_open_bucket(l, job_id, true, &j->bucket_fd, err) != 0)
		goto fail;
	lg_file_name(job_id, ".lock", name, sizeof(name));
	if (lock_named(j, name, err) < 0)
		goto fail;
	lg_file_name(job_id, ".log", name, sizeof(name));
	{
		struct stat log_st;

		/* nobody appends without the lock: its size now is where our
		 * append will land */
		j->log_fd = open_log_rw(l, j->bucket_fd, job_id, name, &log_st,
					err);
		if (j->log_fd < 0)
			goto fail;
		j->log_size = log_st.st_size;
	}
	*out = j;
	return 0;
fail:
	rb_ledger_unlock(j);
	return -1;
}

void rb_ledger_unlock(rb_job *j)
{
	if (!j)
		return;
	if (j->log_fd >= 0)
		close(j->log_fd);
	/* Closing the fd releases the lock (OFD or classic). */
	if (j->lock_fd >= 0)
		close(j->lock_fd);
	if (j->bucket_fd >= 0)
		close(j->bucket_fd);
	free(j);
}

/* ---- the record ---------------------------------------------------------- */

/*
 * Read a record file (fd) whole: up to RB_RECORD_TEXT_MAX + 1 bytes, one
 * more than a record may have, so that one that grew after fstat is still
 * caught as too big. Into `small` first (a record is ~1 KiB): a 64 KiB
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

static int read_at(rb_ledger *l, int held_bucket, uint32_t job_id,
		   rb_record *rec, rb_err *err);
int rb_ledger_read(rb_ledger *l, uint32_t job_id, rb_record *rec, rb_err *err)
{
	return read_at(l, -1, job_id, rec, err);
}
int rb_ledger_read_locked(rb_job *j, rb_record *rec, rb_err *err)
{
	return read_at(j->l, j->bucket_fd, j->job_id, rec, err);
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
	/*
	 * Read up to one byte more than allowed, so that a file that grew
	 * after fstat is still caught as too big (see read_text).
	 */
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

static int read_at(rb_ledger *l, int held_bucket, uint32_t job_id,
		   rb_record *rec, rb_err *err)
{
	char name[NAME_BUF];
	struct stat st;
	int bucket_fd = -1, fd = -1;
	int rc = -1, r;

	if (lg_check_job_id(job_id, err) < 0)
		goto fail;
	lg_file_name(job_id, ".rec", name, sizeof(name));
	if (held_bucket >= 0)
		r = 0;
	else
		r = lg_open_bucket(l, job_id, false, &bucket_fd, err);
	if (r < 0)
		goto fail;
	if (r == 0)
		r = lg_open_file_ro(l, held_bucket >= 0 ? held_bucket : bucket_fd,
				 job_id, name, &fd, &st, err);
	if (r < 0)
		goto fail;
	if (r == 1) {
		rb_record_init(rec);
		rc = 1;
		goto fail;
	}
	rc = read_record_fd(l, job_id, name, fd, &st, rec, err);
fail:
	if (fd >= 0)
		close(fd);
	if (bucket_fd >= 0)
		close(bucket_fd);
	return rc;
}

/* The event log is made (under the lock) before the job's group is known,
 * and logs from before 2026-12 are 0644: give it the record's group and
 * mode. A failure only leaves it root's: logged, nothing lost. */
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
 * have (a 64 KiB malloc+free per write made glibc trim its heap each
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

/*
 * Write text into the temp file tmp, readable by root and the job's group
 * only (docs/security.md, "Who reads what"; the owner stays root, so no
 * user can chmod it), fsync'd and closed. *made says whether it exists.
 */
static int write_temp(rb_job *j, const char *tmp, const char *name,
		      const char *text, size_t n, uint32_t gid, bool *made,
		      rb_err *err)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	char path[PATH_BUF];
	int fd;

	/* We hold the job's lock, so a temp file with our pid can only be
	 * the leftover of a crashed earlier process that had it. */
	fd = openat(j->bucket_fd, tmp, flags, RB_LEDGER_FILE_MODE);
	if (fd < 0 && errno == EEXIST) {
		if (unlinkat(j->bucket_fd, tmp, 0) < 0 && errno != ENOENT)
			goto fail;
		fd = openat(j->bucket_fd, tmp, flags, RB_LEDGER_FILE_MODE);
	}
	if (fd < 0)
		goto fail;
	*made = true;
	if (fchown(fd, 0, gid) < 0 || fchmod(fd, RB_LEDGER_FILE_MODE) < 0 ||
	    write_all(fd, text, n) < 0 || fsync(fd) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		goto fail;
	}
	/* close() reports delayed write errors on NFS. */
	if (close(fd) < 0)
		return rb_err_set(err, "%s.tmp.%ld: close: %s", PATH(),
				  (long)getpid(), strerror(errno));
	return 0;
fail:
	return rb_err_set(err, "%s.tmp.%ld: %s", PATH(), (long)getpid(),
			  strerror(errno));
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
	tmp_name(name, (long)getpid(), tmp, sizeof(tmp));
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
