/* SPDX-License-Identifier: MIT */
/*
 * share_member.h — members of a share segment in other processes, for
 * the suites that test the share segment across processes
 * (test_share_reliability.c, test_share_devices.c): a forked process
 * that makes a context of a given configuration and trains a little
 * every millisecond, so that it follows the budget split like a training
 * process, and the pipes the test drives it with.
 */
#ifndef TESTS_SHARE_MEMBER_H
#define TESTS_SHARE_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A member process and its two pipes: `up` it writes to, `down` it reads
 * from. */
struct member {
	pid_t pid;
	int up[2], down[2];
};

/* The bytes of each of a member's two tensors: its demand is about twice
 * this, a part of the device another member sees go and come back. */
#define MEMBER_BYTES (8u << 20)

/*
 * Starts a member of `config`; it has not necessarily joined yet.  The
 * member says 'j' once joined (or 'f' and the errno when its context
 * failed), then runs one small iteration a millisecond until told 'l'
 * (take the segment's lock and keep it, then say 'l') or 'q' (leave).
 */
void member_start(struct member *m, const char *config);

/* A byte from the member (its report), or -1 at its end. */
int heard(struct member *m);

/* Ends a member: SIGKILL, or 'q' when kill_it is false. */
void member_end(struct member *m, bool kill_it);

/* The segment of `config`'s group, as a context would name it (made and
 * destroyed here: it must be the only member then). */
void segment_name(const char *config, char *buf, size_t len);

#endif /* TESTS_SHARE_MEMBER_H */
