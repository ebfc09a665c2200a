/*
 * test_ledger.c - records and event logs on disk (plugin/store/ledger.c,
 * ledger_fs.c, ledger_lock.c, eventlog.c, ledger_scan.c).
 *
 * Each test gets a fresh state_dir (mkdtemp, chmod 0755). The ledger
 * demands a root-owned state_dir, so these tests need root, which is how
 * they run here (as root, the owner check is exercised by chown-ing the
 * directory to another uid). As any other user they are skipped.
 */
#define _GNU_SOURCE /* setresuid, F_OFD_SETLK */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "ledger.h"

#define CLUSTER "c1"
#define JOB 42u
/* Contention enough to lose an update without the lock, few enough that no
 * child waits past the lock's 5 s deadline on a loaded 2-core machine (the
 * lock is not fair: 8 x 200 under sanitizers starved one child there). */
#define CHILDREN 4
#define ROUNDS 100

typedef struct {
	char state[64];     /* the state_dir */
	char cluster[128];  /* <state>/c1 */
	char outside[128];  /* a directory outside state_dir: symlink targets */
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (ut_tmpdir(f->state, sizeof(f->state), "/tmp/rb-ledger-XXXXXX", 0755) < 0)
		return -1;
	snprintf(f->cluster, sizeof(f->cluster), "%s/%s", f->state, CLUSTER);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->state);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	ut_rmtree(f->state);
	free(f);
	return 0;
}

#define NEED_ROOT()                                                        \
	do {                                                               \
		if (geteuid() != 0) {                                      \
			print_message("needs root (state_dir must be "     \
				      "root-owned): skipped\n");          \
			skip();                                            \
		}                                                          \
	} while (0)

static rb_ledger *open_write(fixture *f)
{
	rb_ledger *l = NULL;
	rb_err err = { "" };

	if (rb_ledger_open(f->state, CLUSTER, RB_LEDGER_WRITE, &l, &err) != 0)
		fail_msg("open: %s", err.msg);
	return l;
}

static rb_job *lock_job(rb_ledger *l, uint32_t id)
{
	rb_job *j = NULL;
	rb_err err = { "" };

	if (rb_ledger_lock(l, id, &j, &err) != 0)
		fail_msg("lock: %s", err.msg);
	return j;
}

static rb_record *new_record(void)
{
	rb_record *r = malloc(sizeof(*r));

	assert_non_null(r);
	rb_record_init(r);
	return r;
}

/* Lock, write rec with the given failure count, unlock. */
static void store_gid(rb_ledger *l, uint32_t id, int failures, uint32_t gid)
{
	rb_record *r = new_record();
	rb_job *j = lock_job(l, id);
	rb_err err = { "" };

	assert_true(rb_ledger_read(l, id, r, &err) >= 0);
	r->budget.failures = failures;
	r->gid = gid;
	strcpy(r->budget.checkpoint, "/home/a/ck dir/checkpoint=7");
	if (rb_ledger_write(j, r, &err) != 0)
		fail_msg("write: %s", err.msg);
	rb_ledger_unlock(j);
	free(r);
}

static void store(rb_ledger *l, uint32_t id, int failures)
{
	store_gid(l, id, failures, 0);
}

static void job_file(fixture *f, uint32_t id, const char *suffix, char *buf,
		     size_t len)
{
	snprintf(buf, len, "%s/%03u/%u%s", f->cluster, id % 1000, id, suffix);
}

static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static size_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
	return (size_t)n;
}

/* A file outside state_dir that symlinks point at; must stay untouched. */
static void make_target(fixture *f, char *target, size_t len)
{
	mkdir(f->outside, 0755);
	snprintf(target, len, "%s/precious", f->outside);
	write_file(target, "precious\n", 9);
}

static void assert_target_untouched(const char *target)
{
	char buf[64];

	assert_int_equal(read_file(target, buf, sizeof(buf)), 9);
	assert_string_equal(buf, "precious\n");
}

static void assert_contains(const char *msg, const char *want)
{
	if (!strstr(msg, want))
		fail_msg("message '%s' lacks '%s'", msg, want);
}

/* ---- opening ------------------------------------------------------------- */

static void open_refuses_bad_cluster_names(void **state)
{
	static const char *const bad[] = {
		"", ".", "..", ".hidden", "a/b", "../x", "a b", "c\n",
		"x234567890123456789012345678901234567890123456789012345678901234",
	};
	fixture *f = *state;
	size_t i;

	NEED_ROOT();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rb_ledger *l = NULL;
		rb_err err = { "" };

		if (rb_ledger_open(f->state, bad[i], RB_LEDGER_WRITE, &l,
				   &err) != -1)
			fail_msg("accepted cluster name '%s'", bad[i]);
		assert_null(l);
		assert_contains(err.msg, "invalid cluster name");
	}
	/* 63 characters and dots inside are fine. */
	{
		rb_ledger *l = NULL;
		rb_err err = { "" };

		assert_int_equal(rb_ledger_open(f->state, "a.b-c_D9"
			"123456789012345678901234567890123456789012345678901234",
			RB_LEDGER_WRITE, &l, &err), 0);
		rb_ledger_close(l);
	}
}

static void write_mode_creates_dirs_0755_and_files_0640_of_the_jobs_group(
	void **state)
{
	fixture *f = *state;
	char path[256];
	struct stat st;
	mode_t old = umask(077);
	rb_ledger *l;

	NEED_ROOT();
	l = open_write(f);
	store_gid(l, JOB, 1, 4242);
	umask(old);
	assert_int_equal(stat(f->cluster, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	snprintf(path, sizeof(path), "%s/042", f->cluster);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	job_file(f, JOB, ".rec", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 4242);
	job_file(f, JOB, ".log", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 4242);
	rb_ledger_close(l);
}

/* As uid/gid (no other groups): 0 if the record reads, else errno. */
static int read_as(fixture *f, uid_t uid, gid_t gid)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		rb_record *r = new_record();
		rb_ledger *l;
		rb_err err = { "" };
		int rc;

		if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			_exit(100);
		if (rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &l,
				   &err) < 0)
			_exit(101);
		rc = rb_ledger_read(l, JOB, r, &err);
		if (rc < 0 && strstr(err.msg, "not readable by you"))
			_exit(EACCES);
		_exit(rc == 0 ? 0 : 102);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* docs/security.md, "Trust": state_dir must be a real directory (a
 * symlink, the mode and the owner: the tests below). */
static void state_dir_must_be_a_real_directory_only_root_can_write(void **state)
{
	fixture *f = *state;
	rb_ledger *l = NULL;
	rb_err err = { "" };
	char file[128];

	NEED_ROOT();
	snprintf(file, sizeof(file), "%s/file", f->state);
	write_file(file, "x", 1);
	assert_int_equal(rb_ledger_open_read(file, CLUSTER, &l, &err), -1);
	assert_null(l);
	assert_contains(err.msg, "a symlink or not a directory");
	assert_int_not_equal(rb_ledger_open_read(f->state, CLUSTER, &l, &err),
			     -1);
	rb_ledger_close(l);
}

/* As uid and gid 65534 (no other groups), rb_ledger_read_for_listing of
 * JOB: its return value, or 100 + the step that failed. */
static int read_for_listing_as_nobody(fixture *f)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		rb_record *r = new_record();
		rb_ledger *l;
		rb_err err = { "" };

		if (setgroups(0, NULL) < 0 ||
		    setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(100);
		if (rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &l,
				   &err) < 0)
			_exit(101);
		/* the plain read keeps its three outcomes: an error */
		if (rb_ledger_read(l, JOB, r, &err) != -1 ||
		    !strstr(err.msg, "not readable by you"))
			_exit(102);
		_exit(rb_ledger_read_for_listing(l, JOB, r, &err) & 0xff);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* docs/security.md, "Who reads what": a listing as a user skips another
 * group's record because the ledger says so with a value, not errno. */
static void test_record_of_another_group_reads_as_not_readable(void **state)
{
	fixture *f = *state;
	char path[256];
	struct stat st;
	rb_ledger *l;

	NEED_ROOT();
	l = open_write(f);
	store_gid(l, JOB, 1, 0);
	rb_ledger_close(l);
	job_file(f, JOB, ".rec", path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_int_equal(read_for_listing_as_nobody(f), RB_LEDGER_NOT_READABLE);
}

/* Section 10: other users' data never leaks. A job's record names its
 * user, account, work dir and checkpoints: root and the job's group read
 * it, other users get EACCES with a message that says so. */
static void records_are_readable_by_root_and_the_jobs_group_only(void **state)
{
	fixture *f = *state;
	rb_ledger *l;

	NEED_ROOT();
	l = open_write(f);
	store_gid(l, JOB, 1, 65534);
	rb_ledger_close(l);
	assert_int_equal(read_as(f, 65534, 65534), 0);  /* the job's group */
	assert_int_equal(read_as(f, 4243, 4243), EACCES); /* anyone else */
}

static void open_refuses_state_dir_writable_by_others(void **state)
{
	fixture *f = *state;
	rb_ledger_mode modes[] = { RB_LEDGER_WRITE, RB_LEDGER_READ };
	size_t i;

	NEED_ROOT();
	assert_int_equal(chmod(f->state, 0777), 0);
	for (i = 0; i < 2; i++) {
		rb_ledger *l = NULL;
		rb_err err = { "" };

		assert_int_equal(rb_ledger_open(f->state, CLUSTER, modes[i], &l,
						&err), -1);
		assert_null(l);
		assert_contains(err.msg, f->state);
		assert_contains(err.msg, "mode 0777");
		assert_contains(err.msg, "chown root:root");
		assert_contains(err.msg, "chmod 755");
	}
	assert_int_equal(chmod(f->state, 0775), 0);
	{
		rb_ledger *l = NULL;
		rb_err err = { "" };

		assert_int_equal(rb_ledger_open(f->state, CLUSTER,
						RB_LEDGER_WRITE, &l, &err), -1);
		assert_contains(err.msg, "mode 0775");
	}
}

static void open_refuses_state_dir_owned_by_another_uid(void **state)
{
	fixture *f = *state;
	rb_ledger *l = NULL;
	rb_err err = { "" };

	NEED_ROOT();
	assert_int_equal(chown(f->state, 65534, 65534), 0);
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_WRITE, &l,
					&err), -1);
	assert_null(l);
	assert_contains(err.msg, f->state);
	assert_contains(err.msg, "owned by uid 65534");
	assert_contains(err.msg, "chown root:root");
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &l,
					&err), -1);
	assert_int_equal(chown(f->state, 0, 0), 0);
}

static void open_refuses_symlinked_state_dir(void **state)
{
	fixture *f = *state;
	char link[128];
	rb_ledger *l = NULL;
	rb_err err = { "" };

	NEED_ROOT();
	mkdir(f->outside, 0755);
	snprintf(link, sizeof(link), "%s/link", f->state);
	assert_int_equal(symlink(f->outside, link), 0);
	assert_int_equal(rb_ledger_open(link, CLUSTER, RB_LEDGER_WRITE, &l,
					&err), -1);
	assert_contains(err.msg, "symlink");
}

static void open_read_of_missing_cluster_is_an_error(void **state)
{
	fixture *f = *state;
	rb_ledger *l = NULL;
	rb_err err = { "" };

	NEED_ROOT();
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &l,
					&err), -1);
	assert_contains(err.msg, "no ledger for cluster 'c1'");
	/* Reading never creates anything. */
	assert_int_equal(access(f->cluster, F_OK), -1);
}

static void write_mode_refuses_untrusted_subdirs_and_files(void **state)
{
	fixture *f = *state;
	char path[256];
	rb_ledger *l;
	rb_job *j = NULL;
	rb_err err = { "" };
	rb_record *r = new_record();

	NEED_ROOT();
	l = open_write(f);
	store(l, JOB, 1);
	/* A group-writable bucket. */
	snprintf(path, sizeof(path), "%s/042", f->cluster);
	assert_int_equal(chmod(path, 0775), 0);
	assert_int_equal(rb_ledger_lock(l, JOB, &j, &err), -1);
	assert_null(j);
	assert_contains(err.msg, path);
	assert_contains(err.msg, "mode 0775");
	assert_int_equal(chmod(path, 0755), 0);
	/* A record owned by a user. */
	job_file(f, JOB, ".rec", path, sizeof(path));
	assert_int_equal(chown(path, 65534, 0), 0);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), -1);
	assert_contains(err.msg, "owned by uid 65534");
	assert_int_equal(chown(path, 0, 0), 0);
	/* A log that others may write. */
	job_file(f, JOB, ".log", path, sizeof(path));
	assert_int_equal(chmod(path, 0666), 0);
	assert_int_equal(rb_ledger_lock(l, JOB, &j, &err), -1);
	assert_contains(err.msg, "chmod 644");
	/* The cluster directory itself. */
	assert_int_equal(chown(f->cluster, 65534, 0), 0);
	rb_ledger_close(l);
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_WRITE, &l,
					&err), -1);
	assert_contains(err.msg, f->cluster);
	free(r);
}

static void read_mode_cannot_lock(void **state)
{
	fixture *f = *state;
	rb_ledger *w, *l = NULL;
	rb_job *j = NULL;
	rb_err err = { "" };

	NEED_ROOT();
	w = open_write(f);
	rb_ledger_close(w);
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &l,
					&err), 0);
	assert_int_equal(rb_ledger_lock(l, JOB, &j, &err), -1);
	assert_null(j);
	assert_contains(err.msg, "writing");
	rb_ledger_close(l);
}

/* ---- records ------------------------------------------------------------- */

static void record_round_trips_through_files(void **state)
{
	fixture *f = *state;
	rb_record *a = new_record(), *b = new_record();
	rb_ledger *l, *ro = NULL;
	rb_err err = { "" };
	time_t before = time(NULL);
	rb_job *j;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	assert_int_equal(rb_ledger_read(l, JOB, a, &err), 1);
	strcpy(a->user, "alice");
	a->budget.failures = 2;
	a->budget.restore_failures = 1;
	a->budget.cur.attempt = 3;
	a->budget.cur.phase = RB_PHASE_RESTORING;
	strcpy(a->budget.checkpoint, "/home/a/ck dir/=%\n\xff/checkpoint-7");
	if (rb_ledger_write(j, a, &err) != 0)
		fail_msg("write: %s", err.msg);
	/* The write names the record and stamps it. */
	assert_int_equal(a->job_id, JOB);
	assert_string_equal(a->cluster, CLUSTER);
	assert_true(a->seq == 1);
	assert_true(a->updated >= before && a->created == a->updated);
	rb_ledger_unlock(j);

	/* Read back by a reader that holds no lock, in READ mode. */
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &ro,
					&err), 0);
	if (rb_ledger_read(ro, JOB, b, &err) != 0)
		fail_msg("read: %s", err.msg);
	assert_int_equal(b->job_id, JOB);
	assert_string_equal(b->user, "alice");
	assert_int_equal(b->budget.failures, 2);
	assert_int_equal(b->budget.restore_failures, 1);
	assert_true(b->budget.cur.attempt == 3);
	assert_int_equal(b->budget.cur.phase, RB_PHASE_RESTORING);
	assert_string_equal(b->budget.checkpoint, a->budget.checkpoint);
	assert_true(b->seq == 1 && b->created == a->created);

	/* A second write bumps seq and keeps created. */
	j = lock_job(l, JOB);
	b->budget.failures = 3;
	assert_int_equal(rb_ledger_write(j, b, &err), 0);
	rb_ledger_unlock(j);
	assert_int_equal(rb_ledger_read(ro, JOB, a, &err), 0);
	assert_int_equal(a->budget.failures, 3);
	assert_true(a->seq == 2 && a->created == b->created);
	rb_ledger_close(ro);
	rb_ledger_close(l);
	free(b);
	free(a);
}

static void read_of_missing_record_returns_1_and_a_fresh_record(void **state)
{
	fixture *f = *state;
	rb_record *r = new_record();
	rb_ledger *l;
	rb_err err = { "" };

	NEED_ROOT();
	l = open_write(f);
	memset(r, 0x5a, sizeof(*r));
	/* No bucket yet, then a bucket without the record. */
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 1);
	assert_true(r->budget.cur.attempt == -1);
	assert_int_equal(r->budget.failures, 0);
	store(l, JOB + 1000, 1);
	memset(r, 0x5a, sizeof(*r));
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 1);
	assert_true(r->budget.last_charged == -1);
	assert_int_equal(rb_ledger_read(l, 0, r, &err), -1);
	assert_contains(err.msg, "invalid job id 0");
	rb_ledger_close(l);
	free(r);
}

static void write_refuses_a_record_that_would_not_read_back(void **state)
{
	fixture *f = *state;
	rb_record *r = new_record();
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;

	NEED_ROOT();
	l = open_write(f);
	store(l, JOB, 4);
	j = lock_job(l, JOB);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	r->budget.failures = -1;
	assert_int_equal(rb_ledger_write(j, r, &err), -1);
	assert_contains(err.msg, "bad value for failures");
	assert_true(r->seq == 1); /* given back unchanged */
	/* Another job's record is not filed under this one. */
	r->budget.failures = 5;
	r->job_id = JOB + 1;
	assert_int_equal(rb_ledger_write(j, r, &err), -1);
	assert_contains(err.msg, "refusing to store the record of job 43");
	rb_ledger_unlock(j);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	assert_int_equal(r->budget.failures, 4);
	rb_ledger_close(l);
	free(r);
}

static void symlink_planted_as_record_is_not_followed(void **state)
{
	fixture *f = *state;
	char target[256], rec[256];
	rb_record *r = new_record();
	struct stat st;
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;

	NEED_ROOT();
	make_target(f, target, sizeof(target));
	l = open_write(f);
	j = lock_job(l, JOB);
	job_file(f, JOB, ".rec", rec, sizeof(rec));
	assert_int_equal(symlink(target, rec), 0);
	/* Reading refuses it. */
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), -1);
	assert_contains(err.msg, "symlink");
	assert_target_untouched(target);
	/* Writing replaces the link itself (rename), never the target. */
	assert_int_equal(rb_ledger_write(j, r, &err), 0);
	assert_target_untouched(target);
	assert_int_equal(lstat(rec, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	rb_ledger_unlock(j);
	rb_ledger_close(l);
	free(r);
}

static void symlink_planted_as_log_is_not_followed(void **state)
{
	fixture *f = *state;
	char target[256], log[256], bucket[256];
	rb_ledger *l;
	rb_job *j = NULL;
	rb_err err = { "" };

	NEED_ROOT();
	make_target(f, target, sizeof(target));
	l = open_write(f);
	snprintf(bucket, sizeof(bucket), "%s/042", f->cluster);
	assert_int_equal(mkdir(bucket, 0755), 0);
	job_file(f, JOB, ".log", log, sizeof(log));
	assert_int_equal(symlink(target, log), 0);
	assert_int_equal(rb_ledger_lock(l, JOB, &j, &err), -1);
	assert_null(j);
	assert_contains(err.msg, "symlink");
	assert_int_equal(rb_ledger_events(l, JOB, NULL, NULL, &err), -1);
	assert_contains(err.msg, "symlink");
	assert_target_untouched(target);
	rb_ledger_close(l);
}

static void symlink_planted_as_bucket_dir_is_not_followed(void **state)
{
	fixture *f = *state;
	char target[256], bucket[256], inside[256];
	rb_record *r = new_record();
	rb_ledger *l;
	rb_job *j = NULL;
	rb_err err = { "" };

	NEED_ROOT();
	make_target(f, target, sizeof(target));
	l = open_write(f);
	snprintf(bucket, sizeof(bucket), "%s/042", f->cluster);
	assert_int_equal(symlink(f->outside, bucket), 0);
	/* A record placed in the target must not be seen through it. */
	snprintf(inside, sizeof(inside), "%s/42.rec", f->outside);
	write_file(inside, "junk\n", 5);
	assert_int_equal(rb_ledger_lock(l, JOB, &j, &err), -1);
	assert_null(j);
	assert_contains(err.msg, "symlink");
	/* A reader gets an error, not "no record". */
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), -1);
	assert_contains(err.msg, "symlink");
	assert_int_equal(access(f->outside, F_OK), 0);
	snprintf(inside, sizeof(inside), "%s/42.log", f->outside);
	assert_int_equal(access(inside, F_OK), -1);
	assert_target_untouched(target);
	rb_ledger_close(l);
	free(r);
}

static void symlink_planted_as_cluster_dir_is_not_followed(void **state)
{
	fixture *f = *state;
	rb_ledger *l = NULL;
	rb_err err = { "" };

	NEED_ROOT();
	mkdir(f->outside, 0755);
	assert_int_equal(symlink(f->outside, f->cluster), 0);
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_WRITE, &l,
					&err), -1);
	assert_contains(err.msg, "symlink");
	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &l,
					&err), -1);
}

static void symlink_planted_as_temp_file_is_not_followed(void **state)
{
	fixture *f = *state;
	char target[256], tmp[256];
	rb_record *r = new_record();
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;

	NEED_ROOT();
	make_target(f, target, sizeof(target));
	l = open_write(f);
	j = lock_job(l, JOB);
	snprintf(tmp, sizeof(tmp), "%s/042/42.rec.tmp.%ld", f->cluster,
		 (long)getpid());
	assert_int_equal(symlink(target, tmp), 0);
	assert_int_equal(rb_ledger_write(j, r, &err), 0);
	assert_target_untouched(target);
	assert_int_equal(access(tmp, F_OK), -1);
	rb_ledger_unlock(j);
	rb_ledger_close(l);
	free(r);
}

/*
 * The write is: temp file, write, fsync, rename, fsync dir. Stop it by hand
 * after each step that can be seen on disk: readers must see the old
 * record until the rename, and the new one from then on.
 */
static void interrupted_write_leaves_the_old_or_the_new_record(void **state)
{
	fixture *f = *state;
	rb_record *r = new_record();
	char *text = malloc(RB_RECORD_TEXT_MAX + 1);
	char half[256], whole[256], rec[256];
	rb_ledger *l;
	rb_err err = { "" };
	ssize_t n;

	NEED_ROOT();
	assert_non_null(text);
	l = open_write(f);
	store(l, JOB, 1); /* the old record */

	/* The new record's text, as the writer would produce it. */
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	r->budget.failures = 2;
	r->seq++;
	n = rb_record_format(r, text, RB_RECORD_TEXT_MAX + 1);
	assert_true(n > 0);

	/* Crash while writing the temp file. */
	snprintf(half, sizeof(half), "%s/042/42.rec.tmp.99991", f->cluster);
	write_file(half, text, (size_t)n / 2);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	assert_int_equal(r->budget.failures, 1);

	/* Crash after writing and fsync, before the rename. */
	snprintf(whole, sizeof(whole), "%s/042/42.rec.tmp.99992", f->cluster);
	write_file(whole, text, (size_t)n);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	assert_int_equal(r->budget.failures, 1);

	/* Crash after the rename (before or after the directory fsync). */
	job_file(f, JOB, ".rec", rec, sizeof(rec));
	assert_int_equal(rename(whole, rec), 0);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	assert_int_equal(r->budget.failures, 2);

	/* A real write afterwards, with the stale half file still there. */
	store(l, JOB, 3);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	assert_int_equal(r->budget.failures, 3);
	assert_int_equal(access(half, F_OK), 0);
	rb_ledger_close(l);
	free(text);
	free(r);
}

static void corrupt_record_on_disk_is_refused(void **state)
{
	fixture *f = *state;
	char rec[256];
	char *buf = malloc(RB_RECORD_TEXT_MAX + 16);
	rb_record *r = new_record();
	rb_ledger *l;
	rb_err err = { "" };
	size_t n;

	NEED_ROOT();
	assert_non_null(buf);
	l = open_write(f);
	store(l, JOB, 1);
	job_file(f, JOB, ".rec", rec, sizeof(rec));
	n = read_file(rec, buf, RB_RECORD_TEXT_MAX + 16);

	/* One flipped bit. */
	buf[n / 2] ^= 4;
	write_file(rec, buf, n);
	r->budget.failures = 77;
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), -1);
	assert_contains(err.msg, rec);
	assert_contains(err.msg, "corrupt record");
	assert_contains(err.msg, "checksum mismatch");
	assert_int_equal(r->budget.failures, 77); /* never zeros */
	buf[n / 2] ^= 4;

	/* Torn: only the first half on disk. */
	write_file(rec, buf, n / 2);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), -1);
	assert_contains(err.msg, "corrupt");

	/* Empty, and too big. */
	write_file(rec, buf, 0);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), -1);
	assert_contains(err.msg, "corrupt");
	memset(buf, 'x', RB_RECORD_TEXT_MAX + 1);
	write_file(rec, buf, RB_RECORD_TEXT_MAX + 1);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), -1);
	assert_contains(err.msg, "corrupt");
	rb_ledger_close(l);
	free(r);
	free(buf);
}

/* ---- events -------------------------------------------------------------- */

typedef struct {
	int ok, bad;
	char lines[8][512];
} event_seen;

static int collect(const char *line, bool ok, void *ctx)
{
	event_seen *s = ctx;
	int i = s->ok + s->bad;

	if (i < 8)
		snprintf(s->lines[i], sizeof(s->lines[i]), "%s%s",
			 ok ? "" : "BAD ", line);
	if (ok)
		s->ok++;
	else
		s->bad++;
	return 0;
}

static void append(rb_job *j, const char *event)
{
	rb_err err = { "" };

	if (rb_ledger_append(j, event, &err) != 0)
		fail_msg("append: %s", err.msg);
}

static void events_append_and_read_back_intact(void **state)
{
	fixture *f = *state;
	event_seen seen;
	char log[256], buf[1024], want[64];
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	append(j, "kind=start attempt=0 phase=FRESH");
	append(j, "kind=end attempt=0 end=failed:1");
	append(j, "kind=start attempt=1 checkpoint=/a%20b");
	rb_ledger_unlock(j);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok, 3);
	assert_int_equal(seen.bad, 0);
	/* Stored as "t=<unix seconds> <event> crc=<16 hex>". */
	assert_memory_equal(seen.lines[0], "t=", 2);
	assert_non_null(strstr(seen.lines[0], " kind=start attempt=0 phase=FRESH"
			       " crc="));
	assert_int_equal(strlen(strstr(seen.lines[2], " crc=")), 5 + 16);
	assert_non_null(strstr(seen.lines[2], "checkpoint=/a%20b"));
	/* The crc is over the bytes before " crc=". */
	job_file(f, JOB, ".log", log, sizeof(log));
	read_file(log, buf, sizeof(buf));
	*strchr(buf, '\n') = '\0';
	*strstr(buf, " crc=") = '\0';
	snprintf(want, sizeof(want), " crc=%016llx",
		 (unsigned long long)rb_checksum(buf, strlen(buf)));
	assert_non_null(strstr(seen.lines[0], want));
	rb_ledger_close(l);
}

static int stop_after_one(const char *line, bool ok, void *ctx)
{
	(void)line;
	(void)ok;
	(*(int *)ctx)++;
	return 1;
}

static void events_callback_can_stop_the_walk(void **state)
{
	fixture *f = *state;
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;
	int calls = 0;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	append(j, "kind=a");
	append(j, "kind=b");
	rb_ledger_unlock(j);
	assert_int_equal(rb_ledger_events(l, JOB, stop_after_one, &calls, &err),
			 0);
	assert_int_equal(calls, 1);
	rb_ledger_close(l);
}

static void torn_last_event_line_is_reported_not_ok(void **state)
{
	fixture *f = *state;
	event_seen seen;
	char log[256];
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;
	int fd;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	append(j, "kind=start attempt=0");
	append(j, "kind=end attempt=0");
	/* A crash in the middle of the third append. */
	job_file(f, JOB, ".log", log, sizeof(log));
	fd = open(log, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "t=1 kind=start atte", 19), 19);
	close(fd);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok, 2);
	assert_int_equal(seen.bad, 1);
	assert_string_equal(seen.lines[2], "BAD t=1 kind=start atte");

	/* The next append starts a new line: the torn one stays one bad
	 * line and the new event is intact. */
	append(j, "kind=start attempt=1");
	rb_ledger_unlock(j);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok, 3);
	assert_int_equal(seen.bad, 1);
	assert_non_null(strstr(seen.lines[3], "kind=start attempt=1 crc="));
	rb_ledger_close(l);
}

static void edited_event_line_is_reported_not_ok(void **state)
{
	fixture *f = *state;
	event_seen seen;
	char log[256], buf[1024];
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;
	size_t n;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	append(j, "kind=end attempt=0 end=failed:1");
	append(j, "kind=start attempt=1");
	rb_ledger_unlock(j);
	job_file(f, JOB, ".log", log, sizeof(log));
	n = read_file(log, buf, sizeof(buf));
	*strstr(buf, "failed:1") = 'F';
	write_file(log, buf, n);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok, 1);
	assert_int_equal(seen.bad, 1);
	assert_memory_equal(seen.lines[0], "BAD ", 4);
	rb_ledger_close(l);
}

/* A summary line ("kind=folded") is the fold's alone (eventlog_fold.c):
 * appended as an event it would be a second summary, and the next fold
 * would take it for the first and drop what was summed before it. */
static void an_event_of_the_folds_kind_is_refused(void **state)
{
	fixture *f = *state;
	event_seen seen;
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	assert_int_equal(rb_ledger_append(j, "kind=folded attempts=0-9", &err),
			 -1);
	assert_contains(err.msg, "kind=folded");
	/* with no field after it too: the line's " crc=" would follow it and
	 * make it read as a summary (found by the events fuzzer) */
	assert_int_equal(rb_ledger_append(j, "kind=folded", &err), -1);
	assert_int_equal(rb_ledger_append(j, "kind=foldedx attempt=1", &err), 0);
	rb_ledger_unlock(j);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok, 1);
	rb_ledger_close(l);
}

static void event_that_is_not_one_printable_line_is_refused(void **state)
{
	fixture *f = *state;
	event_seen seen;
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;
	char *big = malloc(40000);

	NEED_ROOT();
	assert_non_null(big);
	l = open_write(f);
	j = lock_job(l, JOB);
	assert_int_equal(rb_ledger_append(j, "kind=x\nt=1 forged", &err), -1);
	assert_contains(err.msg, "not printable");
	assert_int_equal(rb_ledger_append(j, "kind=\xff", &err), -1);
	assert_int_equal(rb_ledger_append(j, "", &err), -1);
	memset(big, 'a', 39999);
	big[39999] = '\0';
	assert_int_equal(rb_ledger_append(j, big, &err), -1);
	rb_ledger_unlock(j);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok + seen.bad, 0);
	rb_ledger_close(l);
	free(big);
}

static void events_of_a_job_without_log_return_1(void **state)
{
	fixture *f = *state;
	rb_ledger *l;
	rb_err err = { "" };
	int calls = 0;

	NEED_ROOT();
	l = open_write(f);
	assert_int_equal(rb_ledger_events(l, JOB, stop_after_one, &calls, &err),
			 1);
	store(l, JOB + 1000, 1); /* bucket exists, this job's log does not */
	assert_int_equal(rb_ledger_events(l, JOB, stop_after_one, &calls, &err),
			 1);
	assert_int_equal(calls, 0);
	rb_ledger_close(l);
}

/* ---- locking ------------------------------------------------------------- */

/* One contender: 200 times {lock; read; failures++; write; append; unlock}.
 * No cmocka asserts in a child: report through the exit status. */
static int contend(fixture *f, int child)
{
	rb_record *r = malloc(sizeof(*r));
	rb_ledger *l = NULL;
	rb_err err = { "" };
	char event[64];
	int i;

	if (!r || rb_ledger_open(f->state, CLUSTER, RB_LEDGER_WRITE, &l,
				 &err) != 0)
		goto fail;
	for (i = 0; i < ROUNDS; i++) {
		rb_job *j = NULL;

		if (rb_ledger_lock(l, JOB, &j, &err) != 0)
			goto fail;
		if (rb_ledger_read(l, JOB, r, &err) < 0) {
			rb_ledger_unlock(j);
			goto fail;
		}
		r->budget.failures++;
		snprintf(event, sizeof(event), "kind=test child=%d round=%d",
			 child, i);
		if (rb_ledger_write(j, r, &err) != 0 ||
		    rb_ledger_append(j, event, &err) != 0) {
			rb_ledger_unlock(j);
			goto fail;
		}
		rb_ledger_unlock(j);
	}
	rb_ledger_close(l);
	free(r);
	return 0;
fail:
	fprintf(stderr, "child %d: %s\n", child, err.msg);
	rb_ledger_close(l);
	free(r);
	return 1;
}

static void contending_processes_serialize_every_update(void **state)
{
	fixture *f = *state;
	pid_t pids[CHILDREN];
	rb_record *r = new_record();
	event_seen seen;
	rb_ledger *l;
	rb_err err = { "" };
	int i;

	NEED_ROOT();
	l = open_write(f); /* creates the cluster directory once */
	for (i = 0; i < CHILDREN; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(contend(f, i));
	}
	for (i = 0; i < CHILDREN; i++) {
		int status;

		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 0);
	assert_int_equal(r->budget.failures, CHILDREN * ROUNDS);
	assert_true(r->seq == CHILDREN * ROUNDS);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok, CHILDREN * ROUNDS);
	assert_int_equal(seen.bad, 0);
	rb_ledger_close(l);
	free(r);
}

/* Try to take the log's lock from another process without waiting. */
static int lock_is_free_for_another_process(fixture *f, uint32_t id)
{
	char log[256];
	pid_t pid;
	int status;

	job_file(f, id, ".lock", log, sizeof(log));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct flock fl;
		int fd = open(log, O_RDWR);

		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		if (fd < 0)
			_exit(2);
		_exit(fcntl(fd, F_SETLK, &fl) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_true(WEXITSTATUS(status) != 2);
	return WEXITSTATUS(status) == 0;
}

static void lock_survives_reading_events_in_the_same_process(void **state)
{
	fixture *f = *state;
	event_seen seen;
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	append(j, "kind=a");
	assert_false(lock_is_free_for_another_process(f, JOB));
	/* Opening and closing the log again must not drop our lock (it
	 * would with a classic per-process fcntl lock). */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_false(lock_is_free_for_another_process(f, JOB));
	rb_ledger_unlock(j);
	assert_true(lock_is_free_for_another_process(f, JOB));
	rb_ledger_close(l);
}

/* The attack of docs/security.md ("The job lock"): a user takes a read lock on the job's
 * readable event log and holds it. The job's lock is elsewhere, in a file
 * no user can open, so rb_ledger_lock is not stalled. Run in a child with
 * an alarm: the old lock on the log waited forever. */
static void user_read_lock_on_the_log_does_not_stall_the_job(void **state)
{
	fixture *f = *state;
	char log[256];
	int ready[2], release[2], status;
	pid_t user, locker;
	rb_ledger *l;
	char c = 'x';

	NEED_ROOT();
	l = open_write(f);
	store_gid(l, JOB, 1, 65534); /* the job's own group may read its log */
	job_file(f, JOB, ".log", log, sizeof(log));
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	user = fork();
	assert_true(user >= 0);
	if (user == 0) {
		struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
		int fd;

		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			_exit(2);
		fd = open(log, O_RDONLY);
		if (fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0)
			_exit(3);
		if (write(ready[1], &c, 1) != 1 || read(release[0], &c, 1) != 1)
			_exit(4);
		_exit(0);
	}
	close(ready[1]); /* a child that fails is EOF here, not a hang */
	assert_int_equal(read(ready[0], &c, 1), 1);
	locker = fork();
	assert_true(locker >= 0);
	if (locker == 0) {
		rb_job *j = NULL;
		rb_err err;

		alarm(10);
		_exit(rb_ledger_lock(l, JOB, &j, &err) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(locker, &status, 0), locker);
	assert_int_equal(write(release[1], &c, 1), 1);
	waitpid(user, NULL, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	rb_ledger_close(l);
}

/* The lock file is root's alone: a user cannot even open it. */
static void lock_file_is_root_only(void **state)
{
	fixture *f = *state;
	char lock[256];
	struct stat st;
	rb_ledger *l;
	rb_job *j;
	pid_t pid;
	int status;

	NEED_ROOT();
	l = open_write(f);
	j = lock_job(l, JOB);
	job_file(f, JOB, ".lock", lock, sizeof(lock));
	assert_int_equal(stat(lock, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(2);
		_exit(open(lock, O_RDONLY) < 0 && errno == EACCES ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	rb_ledger_unlock(j);
	/* a root-owned lock file someone made readable is put back */
	assert_int_equal(chmod(lock, 0644), 0);
	j = lock_job(l, JOB);
	assert_int_equal(stat(lock, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	rb_ledger_unlock(j);
	rb_ledger_close(l);
}

/* A holder that never lets go (another node stuck on NFS): the wait ends at
 * its deadline with an error naming the file, never later. */
static void lock_held_too_long_fails_at_the_deadline(void **state)
{
	fixture *f = *state;
	struct timespec t0, t1;
	int ready[2], release[2];
	rb_err err = { "" };
	rb_ledger *l;
	rb_job *j = NULL;
	pid_t pid;
	char c = 'x';
	long ms;

	NEED_ROOT();
	l = open_write(f);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rb_job *held = NULL;

		if (rb_ledger_lock(l, JOB, &held, &err) != 0)
			_exit(2);
		if (write(ready[1], &c, 1) != 1 || read(release[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	rb_ledger_set_lock_wait(300);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(rb_ledger_lock(l, JOB, &j, &err), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rb_ledger_set_lock_wait(0);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 300 && ms < 3000);
	assert_non_null(strstr(err.msg, ".lock: still locked after 300 ms"));
	assert_int_equal(write(release[1], &c, 1), 1);
	waitpid(pid, NULL, 0);
	j = lock_job(l, JOB); /* free again */
	rb_ledger_unlock(j);
	rb_ledger_close(l);
}

static void lock_waiting_through_remove_ends_on_the_new_log(void **state)
{
	fixture *f = *state;
	event_seen seen;
	struct timespec pause = { 0, 200 * 1000 * 1000 };
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;
	int go[2];
	pid_t pid;
	int status;
	char c = 'x';

	NEED_ROOT();
	l = open_write(f);
	store(l, JOB, 1);
	assert_int_equal(pipe(go), 0);
	/* Fork before locking: a child forked while we hold the lock would
	 * share our open file description, and with it the (OFD) lock. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Blocks on our lock, then must land on the live log. */
		rb_ledger *cl = NULL;
		rb_job *cj = NULL;

		close(go[1]);
		if (read(go[0], &c, 1) != 1 ||
		    rb_ledger_open(f->state, CLUSTER, RB_LEDGER_WRITE, &cl,
				   &err) != 0 ||
		    rb_ledger_lock(cl, JOB, &cj, &err) != 0 ||
		    rb_ledger_append(cj, "kind=after-remove", &err) != 0)
			_exit(1);
		rb_ledger_unlock(cj);
		rb_ledger_close(cl);
		_exit(0);
	}
	close(go[0]);
	j = lock_job(l, JOB);
	assert_int_equal(write(go[1], &c, 1), 1);
	close(go[1]);
	nanosleep(&pause, NULL);
	assert_int_equal(rb_ledger_remove(j, &err), 0);
	rb_ledger_unlock(j);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_events(l, JOB, collect, &seen, &err), 0);
	assert_int_equal(seen.ok, 1);
	assert_non_null(strstr(seen.lines[0], "kind=after-remove"));
	rb_ledger_close(l);
}

/* ---- listing and removal ------------------------------------------------- */

typedef struct {
	uint32_t ids[16];
	int n;
} id_seen;

static int collect_id(uint32_t id, void *ctx)
{
	id_seen *s = ctx;

	if (s->n < 16)
		s->ids[s->n] = id;
	s->n++;
	return 0;
}

static void jobs_lists_exactly_the_written_ids(void **state)
{
	static const uint32_t written[] = { 1, 42, 999, 1000, 1042, 4294967295u };
	fixture *f = *state;
	char path[256], target[256];
	id_seen seen;
	rb_ledger *l, *ro = NULL;
	rb_err err = { "" };
	rb_job *j;
	size_t i;

	NEED_ROOT();
	l = open_write(f);
	for (i = 0; i < sizeof(written) / sizeof(written[0]); i++)
		store(l, written[i], 1);
	/* Things that are not records. */
	j = lock_job(l, 7); /* a log, no record */
	rb_ledger_unlock(j);
	snprintf(path, sizeof(path), "%s/042/42.rec.tmp.999", f->cluster);
	write_file(path, "half", 4);
	snprintf(path, sizeof(path), "%s/042/0042.rec", f->cluster);
	write_file(path, "x", 1);
	snprintf(path, sizeof(path), "%s/042/abc.rec", f->cluster);
	write_file(path, "x", 1);
	snprintf(path, sizeof(path), "%s/042/43.rec", f->cluster);
	write_file(path, "x", 1); /* wrong bucket */
	make_target(f, target, sizeof(target));
	snprintf(path, sizeof(path), "%s/042/142.rec", f->cluster);
	assert_int_equal(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/043", f->cluster);
	assert_int_equal(symlink(f->outside, path), 0);
	snprintf(path, sizeof(path), "%s/outside/43.rec", f->state);
	write_file(path, "x", 1);

	assert_int_equal(rb_ledger_open(f->state, CLUSTER, RB_LEDGER_READ, &ro,
					&err), 0);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_jobs(ro, collect_id, &seen, &err), 0);
	assert_int_equal(seen.n, 6);
	for (i = 0; i < 6; i++)
		assert_int_equal(seen.ids[i], written[i]); /* sorted */
	rb_ledger_close(ro);
	rb_ledger_close(l);
}

static void remove_deletes_record_log_and_stale_temp_files(void **state)
{
	fixture *f = *state;
	char tmp[256], other[256];
	rb_record *r = new_record();
	id_seen seen;
	rb_ledger *l;
	rb_err err = { "" };
	rb_job *j;
	int calls = 0;

	NEED_ROOT();
	l = open_write(f);
	store(l, JOB, 2);
	store(l, JOB + 1000, 3);
	snprintf(tmp, sizeof(tmp), "%s/042/42.rec.tmp.31337", f->cluster);
	write_file(tmp, "half", 4);
	snprintf(other, sizeof(other), "%s/042/1042.rec.tmp.31337", f->cluster);
	write_file(other, "half", 4);
	j = lock_job(l, JOB);
	append(j, "kind=gc");
	assert_int_equal(rb_ledger_remove(j, &err), 0);
	rb_ledger_unlock(j);
	assert_int_equal(rb_ledger_read(l, JOB, r, &err), 1);
	assert_int_equal(rb_ledger_events(l, JOB, stop_after_one, &calls, &err),
			 1);
	assert_int_equal(access(tmp, F_OK), -1);
	snprintf(tmp, sizeof(tmp), "%s/042/42.lock", f->cluster);
	assert_int_equal(access(tmp, F_OK), -1); /* the lock file goes too */
	snprintf(tmp, sizeof(tmp), "%s/042/1042.lock", f->cluster);
	assert_int_equal(access(tmp, F_OK), 0);
	/* Another job in the same bucket is left alone. */
	assert_int_equal(access(other, F_OK), 0);
	assert_int_equal(rb_ledger_read(l, JOB + 1000, r, &err), 0);
	assert_int_equal(r->budget.failures, 3);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(rb_ledger_jobs(l, collect_id, &seen, &err), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.ids[0], JOB + 1000);
	rb_ledger_close(l);
	free(r);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(open_refuses_bad_cluster_names),
		T(write_mode_creates_dirs_0755_and_files_0640_of_the_jobs_group),
		T(records_are_readable_by_root_and_the_jobs_group_only),
		T(test_record_of_another_group_reads_as_not_readable),
		T(open_refuses_state_dir_writable_by_others),
		T(open_refuses_state_dir_owned_by_another_uid),
		T(open_refuses_symlinked_state_dir),
		T(state_dir_must_be_a_real_directory_only_root_can_write),
		T(open_read_of_missing_cluster_is_an_error),
		T(write_mode_refuses_untrusted_subdirs_and_files),
		T(read_mode_cannot_lock),
		T(record_round_trips_through_files),
		T(read_of_missing_record_returns_1_and_a_fresh_record),
		T(write_refuses_a_record_that_would_not_read_back),
		T(symlink_planted_as_record_is_not_followed),
		T(symlink_planted_as_log_is_not_followed),
		T(symlink_planted_as_bucket_dir_is_not_followed),
		T(symlink_planted_as_cluster_dir_is_not_followed),
		T(symlink_planted_as_temp_file_is_not_followed),
		T(interrupted_write_leaves_the_old_or_the_new_record),
		T(corrupt_record_on_disk_is_refused),
		T(events_append_and_read_back_intact),
		T(events_callback_can_stop_the_walk),
		T(torn_last_event_line_is_reported_not_ok),
		T(edited_event_line_is_reported_not_ok),
		T(an_event_of_the_folds_kind_is_refused),
		T(event_that_is_not_one_printable_line_is_refused),
		T(events_of_a_job_without_log_return_1),
		T(contending_processes_serialize_every_update),
		T(lock_survives_reading_events_in_the_same_process),
		T(user_read_lock_on_the_log_does_not_stall_the_job),
		T(lock_file_is_root_only),
		T(lock_held_too_long_fails_at_the_deadline),
		T(lock_waiting_through_remove_ends_on_the_new_log),
		T(jobs_lists_exactly_the_written_ids),
		T(remove_deletes_record_log_and_stale_temp_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
