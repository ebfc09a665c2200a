/*
 * fuzz_events.c - libFuzzer target for the per-job event log
 * (rb_ledger_append / rb_ledger_events, ledger.c): the reader of a log that
 * a crash may have torn anywhere, and the writer that must recover from it.
 *
 * Input: up to the first 0xff byte, the existing log (any bytes: torn
 * lines, NULs, lines longer than the reader's buffer, forged "crc=" tails);
 * after it, one event text to append. The log is written to a real ledger
 * in a private state_dir on /dev/shm (tmpfs), then the event is appended
 * through the core (under the job's lock) and the log is read back.
 *
 * Properties:
 *   - every line handed to the callback is a C string no longer than the
 *     reader's bound, and there are at most (newlines + 2) of them;
 *   - an event the core accepted to append is read back as an intact
 *     (ok=true) line that ends the log, whatever garbage was before it:
 *     a torn tail never swallows the next good event (ledger.c);
 *   - an event refused by append (empty, too long, not printable ASCII,
 *     or a summary: only the fold writes "kind=folded")
 *     leaves an error message and the log unchanged;
 *   - with the cap at 8 KiB (eventlog_fold.c), an append that folds the
 *     log leaves ONE intact summary line first (the kept lines follow
 *     byte for byte) and at most half the cap before the new line; a summary ("kind=folded",
 *     seeds from mkseeds.c) is read back and summed (eventsum.c) like any
 *     line, and the summary of whatever was read is printable ASCII within
 *     its bound (it could be appended).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eventsum.h"
#include "fuzz.h"
#include "ledger.h"

#define JOB 4242
#define EVENT_LINE_MAX 32768 /* ledger.c */
#define CAP 8192             /* rb_ledger_set_log_cap: folds in reach */
#define SUMMARY_MAX 1024     /* eventlog_fold.c: max(CAP / 8, 1024) */

static char state[64], logpath[128];
static rb_ledger *ledger;

typedef struct {
	size_t lines, bad, folded;
	bool last_ok, first_folded;
	char last[EVENT_LINE_MAX + 1];
	rb_evsum sum;
} seen;

static int on_event(const char *line, bool ok, void *ctx)
{
	seen *s = ctx;
	size_t n = strnlen(line, EVENT_LINE_MAX + 1);
	const char *sp;

	FUZZ_CHECK(n <= EVENT_LINE_MAX, "line of %zu bytes handed out", n);
	rb_evsum_add(&s->sum, line, ok);
	s->bad += !ok;
	if (ok && (sp = strchr(line, ' ')) && !strncmp(sp, " kind=folded ", 13)) {
		s->folded++;
		s->first_folded = s->lines == 0;
	}
	s->lines++;
	s->last_ok = ok;
	memcpy(s->last, line, n + 1);
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	remove(path);
	return 0;
}

/* libFuzzer leaves through exit(): take the private state_dir along. */
static void cleanup(void)
{
	if (ledger)
		rb_ledger_close(ledger);
	ledger = NULL;
	nftw(state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	rb_err err;
	rb_job *j;

	snprintf(state, sizeof(state), "/dev/shm/rb-fuzz-events-%ld",
		 (long)getpid());
	mkdir(state, 0755);
	chmod(state, 0755);
	rb_ledger_set_log_cap(CAP);
	FUZZ_CHECK(rb_ledger_open(state, "c", RB_LEDGER_WRITE, &ledger,
				  &err) == 0, "open: %s", err.msg);
	FUZZ_CHECK(rb_ledger_lock(ledger, JOB, &j, &err) == 0, "lock: %s",
		   err.msg);
	rb_ledger_unlock(j);
	snprintf(logpath, sizeof(logpath), "%s/c/%03d/%d.log", state,
		 JOB % 1000, JOB);
	atexit(cleanup);
}

/* The summary of whatever was read: within its bound, printable ASCII
 * without a newline (rb_ledger_append would take it). */
static void check_summary(const rb_evsum *sum)
{
	static char text[SUMMARY_MAX];
	size_t n = rb_evsum_format(sum, text, sizeof(text));

	FUZZ_CHECK(n < sizeof(text) && strlen(text) == n && n > 0,
		   "summary of %zu bytes", n);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(text[i] >= 0x20 && text[i] <= 0x7e,
			   "summary byte 0x%02x at %zu", (unsigned char)text[i], i);
}

/* An event the core accepted: read back intact as the last line; if the
 * append folded the log (a new file), its summary first, within half the
 * cap before the new line. */
static void check_appended(const seen *s, const char *event,
			   const struct stat *before, const struct stat *after)
{
	size_t el = strlen(event), ll = strlen(s->last);
	const char *body = strchr(s->last, ' ');

	if (after->st_ino != before->st_ino) {
		FUZZ_CHECK(s->folded == 1 && s->first_folded,
			   "folded log: %zu summaries (first: %d)", s->folded,
			   s->first_folded);
		FUZZ_CHECK(after->st_size <= CAP / 2 + (off_t)el + 64,
			   "folded log of %lld bytes", (long long)after->st_size);
	}
	FUZZ_CHECK(s->last_ok, "appended event read back damaged: '%s'",
		   s->last);
	FUZZ_CHECK(!strncmp(s->last, "t=", 2) && body && ll >= el + 22 &&
		   !memcmp(body + 1, event, el) &&
		   !strncmp(body + 1 + el, " crc=", 5),
		   "appended '%s' read back as '%s'", event, s->last);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static seen s;
	const uint8_t *sep = memchr(data, 0xff, size);
	size_t loglen = sep ? (size_t)(sep - data) : size;
	size_t nl = 0, i;
	char *event = NULL;
	struct stat before = { 0 }, after = { 0 };
	rb_err err;
	rb_job *j;
	int fd, rc, appended = 0;

	fuzz_quiet();
	if (!ledger)
		setup();
	fd = open(logpath, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0, "open log");
	FUZZ_CHECK(write(fd, data, loglen) == (ssize_t)loglen, "write log");
	close(fd);
	for (i = 0; i < loglen; i++)
		nl += data[i] == '\n';

	if (sep) {
		size_t elen = size - loglen - 1;

		event = malloc(elen + 1);
		memcpy(event, sep + 1, elen);
		event[elen] = '\0';
		FUZZ_CHECK(rb_ledger_lock(ledger, JOB, &j, &err) == 0,
			   "lock: %s", err.msg);
		stat(logpath, &before);
		memset(&err, 0, sizeof(err));
		rc = rb_ledger_append(j, event, &err);
		rb_ledger_unlock(j);
		stat(logpath, &after);
		if (rc < 0) {
			FUZZ_CHECK(fuzz_err_ok(&err), "refused silently");
			FUZZ_CHECK(after.st_size == before.st_size,
				   "refused append changed the log");
		} else {
			appended = 1;
			nl += 2; /* the event's line, maybe one to end a torn one */
		}
	}

	memset(&s, 0, sizeof(s));
	rb_evsum_init(&s.sum);
	rc = rb_ledger_events(ledger, JOB, on_event, &s, &err);
	FUZZ_CHECK(rc == 0, "events: rc %d: %s", rc, err.msg);
	FUZZ_CHECK(s.lines <= nl + 1, "%zu lines from %zu newlines", s.lines,
		   nl);
	check_summary(&s.sum);
	if (appended)
		check_appended(&s, event, &before, &after);
	rb_evsum_free(&s.sum);
	free(event);
	return 0;
}
