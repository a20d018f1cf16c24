/* SPDX-License-Identifier: MIT */
/*
 * test_plan_file_damage.c — the "damage" case of the plan file suite
 * (test_plan_file.c): the decoder (lib/io/plan_decode.c) against texts
 * that are not a good plan.
 *
 * The example of docs/plan-format.md is cut at every byte length and has
 * every byte flipped; hand-written texts, sealed with the checksum
 * computed here so that the checks behind it are reached, break one rule
 * each.  Every refusal must name the line and the rule, zero the plan,
 * and read nothing past the text (the sanitizers watch the buffer's end).
 */
#include "lib/io/plan.h"
#include "lib/io/plan_decode.h"
#include "lib/io/plan_encode.h"
#include "lib/io/trace.h"
#include "test_plan_file.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

/* Decodes len bytes copied into a buffer of exactly that size, so that a
 * read past the end is caught by the sanitizers; expects -EINVAL with
 * *out zeroed, and returns the message in err. */
static void decode_fails(const char *text, size_t len, char *err,
			 size_t errlen)
{
	char *copy = malloc(len ? len : 1);
	struct tmm_plan p;
	static const struct tmm_plan zero;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, text, len);
	memset(&p, 0xa5, sizeof(p));
	err[0] = '\0';
	REQUIRE(tmm_plan_text_decode(copy, len, &p, 7, err, errlen) ==
		-EINVAL, "%zu bytes were accepted", len);
	REQUIRE(!memcmp(&p, &zero, sizeof(p)), "a refused plan not zeroed");
	REQUIRE(strstr(err, "plan text: line "), "message \"%s\"", err);
	free(copy);
}

/* ------------------------------------------------------------------------
 * Damage
 * ---------------------------------------------------------------------- */

START_TEST(test_truncation_at_every_offset)
{
	char err[512];

	for (size_t n = 0; n < strlen(doc_example); n++) {
		decode_fails(doc_example, n, err, sizeof(err));
		HAS(err, "truncated");
		HAS(err, "delete the file to re-plan");
	}
}
END_TEST

START_TEST(test_flipped_byte_anywhere)
{
	static const unsigned char masks[] = { 0x01, 0x02, 0x20, 0x80, 0xff };
	size_t len = strlen(doc_example);
	const char *body = strchr(doc_example, '\n') + 1;
	const char *end = strstr(doc_example, "end crc32");
	char text[sizeof(doc_example)];
	char err[512];

	for (size_t at = 0; at < len; at++) {
		for (size_t m = 0; m < sizeof(masks); m++) {
			memcpy(text, doc_example, len);
			text[at] = (char)(text[at] ^ masks[m]);
			decode_fails(text, len, err, sizeof(err));
			HAS(err, "delete the file to re-plan");
			/* Inside the body, short of the newline that the
			 * end line needs before it, the checksum sees it. */
			if (doc_example + at >= body &&
			    doc_example + at + 1 < end)
				HAS(err, "checksum");
		}
	}
}
END_TEST

START_TEST(test_wrong_magic)
{
	static const char *const texts[] = {
		"tensormm-trace 1\nend crc32 00000000\n",
		"TMMTRACE\x01\x00\x00\x00",
		"Tensormm-plan 1\n",
		"tensormm-plan\n",
		"\n",
	};
	char err[512];

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		decode_fails(texts[i], strlen(texts[i]) + (i == 1 ? 4 : 0),
			     err, sizeof(err));
		HAS(err, "plan text: line 1: not a libtensormm plan file");
		HAS(err, "TENSORMM_HINTS");
	}
}
END_TEST

START_TEST(test_future_version)
{
	char err[512];
	char *text = seal("tensormm-plan 5\npolicy x\nsomething new\n");

	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, "line 1: the file has plan format version 5");
	HAS(err, "reads versions 1 to 4");
	HAS(err, "newer build");
	free(text);
	/* A version past 32 bits is damage, not the future. */
	text = seal("tensormm-plan 4294967296\n");
	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, "too large");
	free(text);
}
END_TEST

/* A format-2 file with a SPLIT, cut short at every offset: refused. */
START_TEST(test_split_file_truncated_at_every_offset)
{
	struct tmm_plan p;
	char *text, err[512];
	size_t len;

	make_doc_plan(&p, 1);
	ck_assert_int_eq(tmm_plan_add_split(&p, 3, tmm_key_of_ordinal(0), 4),
			 0);
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	for (size_t n = 0; n < len; n++)
		decode_fails(text, n, err, sizeof(err));
	free(text);
	tmm_plan_free(&p);
}
END_TEST

/* The head of doc_example, up to its actions. */
#define HEAD                                                              \
	"tensormm-plan 1\npolicy capuchin\naccesses 5\n0 p:0x1000001\n"     \
	"1 i:0\n2 i:1\n3 i:0\n4 p:0x1000001\n"

/* The same, as format 3, which may flag an action "sync". */
#define HEAD3                                                             \
	"tensormm-plan 3\npolicy vdnn-all\naccesses 5\n0 p:0x1000001\n"    \
	"1 i:0\n2 i:1\n3 i:0\n4 p:0x1000001\n"

/* The same, as format 4, which may flag a swap-out "migrate". */
#define HEAD4                                                             \
	"tensormm-plan 4\npolicy capuchin\naccesses 5\n0 p:0x1000001\n"    \
	"1 i:0\n2 i:1\n3 i:0\n4 p:0x1000001\n"

/* The same, as format 2, which may hold a SPLIT. */
#define HEAD2                                                             \
	"tensormm-plan 2\npolicy tsplit\naccesses 5\n0 p:0x1000001\n"      \
	"1 i:0\n2 i:1\n3 i:0\n4 p:0x1000001\n"

START_TEST(test_unsorted_actions)
{
	char err[512];
	char *text = seal(HEAD "actions 2\n"
			  "EVICT_SWAP 3 p:0x1000001 4 -\n"
			  "EVICT_DROP 1 i:0 3 -\n");

	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, "line 11: action 1 fires at access 1, before the action "
		 "above it (at 3): actions must be sorted by trigger");
	free(text);
}
END_TEST

START_TEST(test_unknown_action_name)
{
	char err[512];
	char *text = seal(HEAD "actions 1\nEVICT_SWAPP 0 p:0x1000001 4 -\n");

	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, "line 10: action 0: unknown action type \"EVICT_SWAPP\"");
	free(text);
}
END_TEST

/* Counts too large for a plan file, or for the bytes that follow them. */
static const struct {
	const char *body, *want;
} counts[] = {
	{ "tensormm-plan 1\npolicy x\naccesses 4294967296\n",
	  "line 3: the accesses count \"4294967296\" is more than the "
	  "268435456" },
	{ "tensormm-plan 1\npolicy x\naccesses 99999999999999999999999\n",
	  "is more than the 268435456" },
	{ "tensormm-plan 1\npolicy x\naccesses 268435457\n",
	  "is more than the 268435456" },
	{ "tensormm-plan 1\npolicy x\naccesses 268435456\n",
	  "hold at most 0 such lines" },
	{ "tensormm-plan 1\npolicy x\naccesses 3\n0 i:0\n1 i:0\n",
	  "the 12 bytes before the end line hold at most 2" },
	{ "tensormm-plan 1\npolicy x\naccesses 0\nactions 18446744073709551616\n",
	  "line 4: the actions count \"18446744073709551616\" is more than" },
	{ "tensormm-plan 1\npolicy x\naccesses 1\n0 i:0\nactions 4000000\n",
	  "hold at most 0" },
	{ "tensormm-plan 1\npolicy x\naccesses -1\n", "is not a number" },
};

START_TEST(test_count_overflows)
{
	char err[512];
	char *text = seal(counts[_i].body);

	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, counts[_i].want);
	free(text);
}
END_TEST

/* Texts that break one rule each, and what the message must say. */
static const struct {
	const char *body, *tail, *want;
} bad_texts[] = {
	{ "tensormm-plan 0\n", "", "line 1: expected a format version" },
	{ HEAD "actions 1\nSPLIT 3 i:0 - 2\n", "",
	  "line 10: action 0: a SPLIT in a file of format version 1, which "
	  "has none (version 2 added it)" },
	{ HEAD2 "actions 1\nSPLIT 3 i:0 - 1\n", "",
	  "action 0: a SPLIT's parts must be a number from 2, found \"1\"" },
	{ HEAD2 "actions 1\nSPLIT 3 i:0 - -\n", "",
	  "a SPLIT's parts must be a number from 2, found \"-\"" },
	{ HEAD2 "actions 1\nSPLIT 3 i:0 - 02\n", "",
	  "a SPLIT's parts must be a number from 2, found \"02\"" },
	{ HEAD2 "actions 1\nSPLIT 3 i:0 4 2\n", "",
	  "a SPLIT has no back-access, but this one has 4" },
	{ HEAD2 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 2\n", "",
	  "only ADVISE takes an advice, but this EVICT_SWAP has \"2\"" },
	{ HEAD2 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - sync\n", "",
	  "line 10: action 0: the last word \"sync\" is neither 'sync' on an "
	  "EVICT_SWAP or PREFETCH nor 'keep' on an EVICT_DROP in a file of "
	  "version 3 or later, nor 'migrate' on an EVICT_SWAP in one of "
	  "version 4 or later (this one is version 2)" },
	{ HEAD3 "actions 1\nEVICT_DROP 1 i:0 3 - sync\n", "",
	  "action 0: the last word \"sync\" is neither 'sync' on an "
	  "EVICT_SWAP or PREFETCH nor 'keep' on an EVICT_DROP" },
	{ HEAD3 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - keep\n", "",
	  "action 0: the last word \"keep\" is neither" },
	{ HEAD2 "actions 1\nEVICT_DROP 1 i:0 3 - keep\n", "",
	  "action 0: the last word \"keep\" is neither" },
	{ HEAD3 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - syn\n", "",
	  "action 0: the last word \"syn\" is neither" },
	{ HEAD3 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - sync sync\n", "",
	  "line 10: expected an action as" },
	{ HEAD3 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - migrate\n", "",
	  "line 10: action 0: the last word \"migrate\" is neither 'sync' on "
	  "an EVICT_SWAP or PREFETCH nor 'keep' on an EVICT_DROP in a file of "
	  "version 3 or later, nor 'migrate' on an EVICT_SWAP in one of "
	  "version 4 or later (this one is version 3)" },
	{ HEAD2 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - migrate\n", "",
	  "the last word \"migrate\" is neither" },
	{ HEAD4 "actions 1\nPREFETCH 2 p:0x1000001 4 - migrate\n", "",
	  "line 10: action 0: the last word \"migrate\" is neither" },
	{ HEAD4 "actions 1\nEVICT_DROP 1 i:0 3 - migrate\n", "",
	  "the last word \"migrate\" is neither" },
	{ HEAD4 "actions 1\nADVISE 2 i:1 - READ_MOSTLY migrate\n", "",
	  "the last word \"migrate\" is neither" },
	{ HEAD4 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - MIGRATE\n", "",
	  "the last word \"MIGRATE\" is neither" },
	{ HEAD4 "actions 1\nEVICT_SWAP 0 p:0x1000001 4 - migrate sync\n",
	  "", "line 10: expected an action as '<type> <trigger> <key> "
	      "<back-access or -> <advice or ->' and from version 3 an "
	      "optional 'sync' or 'keep' (from version 4 also 'migrate')" },
	{ HEAD4 "actions 1\nEVICT_DROP 1 i:0 3 - keep keep\n", "",
	  "line 10: expected an action as" },
	{ "tensormm-plan 01\n", "", "line 1: expected a format version" },
	{ "tensormm-plan 1 \n", "", "line 1: expected a format version" },
	{ HEAD "actions 0\n", "more", "line 11: there is more after the "
				      "end line: \"more\"" },
	{ HEAD "actions 0\n", "end crc32 00000000\n", "more after the end" },
	{ "tensormm-plan 1\npolicy a\npolicy b\n", "",
	  "line 3: a second 'policy' line" },
	{ HEAD "accesses 0\n", "", "line 9: a second 'accesses' line" },
	{ "tensormm-plan 1\naccesses 0\nactions 0\n", "",
	  "line 2: the 'policy' line is missing: found the 'accesses' line "
	  "first" },
	{ HEAD, "", "line 9: the 'actions' line is missing: the end line "
		    "comes first" },
	{ "tensormm-plan 1\npolicy\n", "", "expected 'policy' and one value" },
	{ "tensormm-plan 1\npolicy a b\n", "",
	  "expected 'policy' and one value" },
	{ "tensormm-plan 1\nrules x\n", "",
	  "expected the 'policy' line, found \"rules x\"" },
	{ "tensormm-plan 1\npolicy a/b\n", "", "the policy \"a/b\" is not" },
	{ "tensormm-plan 1\npolicy 0123456789012345678901234567890123\n",
	  "", "at most 31 letters" },
	{ HEAD "actions 1\nEVICT_SWAP 0 p:0x1000001 4 -\n"
	       "PREFETCH 2 p:0x1000001 4 -\n", "",
	  "line 11: unexpected line after the 1 actions" },
	{ "tensormm-plan 1\npolicy x\naccesses 3\n0 i:0\n1 i:0\nactions 0\n"
	  "# padding, so that the count fits in the bytes left\n", "",
	  "line 6: the accesses section ends after 2 of its 3 lines" },
	{ HEAD "actions 2\nEVICT_SWAP 0 p:0x1000001 4 -\n"
	       "# padding, so that the count fits in the bytes left\n", "",
	  "line 12: the actions section ends after 1 of its 2 lines" },
	{ "tensormm-plan 1\npolicy x\naccesses 2\n1 i:0\n0 i:0\n", "",
	  "line 4: expected access 0, found \"1 i:0\"" },
	{ "tensormm-plan 1\npolicy x\naccesses 2\n0 i:0\n1  i:0\n", "",
	  "line 5: expected access 1 as '<index> <key>'" },
	{ "tensormm-plan 1\npolicy x\naccesses 2\n0 i:0\n\n# pad pad\n", "",
	  "line 5: expected access 1 as" },
	{ "tensormm-plan 1\npolicy x\naccesses 1\n0 p:0x2A\n", "",
	  "access 0 has the key \"p:0x2A\": a key is p:0x" },
	{ "tensormm-plan 1\npolicy x\naccesses 1\n0 p:0x02a\n", "",
	  "a key is p:0x" },
	{ "tensormm-plan 1\npolicy x\naccesses 1\n0 p:0x1000000000000\n", "",
	  "more than 48 bits" },
	{ "tensormm-plan 1\npolicy x\naccesses 1\n0 p:0x0\n", "",
	  "the zero handle names no tensor" },
	{ "tensormm-plan 1\npolicy x\naccesses 1\n0 i:4294967296\n", "",
	  "the ordinal is more than 4294967295" },
	{ "tensormm-plan 1\npolicy x\naccesses 1\n0 q:1\n", "",
	  "a key is p:0x" },
	{ HEAD "actions 1\nEVICT_SWAP 5 p:0x1000001 4 -\n", "",
	  "action 0: the trigger \"5\" is not an access of the plan's 5" },
	{ HEAD "actions 1\nEVICT_SWAP 0 p:0x1000001 5 -\n", "",
	  "the back-access \"5\" is neither '-' nor an access" },
	{ HEAD "actions 1\nEVICT_SWAP 0 p:0x1000001 4 PREFER_HOST\n", "",
	  "only ADVISE takes an advice, but this EVICT_SWAP has "
	  "\"PREFER_HOST\"" },
	{ HEAD "actions 1\nADVISE 0 p:0x1000001 - -\n", "",
	  "unknown advice \"-\"" },
	{ HEAD "actions 1\nADVISE 0 p:0x1000001 - PREFER_MARS\n", "",
	  "unknown advice \"PREFER_MARS\"" },
	{ HEAD "actions 1\nADVISE 0 p:0x1000001 -\n", "",
	  "expected an action as '<type> <trigger> <key>" },
	{ HEAD "actions 1\nPREFETCH 0 x 4 -\n", "",
	  "action 0 has the key \"x\"" },
	{ "tensormm-plan 1\npolicy x\naccesses 0\nactions 1\n"
	  "PREFETCH 0 i:0 0 -\n", "",
	  "the trigger \"0\" is not an access of the plan's 0" },
	{ "tensormm-plan 1\npolicy x\naccesses 0\nactions 0\n",
	  "\x01", "there is more after the end line: \"\\x01\"" },
};

START_TEST(test_each_broken_rule_is_named)
{
	char err[512];
	char *sealed = seal(bad_texts[_i].body);
	size_t n = strlen(sealed), t = strlen(bad_texts[_i].tail);
	char *text = malloc(n + t + 1);

	ck_assert_ptr_nonnull(text);
	memcpy(text, sealed, n);
	memcpy(text + n, bad_texts[_i].tail, t + 1);
	decode_fails(text, n + t, err, sizeof(err));
	HAS(err, bad_texts[_i].want);
	HAS(err, "delete the file to re-plan");
	free(text);
	free(sealed);
}
END_TEST

START_TEST(test_end_line_problems)
{
	static const char *const ends[] = {
		"end crc32 25555F59\n", "end crc32 025555f59\n",
		"end crc32 25555f5\n",	"end crc32  25555f59\n",
		"end crc 25555f59\n",	"end\n",
	};
	const char *end = strstr(doc_example, "end crc32");
	size_t body = (size_t)(end - doc_example);
	char text[sizeof(doc_example) + 16], err[512];

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
		memcpy(text, doc_example, body);
		strcpy(text + body, ends[i]);
		decode_fails(text, strlen(text), err, sizeof(err));
		HAS(err, "line 15: expected the end line \"end crc32 <8 "
			 "lowercase hex digits>\"");
	}
	memcpy(text, doc_example, body);
	strcpy(text + body, "end crc32 25555f5a\n");
	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, "line 15: the checksum on the end line is 25555f5a, but the "
		 "lines before it sum to 25555f59");
}
END_TEST

START_TEST(test_serial_with_bit_15_is_refused)
{
	struct tmm_plan p;
	char err[512];

	ck_assert_int_eq(tmm_plan_text_decode(doc_example,
					      strlen(doc_example), &p, 0x8000,
					      err, sizeof(err)), -EINVAL);
	HAS(err, "bit 15");
	ck_assert_ptr_null(p.access_keys);
}
END_TEST

void add_plan_file_damage_tests(Suite *suite)
{
	TCase *damage = tcase_create("damage");

	/* Valgrind slows the every-offset loops well past Check's 4 s. */
	tcase_set_timeout(damage, 120);
	tcase_add_test(damage, test_truncation_at_every_offset);
	tcase_add_test(damage, test_flipped_byte_anywhere);
	tcase_add_test(damage, test_wrong_magic);
	tcase_add_test(damage, test_future_version);
	tcase_add_test(damage, test_split_file_truncated_at_every_offset);
	tcase_add_test(damage, test_unsorted_actions);
	tcase_add_test(damage, test_unknown_action_name);
	tcase_add_loop_test(damage, test_count_overflows, 0,
			    (int)(sizeof(counts) / sizeof(counts[0])));
	tcase_add_loop_test(damage, test_each_broken_rule_is_named, 0,
			    (int)(sizeof(bad_texts) / sizeof(bad_texts[0])));
	tcase_add_test(damage, test_end_line_problems);
	tcase_add_test(damage, test_serial_with_bit_15_is_refused);
	suite_add_tcase(suite, damage);
}
