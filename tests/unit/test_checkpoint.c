/*
 * test_checkpoint.c - finding the checkpoint (docs/rule.md, "Finding the
 * checkpoint"), one test
 * per rule, on real directories under /tmp.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "fixture.h"
#include "checkpoint.h"
#include "diag.h"

/*
 * The scan bound, exercised without 100000 files: the same source compiled
 * a second time, renamed, with a limit of 100 entries.
 */
#define RB_CHECKPOINT_SCAN_LIMIT 100
#define rb_checkpoint_find rb_checkpoint_find_capped
int rb_checkpoint_find_capped(const char *work_dir, const char *dir,
			      const char *pattern, const char *latest,
			      char *out, size_t outlen, rb_err *err);
#define rb_checkpoint_find_except rb_checkpoint_find_except_capped
int rb_checkpoint_find_except_capped(const char *work_dir, const char *dir,
				     const char *pattern, const char *latest,
				     const rb_ckpt_marks *skip, char *out,
				     size_t outlen, rb_err *err);
#include "checkpoint.c"
#undef rb_checkpoint_find
#undef rb_checkpoint_find_except

#define PATTERN "checkpoint*"
#define LATEST "latest"
#define BASE_SEC 1700000000

typedef struct {
	char root[PATH_MAX];  /* the job's working directory (canonical) */
	char ckdir[PATH_MAX]; /* root/ckpts */
	char out[RB_PATH_MAX];
	rb_err err;
} t_ctx;

/* --- captured log -------------------------------------------------------- */

static int t_warnings;
static char t_last_log[RB_ERR_MAX + 64];

static void t_sink(rb_log_level level, const char *msg)
{
	if (level <= RB_LOG_WARNING)
		t_warnings++;
	snprintf(t_last_log, sizeof(t_last_log), "%s", msg);
}

/* --- helpers ------------------------------------------------------------- */

static void t_path(char *buf, size_t len, const char *base, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", base, name);

	assert_true(n > 0 && (size_t)n < len);
}

static void t_set_mtime(const char *path, long sec, long nsec)
{
	struct timespec ts[2] = { { sec, nsec }, { sec, nsec } };

	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void t_write(const char *path, const char *content)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(content, f);
	assert_int_equal(fclose(f), 0);
}

/* A checkpoint file <ckdir>/<name> with the given mtime. */
static void t_file(t_ctx *c, const char *name, long sec, long nsec)
{
	char p[PATH_MAX];

	t_path(p, sizeof(p), c->ckdir, name);
	t_write(p, name);
	t_set_mtime(p, sec, nsec);
}

static void t_symlink(t_ctx *c, const char *target, const char *name)
{
	char p[PATH_MAX];

	t_path(p, sizeof(p), c->ckdir, name);
	assert_int_equal(symlink(target, p), 0);
}

static int t_find_with(t_ctx *c, const char *dir, const char *pattern,
		       const char *latest)
{
	c->out[0] = 'X';
	c->err.msg[0] = '\0';
	return rb_checkpoint_find(c->root, dir, pattern, latest, c->out,
				  sizeof(c->out), &c->err);
}

static int t_find_in(t_ctx *c, const char *dir)
{
	return t_find_with(c, dir, PATTERN, LATEST);
}

static int t_find(t_ctx *c)
{
	return t_find_in(c, "ckpts");
}

/* out must be <ckdir>/<name>. */
static void t_expect(t_ctx *c, const char *name)
{
	char want[PATH_MAX];

	t_path(want, sizeof(want), c->ckdir, name);
	assert_string_equal(c->out, want);
}

static int setup(void **state)
{
	t_ctx *c = calloc(1, sizeof(*c));
	char tmpl[] = "/tmp/rb_ckpt_XXXXXX";

	if (!c || !mkdtemp(tmpl) || !realpath(tmpl, c->root))
		return -1;
	/* Traversable by others: the permission test runs as nobody. */
	if (chmod(c->root, 0755) < 0)
		return -1;
	if (snprintf(c->ckdir, sizeof(c->ckdir), "%s/ckpts", c->root) >=
	    (int)sizeof(c->ckdir))
		return -1;
	if (mkdir(c->ckdir, 0755) < 0)
		return -1;
	t_warnings = 0;
	t_last_log[0] = '\0';
	rb_log_set_sink(t_sink);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	t_ctx *c = *state;

	rb_log_set_sink(NULL);
	chmod(c->ckdir, 0755);
	ut_rmtree(c->root);
	free(c);
	return 0;
}

/* --- newest: mtime, then name -------------------------------------------- */

static void test_newest_mtime_wins(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-9", BASE_SEC + 10, 0);
	t_file(c, "checkpoint-1", BASE_SEC + 30, 0); /* newest, not greatest name */
	t_file(c, "checkpoint-5", BASE_SEC + 20, 0);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
}

static void test_newest_mtime_counts_nanoseconds(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-b", BASE_SEC, 100);
	t_file(c, "checkpoint-a", BASE_SEC, 200);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-a");
}

static void test_equal_mtime_greater_name_wins(void **state)
{
	t_ctx *c = *state;

	/* Created greatest-first, so directory order cannot decide. */
	t_file(c, "checkpoint-b", BASE_SEC, 5);
	t_file(c, "checkpoint-a", BASE_SEC, 5);
	t_file(c, "checkpoint-B", BASE_SEC, 5);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-b");
}

/* --- the latest pointer --------------------------------------------------- */

static void test_latest_symlink_wins_over_newer(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-old", BASE_SEC, 0);
	t_file(c, "checkpoint-new", BASE_SEC + 100, 0);
	t_symlink(c, "checkpoint-old", LATEST);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-old");
}

static void test_latest_file_naming_entry_wins(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX];

	t_file(c, "checkpoint-old", BASE_SEC, 0);
	t_file(c, "checkpoint-new", BASE_SEC + 100, 0);
	t_path(p, sizeof(p), c->ckdir, LATEST);
	/* First line only, trailing whitespace stripped. */
	t_write(p, "checkpoint-old \t\r\nsomething else\n");
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-old");
}

static void test_latest_file_absolute_path_wins(void **state)
{
	t_ctx *c = *state;
	char other[PATH_MAX], ptr[PATH_MAX], want[PATH_MAX];

	/* A checkpoint outside the directory, named by absolute path. */
	t_path(other, sizeof(other), c->root, "elsewhere");
	assert_int_equal(mkdir(other, 0755), 0);
	t_path(want, sizeof(want), other, "step-7");
	t_write(want, "x");
	t_file(c, "checkpoint-new", BASE_SEC + 100, 0);
	t_path(ptr, sizeof(ptr), c->ckdir, LATEST);
	t_write(ptr, want);
	assert_int_equal(t_find(c), 1);
	assert_string_equal(c->out, want);
}

static void test_latest_symlink_absolute_target_wins(void **state)
{
	t_ctx *c = *state;
	char want[PATH_MAX];

	t_file(c, "checkpoint-old", BASE_SEC, 0);
	t_file(c, "checkpoint-new", BASE_SEC + 100, 0);
	t_path(want, sizeof(want), c->ckdir, "checkpoint-old");
	t_symlink(c, want, LATEST);
	assert_int_equal(t_find(c), 1);
	assert_string_equal(c->out, want);
}

static void test_dangling_latest_falls_back(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX];

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "checkpoint-2", BASE_SEC + 1, 0);
	t_symlink(c, "checkpoint-gone", LATEST);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-2");

	/* The same with a pointer file naming a missing entry. */
	t_path(p, sizeof(p), c->ckdir, LATEST);
	assert_int_equal(unlink(p), 0);
	t_write(p, "checkpoint-gone\n");
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-2");
	assert_string_equal(c->err.msg, "");
}

static void test_latest_symlink_loop_falls_back(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_symlink(c, LATEST, LATEST); /* latest -> latest */
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
}

static void test_latest_symlink_cycle_falls_back(void **state)
{
	t_ctx *c = *state;

	/* latest -> checkpoint-a -> checkpoint-b -> checkpoint-a: the looping
	 * entries are skipped by the scan too. */
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_symlink(c, "checkpoint-a", LATEST);
	t_symlink(c, "checkpoint-b", "checkpoint-a");
	t_symlink(c, "checkpoint-a", "checkpoint-b");
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
}

static void test_latest_file_naming_itself_falls_back(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX];

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_path(p, sizeof(p), c->ckdir, LATEST);
	t_write(p, LATEST "\n");
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
}

static void test_latest_file_empty_or_oversized_falls_back(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX];
	char *big = malloc(10000);

	assert_non_null(big);
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_path(p, sizeof(p), c->ckdir, LATEST);
	t_write(p, "\n  \n");
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");

	memset(big, 'c', 9999);
	big[9999] = '\0';
	t_write(p, big);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
	free(big);
}

static void test_latest_fifo_is_ignored_without_blocking(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX];

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_path(p, sizeof(p), c->ckdir, LATEST);
	assert_int_equal(mkfifo(p, 0644), 0);
	t_path(p, sizeof(p), c->ckdir, "checkpoint-fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	t_set_mtime(p, BASE_SEC + 100, 0);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
}

static void test_latest_must_be_a_plain_name(void **state)
{
	t_ctx *c = *state;
	char sub[PATH_MAX];

	t_file(c, "checkpoint-old", BASE_SEC, 0);
	t_file(c, "checkpoint-new", BASE_SEC + 100, 0);
	t_path(sub, sizeof(sub), c->ckdir, "meta");
	assert_int_equal(mkdir(sub, 0755), 0);
	t_symlink(c, "../checkpoint-old", "meta/latest");
	assert_int_equal(t_find_with(c, "ckpts", PATTERN, "meta/latest"), 1);
	t_expect(c, "checkpoint-new");
	assert_non_null(strstr(t_last_log, "not a plain name"));
}

/* --- what the scan considers --------------------------------------------- */

static void test_hidden_tmp_partial_skipped(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, ".checkpoint-9", BASE_SEC + 90, 0);
	t_file(c, "checkpoint-8.tmp", BASE_SEC + 80, 0);
	t_file(c, "checkpoint-7.partial", BASE_SEC + 70, 0);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
}

static void test_pattern_respected(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "model.pt", BASE_SEC + 90, 0);
	t_file(c, "Checkpoint-2", BASE_SEC + 80, 0);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");

	/* Another pattern picks another entry. */
	assert_int_equal(t_find_with(c, "ckpts", "*.pt", LATEST), 1);
	t_expect(c, "model.pt");
	/* "*": every entry the skip rules leave. */
	assert_int_equal(t_find_with(c, "ckpts", "*", LATEST), 1);
	t_expect(c, "model.pt");
}

static void test_pattern_nothing_matches_is_none(void **state)
{
	t_ctx *c = *state;

	t_file(c, "model.pt", BASE_SEC, 0);
	assert_int_equal(t_find(c), 0);
	assert_string_equal(c->out, "");
}

static void test_latest_entry_is_not_a_candidate(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX];

	/* Pattern "*" matches the pointer's name; a pointer that leads nowhere
	 * is still not a checkpoint. */
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_path(p, sizeof(p), c->ckdir, LATEST);
	t_write(p, "checkpoint-gone\n");
	t_set_mtime(p, BASE_SEC + 100, 0);
	assert_int_equal(t_find_with(c, "ckpts", "*", LATEST), 1);
	t_expect(c, "checkpoint-1");
}

static void test_directory_checkpoint_found(void **state)
{
	t_ctx *c = *state;
	char d[PATH_MAX], f[PATH_MAX];

	t_file(c, "checkpoint-000010", BASE_SEC, 0);
	t_path(d, sizeof(d), c->ckdir, "checkpoint-000020");
	assert_int_equal(mkdir(d, 0755), 0);
	t_path(f, sizeof(f), d, "model.pt");
	t_write(f, "weights");
	t_set_mtime(d, BASE_SEC + 10, 0);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-000020");
}

static void test_symlinked_entry_resolves_to_target(void **state)
{
	t_ctx *c = *state;
	char real[PATH_MAX];

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "data-2", BASE_SEC + 10, 0);
	t_symlink(c, "data-2", "checkpoint-2");
	assert_int_equal(t_find(c), 1);
	t_path(real, sizeof(real), c->ckdir, "data-2");
	assert_string_equal(c->out, real);
}

static void test_non_utf8_name_found(void **state)
{
	t_ctx *c = *state;
	const char *name = "checkpoint-\xff\xfe\x80-\xc3";

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, name, BASE_SEC + 1, 0);
	assert_int_equal(t_find(c), 1);
	t_expect(c, name);
}

static void test_255_byte_name_found(void **state)
{
	t_ctx *c = *state;
	char name[NAME_MAX + 1];

	memcpy(name, "checkpoint-", 11);
	memset(name + 11, 'x', NAME_MAX - 11);
	name[NAME_MAX] = '\0';
	assert_int_equal(strlen(name), 255);
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, name, BASE_SEC + 1, 0);
	assert_int_equal(t_find(c), 1);
	t_expect(c, name);
}

/* --- the directory ------------------------------------------------------- */

static void test_relative_dir_taken_from_work_dir(void **state)
{
	t_ctx *c = *state;
	char sub[PATH_MAX];

	t_path(sub, sizeof(sub), c->ckdir, "run1");
	assert_int_equal(mkdir(sub, 0755), 0);
	t_file(c, "run1/checkpoint-3", BASE_SEC, 0);
	assert_int_equal(t_find_in(c, "ckpts/run1"), 1);
	t_expect(c, "run1/checkpoint-3");
	/* "./" and trailing slashes leave no junk in the result. */
	assert_int_equal(t_find_in(c, "./ckpts/./run1/"), 1);
	t_expect(c, "run1/checkpoint-3");
}

static void test_absolute_dir_ignores_work_dir(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	assert_int_equal(rb_checkpoint_find("/nonexistent", c->ckdir, PATTERN,
					    LATEST, c->out, sizeof(c->out),
					    &c->err), 1);
	t_expect(c, "checkpoint-1");
}

static void test_dotdot_in_dir_resolves_as_path(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX], q[PATH_MAX];

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_path(p, sizeof(p), c->root, "a");
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(t_find_in(c, "a/../ckpts"), 1);
	t_expect(c, "checkpoint-1");

	/* Through a symlink, ".." is the target's parent (the kernel's walk,
	 * not a string edit): link -> ckpts/deep, so link/.. is ckpts. */
	t_path(q, sizeof(q), c->ckdir, "deep");
	assert_int_equal(mkdir(q, 0755), 0);
	t_path(p, sizeof(p), c->root, "link");
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(t_find_in(c, "link/.."), 1);
	t_expect(c, "checkpoint-1");
}

static void test_missing_dir_is_error_with_message(void **state)
{
	t_ctx *c = *state;

	assert_int_equal(t_find_in(c, "no-such-dir"), -1);
	assert_string_equal(c->out, "");
	assert_non_null(strstr(c->err.msg, "no-such-dir"));
	assert_non_null(strstr(c->err.msg, "No such file or directory"));
	assert_non_null(strstr(c->err.msg, "as the job's user"));
}

static void test_dir_that_is_a_file_is_error(void **state)
{
	t_ctx *c = *state;

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	assert_int_equal(t_find_in(c, "ckpts/checkpoint-1"), -1);
	assert_non_null(strstr(c->err.msg, "Not a directory"));
}

static void test_empty_dir_name_rejected(void **state)
{
	t_ctx *c = *state;

	assert_int_equal(t_find_in(c, ""), -1);
	assert_string_not_equal(c->err.msg, "");
	assert_int_equal(rb_checkpoint_find(c->root, NULL, PATTERN, LATEST,
					    c->out, sizeof(c->out), &c->err),
			 -1);
}

static void test_relative_dir_needs_absolute_work_dir(void **state)
{
	t_ctx *c = *state;

	assert_int_equal(rb_checkpoint_find("rel/wd", "ckpts", PATTERN, LATEST,
					    c->out, sizeof(c->out), &c->err),
			 -1);
	assert_non_null(strstr(c->err.msg, "not absolute"));
	assert_int_equal(rb_checkpoint_find(NULL, "ckpts", PATTERN, LATEST,
					    c->out, sizeof(c->out), &c->err),
			 -1);
}

static void test_empty_directory_finds_none(void **state)
{
	t_ctx *c = *state;

	assert_int_equal(t_find(c), 0);
	assert_string_equal(c->out, "");
}

static void test_overlong_dir_path_is_error(void **state)
{
	t_ctx *c = *state;
	char *dir = malloc(RB_PATH_MAX + 10);

	assert_non_null(dir);
	memset(dir, 'd', RB_PATH_MAX + 9);
	dir[RB_PATH_MAX + 9] = '\0';
	assert_int_equal(t_find_in(c, dir), -1);
	assert_non_null(strstr(c->err.msg, "longer than"));
	free(dir);
}

static void test_result_longer_than_out_is_error(void **state)
{
	t_ctx *c = *state;
	char small[16];

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	assert_int_equal(rb_checkpoint_find(c->root, "ckpts", PATTERN, LATEST,
					    small, sizeof(small), &c->err), -1);
	assert_string_equal(small, "");
	assert_non_null(strstr(c->err.msg, "longer than"));
}

static void test_unreadable_dir_is_eacces_as_user(void **state)
{
	t_ctx *c = *state;
	char msg[RB_ERR_MAX] = "";
	int fds[2];
	int rc = 0;
	pid_t pid;
	int status;

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	if (geteuid() != 0) {
		/* Not root: our own mode bits apply to us. */
		assert_int_equal(chmod(c->ckdir, 0), 0);
		rc = t_find(c);
		chmod(c->ckdir, 0755);
		assert_int_equal(rc, -1);
		assert_non_null(strstr(c->err.msg, strerror(EACCES)));
		return;
	}
	/* Root: a forked child becomes nobody, as user_init would be the
	 * job's user; ckpts is root's and 0700. */
	assert_int_equal(chmod(c->ckdir, 0700), 0);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rb_err err = { "" };
		char out[RB_PATH_MAX];
		ssize_t w;

		close(fds[0]);
		if (setgroups(0, NULL) < 0 ||
		    setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		rc = rb_checkpoint_find(c->root, "ckpts", PATTERN, LATEST, out,
					sizeof(out), &err);
		w = write(fds[1], &rc, sizeof(rc));
		w += write(fds[1], err.msg, strlen(err.msg) + 1);
		_exit(w > 0 ? 0 : 3);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &rc, sizeof(rc)), sizeof(rc));
	assert_true(read(fds[0], msg, sizeof(msg) - 1) > 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(msg, "checkpoint directory "));
	assert_non_null(strstr(msg, c->ckdir));
	assert_non_null(strstr(msg, strerror(EACCES)));
	assert_non_null(strstr(msg, "(it is resolved as the job's user)"));
}

/* --- another user's entries (README, "A shared checkpoint directory") ----- */

#define OTHER_UID 65534
#define THIRD_UID 4242

/* <ckdir>/<name> (the entry itself, not followed) now belongs to uid. */
static void t_own(t_ctx *c, const char *name, uid_t uid)
{
	char p[PATH_MAX];

	t_path(p, sizeof(p), c->ckdir, name);
	assert_int_equal(lchown(p, uid, (gid_t)-1), 0);
}

static void test_another_users_newer_entry_is_skipped(void **state)
{
	t_ctx *c = *state;

	if (geteuid() != 0)
		skip();
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "checkpoint-9", BASE_SEC + 100, 0); /* planted, newer */
	t_own(c, "checkpoint-9", OTHER_UID);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
	assert_int_equal(t_warnings, 1);
	assert_non_null(strstr(t_last_log, "checkpoint-9: owned by uid 65534, not by the job's user (uid 0) or root; skipped as if absent"));
}

static void test_another_users_link_entry_is_skipped(void **state)
{
	t_ctx *c = *state;

	if (geteuid() != 0)
		skip();
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "data-2", BASE_SEC + 100, 0);
	/* Another user's link to the job's own file: not the job's choice. */
	t_symlink(c, "data-2", "checkpoint-2");
	t_own(c, "checkpoint-2", OTHER_UID);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
	assert_non_null(strstr(t_last_log, "checkpoint-2: owned by uid 65534"));
}

static void test_entry_leading_to_another_users_file_is_skipped(void **state)
{
	t_ctx *c = *state;

	if (geteuid() != 0)
		skip();
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "data-2", BASE_SEC + 100, 0);
	t_own(c, "data-2", OTHER_UID);
	t_symlink(c, "data-2", "checkpoint-2");
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
	assert_non_null(strstr(t_last_log, "checkpoint-2: owned by uid 65534"));
}

static void test_only_other_users_entries_finds_none(void **state)
{
	t_ctx *c = *state;
	char name[32];

	if (geteuid() != 0)
		skip();
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "checkpoint-%d", i);
		t_file(c, name, BASE_SEC + i, 0);
		t_own(c, name, i == 1 ? THIRD_UID : OTHER_UID);
	}
	assert_int_equal(t_find(c), 0);
	/* One line for the first, one summary for all. */
	assert_int_equal(t_warnings, 2);
	assert_non_null(strstr(t_last_log, "3 entries owned by other users skipped as if absent"));
}

static void test_another_users_latest_is_ignored(void **state)
{
	t_ctx *c = *state;

	if (geteuid() != 0)
		skip();
	t_file(c, "checkpoint-old", BASE_SEC, 0);
	t_file(c, "checkpoint-new", BASE_SEC + 100, 0);
	t_symlink(c, "checkpoint-old", LATEST);
	t_own(c, LATEST, OTHER_UID);
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-new"); /* the scan decides */
	assert_non_null(strstr(t_last_log, "checkpoint pointer "));
	assert_non_null(strstr(t_last_log, "/latest: owned by uid 65534"));
}

static void test_latest_naming_another_users_entry_is_ignored(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX];

	if (geteuid() != 0)
		skip();
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "checkpoint-2", BASE_SEC + 100, 0);
	t_own(c, "checkpoint-2", OTHER_UID);
	/* The job's own pointer file, naming an entry another user put there. */
	t_path(p, sizeof(p), c->ckdir, LATEST);
	t_write(p, "checkpoint-2\n");
	t_warnings = 0;
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1");
	assert_int_equal(t_warnings, 2); /* the pointer, then the scan's entry */
	assert_non_null(strstr(t_last_log, "checkpoint-2: owned by uid 65534"));
}

/*
 * The rule as the job's user (user_init): a forked child becomes nobody;
 * nobody's own entry and root's newer one are handed out, a third user's
 * newest one is not.
 */
static void test_job_users_and_roots_entries_are_handed_out(void **state)
{
	t_ctx *c = *state;
	char out[RB_PATH_MAX] = "";
	int fds[2], rc = 0, status;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_own(c, "checkpoint-1", OTHER_UID);
	t_file(c, "checkpoint-2", BASE_SEC + 10, 0); /* root's */
	t_file(c, "checkpoint-3", BASE_SEC + 20, 0);
	t_own(c, "checkpoint-3", THIRD_UID);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		rb_err err = { "" };
		ssize_t w;

		close(fds[0]);
		if (setgroups(0, NULL) < 0 ||
		    setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(OTHER_UID, OTHER_UID, OTHER_UID) < 0)
			_exit(2);
		rc = rb_checkpoint_find(c->root, "ckpts", PATTERN, LATEST, out,
					sizeof(out), &err);
		w = write(fds[1], &rc, sizeof(rc));
		w += write(fds[1], out, strlen(out) + 1);
		_exit(w > 0 ? 0 : 3);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &rc, sizeof(rc)), sizeof(rc));
	assert_true(read(fds[0], out, sizeof(out) - 1) > 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rc, 1);
	t_path(c->out, sizeof(c->out), c->ckdir, "checkpoint-2");
	assert_string_equal(out, c->out);
}

/* --- read only ----------------------------------------------------------- */

static uint64_t t_hash_file(const char *path)
{
	uint64_t h = 1469598103934665603ULL;
	unsigned char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW);

	assert_true(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211ULL;
	close(fd);
	return h;
}

/* Everything under path but atimes: names, inodes, modes, sizes, mtimes,
 * ctimes, link targets, file contents. */
static void t_snapshot(FILE *f, const char *path)
{
	struct dirent **list;
	struct stat st;
	char p[PATH_MAX], lbuf[PATH_MAX];
	int n;

	assert_int_equal(lstat(path, &st), 0);
	fprintf(f, "%s ino=%ju mode=%o nlink=%ju size=%jd m=%ld.%09ld c=%ld.%09ld\n",
		path, (uintmax_t)st.st_ino, (unsigned)st.st_mode,
		(uintmax_t)st.st_nlink, (intmax_t)st.st_size,
		(long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		(long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	if (S_ISREG(st.st_mode))
		fprintf(f, "  hash=%016jx\n", (uintmax_t)t_hash_file(path));
	if (S_ISLNK(st.st_mode)) {
		ssize_t len = readlink(path, lbuf, sizeof(lbuf) - 1);

		assert_true(len >= 0);
		lbuf[len] = '\0';
		fprintf(f, "  -> %s\n", lbuf);
	}
	if (!S_ISDIR(st.st_mode))
		return;
	n = scandir(path, &list, NULL, alphasort);
	assert_true(n >= 0);
	for (int i = 0; i < n; i++) {
		if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
			t_path(p, sizeof(p), path, list[i]->d_name);
			t_snapshot(f, p);
		}
		free(list[i]);
	}
	free(list);
}

static char *t_snapshot_str(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	t_snapshot(f, path);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_directory_unchanged_after_find(void **state)
{
	t_ctx *c = *state;
	char p[PATH_MAX], q[PATH_MAX];
	char *before, *after;

	t_file(c, "checkpoint-1", BASE_SEC, 0);
	t_file(c, "checkpoint-2.tmp", BASE_SEC + 5, 0);
	t_file(c, "checkpoint-3.partial", BASE_SEC + 6, 0);
	t_file(c, ".hidden", BASE_SEC + 7, 0);
	t_symlink(c, "checkpoint-gone", "checkpoint-dangling");
	t_path(p, sizeof(p), c->ckdir, "checkpoint-dir");
	assert_int_equal(mkdir(p, 0755), 0);
	t_path(q, sizeof(q), p, "inner");
	t_write(q, "inner");
	t_set_mtime(p, BASE_SEC + 3, 0);
	t_path(p, sizeof(p), c->ckdir, "fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	t_path(p, sizeof(p), c->ckdir, LATEST);
	t_write(p, "checkpoint-1\n");
	t_set_mtime(p, BASE_SEC + 1, 0);

	before = t_snapshot_str(c->ckdir);
	assert_int_equal(t_find(c), 1); /* the pointer */
	t_expect(c, "checkpoint-1");
	assert_int_equal(t_find_with(c, "ckpts", "*", "nolatest"), 1);
	t_expect(c, "checkpoint-dir"); /* the scan */
	assert_int_equal(t_find_with(c, "ckpts", "zzz*", LATEST "x"), 0);
	after = t_snapshot_str(c->ckdir);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* --- bounds -------------------------------------------------------------- */

static void test_2000_entries_newest_found(void **state)
{
	t_ctx *c = *state;
	char name[64];

	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "checkpoint-%04d", i);
		/* Newest is 1234, in the middle; names do not order by time. */
		t_file(c, name, BASE_SEC + (i == 1234 ? 5000 : (i * 7) % 1999),
		       0);
	}
	assert_int_equal(t_find(c), 1);
	t_expect(c, "checkpoint-1234");
	assert_int_equal(t_warnings, 0);
}

static void test_scan_bound_stops_and_warns(void **state)
{
	t_ctx *c = *state;
	char name[64];
	struct stat st;
	int rc;

	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "checkpoint-%03d", i);
		t_file(c, name, BASE_SEC + i, 0);
	}
	rc = rb_checkpoint_find_capped(c->root, "ckpts", PATTERN, LATEST,
				       c->out, sizeof(c->out), &c->err);
	/* Some checkpoint among those examined, and a warning naming it. */
	assert_int_equal(rc, 1);
	assert_int_equal(strncmp(c->out, c->ckdir, strlen(c->ckdir)), 0);
	assert_int_equal(stat(c->out, &st), 0);
	assert_int_equal(t_warnings, 1);
	assert_non_null(strstr(t_last_log, "more than 100 entries"));

	/* Under the bound: no warning, and the newest is found. */
	t_path(name, sizeof(name), "ckpts", "few");
	t_path(c->ckdir, sizeof(c->ckdir), c->root, name);
	assert_int_equal(mkdir(c->ckdir, 0755), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "checkpoint-%03d", i);
		t_file(c, name, BASE_SEC + (i == 7 ? 100 : i), 0);
	}
	t_warnings = 0;
	rc = rb_checkpoint_find_capped(c->root, "ckpts/few", PATTERN, LATEST,
				       c->out, sizeof(c->out), &c->err);
	assert_int_equal(rc, 1);
	t_expect(c, "checkpoint-007");
	assert_int_equal(t_warnings, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_newest_mtime_wins),
		T(test_newest_mtime_counts_nanoseconds),
		T(test_equal_mtime_greater_name_wins),
		T(test_latest_symlink_wins_over_newer),
		T(test_latest_file_naming_entry_wins),
		T(test_latest_file_absolute_path_wins),
		T(test_latest_symlink_absolute_target_wins),
		T(test_dangling_latest_falls_back),
		T(test_latest_symlink_loop_falls_back),
		T(test_latest_symlink_cycle_falls_back),
		T(test_latest_file_naming_itself_falls_back),
		T(test_latest_file_empty_or_oversized_falls_back),
		T(test_latest_fifo_is_ignored_without_blocking),
		T(test_latest_must_be_a_plain_name),
		T(test_hidden_tmp_partial_skipped),
		T(test_pattern_respected),
		T(test_pattern_nothing_matches_is_none),
		T(test_latest_entry_is_not_a_candidate),
		T(test_directory_checkpoint_found),
		T(test_symlinked_entry_resolves_to_target),
		T(test_non_utf8_name_found),
		T(test_255_byte_name_found),
		T(test_relative_dir_taken_from_work_dir),
		T(test_absolute_dir_ignores_work_dir),
		T(test_dotdot_in_dir_resolves_as_path),
		T(test_missing_dir_is_error_with_message),
		T(test_dir_that_is_a_file_is_error),
		T(test_empty_dir_name_rejected),
		T(test_relative_dir_needs_absolute_work_dir),
		T(test_empty_directory_finds_none),
		T(test_overlong_dir_path_is_error),
		T(test_result_longer_than_out_is_error),
		T(test_unreadable_dir_is_eacces_as_user),
		T(test_another_users_newer_entry_is_skipped),
		T(test_another_users_link_entry_is_skipped),
		T(test_entry_leading_to_another_users_file_is_skipped),
		T(test_only_other_users_entries_finds_none),
		T(test_another_users_latest_is_ignored),
		T(test_latest_naming_another_users_entry_is_ignored),
		T(test_job_users_and_roots_entries_are_handed_out),
		T(test_directory_unchanged_after_find),
		T(test_2000_entries_newest_found),
		T(test_scan_bound_stops_and_warns),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
