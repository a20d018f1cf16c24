/* SPDX-License-Identifier: MIT */
/*
 * crc32.h — the CRC-32 that guards trace and plan files.
 *
 * A leaf utility: the trace file's records and header (trace_write.c,
 * trace_read.c) and the plan file's end line (plan_encode.c,
 * plan_decode.c) carry this checksum, so it lives below both.
 */
#ifndef TMM_CRC32_H
#define TMM_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) of len bytes,
 * continuing from `crc` (0 to start).  The records' checksum. */
uint32_t tmm_crc32(uint32_t crc, const void *buf, size_t len);

#endif /* TMM_CRC32_H */
