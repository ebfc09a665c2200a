/*
 * child.h - run a program with a hard deadline and capture its output.
 *
 * The plugin asks the controller things (how an attempt was interrupted,
 * hold a job) from root contexts that must never wait without a deadline:
 * libslurm's own RPCs retry without one, and on 24.11+ they are fatal in a
 * process where libslurm was never initialised (docs/slurm-facts.md). So the
 * plugin runs `scontrol` instead: spawned (posix_spawn: no fork without
 * exec in a threaded slurmstepd), read through a pipe until EOF or the
 * deadline, then SIGKILLed and reaped with a deadline of its own.
 */
#ifndef RB_CHILD_H
#define RB_CHILD_H

#include <stddef.h>

#include "base/base.h"

/* An absolute deadline on CLOCK_MONOTONIC, in milliseconds. */
typedef long long rb_deadline;

/* A deadline `ms` milliseconds from now. */
rb_deadline rb_deadline_in(long long ms);

/* Milliseconds left before the deadline (0 if it has passed). */
long long rb_deadline_left(rb_deadline d);

/*
 * Run argv[0] (an absolute path; no PATH search) with environment envp,
 * stdin from /dev/null, stdout captured into out (NUL-terminated; output
 * beyond outlen-1 bytes is read and dropped), stderr captured into err's
 * message on failure. Returns the exit status (0..255) if the child exited
 * before the deadline; -1 with err set if it could not be started, was
 * killed by a signal, or was killed at the deadline (err says which).
 */
int rb_child_run(const char *const argv[], const char *const envp[],
		 rb_deadline deadline, char *out, size_t outlen, rb_err *err);

#endif
