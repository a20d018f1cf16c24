/* SPDX-License-Identifier: MIT */
/*
 * numa_place.c — placing host memory on a NUMA node.
 *
 * The pinned host pool wants its buffers on the GPU's own node, so that a
 * copy engine's DMA does not cross the inter-socket link.  Two things are
 * needed for that: finding the GPU's node (sysfs knows it by PCI address)
 * and allocating on a node (libnuma does it with mbind).  Without libnuma,
 * or when the kernel has no NUMA support, memory comes from anonymous
 * mmap and lands wherever first touch puts it, which is the local node.
 *
 * Both paths return whole pages from mmap, so the buffers are page-aligned
 * as cudaHostRegister() prefers, and freeing needs the size back.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef TMM_HAVE_NUMA
#include <numa.h>
#endif

#include "numa_place.h"

#ifdef TMM_HAVE_NUMA
/*
 * numa_available() costs a get_mempolicy() system call and its answer does
 * not change while the process runs, so it is asked once.  Both alloc and
 * free consult it, which keeps them on the same path: memory from
 * numa_alloc_*() goes back through numa_free(), mmap's through munmap().
 * 0: not asked yet, 1: available, -1: not available.
 */
static atomic_int numa_state;

static bool numa_ok(void)
{
	int s = atomic_load_explicit(&numa_state, memory_order_relaxed);

	if (s == 0) {
		s = numa_available() < 0 ? -1 : 1;
		atomic_store_explicit(&numa_state, s, memory_order_relaxed);
	}
	return s > 0;
}
#endif

/* True when libnuma is built in and the kernel supports NUMA. */
bool tmm_numa_available(void)
{
#ifdef TMM_HAVE_NUMA
	return numa_ok();
#else
	return false;
#endif
}

/* The number of configured NUMA nodes (1 without NUMA support). */
int tmm_numa_node_count(void)
{
#ifdef TMM_HAVE_NUMA
	if (numa_ok()) {
		int n = numa_num_configured_nodes();

		return n > 0 ? n : 1;
	}
#endif
	return 1;
}

/* Parses 1 to `maxdigits` hex digits at *s into *out; advances *s. */
static bool parse_hex(const char **s, unsigned maxdigits, unsigned *out)
{
	unsigned v = 0, n = 0;

	while (isxdigit((unsigned char)**s)) {
		int c = tolower((unsigned char)**s);

		if (++n > maxdigits)
			return false;
		v = v * 16 + (unsigned)(isdigit(c) ? c - '0' : c - 'a' + 10);
		(*s)++;
	}
	*out = v;
	return n > 0;
}

/*
 * Rewrites a PCI address the way sysfs names it.  CUDA reports
 * "00000000:3B:00.0" (an 8-digit domain, upper case); lspci and sysfs say
 * "0000:3b:00.0" (a domain of at least 4 digits, lower case).  An address
 * without a domain ("3b:00.0") is in domain 0.  Returns false when `in` is
 * not a PCI address, so that no path is built from arbitrary text.
 */
static bool pci_normalise(const char *in, char *out, size_t len)
{
	unsigned v[4];
	const char *s = in;
	int n;

	/* Up to four fields: domain ':' bus ':' device '.' function. */
	if (!parse_hex(&s, 8, &v[0]) || *s++ != ':' ||
	    !parse_hex(&s, 2, &v[1]))
		return false;
	if (*s == ':') {
		s++;
		if (!parse_hex(&s, 2, &v[2]))
			return false;
	} else {
		/* No domain: shift bus and device up. */
		if (v[0] > 0xff)
			return false;
		v[2] = v[1];
		v[1] = v[0];
		v[0] = 0;
	}
	if (*s++ != '.' || !parse_hex(&s, 1, &v[3]) || *s != '\0')
		return false;
	if (v[2] > 0x1f || v[3] > 7)
		return false;
	n = snprintf(out, len, "%04x:%02x:%02x.%x", v[0], v[1], v[2], v[3]);
	return n > 0 && (size_t)n < len;
}

/*
 * The NUMA node of a PCI device, from <root>/bus/pci/devices/<id>/numa_node.
 * The kernel writes -1 there when the platform does not say (one-socket
 * machines, most VMs); anything unreadable is treated the same way.
 */
int tmm_numa_node_of_pci(const char *sysfs_root, const char *pci_bus_id)
{
	char id[32], path[4096], buf[32], *end;
	ssize_t n;
	long node;
	int fd;

	if (!sysfs_root || !pci_bus_id ||
	    !pci_normalise(pci_bus_id, id, sizeof(id)))
		return -1;
	n = snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/numa_node",
		     sysfs_root, id);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';

	errno = 0;
	node = strtol(buf, &end, 10);
	if (errno || end == buf)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	if (*end != '\0' || node < 0 || node > INT_MAX)
		return -1;
	return (int)node;
}

/* Anonymous pages: the fallback without libnuma, placed by first touch. */
static void *mmap_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Allocates `bytes` of page-aligned memory on `node` (>= 0) or locally.
 * A node that this process may not allocate on is refused (NULL, errno
 * EINVAL) rather than silently placed elsewhere: the caller asked for that
 * node on purpose (a tunable or the GPU's sysfs entry).  Without NUMA
 * support the node is ignored: there is only the local one.
 */
void *tmm_numa_alloc(size_t bytes, int node)
{
	if (bytes == 0) {
		errno = EINVAL;
		return NULL;
	}
#ifdef TMM_HAVE_NUMA
	if (numa_ok()) {
		void *p;

		if (node < 0)
			p = numa_alloc_local(bytes);
		else if (node > numa_max_node() ||
			 !numa_bitmask_isbitset(numa_all_nodes_ptr,
						(unsigned)node)) {
			errno = EINVAL;
			return NULL;
		} else {
			p = numa_alloc_onnode(bytes, node);
		}
		if (!p && errno == 0)
			errno = ENOMEM;
		return p;
	}
#else
	(void)node;
#endif
	return mmap_alloc(bytes);
}

/* Frees memory from tmm_numa_alloc(); `bytes` is the size asked for. */
void tmm_numa_free(void *ptr, size_t bytes)
{
	if (!ptr || bytes == 0)
		return;
#ifdef TMM_HAVE_NUMA
	if (numa_ok()) {
		numa_free(ptr, bytes);
		return;
	}
#endif
	munmap(ptr, bytes);
}
