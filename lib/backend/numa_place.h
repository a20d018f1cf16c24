/* SPDX-License-Identifier: MIT */
/*
 * numa_place.h — placing host memory on a NUMA node.
 *
 * Pinned host buffers are best on the GPU's own NUMA node: a copy then does
 * not cross the inter-socket link.  With libnuma (configure --with-numa)
 * buffers are allocated on the node; without it, or on a machine with one
 * node, they come from the local node.
 */
#ifndef TMM_NUMA_PLACE_H
#define TMM_NUMA_PLACE_H

#include <stdbool.h>
#include <stddef.h>

/* True when libnuma is built in and the kernel supports NUMA. */
bool tmm_numa_available(void);

/* The number of configured NUMA nodes (1 without NUMA support). */
int tmm_numa_node_count(void);

/*
 * The NUMA node of a PCI device ("0000:3b:00.0"), read from
 * /sys/bus/pci/devices/<id>/numa_node; -1 when unknown.  `sysfs_root` is
 * normally "/sys" (tests point it elsewhere).
 */
int tmm_numa_node_of_pci(const char *sysfs_root, const char *pci_bus_id);

/*
 * Allocates `bytes` of page-aligned host memory on `node` (>= 0), or on the
 * local node (node < 0).  Returns NULL on failure.  Free with
 * tmm_numa_free() and the same size.
 */
void *tmm_numa_alloc(size_t bytes, int node);
void tmm_numa_free(void *ptr, size_t bytes);

#endif /* TMM_NUMA_PLACE_H */
