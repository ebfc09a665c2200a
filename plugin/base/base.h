/*
 * base.h - the public header of plugin/base/: errors, logging and the root-trust test every folder uses.
 *
 * Other folders include this header only (make lint checks it;
 * docs/architecture.md, "The tree").
 */
#ifndef RB_BASE_PUBLIC_H
#define RB_BASE_PUBLIC_H

#include "diag.h"
#include "trust.h"

#endif
