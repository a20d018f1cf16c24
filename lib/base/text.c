/* SPDX-License-Identifier: MIT */
/*
 * text.c — a bounded appender for messages, and ASCII character classes.
 *
 * The tunables' table, value parser and loader all build their messages
 * and read their syntax with these.  Nothing here reads the locale: a
 * tunable's syntax, and the messages about it, must not change with
 * setlocale().
 */
#include <stdarg.h>
#include <stdio.h>

#include "text.h"

/* Error messages echo at most this much of a value. */
#define ECHO_MAX 200

void tmm_text_init(struct tmm_text *t, char *buf, size_t len)
{
	t->buf = buf;
	t->len = buf ? len : 0;
	t->used = 0;
	if (t->len)
		buf[0] = '\0';
}

void tmm_text_add(struct tmm_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->used + 1 >= t->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	t->used += (size_t)n;
	if (t->used >= t->len)
		t->used = t->len - 1;
}

/* Echoes a piece of user input, shortened so the message stays readable. */
void tmm_text_add_echo(struct tmm_text *t, const char *s, size_t len)
{
	if (len > ECHO_MAX)
		tmm_text_add(t, "%.*s...", ECHO_MAX, s);
	else
		tmm_text_add(t, "%.*s", (int)len, s);
}

/* Our own classes: <ctype.h> follows the locale, the syntax must not. */
static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

bool tmm_ascii_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

char tmm_ascii_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* strcasecmp() folds case by the locale ('I' is not 'i' in Turkish). */
bool tmm_ascii_equal_nocase(const char *a, const char *b)
{
	while (*a && tmm_ascii_lower(*a) == tmm_ascii_lower(*b)) {
		a++;
		b++;
	}
	return tmm_ascii_lower(*a) == tmm_ascii_lower(*b);
}

const char *tmm_ascii_skip_blanks(const char *s)
{
	while (is_blank(*s))
		s++;
	return s;
}

/* Narrows [*s, *s + *len) to exclude blanks at either end. */
void tmm_ascii_trim(const char **s, size_t *len)
{
	while (*len && is_blank(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && is_blank((*s)[*len - 1]))
		(*len)--;
}
