/* SPDX-License-Identifier: MIT */
/*
 * crc32.c — see crc32.h.
 *
 * The table is built by the compiler from the polynomial, so it is const
 * data: no first-use initialisation, and so no race between threads.
 * Each CRC_BIT step shifts one bit out, XORing the reflected polynomial
 * when that bit is 1.
 */

#include "crc32.h"

#define CRC_POLY 0xEDB88320u
#define CRC_BIT(c) (((c) >> 1) ^ (CRC_POLY & (0u - ((c) & 1u))))
#define CRC_BYTE(n)                                                        \
	CRC_BIT(CRC_BIT(CRC_BIT(CRC_BIT(                                   \
		CRC_BIT(CRC_BIT(CRC_BIT(CRC_BIT((uint32_t)(n)))))))))
#define CRC_4(n) CRC_BYTE(n), CRC_BYTE((n) + 1), CRC_BYTE((n) + 2),        \
		 CRC_BYTE((n) + 3)
#define CRC_16(n) CRC_4(n), CRC_4((n) + 4), CRC_4((n) + 8), CRC_4((n) + 12)
#define CRC_64(n) CRC_16(n), CRC_16((n) + 16), CRC_16((n) + 32),          \
		  CRC_16((n) + 48)

static const uint32_t crc_table[256] = {
	CRC_64(0), CRC_64(64), CRC_64(128), CRC_64(192)
};

uint32_t tmm_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	for (size_t i = 0; i < len; i++)
		crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}
