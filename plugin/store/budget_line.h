/*
 * budget_line.h - a job's budget as one line of its AdminComment, for
 * store = "controller" (docs/stores.md, "The line": strict, versioned,
 * checksummed; who the job is stays the controller's own record). Pure:
 * no Slurm here.
 */
#ifndef RB_BUDGET_LINE_H
#define RB_BUDGET_LINE_H

#include <stddef.h>
#include <sys/types.h>

#include "base/base.h"
#include "rule/rule.h"

/* The line's tag: not RB_PREFIX ("restore_budget: "), the reason line's,
 * so that writing either line keeps the other (admin_comment.h). */
#define RB_BUDGET_TAG "restore_budget[state]: "
#define RB_BUDGET_LINE_VERSION 1
/* The line at its longest (the tag included, the NUL not): typical lines
 * are 300-500 bytes; long checkpoint paths or a long fallback bad list
 * that would pass this are refused (the write fails; on_error decides). */
#define RB_BUDGET_LINE_MAX 3000

/* The budget fields of rec as the line, into out (len bytes). Its length,
 * or -1 with err if it would be longer than RB_BUDGET_LINE_MAX. */
ssize_t rb_budget_line_format(const rb_record *rec, char *out, size_t len,
			      rb_err *err);

/* Read a line (with its tag; `n` bytes, no newline) into the budget
 * fields of rec, which keeps its other fields. 0, or -1 with err naming
 * what is wrong ("key 'F': bad value 'x'", "checksum mismatch", ...). */
int rb_budget_line_parse(const char *line, size_t n, rb_record *rec,
			 rb_err *err);

/* The budget line in an AdminComment (several lines, any bytes): 1 with
 * *at and *n set, 0 if there is none, -1 if there are two. */
int rb_budget_line_find(const char *comment, const char **at, size_t *n);

#endif
