/* SPDX-License-Identifier: MIT */
/*
 * stand_in.h — the double's stand-ins for the libraries libtensormm
 * loads where it first uses them rather than links (lib/base/dynlib.h):
 * libcupti.so.N (cupti_so.c) and libcudnn.so.N (cudnn_so.c), built under
 * the real sonames in tests/cudafake/lib/.  A program on the double finds
 * them there by its run path, before any real one.
 *
 * The double's CUPTI and cuDNN are in the program (cupti.c, cudnn.c),
 * where its runtime's streams and clock, and what a test set, are.  A
 * stand-in is only its library's entry points, each handing the call to
 * the double's function of the same name through a table the program
 * exports (programs on the double are linked with -export-dynamic).  A
 * program without the double has no table: dlopen refuses the stand-in,
 * naming it.
 */
#ifndef CUDAFAKE_STAND_IN_H
#define CUDAFAKE_STAND_IN_H

#include "config.h"

/* An initialiser of a table of the library's type: each entry point's
 * field set to the double's function. */
#define CUDAFAKE_STAND_IN_CALL(f) .f = f,

#ifdef TMM_HAVE_CUPTI
#include "lib/backend/cupti_lib.h"

/* The double's CUPTI (cupti.c), for libcupti.so.N. */
extern const struct tmm_cupti cudafake_cupti;
#endif

#ifdef TMM_HAVE_CUDNN
#include "lib/exec/cudnn_lib.h"

/* The double's cuDNN (cudnn.c), for libcudnn.so.N. */
extern const struct tmm_cudnn cudafake_cudnn;
#endif

#endif /* CUDAFAKE_STAND_IN_H */
