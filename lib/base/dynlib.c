/* SPDX-License-Identifier: MIT */
/*
 * dynlib.c — a shared library loaded on first use (see dynlib.h).
 *
 * The outcome is published with a release store of lib->state after the
 * table is filled, so a caller that reads "loaded" with an acquire load
 * sees the whole table without taking the lock.  The lock only orders
 * the first loads of threads that race to it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dynlib.h"
#include "fault.h"
#include "text.h"

enum { NOT_TRIED, LOADED, MISSING };

/* dlsym answers a data pointer; the table holds function pointers.
 * POSIX gives them one representation, which the copy relies on. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
	       "function and data pointers differ in size");

/* dlopen(name), keeping dlerror's reason in why when why is still empty:
 * the first failure is the one of the name wanted most. */
static void *try_open(const char *name, char *why, size_t whylen)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (!h && !why[0]) {
		const char *e = dlerror();

		snprintf(why, whylen, "%s", e ? e : "no reason given");
	}
	return h;
}

/* Opens the first of lib->files found, or NULL with the reason in why. */
static void *open_first(const struct tmm_dynlib *lib, const char *dirs,
			char *why, size_t whylen)
{
	char path[4096];
	void *h = NULL;

	why[0] = '\0';
	/* Names outer, directories inner: the name wanted most, wherever
	 * it is, beats a lesser one in an earlier directory. */
	for (size_t i = 0; lib->files[i] && !h; i++) {
		const char *d = dirs;

		if (!d || !*d) {
			h = try_open(lib->files[i], why, whylen);
			continue;
		}
		while (*d && !h) {
			size_t len = strcspn(d, ":");

			if (len) {
				snprintf(path, sizeof(path), "%.*s/%s",
					 (int)len, d, lib->files[i]);
				h = try_open(path, why, whylen);
			}
			d += len + (d[len] == ':');
		}
	}
	return h;
}

/* "; tried A, B in dl_path's DIRS; ADVICE": the end of every message. */
static void add_tried(struct tmm_text *t, const struct tmm_dynlib *lib,
		      const char *dirs)
{
	tmm_text_add(t, "; tried ");
	for (size_t i = 0; lib->files[i]; i++)
		tmm_text_add(t, "%s%s", i ? ", " : "", lib->files[i]);
	if (dirs && *dirs)
		tmm_text_add(t, " in dl_path's %s only", dirs);
	else
		tmm_text_add(t, " on the dynamic linker's search path");
	tmm_text_add(t, "; %s", lib->advice);
}

/* Loads lib and fills its table; 0, or -ENOSYS with lib->why set. */
static int load(struct tmm_dynlib *lib, const char *dirs)
{
	struct tmm_text t;
	char reason[512];
	void *h = NULL;

	tmm_text_init(&t, lib->why, sizeof(lib->why));
	if (tmm_fault_now(TMM_SITE_DLOPEN))
		snprintf(reason, sizeof(reason),
			 "injected failure (fault site dlopen)");
	else
		h = open_first(lib, dirs, reason, sizeof(reason));
	if (!h) {
		tmm_text_add(&t, "%s could not be loaded: %s", lib->what,
			     reason);
		add_tried(&t, lib, dirs);
		return -ENOSYS;
	}
	for (size_t i = 0; i < lib->n_entries; i++) {
		const struct tmm_dynlib_entry *e = &lib->entries[i];
		const char *why;
		void *p = NULL;

		(void)dlerror();
		if (!tmm_fault_now(TMM_SITE_DLSYM))
			p = dlsym(h, e->symbol);
		if (p) {
			memcpy((char *)lib->table + e->offset, &p, sizeof(p));
			continue;
		}
		why = dlerror(); /* NULL when the failure was injected */
		tmm_text_add(&t, "%s could not be loaded: it has no %s (%s), "
			     "so it is not a version this library can use",
			     lib->what, e->symbol,
			     why ? why : "injected failure (fault site "
					 "dlsym)");
		add_tried(&t, lib, dirs);
		dlclose(h);
		return -ENOSYS;
	}
	if (lib->usable && !lib->usable(lib->table, reason, sizeof(reason))) {
		tmm_text_add(&t, "%s could not be used: %s", lib->what,
			     reason);
		add_tried(&t, lib, dirs);
		dlclose(h);
		return -ENOSYS;
	}
	/* The handle stays open for the process: the table points into it.
	 * The dynamic linker keeps it reachable, so a leak check at exit
	 * does not count it. */
	return 0;
}

int tmm_dynlib_load(struct tmm_dynlib *lib, const char *dirs, char *err,
		    size_t errlen)
{
	int rc;

	if (atomic_load_explicit(&lib->state, memory_order_acquire) == LOADED)
		return 0;
	pthread_mutex_lock(&lib->lock);
	if (atomic_load_explicit(&lib->state, memory_order_relaxed) ==
	    NOT_TRIED) {
		lib->rc = load(lib, dirs);
		atomic_store_explicit(&lib->state,
				      lib->rc == 0 ? LOADED : MISSING,
				      memory_order_release);
	}
	rc = lib->rc;
	if (rc < 0 && errlen)
		snprintf(err, errlen, "%s", lib->why);
	pthread_mutex_unlock(&lib->lock);
	return rc;
}
