/* SPDX-License-Identifier: MIT */
/*
 * dynlib.h — a shared library loaded the first time it is needed, its
 * entry points resolved into a table of function pointers.
 *
 * CUPTI (op timing on a GPU) and cuDNN (the convolution pickers) serve
 * only some users.  Linked into libtensormm, they would be loaded into
 * every program, swap mode without a convolution included, and a machine
 * without them could not start one at all.  So their users describe each
 * as a struct tmm_dynlib and load it here on first use; only the types of
 * their headers are taken at build time.
 *
 * A library is tried by each of its file names in turn, best first (the
 * soname of the version built against, then the development link): each
 * in every directory of `dirs` when that list is set (the dl_path
 * tunable), else on the dynamic linker's search path (LD_LIBRARY_PATH,
 * the cache, the calling object's run path).  A set list is the only
 * place searched, so that a test can point at a directory and know that
 * nothing else was used.
 *
 * The outcome, loaded or not, is kept for the rest of the process:
 * libraries are process-wide, and a library found missing does not
 * appear later.  The first call's `dirs` therefore decides; later calls
 * get the same answer whatever they pass.  Calls from any thread are
 * safe; once loaded, a call costs one atomic load.
 *
 * Fault sites (fault.h): dlopen (the library is not found; counted once
 * per load) and dlsym (an entry point is missing; counted per entry).
 */
#ifndef TMM_DYNLIB_H
#define TMM_DYNLIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* One entry point: its symbol, and where its address goes in the table. */
struct tmm_dynlib_entry {
	const char *symbol;
	size_t offset;
};

/*
 * A field of a table, typed as the header declares function f, so that a
 * call through it is checked as a call of f is.  __typeof__ (GCC and
 * Clang, C23's typeof) names the type without referring to f, so no link
 * dependency on the library comes of it.
 */
#define TMM_DYNLIB_FIELD(f) __typeof__(f) *f;
/* The entry that fills field f of the table type `type`. */
#define TMM_DYNLIB_ENTRY(type, f) { #f, offsetof(type, f) },

/* The longest message kept for a library that could not be loaded: as
 * long as a context's error (tmm_last_error) holds. */
#define TMM_DYNLIB_WHY 512

/*
 * A library.  Its user fills the first fields and TMM_DYNLIB_UNLOADED;
 * the rest is the loader's.  Static storage: it lives as long as the
 * process, as the library does.
 */
struct tmm_dynlib {
	const char *what;	       /* "CUPTI", "cuDNN": for messages */
	const char *const *files;      /* names to try, best first; NULL
					* ends the list */
	const struct tmm_dynlib_entry *entries;
	size_t n_entries;
	void *table;		       /* receives each entry's address */
	const char *advice;	       /* what to do without it, the end of
					* the message */
	/* NULL, or whether the library found is one this build can use (a
	 * version check), with the reason in why when it is not. */
	bool (*usable)(const void *table, char *why, size_t whylen);

	pthread_mutex_t lock;
	atomic_int state;	       /* not tried, loaded or missing */
	int rc;			       /* 0, or -ENOSYS once missing */
	char why[TMM_DYNLIB_WHY];      /* the message, once missing */
};

/* The loader's fields of a struct tmm_dynlib before the first load. */
#define TMM_DYNLIB_UNLOADED .lock = PTHREAD_MUTEX_INITIALIZER

/*
 * Loads lib (the first call in the process; later calls answer what it
 * found) from the directories of `dirs` (':'-separated; NULL or "": the
 * dynamic linker's search), and fills its table.  Returns 0, or -ENOSYS
 * with a message in err naming the library, the files and places tried,
 * the dynamic linker's reason (dlerror) and lib->advice.
 */
int tmm_dynlib_load(struct tmm_dynlib *lib, const char *dirs, char *err,
		    size_t errlen);

#endif /* TMM_DYNLIB_H */
