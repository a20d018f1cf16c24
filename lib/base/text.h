/* SPDX-License-Identifier: MIT */
/*
 * text.h — text that means the same in every locale: a bounded appender
 * for messages, and ASCII character classes.
 *
 * The tunables (tunables.c, tunables_table.c, tunables_value.c) and the
 * numbers they parse (number_text.c) build their messages with the
 * appender and read their syntax with these classes rather than
 * <ctype.h>, which follows whatever setlocale() the application called.
 */
#ifndef TMM_TEXT_H
#define TMM_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* An appender into a caller's buffer: never overflows, always ends in a
 * NUL (when there is room for one), and quietly truncates. */
struct tmm_text {
	char *buf;
	size_t len;
	size_t used;
};

/* Starts an empty text in buf[len]; a NULL buf takes nothing. */
void tmm_text_init(struct tmm_text *t, char *buf, size_t len);

/* Appends printf-style, truncating at the end of the buffer. */
__attribute__((format(printf, 2, 3)))
void tmm_text_add(struct tmm_text *t, const char *fmt, ...);

/* Echoes s[len] of user input, shortened so the message stays readable. */
void tmm_text_add_echo(struct tmm_text *t, const char *s, size_t len);

/* '0' to '9', whatever the locale. */
bool tmm_ascii_is_digit(char c);

/* 'A' to 'Z' folded to lower case; every other char as it is. */
char tmm_ascii_lower(char c);

/* Are a and b equal but for ASCII case? */
bool tmm_ascii_equal_nocase(const char *a, const char *b);

/* The first char of s that is not an ASCII blank. */
const char *tmm_ascii_skip_blanks(const char *s);

/* Narrows [*s, *s + *len) to exclude blanks at either end. */
void tmm_ascii_trim(const char **s, size_t *len);

#endif /* TMM_TEXT_H */
