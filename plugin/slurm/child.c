/*
 * child.c - a program run with a hard deadline (see child.h and
 * docs/slurm-facts.md, "Asking the controller").
 */
#define _GNU_SOURCE /* pipe2 */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long a SIGKILLed child may take to be reaped before we give up on it
 * (a process in uninterruptible sleep cannot be reaped; we never wait on). */
#define RB_REAP_GRACE_MS 1000

rb_deadline rb_deadline_in(long long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
}

long long rb_deadline_left(rb_deadline d)
{
	long long left = d - rb_deadline_in(0);

	return left > 0 ? left : 0;
}

typedef struct {
	int fd;
	char *buf;
	size_t len, used;
} sink;

/* Read what is there; returns 0 at EOF (fd closed), 1 if more may come. */
static int sink_read(sink *s)
{
	char scratch[512];
	char *dst = scratch;
	size_t room = sizeof(scratch);
	ssize_t n;

	if (s->used + 1 < s->len) {
		dst = s->buf + s->used;
		room = s->len - 1 - s->used;
	}
	n = read(s->fd, dst, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		close(s->fd);
		s->fd = -1;
		return 0;
	}
	if (dst != scratch) {
		s->used += (size_t)n;
		s->buf[s->used] = '\0';
	}
	return 1;
}

/* Drain both pipes until EOF on both or the deadline. 0 = EOF, -1 = late. */
static int drain(sink *out, sink *errs, rb_deadline deadline)
{
	while (out->fd >= 0 || errs->fd >= 0) {
		struct pollfd p[2] = { { .fd = out->fd, .events = POLLIN },
				       { .fd = errs->fd, .events = POLLIN } };
		long long left = rb_deadline_left(deadline);
		int n;

		if (left <= 0)
			return -1;
		n = poll(p, 2, (int)(left > 60000 ? 60000 : left));
		if (n < 0 && errno != EINTR)
			return -1;
		if (n <= 0)
			continue;
		if (out->fd >= 0 && p[0].revents)
			sink_read(out);
		if (errs->fd >= 0 && p[1].revents)
			sink_read(errs);
	}
	return 0;
}

/* waitpid until `deadline`; 1 = reaped (status set), 0 = not yet, -1 = lost. */
static int reap(pid_t pid, int *status, rb_deadline deadline)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1; /* ECHILD: the host process reaped it */
		if (rb_deadline_left(deadline) <= 0)
			return 0;
		usleep(5000);
	}
}

static pid_t spawn(const char *const argv[], const char *const envp[],
		   int out_fd, int err_fd, rb_err *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid = -1;
	int rc;

	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	/* its own process group, so a deadline kills whatever it started;
	 * default signal dispositions and an empty mask, whatever the host's */
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
					POSIX_SPAWN_SETSIGMASK |
					POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(&pid, argv[0], &fa, &attr, (char *const *)argv,
			 (char *const *)envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		rb_err_setf(err, "cannot run %s: %s", argv[0], strerror(rc));
		return -1;
	}
	return pid;
}

/* The child's stderr, one line, for the error message. */
static const char *first_line(char *s)
{
	s[strcspn(s, "\n")] = '\0';
	return s[0] ? s : "no message";
}

static int verdict(const char *prog, int reaped, int status, bool late,
		   char *errbuf, rb_err *err)
{
	if (late)
		return rb_err_set(err, "%s killed after its deadline (the controller did not answer in time)",
				  prog);
	if (reaped < 0)
		return rb_err_set(err, "%s: exit status lost (reaped by the host process)",
				  prog);
	if (reaped == 0)
		return rb_err_set(err, "%s closed its output but did not exit before the deadline",
				  prog);
	if (WIFSIGNALED(status))
		return rb_err_set(err, "%s killed by signal %d", prog,
				  WTERMSIG(status));
	if (WEXITSTATUS(status) != 0)
		rb_err_setf(err, "%s exited %d: %s", prog, WEXITSTATUS(status),
			    first_line(errbuf));
	return WEXITSTATUS(status);
}

int rb_child_run(const char *const argv[], const char *const envp[],
		 rb_deadline deadline, char *out, size_t outlen, rb_err *err)
{
	char errbuf[512] = "";
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	sink so = { -1, out, outlen, 0 }, se = { -1, errbuf, sizeof(errbuf), 0 };
	int status = 0, reaped = 0, rc = -1;
	bool late = false;
	pid_t pid = -1;

	if (outlen > 0)
		out[0] = '\0';
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		rb_err_setf(err, "pipe: %s", strerror(errno));
		goto done;
	}
	pid = spawn(argv, envp, po[1], pe[1], err);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if (pid < 0)
		goto done;
	so.fd = po[0];
	se.fd = pe[0];
	po[0] = pe[0] = -1;
	late = drain(&so, &se, deadline) < 0;
	if (!late)
		reaped = reap(pid, &status, deadline);
	if (late || reaped == 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		if (reap(pid, &status, rb_deadline_in(RB_REAP_GRACE_MS)) == 0)
			rb_log(RB_LOG_ERROR, "%s (pid %d) survived SIGKILL; not waiting for it",
			       argv[0], (int)pid);
	}
	rc = verdict(argv[0], reaped, status, late, errbuf, err);
done:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	if (so.fd >= 0)
		close(so.fd);
	if (se.fd >= 0)
		close(se.fd);
	return rc;
}
