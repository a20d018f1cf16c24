/*
 * test_plan_file.c — Check suite for the plan file (lib/io/plan_encode.c,
 * lib/io/plan_decode.c and lib/io/plan_file.c).
 *
 * A plan with every action type and every advice goes through the text
 * encoder, the decoder and real files and must come back field for field
 * (the runtime's feedback fields excepted: they are not saved), with the
 * keys of tensors made outside iterations moved to the reading context's
 * serial.  Then the reader is attacked: the text is cut at every byte
 * length and has every byte flipped, and hand-written texts, sealed with a
 * checksum computed here (bit by bit, independently of the library's
 * table) so that the checks behind the checksum are reached, break one
 * rule each.  The texts follow docs/plan-format.md, so the tests hold the
 * code to the document.
 */
#include "lib/io/plan.h"
#include "lib/io/plan_decode.h"
#include "lib/io/plan_encode.h"
#include "lib/io/plan_file.h"
#include "lib/io/plan_syntax.h"
#include "lib/io/trace.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQUIRE(cond, ...)                                                 \
	do {                                                               \
		if (!(cond))                                               \
			ck_abort_msg(__VA_ARGS__);                         \
	} while (0)

#define HAS(msg, part)                                                     \
	REQUIRE(strstr((msg), (part)), "message \"%s\" lacks \"%s\"",      \
		(msg), (part))

/* The key of handle `low` of the context with `serial` (lib/core/tensor_table.c). */
#define HANDLE(serial, low) ((uint64_t)(serial) << 48 | (uint64_t)(low))

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

/* CRC-32 bit by bit, straight from the definition: a check on the table. */
static uint32_t ref_crc32(const char *p, size_t len)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint8_t)p[i];
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
	}
	return ~crc;
}

/* body + its end line, from malloc. */
static char *seal(const char *body)
{
	size_t n = strlen(body);
	char *t = malloc(n + 32);

	ck_assert_ptr_nonnull(t);
	snprintf(t, n + 32, "%send crc32 %08x\n", body, ref_crc32(body, n));
	return t;
}

/*
 * A plan for the context `serial` with every action type and every
 * advice, outside and inside keys at the edges of their ranges, and
 * feedback fields set (they must not be saved).
 */
static void make_plan(struct tmm_plan *p, uint16_t serial)
{
	static const uint64_t low[] = { 0x1000001, 0, 0x2a, 1, 0x1000001,
					0, 0xffffffffffffull, UINT32_MAX };
	static const bool inside[] = { false, true, false, true, false,
				       true, false, true };

	memset(p, 0, sizeof(*p));
	strcpy(p->policy, "capuchin");
	p->n_accesses = 8;
	p->access_keys = malloc(sizeof(uint64_t) * p->n_accesses);
	ck_assert_ptr_nonnull(p->access_keys);
	for (uint32_t k = 0; k < p->n_accesses; k++)
		p->access_keys[k] = inside[k]
			? tmm_key_of_ordinal((uint32_t)low[k])
			: HANDLE(serial, low[k]);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 0,
				      HANDLE(serial, 0x1000001), 4, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_DROP, 1,
				      tmm_key_of_ordinal(0), 5, 0), 0);
	for (uint32_t a = 0; a < TMM_PLAN_ADVICE_COUNT; a++)
		ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_ADVISE, 2 + a / 2,
					      a % 2 ? HANDLE(serial, 0x2a)
						    : tmm_key_of_ordinal(1),
					      TMM_PLAN_NONE, a), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 6,
				      HANDLE(serial, 0xffffffffffffull), 7, 0),
			 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 7,
				      tmm_key_of_ordinal(UINT32_MAX), 7, 0),
			 0);
	for (uint32_t i = 0; i < p->n_actions; i++) {
		p->actions[i].late = i + 1;
		p->actions[i].skipped = 2 * i + 1;
	}
}

/* `got` equals `want` but for the feedback fields, which come back 0. */
static void require_same_plan(const struct tmm_plan *got,
			      const struct tmm_plan *want)
{
	ck_assert_str_eq(got->policy, want->policy);
	ck_assert_uint_eq(got->n_accesses, want->n_accesses);
	for (uint32_t k = 0; k < want->n_accesses; k++)
		REQUIRE(got->access_keys[k] == want->access_keys[k],
			"access %u: key %#llx, want %#llx", k,
			(unsigned long long)got->access_keys[k],
			(unsigned long long)want->access_keys[k]);
	ck_assert_uint_eq(got->n_actions, want->n_actions);
	for (uint32_t i = 0; i < want->n_actions; i++) {
		const struct tmm_plan_action *g = &got->actions[i];
		const struct tmm_plan_action *w = &want->actions[i];

		REQUIRE(g->type == w->type && g->trigger == w->trigger &&
			g->key == w->key && g->back_access == w->back_access &&
			g->advice == w->advice && g->parts == w->parts,
			"action %u differs", i);
		REQUIRE(g->late == 0 && g->skipped == 0,
			"action %u: feedback was saved", i);
	}
}

/* A fresh temporary directory, in $TMPDIR or /tmp. */
static void temp_dir(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");

	snprintf(path, len, "%s/tmm-plan-XXXXXX", dir && *dir ? dir : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(path));
}

/* The entries of `dir` but . and .., one name per line, in `names`. */
static int list_dir(const char *dir, char *names, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t used = 0;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	names[0] = '\0';
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		used += (size_t)snprintf(names + used, len - used, "%s\n",
					 e->d_name);
		ck_assert_uint_lt(used, len);
		n++;
	}
	closedir(d);
	return n;
}

/* Removes `dir` and the plain files in it. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		ck_assert_int_eq(unlink(path), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(dir), 0);
}

static void write_bytes(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

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

/* The example in docs/plan-format.md, byte for byte. */
static const char doc_example[] =
	"tensormm-plan 1\n"
	"# A libtensormm plan (docs/plan-format.md); an edit breaks the "
	"checksum.\n"
	"policy capuchin\n"
	"accesses 5\n"
	"0 p:0x1000001\n"
	"1 i:0\n"
	"2 i:1\n"
	"3 i:0\n"
	"4 p:0x1000001\n"
	"actions 4\n"
	"EVICT_SWAP 0 p:0x1000001 4 -\n"
	"EVICT_DROP 1 i:0 3 -\n"
	"ADVISE 2 i:1 - READ_MOSTLY\n"
	"PREFETCH 2 p:0x1000001 4 -\n"
	"end crc32 25555f59\n";

/* The plan of doc_example, for the context `serial`. */
static void make_doc_plan(struct tmm_plan *p, uint16_t serial)
{
	uint64_t w = HANDLE(serial, 0x1000001);
	uint64_t keys[] = { w, tmm_key_of_ordinal(0), tmm_key_of_ordinal(1),
			    tmm_key_of_ordinal(0), w };

	memset(p, 0, sizeof(*p));
	strcpy(p->policy, "capuchin");
	p->n_accesses = 5;
	p->access_keys = malloc(sizeof(keys));
	ck_assert_ptr_nonnull(p->access_keys);
	memcpy(p->access_keys, keys, sizeof(keys));
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_SWAP, 0, w, 4, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_EVICT_DROP, 1,
				      tmm_key_of_ordinal(0), 3, 0), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_ADVISE, 2,
				      tmm_key_of_ordinal(1), TMM_PLAN_NONE,
				      TMM_PLAN_ADVICE_READ_MOSTLY), 0);
	ck_assert_int_eq(tmm_plan_add(p, TMM_ACT_PREFETCH, 2, w, 4, 0), 0);
}

/* ------------------------------------------------------------------------
 * Encoding and decoding
 * ---------------------------------------------------------------------- */

START_TEST(test_round_trip_every_type_and_advice)
{
	struct tmm_plan p, q;
	char *text, *again;
	size_t len, len2;
	char err[512];

	make_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_text_encode(&p, 3, &text, &len), 0);
	ck_assert_uint_eq(strlen(text), len);
	ck_assert_int_eq(tmm_plan_text_decode(text, len, &q, 3, err,
					      sizeof(err)), 0);
	require_same_plan(&q, &p);
	/* One spelling for everything: the decoded plan encodes the same. */
	ck_assert_int_eq(tmm_plan_text_encode(&q, 3, &again, &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_str_eq(again, text);
	free(again);
	free(text);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
}
END_TEST

/* A plan with a SPLIT is written as format 2, read back the same, and
 * encoded again to the same bytes; take the SPLIT out and the same plan
 * is format 1 again, for readers from before SPLIT. */
START_TEST(test_split_round_trip_is_format_2)
{
	struct tmm_plan p, q;
	char *text, *again;
	size_t len, len2;
	char err[512];

	make_doc_plan(&p, 1);
	ck_assert_int_eq(tmm_plan_add_split(&p, 3, tmm_key_of_ordinal(0), 16),
			 0);
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "tensormm-plan 2\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nSPLIT 3 i:0 - 16\n"));
	ck_assert_int_eq(tmm_plan_text_decode(text, len, &q, 1, err,
					      sizeof(err)), 0);
	require_same_plan(&q, &p);
	ck_assert_uint_eq(q.actions[4].parts, 16);
	ck_assert_int_eq(tmm_plan_text_encode(&q, 1, &again, &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_str_eq(again, text);
	free(again);
	free(text);
	tmm_plan_free(&q);
	p.n_actions--;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "tensormm-plan 1\n"));
	free(text);
	tmm_plan_free(&p);
}
END_TEST

/* The encoder writes no SPLIT that the reader would refuse, and no parts
 * on anything else. */
START_TEST(test_encoder_refuses_a_bad_split)
{
	struct tmm_plan p;
	char *text;
	size_t len;

	for (int c = 0; c < 3; c++) {
		make_doc_plan(&p, 1);
		ck_assert_int_eq(tmm_plan_add_split(&p, 3,
						    tmm_key_of_ordinal(0), 2),
				 0);
		if (c == 0)
			p.actions[4].parts = 1;
		else if (c == 1)
			p.actions[4].back_access = 4;
		else
			p.actions[0].parts = 2;
		ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len),
				 -EINVAL);
		tmm_plan_free(&p);
	}
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

START_TEST(test_empty_plan_round_trip)
{
	struct tmm_plan p, q;
	char *text;
	size_t len;
	char err[512];

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "\npolicy -\naccesses 0\n"
				     "actions 0\nend crc32 "));
	ck_assert_int_eq(tmm_plan_text_decode(text, len, &q, 1, err,
					      sizeof(err)), 0);
	require_same_plan(&q, &p);
	ck_assert_ptr_null(q.access_keys);
	ck_assert_ptr_null(q.actions);
	free(text);
	tmm_plan_free(&q);
}
END_TEST

START_TEST(test_text_is_the_documented_example)
{
	struct tmm_plan p, q;
	char *text;
	size_t len;
	char err[512];

	make_doc_plan(&p, 1);
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_str_eq(text, doc_example);
	ck_assert_uint_eq(ref_crc32(text, len - 9 - 10),
			  strtoul(text + len - 9, NULL, 16));
	ck_assert_int_eq(tmm_plan_text_decode(doc_example,
					      strlen(doc_example), &q, 1, err,
					      sizeof(err)), 0);
	require_same_plan(&q, &p);
	free(text);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
}
END_TEST

START_TEST(test_serial_translation)
{
	struct tmm_plan p, q;
	char *text;
	size_t len;
	char err[512];

	make_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_text_encode(&p, 3, &text, &len), 0);
	/* The serial does not travel in the text. */
	ck_assert_ptr_null(strstr(text, "0x3000"));
	ck_assert_int_eq(tmm_plan_text_decode(text, len, &q, 9, err,
					      sizeof(err)), 0);
	for (uint32_t k = 0; k < p.n_accesses; k++) {
		uint64_t key = p.access_keys[k];

		if (key & TMM_KEY_IN_ITERATION)
			ck_assert_uint_eq(q.access_keys[k], key);
		else
			ck_assert_uint_eq(q.access_keys[k],
					  HANDLE(9, key & 0xffffffffffffull));
	}
	for (uint32_t i = 0; i < p.n_actions; i++) {
		uint64_t key = p.actions[i].key;

		ck_assert_uint_eq(q.actions[i].key,
				  key & TMM_KEY_IN_ITERATION
					  ? key
					  : HANDLE(9, key & 0xffffffffffffull));
	}
	/* Translated, it is the plan the context with serial 9 would make. */
	tmm_plan_free(&p);
	make_plan(&p, 9);
	require_same_plan(&q, &p);
	free(text);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
}
END_TEST

START_TEST(test_comments_are_ignored)
{
	struct tmm_plan p, q;
	char err[512];
	char *text = seal("tensormm-plan 1\n"
			  "# made for: a100-40g, budget 6 GiB\n"
			  "policy capuchin\n"
			  "#\n"
			  "accesses 5\n"
			  "0 p:0x1000001\n"
			  "1 i:0\n"
			  "# mid-section\n"
			  "2 i:1\n"
			  "3 i:0\n"
			  "4 p:0x1000001\n"
			  "actions 4\n"
			  "EVICT_SWAP 0 p:0x1000001 4 -\n"
			  "EVICT_DROP 1 i:0 3 -\n"
			  "ADVISE 2 i:1 - READ_MOSTLY\n"
			  "PREFETCH 2 p:0x1000001 4 -\n"
			  "# last\n");

	make_doc_plan(&p, 4);
	ck_assert_int_eq(tmm_plan_text_decode(text, strlen(text), &q, 4, err,
					      sizeof(err)), 0);
	require_same_plan(&q, &p);
	free(text);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
}
END_TEST

/* Each plan the encoder must refuse, made from the doc plan. */
static void break_plan(struct tmm_plan *p, int what, uint16_t *serial)
{
	switch (what) {
	case 0:
		p->actions[1].type = TMM_ACT_TYPE_COUNT;
		break;
	case 1:
		p->actions[2].advice = TMM_PLAN_ADVICE_COUNT;
		break;
	case 2:
		p->actions[0].advice = TMM_PLAN_ADVICE_PREFER_HOST + 1;
		break;
	case 3:
		p->actions[3].trigger = 5;
		break;
	case 4:
		p->actions[0].trigger = 3; /* above action 1's trigger 1 */
		break;
	case 5:
		p->actions[0].back_access = 5;
		break;
	case 6:
		p->access_keys[4] = HANDLE(2, 0x1000001); /* another context */
		break;
	case 7:
		p->actions[0].key = HANDLE(1, 0); /* the zero handle */
		break;
	case 8:
		p->access_keys[1] = TMM_KEY_IN_ITERATION | (1ull << 32);
		break;
	case 9:
		*serial = 0x8001;
		break;
	case 10:
		strcpy(p->policy, "two words");
		break;
	case 11:
		strcpy(p->policy, "-");
		break;
	case 12:
		memset(p->policy, 'x', sizeof(p->policy));
		break;
	default:
		/* Counted only: refused before the array is looked at. */
		p->n_accesses = TMM_PLAN_FILE_MAX_ACCESSES + 1;
		break;
	}
}

static const char *const refusals[] = {
	"unknown action type", "unknown advice", "not ADVISE",
	"past the plan's 5 accesses", "not sorted by trigger",
	"back-access 5 is past", "another context", "zero handle",
	"32 bits", "bit 15", "not a word", "not a word",
	"not NUL-terminated", "at most 268435456",
};

START_TEST(test_encoder_refuses_what_the_reader_would)
{
	char dir[256], path[300], names[256], err[512];
	struct tmm_plan p;
	uint32_t n_accesses;
	uint16_t serial = 1;
	char *text = (char *)1;
	size_t len = 1;

	make_doc_plan(&p, 1);
	n_accesses = p.n_accesses;
	break_plan(&p, _i, &serial);
	ck_assert_int_eq(tmm_plan_text_encode(&p, serial, &text, &len),
			 -EINVAL);
	ck_assert_ptr_null(text);
	ck_assert_uint_eq(len, 0);

	temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, serial, err,
					     sizeof(err)), -EINVAL);
	HAS(err, path);
	HAS(err, refusals[_i]);
	HAS(err, "bug");
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 0);
	remove_dir(dir);
	p.n_accesses = n_accesses;
	tmm_plan_free(&p);
}
END_TEST

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

START_TEST(test_truncated_files_at_every_offset)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;

	temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);
	for (size_t n = 0; n < strlen(doc_example); n++) {
		write_bytes(path, doc_example, n);
		ck_assert_int_eq(tmm_plan_file_read(path, &p, 1, err,
						    sizeof(err)), -EINVAL);
		HAS(err, path);
		HAS(err, ": line ");
		HAS(err, "truncated");
		ck_assert_ptr_null(p.access_keys);
		ck_assert_ptr_null(p.actions);
	}
	remove_dir(dir);
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
	char *text = seal("tensormm-plan 3\npolicy x\nsomething new\n");

	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, "line 1: the file has plan format version 3");
	HAS(err, "reads versions 1 to 2");
	HAS(err, "newer build");
	free(text);
	/* A version past 32 bits is damage, not the future. */
	text = seal("tensormm-plan 4294967296\n");
	decode_fails(text, strlen(text), err, sizeof(err));
	HAS(err, "too large");
	free(text);
}
END_TEST

/* The head of doc_example, up to its actions. */
#define HEAD                                                              \
	"tensormm-plan 1\npolicy capuchin\naccesses 5\n0 p:0x1000001\n"     \
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

/* ------------------------------------------------------------------------
 * Files
 * ---------------------------------------------------------------------- */

START_TEST(test_file_round_trip_leaves_no_temp_file)
{
	char dir[256], path[300], names[256], err[512];
	struct tmm_plan p, q;

	temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, err, sizeof(err)),
			 0);
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "plan\n");
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 3, err, sizeof(err)),
			 0);
	require_same_plan(&q, &p);
	tmm_plan_free(&q);

	/* Over an old file: replaced whole, still no temporary left. */
	tmm_plan_free(&p);
	make_doc_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, err, sizeof(err)),
			 0);
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "plan\n");
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 3, err, sizeof(err)),
			 0);
	require_same_plan(&q, &p);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
	remove_dir(dir);
}
END_TEST

START_TEST(test_file_serial_translation)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p, q, want;

	temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, err, sizeof(err)),
			 0);
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 9, err, sizeof(err)),
			 0);
	make_plan(&want, 9);
	require_same_plan(&q, &want);
	tmm_plan_free(&want);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
	remove_dir(dir);
}
END_TEST

START_TEST(test_missing_file_is_enoent)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;
	static const struct tmm_plan zero;

	temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/no-plan", dir);
	memset(&p, 0x5a, sizeof(p));
	ck_assert_int_eq(tmm_plan_file_read(path, &p, 1, err, sizeof(err)),
			 -ENOENT);
	HAS(err, path);
	REQUIRE(!memcmp(&p, &zero, sizeof(p)), "*out not zeroed");
	remove_dir(dir);
}
END_TEST

START_TEST(test_unwritable_path)
{
	char dir[256], path[300], names[256], err[512];
	struct tmm_plan p, q;

	temp_dir(dir, sizeof(dir));
	make_doc_plan(&p, 1);
	snprintf(path, sizeof(path), "%s/missing/plan", dir);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, err, sizeof(err)),
			 -ENOENT);
	HAS(err, path);
	HAS(err, "No such file or directory");
	HAS(err, "check that its directory exists and is writable");

	/* A directory in the way: the rename fails, the temporary goes. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_lt(tmm_plan_file_write(path, &p, 1, err, sizeof(err)),
			 0);
	HAS(err, "cannot rename");
	HAS(err, path);
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "sub\n");

	/* Reading a directory is refused, not attempted. */
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 1, err, sizeof(err)),
			 -EINVAL);
	HAS(err, "not a regular file");
	ck_assert_int_eq(rmdir(path), 0);
	tmm_plan_free(&p);
	remove_dir(dir);
}
END_TEST

START_TEST(test_damaged_file_names_path_and_line)
{
	char dir[256], path[300], err[512];
	char text[sizeof(doc_example)];
	struct tmm_plan p;

	temp_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/plan", dir);
	memcpy(text, doc_example, sizeof(text));
	*strstr(text, "EVICT_DROP 1") = 'e'; /* an edit by hand */
	write_bytes(path, text, strlen(text));
	ck_assert_int_eq(tmm_plan_file_read(path, &p, 1, err, sizeof(err)),
			 -EINVAL);
	HAS(err, path);
	HAS(err, ": line 15: the checksum");
	HAS(err, "damaged or edited");
	HAS(err, "delete the file to re-plan");
	remove_dir(dir);
}
END_TEST

static Suite *plan_file_suite(void)
{
	Suite *suite = suite_create("plan_file");
	TCase *text = tcase_create("text");
	TCase *damage = tcase_create("damage");
	TCase *files = tcase_create("files");

	tcase_add_test(text, test_round_trip_every_type_and_advice);
	tcase_add_test(text, test_split_round_trip_is_format_2);
	tcase_add_test(text, test_encoder_refuses_a_bad_split);
	tcase_add_test(text, test_empty_plan_round_trip);
	tcase_add_test(text, test_text_is_the_documented_example);
	tcase_add_test(text, test_serial_translation);
	tcase_add_test(text, test_comments_are_ignored);
	tcase_add_loop_test(text, test_encoder_refuses_what_the_reader_would,
			    0, (int)(sizeof(refusals) / sizeof(refusals[0])));
	suite_add_tcase(suite, text);

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

	tcase_set_timeout(files, 120);
	tcase_add_test(files, test_file_round_trip_leaves_no_temp_file);
	tcase_add_test(files, test_file_serial_translation);
	tcase_add_test(files, test_missing_file_is_enoent);
	tcase_add_test(files, test_unwritable_path);
	tcase_add_test(files, test_truncated_files_at_every_offset);
	tcase_add_test(files, test_damaged_file_names_path_and_line);
	suite_add_tcase(suite, files);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(plan_file_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
