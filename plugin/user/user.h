/*
 * user.h - the public header of plugin/user/: what runs as the job's user: the checkpoint search and the acknowledgement file.
 *
 * Other folders include this header only (make lint checks it;
 * docs/architecture.md, "The tree").
 */
#ifndef RB_USER_PUBLIC_H
#define RB_USER_PUBLIC_H

#include "checkpoint.h"
#include "ack.h"

#endif
