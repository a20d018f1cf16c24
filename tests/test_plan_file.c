/* SPDX-License-Identifier: MIT */
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
 * code to the document.  The attacks on the text are in
 * test_plan_file_damage.c; what the writer does in a directory others may
 * write too, in test_plan_file_safety.c.
 */
#include "check_main.h"
#include "lib/base/fault.h"
#include "lib/io/plan.h"
#include "lib/io/plan_decode.h"
#include "lib/io/plan_encode.h"
#include "lib/io/plan_file.h"
#include "lib/io/plan_syntax.h"
#include "lib/io/trace.h"
#include "test_plan_file.h"
#include "scratch_dir.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

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
			g->advice == w->advice && g->parts == w->parts &&
			g->flags == w->flags,
			"action %u differs", i);
		REQUIRE(g->late == 0 && g->skipped == 0,
			"action %u: feedback was saved", i);
	}
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

static void write_bytes(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* The plan of doc_example, for the context `serial`. */
void make_doc_plan(struct tmm_plan *p, uint16_t serial)
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

/* A layer-synchronous action (vDNN) and a kept drop (Chen) are written
 * as format 3 with the words "sync" and "keep", read back with their
 * flags, and encoded again to the same bytes; without them the same plan
 * is format 1 again, for older readers. */
START_TEST(test_sync_round_trip_is_format_3)
{
	struct tmm_plan p, q;
	char *text, *again;
	size_t len, len2;
	char err[512];

	make_doc_plan(&p, 1);
	ck_assert_uint_eq(p.actions[0].type, TMM_ACT_EVICT_SWAP);
	ck_assert_uint_eq(p.actions[3].type, TMM_ACT_PREFETCH);
	p.actions[0].flags = TMM_ACT_SYNC;
	p.actions[3].flags = TMM_ACT_SYNC;
	p.actions[1].flags = TMM_ACT_KEEP;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "tensormm-plan 3\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nEVICT_SWAP 0 p:0x1000001 4 - "
					   "sync\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nEVICT_DROP 1 i:0 3 - keep\n"));
	ck_assert_int_eq(tmm_plan_text_decode(text, len, &q, 1, err,
					      sizeof(err)), 0);
	require_same_plan(&q, &p);
	ck_assert_uint_eq(q.actions[0].flags, TMM_ACT_SYNC);
	ck_assert_uint_eq(q.actions[1].flags, TMM_ACT_KEEP);
	ck_assert_uint_eq(q.actions[3].flags, TMM_ACT_SYNC);
	ck_assert_int_eq(tmm_plan_text_encode(&q, 1, &again, &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_str_eq(again, text);
	free(again);
	free(text);
	tmm_plan_free(&q);
	p.actions[0].flags = p.actions[1].flags = p.actions[3].flags = 0;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "tensormm-plan 1\n"));
	free(text);
	/* Only swaps and prefetches wait at a layer's end, only drops
	 * keep; no unknown flag is written. */
	p.actions[1].flags = TMM_ACT_SYNC;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), -EINVAL);
	p.actions[1].flags = 0;
	p.actions[0].flags = TMM_ACT_KEEP;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), -EINVAL);
	p.actions[0].flags = 2;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), -EINVAL);
	tmm_plan_free(&p);
}
END_TEST

/* A swap-out moved by migration (UVM mode's copy way) is written as
 * format 4 with the word "migrate", read back with its flag, and encoded
 * again to the same bytes; without it the same plan, sync and keep
 * included, is format 3 again, for readers from before migration. */
START_TEST(test_migrate_round_trip_is_format_4)
{
	struct tmm_plan p, q;
	char *text, *again;
	size_t len, len2;
	char err[512];

	make_doc_plan(&p, 1);
	ck_assert_uint_eq(p.actions[0].type, TMM_ACT_EVICT_SWAP);
	p.actions[0].flags = TMM_ACT_MIGRATE;
	p.actions[1].flags = TMM_ACT_KEEP;
	p.actions[3].flags = TMM_ACT_SYNC;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "tensormm-plan 4\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nEVICT_SWAP 0 p:0x1000001 4 - "
					   "migrate\n"));
	ck_assert_int_eq(tmm_plan_text_decode(text, len, &q, 1, err,
					      sizeof(err)), 0);
	require_same_plan(&q, &p);
	ck_assert_uint_eq(q.actions[0].flags, TMM_ACT_MIGRATE);
	ck_assert_int_eq(tmm_plan_text_encode(&q, 1, &again, &len2), 0);
	ck_assert_uint_eq(len2, len);
	ck_assert_str_eq(again, text);
	free(again);
	free(text);
	tmm_plan_free(&q);
	/* A SPLIT after the migration does not lower the version. */
	ck_assert_int_eq(tmm_plan_add_split(&p, 3, tmm_key_of_ordinal(0), 2),
			 0);
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "tensormm-plan 4\n"));
	free(text);
	p.n_actions--;
	p.actions[0].flags = 0;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "tensormm-plan 3\n"));
	ck_assert_ptr_null(strstr(text, "migrate"));
	free(text);
	/* Only a swap-out moves by migration, and not a layer-synchronous
	 * one, whose line would need two last words. */
	p.actions[3].flags = TMM_ACT_MIGRATE;
	ck_assert_int_eq(tmm_plan_text_check(&p, 1, err, sizeof(err)),
			 -EINVAL);
	HAS(err, "only a swap-out can move by migration");
	p.actions[3].flags = 0;
	p.actions[1].flags = TMM_ACT_MIGRATE;
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), -EINVAL);
	p.actions[1].flags = 0;
	p.actions[0].flags = TMM_ACT_MIGRATE | TMM_ACT_SYNC;
	ck_assert_int_eq(tmm_plan_text_check(&p, 1, err, sizeof(err)),
			 -EINVAL);
	HAS(err, "cannot be both layer-synchronous and moved by migration");
	ck_assert_int_eq(tmm_plan_text_encode(&p, 1, &text, &len), -EINVAL);
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

	scratch_dir_make(dir, sizeof(dir), "plan");
	snprintf(path, sizeof(path), "%s/plan", dir);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, serial, PLAN_LIMIT,
					     err, sizeof(err)), -EINVAL);
	HAS(err, path);
	HAS(err, refusals[_i]);
	HAS(err, "bug");
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 0);
	scratch_dir_remove(dir);
	p.n_accesses = n_accesses;
	tmm_plan_free(&p);
}
END_TEST

/* ------------------------------------------------------------------------
 * Files
 * ---------------------------------------------------------------------- */

START_TEST(test_file_round_trip_leaves_no_temp_file)
{
	char dir[256], path[300], names[256], err[512];
	struct tmm_plan p, q;

	scratch_dir_make(dir, sizeof(dir), "plan");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, PLAN_LIMIT,
					     err, sizeof(err)), 0);
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "plan\n");
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 3, PLAN_LIMIT,
					    err, sizeof(err)), 0);
	require_same_plan(&q, &p);
	tmm_plan_free(&q);

	/* Over an old file: replaced whole, still no temporary left. */
	tmm_plan_free(&p);
	make_doc_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, PLAN_LIMIT,
					     err, sizeof(err)), 0);
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "plan\n");
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 3, PLAN_LIMIT,
					    err, sizeof(err)), 0);
	require_same_plan(&q, &p);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

/* The site file_write fails the plan file's write as a full disk would:
 * an error naming the file, the old file kept, no temporary left. */
START_TEST(test_injected_write_failure_keeps_the_old_file)
{
	char dir[256], path[300], names[256], err[512];
	struct tmm_plan p, q;

	scratch_dir_make(dir, sizeof(dir), "plan");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, PLAN_LIMIT, err,
					     sizeof(err)),
			 0);
	tmm_plan_free(&p);
	make_doc_plan(&p, 3);
	ck_assert_int_eq(tmm_fault_set("file_write"), 0);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, PLAN_LIMIT, err,
					     sizeof(err)),
			 -ENOSPC);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_msg(strstr(err, path), "%s", err);
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "plan\n");
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 3, PLAN_LIMIT, err,
					    sizeof(err)),
			 0);
	tmm_plan_free(&p);
	make_plan(&p, 3);
	require_same_plan(&q, &p);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_file_serial_translation)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p, q, want;

	scratch_dir_make(dir, sizeof(dir), "plan");
	snprintf(path, sizeof(path), "%s/plan", dir);
	make_plan(&p, 3);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 3, PLAN_LIMIT,
					     err, sizeof(err)), 0);
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 9, PLAN_LIMIT,
					    err, sizeof(err)), 0);
	make_plan(&want, 9);
	require_same_plan(&q, &want);
	tmm_plan_free(&want);
	tmm_plan_free(&q);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_missing_file_is_enoent)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;
	static const struct tmm_plan zero;

	scratch_dir_make(dir, sizeof(dir), "plan");
	snprintf(path, sizeof(path), "%s/no-plan", dir);
	memset(&p, 0x5a, sizeof(p));
	ck_assert_int_eq(tmm_plan_file_read(path, &p, 1, PLAN_LIMIT,
					    err, sizeof(err)), -ENOENT);
	HAS(err, path);
	REQUIRE(!memcmp(&p, &zero, sizeof(p)), "*out not zeroed");
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_unwritable_path)
{
	char dir[256], path[300], names[256], err[512];
	struct tmm_plan p, q;

	scratch_dir_make(dir, sizeof(dir), "plan");
	make_doc_plan(&p, 1);
	snprintf(path, sizeof(path), "%s/missing/plan", dir);
	ck_assert_int_eq(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT,
					     err, sizeof(err)), -ENOENT);
	HAS(err, path);
	HAS(err, "No such file or directory");
	HAS(err, "check that its directory exists and is writable");

	/* A directory in the way: the rename fails, the temporary goes. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_lt(tmm_plan_file_write(path, &p, 1, PLAN_LIMIT,
					     err, sizeof(err)), 0);
	HAS(err, "cannot rename");
	HAS(err, path);
	ck_assert_int_eq(list_dir(dir, names, sizeof(names)), 1);
	ck_assert_str_eq(names, "sub\n");

	/* Reading a directory is refused, not attempted. */
	ck_assert_int_eq(tmm_plan_file_read(path, &q, 1, PLAN_LIMIT,
					    err, sizeof(err)), -EINVAL);
	HAS(err, "not a regular file");
	ck_assert_int_eq(rmdir(path), 0);
	tmm_plan_free(&p);
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_truncated_files_at_every_offset)
{
	char dir[256], path[300], err[512];
	struct tmm_plan p;

	scratch_dir_make(dir, sizeof(dir), "plan");
	snprintf(path, sizeof(path), "%s/plan", dir);
	for (size_t n = 0; n < strlen(doc_example); n++) {
		write_bytes(path, doc_example, n);
		ck_assert_int_eq(tmm_plan_file_read(path, &p, 1, PLAN_LIMIT,
						    err, sizeof(err)),
				 -EINVAL);
		HAS(err, path);
		HAS(err, ": line ");
		HAS(err, "truncated");
		ck_assert_ptr_null(p.access_keys);
		ck_assert_ptr_null(p.actions);
	}
	scratch_dir_remove(dir);
}
END_TEST

START_TEST(test_damaged_file_names_path_and_line)
{
	char dir[256], path[300], err[512];
	char text[sizeof(doc_example)];
	struct tmm_plan p;

	scratch_dir_make(dir, sizeof(dir), "plan");
	snprintf(path, sizeof(path), "%s/plan", dir);
	memcpy(text, doc_example, sizeof(text));
	*strstr(text, "EVICT_DROP 1") = 'e'; /* an edit by hand */
	write_bytes(path, text, strlen(text));
	ck_assert_int_eq(tmm_plan_file_read(path, &p, 1, PLAN_LIMIT,
					    err, sizeof(err)), -EINVAL);
	HAS(err, path);
	HAS(err, ": line 15: the checksum");
	HAS(err, "damaged or edited");
	HAS(err, "delete the file to re-plan");
	scratch_dir_remove(dir);
}
END_TEST

static Suite *plan_file_suite(void)
{
	Suite *suite = suite_create("plan_file");
	TCase *text = tcase_create("text");
	TCase *files = tcase_create("files");

	tcase_add_test(text, test_round_trip_every_type_and_advice);
	tcase_add_test(text, test_split_round_trip_is_format_2);
	tcase_add_test(text, test_sync_round_trip_is_format_3);
	tcase_add_test(text, test_migrate_round_trip_is_format_4);
	tcase_add_test(text, test_encoder_refuses_a_bad_split);
	tcase_add_test(text, test_empty_plan_round_trip);
	tcase_add_test(text, test_text_is_the_documented_example);
	tcase_add_test(text, test_serial_translation);
	tcase_add_test(text, test_comments_are_ignored);
	tcase_add_loop_test(text, test_encoder_refuses_what_the_reader_would,
			    0, (int)(sizeof(refusals) / sizeof(refusals[0])));
	suite_add_tcase(suite, text);

	add_plan_file_damage_tests(suite);
	add_plan_file_safety_tests(suite);

	tcase_set_timeout(files, 120);
	tcase_add_test(files, test_file_round_trip_leaves_no_temp_file);
	tcase_add_test(files, test_injected_write_failure_keeps_the_old_file);
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
	return check_main(plan_file_suite);
}
