/*
 * eventlog.c - a job's event log: one checksummed line per event, appended
 * under the job's lock, read back streamed (docs/architecture.md, "The
 * ledger").
 */
#define _GNU_SOURCE
#include "ledger_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Is this stored line (without '\n') intact: " crc=<16 hex>" at its end,
 * matching the bytes before it? */
static bool event_line_ok(const char *line, size_t len)
{
	char want[16];
	size_t body;

	if (len <= CRC_TAIL_LEN || memchr(line, '\0', len))
		return false;
	body = len - CRC_TAIL_LEN;
	if (memcmp(line + body, CRC_TAIL, sizeof(CRC_TAIL) - 1) != 0)
		return false;
	rb_fmt_hex64(rb_checksum(line, body), want);
	return memcmp(line + body + sizeof(CRC_TAIL) - 1, want, 16) == 0;
}

/* Messages only: built when one is needed. */
#define PATH() lg_job_path(j->l, j->job_id, name, path, sizeof(path))

/* One printable ASCII line of 1..EVENT_LINE_MAX-64 bytes: values are
 * escaped by the caller (rb_kv_escape), and a newline would forge a
 * second event. Not a summary ("kind=folded"): only the fold writes one,
 * first in the log (eventlog_fold.c); a second would make the next fold
 * drop the counts summed before it. */
static int check_event(rb_job *j, const char *name, const char *event,
		       size_t elen, rb_err *err)
{
	char path[PATH_BUF];

	if (elen == 0 || elen > EVENT_LINE_MAX - 64)
		return rb_err_set(err, "%s: event of %zu bytes refused (1 to %d)",
				  PATH(), elen, EVENT_LINE_MAX - 64);
	for (size_t i = 0; i < elen; i++)
		if (event[i] < 0x20 || event[i] > 0x7e)
			return rb_err_set(err, "%s: event refused: byte 0x%02x at "
					  "offset %zu is not printable ASCII",
					  PATH(), (unsigned char)event[i], i);
	/* "kind=folded" alone too: the line's " crc=" would follow it */
	if (strncmp(event, "kind=folded", 11) == 0 &&
	    (elen == 11 || event[11] == ' '))
		return rb_err_set(err, "%s: event refused: kind=folded is the "
				  "fold's summary, never appended", PATH());
	return 0;
}

/*
 * Does the log end in a torn line? A crash in the middle of an earlier
 * append can leave a last line without its '\n'; the next event then
 * starts on a new line, so that the torn one stays a single bad line
 * instead of swallowing this good one. We hold the lock, so nobody appends
 * between this check and our write. The first append after rb_ledger_lock
 * uses the size seen there under the lock (a crashed writer's torn tail is
 * older than our lock); a later one asks the file again. 1, 0 or -1.
 */
static int torn_tail(rb_job *j, const char *name, rb_err *err)
{
	char path[PATH_BUF], last;
	off_t size = j->log_size;
	struct stat st;
	ssize_t r;

	if (size < 0) {
		if (fstat(j->log_fd, &st) < 0)
			return rb_err_set(err, "%s: %s", PATH(), strerror(errno));
		size = st.st_size;
	}
	if (size == 0)
		return 0;
	do
		r = pread(j->log_fd, &last, 1, size - 1);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return rb_err_set(err, "%s: read: %s", PATH(), strerror(errno));
	return r == 1 && last != '\n';
}

/* The checksum covers "t=... <event>", not " crc=". */
size_t lg_event_line(char *buf, bool newline, const char *event,
		     size_t elen)
{
	size_t pos = 0, start;

	if (newline)
		buf[pos++] = '\n';
	start = pos;
	buf[pos++] = 't';
	buf[pos++] = '=';
	pos += rb_fmt_i64((int64_t)time(NULL), buf + pos);
	buf[pos++] = ' ';
	/* buf is a counted byte buffer for write(), never a C string */
	memcpy(buf + pos, event, elen); // NOLINT(bugprone-not-null-terminated-result)
	pos += elen;
	memcpy(buf + pos, CRC_TAIL, sizeof(CRC_TAIL) - 1);
	pos += sizeof(CRC_TAIL) - 1;
	pos += rb_fmt_hex64(rb_checksum(buf + start, pos - start -
				     (sizeof(CRC_TAIL) - 1)), buf + pos);
	buf[pos++] = '\n';
	return pos;
}

int rb_ledger_append(rb_job *j, const char *event, rb_err *err)
{
	char name[NAME_BUF], path[PATH_BUF];
	size_t elen = strlen(event), pos;
	char *buf = NULL;
	ssize_t w;
	int torn, rc = -1;

	lg_file_name(j->job_id, ".log", name, sizeof(name));
	if (check_event(j, name, event, elen, err) < 0)
		return -1;
	buf = malloc(elen + 64);
	if (!buf)
		return rb_err_set(err, "out of memory");
	/* Bounded growth (docs/architecture.md, "The ledger"): older attempts
	 * are folded into one summary line when this line would cross the
	 * cap; one fstat at most, and usually none (the size seen under the
	 * lock). A fold that fails leaves the log whole: append anyway. */
	lg_log_fold_if_over(j, elen + 64);
	torn = torn_tail(j, name, err);
	if (torn < 0)
		goto fail;
	pos = lg_event_line(buf, torn, event, elen);
	/* One write() of the whole line: with O_APPEND it lands at the end
	 * in one piece; a short write means the disk is full or failing. */
	do
		w = write(j->log_fd, buf, pos);
	while (w < 0 && errno == EINTR);
	j->log_size = -1;
	if (w < 0)
		rb_err_set(err, "%s: write: %s", PATH(), strerror(errno));
	else if ((size_t)w != pos)
		rb_err_set(err, "%s: short write (%zd of %zu bytes)", PATH(), w,
			   pos);
	else if (fsync(j->log_fd) < 0)
		rb_err_set(err, "%s: fsync: %s", PATH(), strerror(errno));
	else
		rc = 0;
fail:
	free(buf);
	return rc;
}
#undef PATH

/* Streamed: memory stays bounded however long the log. A line not
 * checksummed (from verify_below on) is ok unless torn or over-long: the
 * fold checks only what it folds. */
int lg_stream_events(int fd, char *buf, const char *path, size_t verify_below,
		     rb_event_fn fn, void *ctx, rb_err *err)
{
	size_t have = 0, index = 0;
	bool skipping = false; /* inside an over-long line already reported */

	for (;;) {
		size_t start = 0;
		char *nl;
		ssize_t n = read(fd, buf + have, EVENT_LINE_MAX - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rb_err_set(err, "%s: read: %s", path, strerror(errno));
		if (n == 0) {
			/* A last line without '\n' is a torn append. */
			if (have > 0 && !skipping) {
				buf[have] = '\0';
				fn(buf, false, ctx);
			}
			return 0;
		}
		have += (size_t)n;
		while ((nl = memchr(buf + start, '\n', have - start))) {
			size_t len = (size_t)(nl - (buf + start));

			*nl = '\0';
			if (skipping)
				skipping = false;
			else if (fn(buf + start, index >= verify_below ||
				      event_line_ok(buf + start, len), ctx) != 0)
				return 0;
			index++;
			start += len + 1;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
		if (have == EVENT_LINE_MAX) {
			/* No '\n' in a full buffer: we never write such a
			 * line, so report its head once as damaged and skip
			 * the rest of it. */
			if (!skipping) {
				buf[have] = '\0';
				if (fn(buf, false, ctx) != 0)
					return 0;
			}
			skipping = true;
			have = 0;
		}
	}
}

int rb_ledger_events(rb_ledger *l, uint32_t job_id, rb_event_fn fn, void *ctx,
		     rb_err *err)
{
	char name[NAME_BUF], path[PATH_BUF];
	struct stat st;
	char *buf = NULL;
	int bucket_fd = -1, fd = -1;
	int rc = -1;

	if (lg_check_job_id(job_id, err) < 0)
		return -1;
	lg_file_name(job_id, ".log", name, sizeof(name));
	lg_job_path(l, job_id, name, path, sizeof(path));
	rc = lg_open_bucket(l, job_id, false, &bucket_fd, err);
	if (rc == 0)
		rc = lg_open_file_ro(l, bucket_fd, job_id, name, &fd, &st, err);
	if (rc == RB_LEDGER_NOT_READABLE)
		rc = -1; /* err says so; the log has no listing of its own */
	if (rc == 0) {
		buf = malloc(EVENT_LINE_MAX + 1);
		rc = buf ? lg_stream_events(fd, buf, path, SIZE_MAX, fn, ctx, err) :
			   rb_err_set(err, "out of memory");
	}
	free(buf);
	/* Safe for a job this process holds locked: the lock is an OFD lock
	 * (see lock_whole_file), which closing another fd does not drop; only
	 * on a kernel without OFD locks would this close drop it. */
	if (fd >= 0)
		close(fd);
	if (bucket_fd >= 0)
		close(bucket_fd);
	return rc;
}

