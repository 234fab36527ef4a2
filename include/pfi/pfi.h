/*
 * pfi/pfi.h — all of libpfi's public API in one include.
 *
 * A program may include this header alone, or only the area headers it uses (each includes
 * what it needs). Link with `pkg-config --cflags --libs pfi` (the shared libpfi.so.0, which
 * exports exactly the functions and objects declared below), or `pkg-config --static` for
 * libpfi.a. Every header in include/pfi is listed here (tests/umbrella.sh checks it).
 */
#ifndef PFI_PFI_H
#define PFI_PFI_H

/* Foundations: errors and diagnostics, the allocator, numbers, files. */
#include "pfi/atomic_file.h"
#include "pfi/conf.h"
#include "pfi/csv.h"
#include "pfi/error.h"
#include "pfi/memory.h"
#include "pfi/quantile.h"
#include "pfi/rng.h"
#include "pfi/value.h"

/* Telemetry: readers, reduction to a run's numbers, kernel and training logs. */
#include "pfi/featmap.h"
#include "pfi/kernlog.h"
#include "pfi/reduce.h"
#include "pfi/telemetry.h"
#include "pfi/trainlog.h"

/* Analysis: runs, manifests, steady state, the index, groups, the run store. */
#include "pfi/groups.h"
#include "pfi/index.h"
#include "pfi/manifest.h"
#include "pfi/runs.h"
#include "pfi/steady.h"
#include "pfi/store.h"

/* Statistics: tests and fits, the predictor, the job model and library. */
#include "pfi/fit.h"
#include "pfi/library.h"
#include "pfi/model.h"
#include "pfi/stats.h"

/* Power: curves, allocation, jobs files, job libraries, the policy simulation. */
#include "pfi/allocate.h"
#include "pfi/curve.h"
#include "pfi/joblib.h"
#include "pfi/jobs.h"
#include "pfi/simulate.h"
#include "pfi/topology.h"

/* Figures. */
#include "pfi/plot.h"
#include "pfi/plot_sim.h"

/* Hardware: GPU backends, cap control, sweeps. */
#include "pfi/capctl.h"
#include "pfi/gpu.h"
#include "pfi/sweep.h"

/* The cluster controller and the embedded HTTP server (pfid, pfi control --listen). */
#include "pfi/agent_api.h"
#include "pfi/audit.h"
#include "pfi/control.h"
#include "pfi/control_files.h"
#include "pfi/grid.h"
#include "pfi/http.h"
#include "pfi/openadr.h"
#include "pfi/slurm.h"
#include "pfi/stage.h"

#endif
