/* SPDX-License-Identifier: MIT */
/*
 * machine.c — the machine a benchmark ran on, for its "how" line: a figure
 * without its machine cannot be compared with another.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "machine.h"

/* The "model name" line of /proc/cpuinfo, or "unknown CPU". */
static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown CPU");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) != 0 || !colon)
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

void bench_describe_machine(char *buf, size_t len)
{
	struct utsname un;
	char cpu[256];

	if (uname(&un) < 0) {
		snprintf(un.sysname, sizeof(un.sysname), "unknown");
		snprintf(un.machine, sizeof(un.machine), "unknown");
	}
	cpu_model(cpu, sizeof(cpu));
	snprintf(buf, len, "%s %s, %s, %ld CPUs", un.sysname, un.machine, cpu,
		 sysconf(_SC_NPROCESSORS_ONLN));
}
