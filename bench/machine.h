/* SPDX-License-Identifier: MIT */
/*
 * machine.h — what a benchmark prints about the machine it ran on.
 */
#ifndef BENCH_MACHINE_H
#define BENCH_MACHINE_H

#include <stddef.h>

/* "Linux x86_64, <CPU model>, <n> CPUs" into buf. */
void bench_describe_machine(char *buf, size_t len);

#endif /* BENCH_MACHINE_H */
