/*
 * test_ack.c - the job's acknowledgement: the one "acknowledged?" check
 * (rb_ack_confirms, docs/security.md, "The acknowledgement"). It chowns to
 * another user: root only.
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

#include "fixture.h"
#include "ack.h"
#include "record.h"

#define CLUSTER "c1"
#define JOB 41
#define NOBODY 65534 /* a real user (setpriv --init-groups needs one) */

/* the directory first: fixture.h, ut_teardown_dir */
typedef struct {
	char dir[64]; /* holds the job's working directory */
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f || ut_tmpdir(f->dir, sizeof(f->dir), "/tmp/rb-ack-XXXXXX", 0755) < 0)
		return -1;
	*state = f;
	return 0;
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

static void test_ack_file_of_the_jobs_user_confirms(void **state)
{
	fixture *f = *state;
	char wd[128], path[600];
	rb_record rec;

	if (geteuid() != 0)
		skip(); /* the look runs as the job's user */
	snprintf(wd, sizeof(wd), "%s/w", f->dir);
	ut_mkdir_as(wd, 0755, NOBODY);
	nobody_record(&rec, 1, wd);
	assert_false(rb_ack_confirms(&rec));
	assert_int_equal(rb_ack_path(wd, NULL, CLUSTER, JOB, 1, path,
				     sizeof(path)), 0);
	ut_touch_as(path, NOBODY);
	assert_true(rb_ack_confirms(&rec));
	/* names are per attempt: an old file never confirms a new attempt */
	nobody_record(&rec, 2, wd);
	assert_false(rb_ack_confirms(&rec));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, ut_teardown_dir)
	const struct CMUnitTest tests[] = {
		T(test_ack_file_of_the_jobs_user_confirms),
	};
	return cmocka_run_group_tests_name("ack", tests, NULL, NULL);
}
