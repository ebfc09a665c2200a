/*
 * test_ack.c - the job's acknowledgement: the one "acknowledged?" check
 * (rb_ack_confirms) and the tree that plugins before 2026-12 left in
 * state_dir, read and removed by ack_legacy.c (docs/security.md,
 * "Upgrades"). Most of it chowns to another user: root only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ack.h"
#include "ack_legacy.h"
#include "record.h"

#define CLUSTER "c1"
#define JOB 41
#define NOBODY 65534 /* a real user (setpriv --init-groups needs one) */
#define DEEP 40      /* levels of the deep tree: past DEPTH_MAX (16) twice */

typedef struct {
	char dir[64];       /* state_dir */
	char path[512];     /* scratch */
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/rb-ack-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	chmod(f->dir, 0755);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* <state_dir>/<rel>, in f->path. */
static const char *at(fixture *f, const char *rel)
{
	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, rel);
	return f->path;
}

static void mkdir_as(const char *path, mode_t mode, uid_t uid)
{
	assert_int_equal(mkdir(path, mode), 0);
	assert_int_equal(chmod(path, mode), 0); /* past the umask */
	assert_int_equal(chown(path, uid, uid), 0);
}

static void touch_as(const char *path, uid_t uid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lchown(path, uid, uid), 0);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The old layout: <cluster>/ack (root's, 0755), ack/<JOB> (nobody's) with
 * attempt-2 in it. */
static void old_tree(fixture *f)
{
	mkdir_as(at(f, CLUSTER), 0755, 0);
	mkdir_as(at(f, CLUSTER "/ack"), 0755, 0);
	mkdir_as(at(f, CLUSTER "/ack/41"), 0700, NOBODY);
	touch_as(at(f, CLUSTER "/ack/41/attempt-2"), NOBODY);
}

/* Job JOB of user nobody at attempt n, with no working directory (so no
 * current acknowledgement file to look for) unless work_dir is given. */
static void nobody_record(rb_record *rec, int64_t n, const char *work_dir)
{
	rb_record_init(rec);
	snprintf(rec->cluster, sizeof(rec->cluster), "%s", CLUSTER);
	rec->job_id = JOB;
	rec->uid = rec->gid = NOBODY;
	snprintf(rec->work_dir, sizeof(rec->work_dir), "%s",
		 work_dir ? work_dir : "");
	rec->budget.cur.attempt = n;
}

static void test_legacy_ack_of_the_jobs_user_confirms(void **state)
{
	fixture *f = *state;
	rb_record rec;

	if (geteuid() != 0)
		skip();
	old_tree(f);
	nobody_record(&rec, 2, NULL);
	assert_true(rb_ack_confirms(f->dir, &rec));
	assert_true(rb_ack_legacy_seen(f->dir, CLUSTER, JOB, NOBODY, 2));
	/* another attempt, another user, another job: no */
	nobody_record(&rec, 3, NULL);
	assert_false(rb_ack_confirms(f->dir, &rec));
	assert_false(rb_ack_legacy_seen(f->dir, CLUSTER, JOB, 1234, 2));
	assert_false(rb_ack_legacy_seen(f->dir, CLUSTER, JOB + 1, NOBODY, 2));
}

static void test_legacy_ack_in_a_tree_not_roots_does_not_confirm(void **state)
{
	fixture *f = *state;
	rb_record rec;

	if (geteuid() != 0)
		skip();
	old_tree(f);
	nobody_record(&rec, 2, NULL);
	assert_int_equal(chmod(at(f, CLUSTER "/ack"), 0775), 0);
	assert_false(rb_ack_confirms(f->dir, &rec));
	assert_int_equal(chmod(at(f, CLUSTER "/ack"), 0755), 0);
	assert_int_equal(chown(at(f, CLUSTER "/ack"), NOBODY, NOBODY), 0);
	assert_false(rb_ack_confirms(f->dir, &rec));
}

static void test_ack_file_of_the_jobs_user_confirms(void **state)
{
	fixture *f = *state;
	char wd[128], path[600];
	rb_record rec;

	if (geteuid() != 0)
		skip(); /* the look runs as the job's user */
	snprintf(wd, sizeof(wd), "%s/w", f->dir);
	mkdir_as(wd, 0755, NOBODY);
	nobody_record(&rec, 1, wd);
	assert_false(rb_ack_confirms(f->dir, &rec));
	assert_int_equal(rb_ack_path(wd, NULL, CLUSTER, JOB, 1, path,
				     sizeof(path)), 0);
	touch_as(path, NOBODY);
	assert_true(rb_ack_confirms(f->dir, &rec));
	/* names are per attempt: an old file never confirms a new attempt */
	nobody_record(&rec, 2, wd);
	assert_false(rb_ack_confirms(f->dir, &rec));
}

/* Under dir (open as fd, nobody's) a chain of DEEP directories "d", each
 * nobody's, each with a plain file and two symlinks out of the tree: to
 * the file outside/keep and to the directory outside. */
static void deep_chain(fixture *f, int fd)
{
	char target[256];

	for (int i = 0; i < DEEP; i++) {
		int next;

		snprintf(target, sizeof(target), "%s/outside/keep", f->dir);
		assert_int_equal(symlinkat(target, fd, "to-file"), 0);
		snprintf(target, sizeof(target), "%s/outside", f->dir);
		assert_int_equal(symlinkat(target, fd, "to-dir"), 0);
		next = openat(fd, "plain", O_WRONLY | O_CREAT | O_EXCL, 0644);
		assert_true(next >= 0);
		close(next);
		assert_int_equal(mkdirat(fd, "d", 0700), 0);
		assert_int_equal(fchownat(fd, "d", NOBODY, NOBODY, 0), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		assert_true(next >= 0);
		close(fd);
		fd = next;
	}
	close(fd);
}

static void test_legacy_tree_is_removed_at_any_depth_never_following_symlinks(
	void **state)
{
	fixture *f = *state;
	rb_ack_legacy_sweep s;
	struct stat st;
	int fd;

	if (geteuid() != 0)
		skip();
	old_tree(f);
	mkdir_as(at(f, "outside"), 0755, NOBODY);
	touch_as(at(f, "outside/keep"), NOBODY);
	fd = open(at(f, CLUSTER "/ack/41"), O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	deep_chain(f, fd);
	rb_ack_legacy_remove(f->dir, CLUSTER, false, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_REMOVED);
	assert_true(s.entries >= 4 * DEEP);
	assert_false(exists(at(f, CLUSTER "/ack")));
	assert_true(exists(at(f, CLUSTER)));
	/* what the symlinks pointed to: still there, still nobody's */
	assert_int_equal(stat(at(f, "outside/keep"), &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_int_equal(stat(at(f, "outside"), &st), 0);
	assert_int_equal(st.st_uid, NOBODY);
	assert_int_equal(st.st_mode & 07777, 0755);
	/* gone is gone: a second run finds nothing */
	rb_ack_legacy_remove(f->dir, CLUSTER, false, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_ABSENT);
}

static void test_legacy_tree_not_owned_by_root_is_not_touched(void **state)
{
	fixture *f = *state;
	rb_ack_legacy_sweep s;

	if (geteuid() != 0)
		skip();
	old_tree(f);
	assert_int_equal(chown(at(f, CLUSTER "/ack"), NOBODY, NOBODY), 0);
	rb_ack_legacy_remove(f->dir, CLUSTER, false, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_UNTRUSTED);
	assert_int_equal(s.uid, NOBODY);
	assert_int_equal(s.mode, 0755);
	assert_true(exists(at(f, CLUSTER "/ack/41/attempt-2")));
	/* root's but writable by its group: refused the same */
	assert_int_equal(chown(at(f, CLUSTER "/ack"), 0, 0), 0);
	assert_int_equal(chmod(at(f, CLUSTER "/ack"), 0775), 0);
	rb_ack_legacy_remove(f->dir, CLUSTER, false, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_UNTRUSTED);
	assert_int_equal(s.uid, 0);
	assert_int_equal(s.mode, 0775);
	assert_true(exists(at(f, CLUSTER "/ack/41/attempt-2")));
}

static void test_legacy_tree_that_is_a_symlink_is_not_followed(void **state)
{
	fixture *f = *state;
	rb_ack_legacy_sweep s;
	char target[128];

	if (geteuid() != 0)
		skip();
	mkdir_as(at(f, CLUSTER), 0755, 0);
	mkdir_as(at(f, "elsewhere"), 0755, 0);
	touch_as(at(f, "elsewhere/keep"), 0);
	snprintf(target, sizeof(target), "%s/elsewhere", f->dir);
	assert_int_equal(symlink(target, at(f, CLUSTER "/ack")), 0);
	rb_ack_legacy_remove(f->dir, CLUSTER, false, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_FAILED);
	assert_true(s.at_ack);
	assert_true(s.errnum == ELOOP || s.errnum == ENOTDIR);
	assert_true(exists(at(f, "elsewhere/keep")));
}

static void test_legacy_tree_absent_or_dry_run_is_left_as_it_is(void **state)
{
	fixture *f = *state;
	rb_ack_legacy_sweep s;

	rb_ack_legacy_remove(f->dir, CLUSTER, false, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_ABSENT);
	assert_int_equal(mkdir(at(f, CLUSTER), 0755), 0);
	rb_ack_legacy_remove(f->dir, CLUSTER, false, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_ABSENT);
	if (geteuid() != 0)
		return; /* a tree of root's needs root */
	assert_int_equal(rmdir(at(f, CLUSTER)), 0);
	old_tree(f);
	rb_ack_legacy_remove(f->dir, CLUSTER, true, &s);
	assert_int_equal(s.outcome, RB_ACK_LEGACY_PRESENT);
	assert_true(exists(at(f, CLUSTER "/ack/41/attempt-2")));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_legacy_ack_of_the_jobs_user_confirms),
		T(test_legacy_ack_in_a_tree_not_roots_does_not_confirm),
		T(test_ack_file_of_the_jobs_user_confirms),
		T(test_legacy_tree_is_removed_at_any_depth_never_following_symlinks),
		T(test_legacy_tree_not_owned_by_root_is_not_touched),
		T(test_legacy_tree_that_is_a_symlink_is_not_followed),
		T(test_legacy_tree_absent_or_dry_run_is_left_as_it_is),
	};
	return cmocka_run_group_tests_name("ack", tests, NULL, NULL);
}
