/* SPDX-License-Identifier: MIT */
/*
 * device_spec.c — parsing the `device` tunable (device_spec.h).
 *
 * The syntax is checked when the configuration is loaded, so a typo
 * fails tmm_ctx_create with -EINVAL before any device is touched; the
 * index's range and the UUID's existence are checked by the backend that
 * opens the device (-ENODEV), which knows how many there are.
 */
#include <stdio.h>
#include <string.h>

#include "device_spec.h"

#define DEVICE_TAKES                                                      \
	"TENSORMM_DEVICE (device=) takes current, a device index (0, 1, "  \
	"...) or a CUDA UUID as nvidia-smi -L prints it "                 \
	"(GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

/* "GPU-" then groups of 8, 4, 4, 4 and 12 hex digits joined by '-'. */
static bool parse_uuid(const char *text, char *out)
{
	static const int group[] = { 8, 4, 4, 4, 12 };
	const char *p = text + 4;
	size_t o = 4;

	if (strncmp(text, "GPU-", 4) != 0 ||
	    strlen(text) != TMM_DEVICE_UUID_LEN - 1)
		return false;
	memcpy(out, "GPU-", 4);
	for (size_t g = 0; g < sizeof(group) / sizeof(group[0]); g++) {
		if (g > 0) {
			if (*p != '-')
				return false;
			out[o++] = *p++;
		}
		for (int i = 0; i < group[g]; i++, p++) {
			if (!is_hex(*p))
				return false;
			/* nvidia-smi prints lower case; CUDA's bytes are
			 * compared as the backend formats them. */
			out[o++] = (*p >= 'A' && *p <= 'F')
					   ? (char)(*p - 'A' + 'a')
					   : *p;
		}
	}
	out[o] = '\0';
	return *p == '\0';
}

bool tmm_device_spec_parse(const char *text, struct tmm_device_spec *spec,
			   char *why, size_t whylen)
{
	struct tmm_device_spec s = { .kind = TMM_DEVICE_CURRENT };

	if (strcmp(text, "current") == 0)
		goto done;
	if (text[0] >= '0' && text[0] <= '9') {
		long v = 0;
		const char *p = text;

		/* Decimal digits only: no sign, blank, or 0x. */
		for (; *p >= '0' && *p <= '9'; p++) {
			v = v * 10 + (*p - '0');
			if (v > TMM_DEVICE_INDEX_MAX)
				break;
		}
		if (*p == '\0' && v <= TMM_DEVICE_INDEX_MAX) {
			s.kind = TMM_DEVICE_INDEX;
			s.index = (int)v;
			goto done;
		}
		if (v > TMM_DEVICE_INDEX_MAX) {
			snprintf(why, whylen, "an index above %d; "
				 DEVICE_TAKES, TMM_DEVICE_INDEX_MAX);
			return false;
		}
	}
	if (strncmp(text, "GPU-", 4) == 0) {
		if (parse_uuid(text, s.uuid)) {
			s.kind = TMM_DEVICE_UUID;
			goto done;
		}
		snprintf(why, whylen, "not a whole device UUID (\"GPU-\" then "
			 "8-4-4-4-12 hex digits); " DEVICE_TAKES);
		return false;
	}
	snprintf(why, whylen, "not a device; " DEVICE_TAKES);
	return false;
done:
	if (spec)
		*spec = s;
	return true;
}

bool tmm_device_spec_valid(const char *text, char *why, size_t whylen)
{
	return tmm_device_spec_parse(text, NULL, why, whylen);
}
