/*
 * ledger_lock.c - a job's lock and its deadline (see ledger.h, "the lock",
 * and docs/security.md, "The job lock").
 *
 * rb_ledger_lock opens (creating) the job's root-only lock file and takes a
 * write lock on it, waiting at most the deadline for another holder; then
 * it opens the job's event log for append, so that nothing appends without
 * the lock.
 */
/* F_OFD_SETLKW (see lock_whole_file) is only declared with _GNU_SOURCE. */
#define _GNU_SOURCE
#include "ledger_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
 * children are only ever spawned and exec'd (plugin/slurm/child.c).
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
	if (lg_check_opened_file(l, fd, job_id, name, st, true, err) < 0)
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
	if (lg_check_opened_file(l, fd, job_id, name, st, true, err) < 0)
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
	struct stat log_st;
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
	j->log_fd = open_log_rw(l, j->bucket_fd, job_id, name, &log_st, err);
	if (j->log_fd < 0)
		goto fail;
	/* nobody appends without the lock: its size now is where our append
	 * will land */
	j->log_size = log_st.st_size;
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
