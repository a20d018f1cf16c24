/* SPDX-License-Identifier: MIT */
/*
 * plan_file.c — plan files on disk (docs/plan-format.md): a plan written
 * atomically through a private temporary, so a crash never leaves half a
 * file and nothing planted in a shared directory is overwritten, and read
 * back whole.
 * The text itself is made by plan_encode.c and checked line by line by
 * plan_decode.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/fault.h"
#include "lib/base/number_text.h"
#include "plan.h"
#include "plan_decode.h"
#include "plan_encode.h"
#include "plan_file.h"
#include "plan_syntax.h"
#include "lib/base/fault.h"
#include "lib/base/xalloc.h"

/* A limit as the tunables spell it ("64MiB"), for messages. */
static const char *size_text(uint64_t bytes, char *buf, size_t len)
{
	struct tmm_text t;

	tmm_text_init(&t, buf, len);
	tmm_text_add_size(&t, bytes);
	return buf;
}

static int write_all(int fd, const char *buf, size_t len)
{
	/* The site file_write (fault.h): as a full disk would fail it. */
	if (tmm_fault_now(TMM_SITE_FILE_WRITE))
		return -ENOSPC;
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Makes the rename itself durable by syncing the directory that holds
 * `path`.  Best effort: the file is already whole under one name or the
 * other, and some file systems refuse to sync a directory.
 */
static void sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd;

	if (!slash) {
		dir = tmm_strdup(".");
	} else {
		size_t n = slash == path ? 1 : (size_t)(slash - path);

		dir = tmm_strndup(path, n);
	}
	if (!dir)
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return;
	(void)fsync(fd);
	close(fd);
}

/*
 * The temporary a plan is written into before it is renamed over the plan
 * file.  It sits in the plan file's directory, since a rename does not
 * cross file systems.  Its name is used by no other writer: the pid, a
 * count of this process's temporaries and random bits, so that threads,
 * processes, and processes of other pid namespaces sharing the directory
 * never meet.  It is created with O_EXCL|O_NOFOLLOW, so that nothing
 * already at that name is opened: a symbolic link planted in a shared
 * directory would otherwise point the write, and its truncation, at the
 * file it names.  Mode 0600: no one else reads a plan half-written.  A
 * name that is taken is passed over, TMP_TRIES times at most: more would
 * be someone filling the directory on purpose.
 */
#define TMP_TRIES 16

static atomic_uint tmp_count;

static uint32_t random_bits(void)
{
	struct timespec ts;
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r))
		return r;
	/* No entropy yet (early boot): the clock still differs between
	 * the processes that could race here. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u;
}

/* Creates the temporary for `path`: its descriptor, with its name in
 * *tmp (from malloc), or a negative errno with a message. */
static int create_temp(const char *path, char **tmp, char *err,
		       size_t errlen)
{
	size_t tlen = strlen(path) + 48;
	char *name = tmm_malloc(tlen);
	int e = EEXIST;

	*tmp = NULL;
	if (!name) {
		say(err, errlen, "%s: out of memory naming a temporary file",
		    path);
		return -ENOMEM;
	}
	for (int i = 0; i < TMP_TRIES; i++) {
		int fd;

		snprintf(name, tlen, "%s.tmp.%ld.%u.%08x", path,
			 (long)getpid(), atomic_fetch_add(&tmp_count, 1),
			 random_bits());
		/* For tests: this name is taken. */
		if (tmm_fault_hit("plan_file_tmp"))
			continue;
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				O_CLOEXEC, 0600);
		if (fd >= 0) {
			*tmp = name;
			return fd;
		}
		e = errno;
		if (e != EEXIST)
			break;
	}
	if (e == EEXIST)
		say(err, errlen, "cannot create a temporary file next to the "
		    "plan file %s: %d names in a row were taken (the last "
		    "%s); remove stale %s.tmp.* files or point "
		    "TENSORMM_HINTS elsewhere", path, TMP_TRIES, name, path);
	else
		say(err, errlen, "cannot create %s to write the plan file "
		    "%s: %s; check that its directory exists and is "
		    "writable, or point TENSORMM_HINTS elsewhere", name, path,
		    strerror(e));
	free(name);
	return -e;
}

/*
 * The temporary gets the permission bits of the file it replaces, so a
 * plan file made readable to a team stays so; a new plan file keeps the
 * temporary's 0600.  Only a regular file is copied: a symbolic link at
 * `path` is replaced by the rename, never followed.
 */
static int keep_mode(int fd, const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return fchmod(fd, st.st_mode & 0777) < 0 ? -errno : 0;
}

int tmm_plan_file_write(const char *path, const struct tmm_plan *p,
			uint16_t serial, uint64_t limit, char *err,
			size_t errlen)
{
	char why[256], most[32];
	char *text = NULL, *tmp = NULL;
	size_t len;
	int fd, ret;

	if (!path || !p) {
		say(err, errlen, "tmm_plan_file_write: a path and a plan are "
		    "required");
		return -EINVAL;
	}
	ret = tmm_plan_text_check(p, serial, why, sizeof(why));
	if (ret < 0) {
		say(err, errlen, "%s: refusing to write the plan: %s; this is "
		    "a bug in the code that made the plan", path, why);
		return ret;
	}
	/* The plan passed tmm_plan_text_check, so only memory can fail the
	 * encoding. */
	if (tmm_plan_text_encode(p, serial, &text, &len) < 0) {
		say(err, errlen, "%s: out of memory encoding the plan", path);
		return -ENOMEM;
	}
	/* A file the reader would refuse must not replace one it reads. */
	if (len > limit) {
		say(err, errlen, "%s: the plan is %zu bytes, more than "
		    "hints_max=%s: not saved, since no run with that limit "
		    "could read it back; raise hints_max (TENSORMM_HINTS_MAX)",
		    path, len, size_text(limit, most, sizeof(most)));
		free(text);
		return -EFBIG;
	}
	fd = create_temp(path, &tmp, err, errlen);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	ret = write_all(fd, text, len);
	if (ret == 0)
		ret = keep_mode(fd, path);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret < 0) {
		say(err, errlen, "cannot write the plan to %s: %s; the plan "
		    "file %s is left as it was; free space on its file "
		    "system or point TENSORMM_HINTS elsewhere", tmp,
		    strerror(-ret), path);
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) < 0) {
		ret = -errno;
		say(err, errlen, "cannot rename %s to the plan file %s: %s; "
		    "check that %s is not a directory and that its directory "
		    "is writable", tmp, path, strerror(-ret), path);
		unlink(tmp);
		goto out;
	}
	sync_dir(path);
out:
	free(tmp);
	free(text);
	return ret;
}

/*
 * Reads fd into a buffer from malloc, `limit` bytes at most: holding one
 * byte more than the limit is how a file that grew after its fstat is
 * caught.  Returns 0, -EFBIG past the limit, -ENOMEM, or the errno of a
 * failed read.
 */
static int read_all(int fd, size_t hint, uint64_t limit, char **buf,
		    size_t *len)
{
	size_t most = limit < SIZE_MAX - 1 ? (size_t)limit + 1 : SIZE_MAX;
	size_t cap = hint < 4096 ? 4096 : hint + 1, n = 0;
	char *b;

	if (cap > most)
		cap = most;
	/* For tests: the host out of memory as a plan file is loaded. */
	b = tmm_fault_hit("plan_file_alloc") ? NULL : tmm_malloc(cap);
	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			size_t grown = cap <= most / 2 ? 2 * cap : most;
			char *nb = grown > cap ? tmm_realloc(b, grown) : NULL;

			if (!nb) {
				free(b);
				return grown > cap ? -ENOMEM : -EFBIG;
			}
			b = nb;
			cap = grown;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(b);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

int tmm_plan_file_read(const char *path, struct tmm_plan *out,
		       uint16_t serial, uint64_t limit, char *err,
		       size_t errlen)
{
	struct stat st;
	char *text = NULL, most[32];
	size_t len = 0;
	int fd, ret;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!path || !out) {
		say(err, errlen, "tmm_plan_file_read: a path and a plan are "
		    "required");
		return -EINVAL;
	}
	/* O_NONBLOCK: a FIFO at the path must not hang the run; it is
	 * refused below as not a regular file. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			say(err, errlen, "%s: no plan file yet: the run "
			    "measures and writes one", path);
		else
			say(err, errlen, "cannot open the plan file %s: %s; "
			    "check the path TENSORMM_HINTS names and its "
			    "permissions", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		say(err, errlen, "cannot stat the plan file %s: %s", path,
		    strerror(-ret));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		say(err, errlen, "%s: not a regular file, so not a plan file; "
		    "point TENSORMM_HINTS at a file", path);
		goto out;
	}
	/* Refused before a byte is read: a plan file is read whole into
	 * memory, and a huge one is a mistake or an attack, not a plan. */
	if ((uint64_t)st.st_size > limit) {
		ret = -EFBIG;
		say(err, errlen, "%s: the plan file is %lld bytes, more than "
		    "hints_max=%s; raise hints_max (TENSORMM_HINTS_MAX) to "
		    "read it", path, (long long)st.st_size,
		    size_text(limit, most, sizeof(most)));
		goto out;
	}
	ret = read_all(fd, (uint64_t)st.st_size < SIZE_MAX
			   ? (size_t)st.st_size : 0, limit, &text, &len);
	if (ret == -EFBIG) {
		say(err, errlen, "%s: the plan file grew past hints_max=%s "
		    "while it was read; raise hints_max (TENSORMM_HINTS_MAX) "
		    "to read it", path, size_text(limit, most, sizeof(most)));
		goto out;
	}
	if (ret == -ENOMEM) {
		say(err, errlen, "%s: out of memory reading the %lld-byte plan "
		    "file", path, (long long)st.st_size);
		goto out;
	}
	if (ret < 0) {
		say(err, errlen, "cannot read the plan file %s: %s", path,
		    strerror(-ret));
		goto out;
	}
	ret = tmm_plan_text_decode_named(path, text, len, out, serial, err,
					 errlen);
out:
	close(fd);
	free(text);
	return ret;
}
