/*
 * fixture.h - what several unit suites set up and tear down the same way: a
 * fresh directory per test, its removal, and entries owned by another user.
 *
 * Header only: each suite is one .c linked with the core (Makefile, "Each
 * unit test links the whole core"), so the helpers are static inline and a
 * suite that does not call one pays nothing. Include it after <cmocka.h>
 * (ut_mkdir_as and ut_touch_as assert).
 */
#ifndef RB_TEST_FIXTURE_H
#define RB_TEST_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "store/store.h"

/* ut_tmpdir BUF LEN TEMPLATE MODE - a fresh directory named after TEMPLATE
 * (ending in XXXXXX) in BUF, then chmod MODE (past the umask: 0755 where a
 * test runs something as another user that must traverse it). 0 or -1. */
static inline int ut_tmpdir(char *buf, size_t len, const char *tmpl, mode_t mode)
{
	if (snprintf(buf, len, "%s", tmpl) >= (int)len || !mkdtemp(buf))
		return -1;
	return chmod(buf, mode);
}

/* ut_rmtree PATH - remove PATH and everything below it, links not followed
 * (what `rm -rf` did from a shell, without the shell). 0 or -1. */
static inline int ut_rmtree(const char *path)
{
	struct stat st;
	struct dirent *e;
	char sub[4096];
	DIR *d;
	int rc = 0;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >=
			    (int)sizeof(sub) ||
		    ut_rmtree(sub) < 0)
			rc = -1;
	}
	closedir(d);
	if (rmdir(path) < 0)
		rc = -1;
	return rc;
}

/* ut_teardown_dir - cmocka teardown of a fixture whose first member is
 * its directory (a char array filled by ut_tmpdir): removes the directory,
 * frees the fixture. */
static inline int ut_teardown_dir(void **state)
{
	int rc = ut_rmtree((const char *)*state);

	free(*state);
	return rc;
}

/* ut_mkdir_as PATH MODE UID - a directory of UID (group UID), mode MODE. */
static inline void ut_mkdir_as(const char *path, mode_t mode, uid_t uid)
{
	assert_int_equal(mkdir(path, mode), 0);
	assert_int_equal(chmod(path, mode), 0); /* past the umask */
	assert_int_equal(chown(path, uid, uid), 0);
}

/* ut_touch_as PATH UID - a new empty file of UID (group UID). */
static inline void ut_touch_as(const char *path, uid_t uid)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lchown(path, uid, uid), 0);
}

/* ut_config_in DIR - the defaults with state_dir DIR and the small budget
 * the lifecycle suites use (M = 1, R = 2, no restore timeout). */
static inline rb_config *ut_config_in(const char *dir)
{
	rb_config *cfg = rb_config_defaults();

	free(cfg->state_dir);
	cfg->state_dir = strdup(dir);
	cfg->max_failures = 1;
	cfg->restore_retry_num = 2;
	cfg->restore_timeout = 0;
	return cfg;
}

/* The config suites' fixture: a fresh directory for the one file a test
 * writes (path), the config it loaded and the error. */
typedef struct {
	char dir[64];
	char path[128];
	rb_config *cfg;
	rb_err err;
} ut_cfg_fixture;

static inline int ut_cfg_setup(void **state)
{
	ut_cfg_fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/rb_test_config.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static inline int ut_cfg_teardown(void **state)
{
	ut_cfg_fixture *f = *state;

	rb_config_free(f->cfg);
	if (f->path[0])
		unlink(f->path);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ut_job_info CLUSTER ID ATTEMPT - user u's job in partition low, account
 * acct, checkpoints in ckpt; its clock 1000 + 100 a attempt. */
static inline rb_job_info ut_job_info(const char *cluster, uint32_t id,
				      int64_t attempt)
{
	rb_job_info j = {
		.cluster = cluster, .job_id = id, .attempt = attempt,
		.uid = 1000, .gid = 1000, .user = "u", .partition = "low",
		.account = "acct", .work_dir = "/home/u", .checkpoint_dir = "ckpt",
		.now = 1000 + attempt * 100,
	};
	return j;
}

#endif
