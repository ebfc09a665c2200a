/*
 * test_node_note.c - the node-local note by which only the batch host does
 * ledger work (node_note.h): what a prolog notes is what the batch step
 * claims; the epilog tells the batch host from the others; run_dir is
 * root's alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "node_note.h"

#define HOST "node017"
#define CLUSTER "testc"

/* the directory first: fixture.h, ut_teardown_dir */
typedef struct {
	char top[64];
	char run[96];
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	if (!f || ut_tmpdir(f->top, sizeof(f->top), "/tmp/rb-note-XXXXXX", 0700) < 0)
		return -1;
	snprintf(f->run, sizeof(f->run), "%s/run", f->top);
	*state = f;
	return 0;
}

static rb_job_info a_job(void)
{
	rb_job_info j = { 0 };

	j.cluster = CLUSTER;
	j.job_id = 4242;
	j.attempt = 3;
	j.uid = 1001;
	j.gid = 1002;
	j.user = "alice";
	j.partition = "low";
	j.account = NULL;
	j.work_dir = "/home/alice/run";
	j.submission = "n:abc123";
	return j;
}

static void test_note_claimed_gives_back_what_the_prolog_saw(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_note_job got;
	rb_err err;

	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	assert_int_equal(got.job.job_id, 4242);
	assert_int_equal(got.job.attempt, 3);
	assert_int_equal(got.job.uid, 1001);
	assert_int_equal(got.job.gid, 1002);
	assert_string_equal(got.job.cluster, CLUSTER);
	assert_string_equal(got.job.user, "alice");
	assert_string_equal(got.job.partition, "low");
	assert_null(got.job.account);
	assert_string_equal(got.job.work_dir, "/home/alice/run");
	assert_string_equal(got.job.submission, "n:abc123");
}

static void test_note_claimed_once_only(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_note_job got;
	rb_err err;

	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 1);
}

static void test_epilog_on_batch_host_sees_claimed_others_noted(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_note_job got;
	rb_err err;

	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_write(f->run, "node018", &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	assert_int_equal(rb_note_look(f->run, HOST, CLUSTER, 4242), RB_NOTE_CLAIMED);
	assert_int_equal(rb_note_look(f->run, "node018", CLUSTER, 4242), RB_NOTE_NOTED);
	assert_int_equal(rb_note_look(f->run, HOST, CLUSTER, 4243), RB_NOTE_NONE);
	rb_note_forget(f->run, HOST, CLUSTER, 4242);
	rb_note_forget(f->run, "node018", CLUSTER, 4242);
	assert_int_equal(rb_note_look(f->run, HOST, CLUSTER, 4242), RB_NOTE_NONE);
	assert_int_equal(rb_note_look(f->run, "node018", CLUSTER, 4242), RB_NOTE_NONE);
}

static void test_epilog_without_run_dir_is_unknown(void **state)
{
	fixture *f = *state;

	assert_int_equal(rb_note_look(f->run, HOST, CLUSTER, 4242), RB_NOTE_UNKNOWN);
}

static void test_new_prolog_drops_an_earlier_attempts_claim(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_note_job got;
	rb_err err;

	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	/* the end was not recorded: the claim stayed; the next attempt's
	 * prolog runs here, but its batch step runs elsewhere */
	j.attempt = 4;
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_look(f->run, HOST, CLUSTER, 4242), RB_NOTE_NOTED);
}

static void test_batch_step_without_note_marks_the_batch_host(void **state)
{
	fixture *f = *state;
	rb_note_job got;
	rb_err err;

	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 1);
	assert_int_equal(rb_note_mark(f->run, HOST, CLUSTER, 4242, &err), 0);
	assert_int_equal(rb_note_look(f->run, HOST, CLUSTER, 4242), RB_NOTE_CLAIMED);
}

static void test_run_dir_is_created_root_only(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	struct stat st;
	rb_err err;

	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(stat(f->run, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

static void test_run_dir_others_can_enter_is_refused(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_err err;

	assert_int_equal(mkdir(f->run, 0755), 0);
	assert_int_equal(chmod(f->run, 0755), 0);
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), -1);
	assert_non_null(strstr(err.msg, "is not root's alone"));
	assert_int_equal(rb_note_look(f->run, HOST, CLUSTER, 4242), RB_NOTE_UNKNOWN);
}

static void test_run_dir_symlink_is_refused(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	char real[128];
	rb_err err;

	snprintf(real, sizeof(real), "%s/elsewhere", f->top);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink(real, f->run), 0);
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), -1);
}

static void test_note_name_cannot_leave_run_dir(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_note_job got;
	rb_err err;

	assert_int_equal(rb_note_write(f->run, "../x", &j, &err), -1);
	assert_int_equal(rb_note_write(f->run, ".hidden", &j, &err), -1);
	j.cluster = "a/b";
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), -1);
	assert_int_equal(rb_note_claim(f->run, HOST, "a/b", 4242, &got, &err), -1);
}

/* Rule: the note carries any byte a path may hold (docs/security.md,
 * "Names"): a newline cannot add a line, and the value comes back whole. */
static void test_note_value_with_newline_round_trips(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_note_job got;
	rb_err err;

	j.work_dir = "/home/alice\nattempt=0\nuid=0";
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	assert_string_equal(got.job.work_dir, "/home/alice\nattempt=0\nuid=0");
	assert_int_equal(got.job.attempt, 3);
	assert_int_equal(got.job.uid, 1001);
}

/* Rule: every byte 1..255, in every text field, round-trips. */
static void test_note_round_trips_every_byte(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	char all[256], name[200];
	rb_note_job got;
	rb_err err;

	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	memcpy(name, all + 55, sizeof(name) - 1); /* bytes 56..254 */
	name[sizeof(name) - 1] = '\0';
	j.work_dir = all;
	j.user = all;
	j.partition = name;
	j.account = name;
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	assert_memory_equal(got.job.work_dir, all, 256);
	assert_memory_equal(got.job.user, all, 256);
	assert_string_equal(got.job.partition, name);
	assert_string_equal(got.job.account, name);
	assert_int_equal(got.job.attempt, 3);
}

/* The longest work dir the ledger keeps, of bytes escaped as 3 each: the
 * note is at its largest and still read back. */
static void test_note_of_the_longest_escaped_values_is_read_back(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	static char dir[RB_PATH_MAX], name[RB_NAME_MAX];
	static rb_note_job got;
	rb_err err;

	memset(dir, '\n', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = '\0';
	memset(name, 0xff, sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	j.work_dir = dir;
	j.user = j.partition = j.account = name;
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	assert_string_equal(got.job.work_dir, dir);
	assert_string_equal(got.job.account, name);
}

/* Rule: a value longer than the note keeps leaves the job tracked: it is
 * replaced by a digest that is no path (a cut path could name another
 * directory), and the rest of the note is intact. */
static void test_note_over_long_value_keeps_the_job_tracked(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	static char dir[6000], other[6000], name[300];
	static rb_note_job got, got2;
	rb_err err;

	memset(dir, 'a', sizeof(dir) - 1);
	dir[0] = '/';
	dir[sizeof(dir) - 1] = '\0';
	memcpy(other, dir, sizeof(other));
	other[100] = 'b';
	memset(name, 'p', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	j.work_dir = dir;
	j.partition = name;
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), 0);
	assert_int_equal(got.job.attempt, 3);
	assert_int_equal(got.job.uid, 1001);
	assert_non_null(strstr(got.job.work_dir, "rb-digest:"));
	assert_null(strchr(got.job.work_dir, '/'));
	assert_non_null(strstr(got.job.work_dir, ":5999"));
	assert_non_null(strstr(got.job.partition, "rb-digest:"));
	assert_string_equal(got.job.submission, "n:abc123");
	/* another long value, another digest */
	j.work_dir = other;
	j.job_id = 4243;
	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4243, &got2, &err), 0);
	assert_string_not_equal(got.job.work_dir, got2.job.work_dir);
}

static void test_note_fit_keeps_what_fits(void **state)
{
	char out[8];

	(void)state;
	assert_int_equal(rb_note_fit("1234567", sizeof(out), out), 0);
	assert_string_equal(out, "1234567");
	assert_int_equal(rb_note_fit("12345678", sizeof(out), out), 1);
	assert_int_equal(strlen(out), 7);
}

/* A note is versioned: one without its first line (note=2) is not one
 * this plugin wrote, and is refused rather than read raw. */
static void test_note_without_its_version_line_is_refused(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	static const char old[] = "attempt=2\nuid=1001\ngid=1002\nuser=alice\n"
		"partition=\naccount=\nwork_dir=/home/alice/a b%41\n"
		"submission=n:abc\n";
	rb_note_job got;
	char path[256];
	rb_err err;
	int fd;

	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	snprintf(path, sizeof(path), "%s/%s.%s.4242.prolog", f->run, HOST, CLUSTER);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, old, sizeof(old) - 1), sizeof(old) - 1);
	close(fd);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), -1);
	assert_non_null(strstr(err.msg, "not a note this plugin wrote"));
}

static void test_note_not_ours_is_not_claimed(void **state)
{
	fixture *f = *state;
	rb_job_info j = a_job();
	rb_note_job got;
	char path[256];
	rb_err err;
	int fd;

	assert_int_equal(rb_note_write(f->run, HOST, &j, &err), 0);
	snprintf(path, sizeof(path), "%s/%s.%s.4242.prolog", f->run, HOST, CLUSTER);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "attempt=1\nbogus=2\n", 18), 18);
	close(fd);
	assert_int_equal(rb_note_claim(f->run, HOST, CLUSTER, 4242, &got, &err), -1);
	assert_non_null(strstr(err.msg, "not a note this plugin wrote"));
}

/* A kept end reads back as written; other jobs' and hosts' names are not
 * listed as this node's (docs/architecture.md, "An end not written"). */
static void test_kept_end_reads_back_and_is_listed_for_its_node(void **state)
{
	fixture *f = *state;
	rb_note_end end = { 3, 4, 42, 9, 1700000000 }, got;
	uint32_t jobs[4];
	rb_err err;

	assert_int_equal(rb_note_end_keep(f->run, HOST, CLUSTER, 4242, &end, &err), 0);
	assert_int_equal(rb_note_end_keep(f->run, "other", CLUSTER, 7, &end, &err), 0);
	assert_int_equal(rb_note_end_read(f->run, HOST, CLUSTER, 4242, &got), 0);
	assert_int_equal(got.attempt, 3);
	assert_int_equal(got.restart_count, 4);
	assert_int_equal(got.exit_code, 42);
	assert_int_equal(got.signal, 9);
	assert_int_equal(got.now, 1700000000);
	assert_int_equal(rb_note_end_list(f->run, HOST, CLUSTER, jobs, 4), 1);
	assert_int_equal(jobs[0], 4242);
	rb_note_end_drop(f->run, HOST, CLUSTER, 4242);
	assert_int_equal(rb_note_end_read(f->run, HOST, CLUSTER, 4242, &got), 1);
	assert_int_equal(rb_note_end_list(f->run, HOST, CLUSTER, jobs, 4), 0);
}

/* A file under a kept end's name that this plugin did not write is
 * refused, not read as an end. */
static void test_kept_end_not_written_by_the_plugin_is_refused(void **state)
{
	fixture *f = *state;
	rb_note_end end = { 0, 0, 0, 0, 1 }, got;
	char path[256];
	FILE *fp;
	rb_err err;

	assert_int_equal(rb_note_end_keep(f->run, HOST, CLUSTER, 5, &end, &err), 0);
	snprintf(path, sizeof(path), "%s/%s.%s.5.end", f->run, HOST, CLUSTER);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("end=1\nattempt=0\nrestart_count=0\nexit_code=300\nsignal=0\nnow=1\n", fp);
	fclose(fp);
	assert_int_equal(rb_note_end_read(f->run, HOST, CLUSTER, 5, &got), -1);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, ut_teardown_dir)
	const struct CMUnitTest tests[] = {
		T(test_note_claimed_gives_back_what_the_prolog_saw),
		T(test_kept_end_reads_back_and_is_listed_for_its_node),
		T(test_kept_end_not_written_by_the_plugin_is_refused),
		T(test_note_claimed_once_only),
		T(test_epilog_on_batch_host_sees_claimed_others_noted),
		T(test_epilog_without_run_dir_is_unknown),
		T(test_new_prolog_drops_an_earlier_attempts_claim),
		T(test_batch_step_without_note_marks_the_batch_host),
		T(test_run_dir_is_created_root_only),
		T(test_run_dir_others_can_enter_is_refused),
		T(test_run_dir_symlink_is_refused),
		T(test_note_name_cannot_leave_run_dir),
		T(test_note_value_with_newline_round_trips),
		T(test_note_round_trips_every_byte),
		T(test_note_of_the_longest_escaped_values_is_read_back),
		T(test_note_over_long_value_keeps_the_job_tracked),
		T(test_note_fit_keeps_what_fits),
		T(test_note_without_its_version_line_is_refused),
		T(test_note_not_ours_is_not_claimed),
	};
	return cmocka_run_group_tests_name("node_note", tests, NULL, NULL);
}
