/*
 * slurm.h - the public header of plugin/slurm/: asking Slurm: children with deadlines, squeue/scontrol, slurm.conf, job and array-task addresses.
 *
 * Other folders include this header only (make lint checks it;
 * docs/architecture.md, "The tree").
 */
#ifndef RB_SLURM_PUBLIC_H
#define RB_SLURM_PUBLIC_H

#include "child.h"
#include "slurmconf.h"
#include "job_addr.h"
#include "scontrol.h"

#endif
