/* SPDX-License-Identifier: MIT */
/*
 * site.c — naming a call site in a race report: the function that holds
 * an address, from the running program's own symbol table.
 *
 * dladdr() knows only exported symbols, and the library's objects are
 * built with hidden visibility, so the double reads the executable's
 * .symtab itself (ELF64, the program as the test links it, statically
 * with the library).  Addresses outside the executable go to dladdr().
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

static struct {
	bool loaded;
	uintptr_t base;		/* where the executable is loaded */
	Elf64_Sym *syms;
	size_t n_syms;
	char *names;
} exe;

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(uintptr_t *)arg = info->dlpi_addr;
	return 1; /* the first is the program itself */
}

/* Reads n bytes at offset off of f into a new buffer, or NULL. */
static void *read_at(FILE *f, long off, size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p && (fseek(f, off, SEEK_SET) || fread(p, 1, n, f) != n)) {
		free(p);
		p = NULL;
	}
	return p;
}

static void load(void)
{
	FILE *f = fopen("/proc/self/exe", "rb");
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;

	exe.loaded = true;
	dl_iterate_phdr(first_object, &exe.base);
	if (!f)
		return;
	if (fread(&eh, sizeof(eh), 1, f) != 1 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr))
		goto out;
	sh = read_at(f, (long)eh.e_shoff, eh.e_shnum * sizeof(*sh));
	for (unsigned i = 0; sh && i < eh.e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh.e_shnum)
			continue;
		exe.syms = read_at(f, (long)sh[i].sh_offset, sh[i].sh_size);
		exe.names = read_at(f, (long)sh[sh[i].sh_link].sh_offset,
				    sh[sh[i].sh_link].sh_size);
		exe.n_syms = exe.syms && exe.names
				     ? sh[i].sh_size / sizeof(Elf64_Sym)
				     : 0;
		break;
	}
out:
	free(sh);
	fclose(f);
}

void fake_site_name(const void *site, char *buf, size_t len)
{
	uintptr_t a = (uintptr_t)site;
	const Elf64_Sym *best = NULL;
	Dl_info info;

	if (!exe.loaded)
		load();
	for (size_t i = 0; i < exe.n_syms; i++) {
		const Elf64_Sym *s = &exe.syms[i];
		uintptr_t lo = exe.base + s->st_value;

		if (ELF64_ST_TYPE(s->st_info) == STT_FUNC && a >= lo &&
		    a < lo + s->st_size)
			best = s;
	}
	if (best)
		snprintf(buf, len, "%s+%#lx", exe.names + best->st_name,
			 (unsigned long)(a - exe.base - best->st_value));
	else if (site && dladdr(site, &info) && info.dli_sname)
		snprintf(buf, len, "%s+%#lx", info.dli_sname,
			 (unsigned long)(a - (uintptr_t)info.dli_saddr));
	else
		snprintf(buf, len, "%p", site);
}
