/* SPDX-License-Identifier: MIT */
/*
 * test_uvm_arena_kept.c — the managed arena's kept blocks
 * (lib/mem/uvm_arena.h), alone on a phantom simulated device.
 *
 * A kept block waits, pages and all, for the next tensor that fits it:
 * one of its size first; else the tail of the smallest larger one, whose
 * head stays kept with its pages; else a window over kept and free space
 * that covers the most kept pages (a kept block grown up or down, or
 * several with free space between).  Blocks kept side by side merge,
 * so that a larger tensor finds their pages.  A trim lets the longest
 * kept go first, and of the last only the head that passes its limit;
 * a discard the backend refuses still frees the pages.  Kept blocks
 * never make the arena grow, even without host memory to look for a
 * window.  Every case says which pages are still
 * known on the device and how many discards it took: a kept page that
 * was discarded would cost its next tensor a fault or a prefetch.
 *
 * Each managed block (a big page or more) comes from the top of the hole
 * it is carved from (pool.h, TMM_POOL_LARGE), so blocks taken one after
 * another lie downward from the top of a segment; the layouts below rely
 * on that.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check_main.h"
#include "lib/backend/backend_sim.h"
#include "lib/base/fault.h"
#include "lib/base/managed_page.h"
#include "lib/base/tunables.h"
#include "lib/mem/uvm_arena.h"
#include "test_sim.h"

#define PAGE TMM_MANAGED_PAGE

static void open_phantom_p100(struct tmm_backend *be)
{
	struct tmm_config cfg;

	cfg_init(&cfg, "p100-pcie3-16g", TMM_SIM_PHANTOM);
	open_cfg(be, &cfg);
}

static struct tmm_uvm_arena_stats arena_stats(const struct tmm_uvm_arena *a)
{
	struct tmm_uvm_arena_stats st;

	tmm_uvm_arena_get_stats(a, &st);
	return st;
}

static char *take(struct tmm_uvm_arena *a, uint64_t bytes,
		  struct tmm_pool_block **b)
{
	char why[256];
	void *p;

	ck_assert_msg(tmm_uvm_arena_alloc(a, bytes, b, &p, why,
					  sizeof(why)) == 0, "%s", why);
	return p;
}

/* A block of `pages` pages, its pages noted on the device, then kept. */
static char *kept(struct tmm_uvm_arena *a, uint64_t pages,
		  struct tmm_pool_block **b)
{
	char *p = take(a, pages * PAGE, b);

	tmm_uvm_arena_note(a, p, pages * PAGE, true);
	ck_assert(tmm_uvm_arena_keep(a, *b));
	return p;
}

/* The same size first: the same block, pages and all. */
START_TEST(a_kept_block_goes_to_the_next_tensor_of_its_size)
{
	struct tmm_uvm_arena *a, *other;
	struct tmm_pool_block *b[3], *stranger;
	struct tmm_backend be;
	char *pa, *p;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	pa = take(a, 3 * PAGE, &b[0]);
	take(a, PAGE, &b[1]);
	tmm_uvm_arena_note(a, pa, 3 * PAGE, true);
	ck_assert(tmm_uvm_arena_keep(a, b[0]));
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 3 * PAGE);
	ck_assert_uint_eq(arena_stats(a).in_use, PAGE);
	p = take(a, 3 * PAGE - 100, &b[2]);
	ck_assert_ptr_eq(p, pa);
	ck_assert_ptr_eq(b[2], b[0]);
	ck_assert(tmm_uvm_arena_on_device(a, p, 3 * PAGE));
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	ck_assert_uint_eq(arena_stats(a).kept_hits, 1);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	ck_assert_uint_eq(arena_stats(a).in_use, 4 * PAGE);
	/* Not this arena's, or nothing: not kept. */
	ck_assert_int_eq(tmm_uvm_arena_create(&other, &be, 3 * MIB), 0);
	take(other, PAGE, &stranger);
	ck_assert(!tmm_uvm_arena_keep(a, stranger));
	ck_assert(!tmm_uvm_arena_keep(a, NULL));
	ck_assert(!tmm_uvm_arena_keep(NULL, b[0]));
	ck_assert_uint_eq(tmm_uvm_arena_kept(NULL), 0);
	ck_assert_ptr_null(tmm_uvm_arena_block_ptr(a, stranger));
	ck_assert_ptr_eq(tmm_uvm_arena_block_ptr(a, b[2]), pa);
	tmm_uvm_arena_free(other, stranger);
	tmm_uvm_arena_destroy(other);
	tmm_uvm_arena_free(a, b[1]);
	tmm_uvm_arena_free(a, b[2]);
	ck_assert_uint_eq(arena_stats(a).in_use, 0);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/* A smaller tensor takes the tail of a larger kept block; the head stays
 * kept with its pages and serves the next tensor of its size. */
START_TEST(a_larger_kept_block_is_split_its_head_kept)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *b[3];
	struct tmm_backend be;
	char *pa, *p;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	pa = kept(a, 3, &b[0]);
	p = take(a, PAGE, &b[1]);
	ck_assert_ptr_eq(p, pa + 2 * PAGE);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 2 * PAGE);
	ck_assert(tmm_uvm_arena_on_device(a, pa, 3 * PAGE));
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	ck_assert_uint_eq(arena_stats(a).in_use, PAGE);
	p = take(a, 2 * PAGE, &b[2]);
	ck_assert_ptr_eq(p, pa);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	ck_assert_uint_eq(arena_stats(a).kept_hits, 2);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	ck_assert_uint_eq(arena_stats(a).in_use, 3 * PAGE);
	tmm_uvm_arena_free(a, b[1]);
	tmm_uvm_arena_free(a, b[2]);
	ck_assert_uint_eq(arena_stats(a).in_use, 0);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/* Blocks kept side by side are one: a tensor of their size takes them
 * all, in whatever order they were kept, with no discard. */
START_TEST(kept_neighbours_merge_for_a_larger_tensor)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *b[5], *big;
	struct tmm_backend be;
	char *p[4], *got;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	for (int i = 0; i < 4; i++)
		p[i] = take(a, PAGE, &b[i]);
	take(a, PAGE, &b[4]);
	for (int i = 0; i < 4; i++) {
		ck_assert_ptr_eq(p[i], p[0] - i * PAGE);
		tmm_uvm_arena_note(a, p[i], PAGE, true);
	}
	/* Kept out of order: the second, the fourth, the first, the third. */
	ck_assert(tmm_uvm_arena_keep(a, b[1]));
	ck_assert(tmm_uvm_arena_keep(a, b[3]));
	ck_assert(tmm_uvm_arena_keep(a, b[0]));
	ck_assert(tmm_uvm_arena_keep(a, b[2]));
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 4 * PAGE);
	got = take(a, 4 * PAGE, &big);
	ck_assert_ptr_eq(got, p[3]);
	ck_assert_uint_eq(big->size, 4 * PAGE);
	ck_assert(tmm_uvm_arena_on_device(a, got, 4 * PAGE));
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	ck_assert_uint_eq(arena_stats(a).kept_hits, 1);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	ck_assert_uint_eq(arena_stats(a).segments, 1);
	ck_assert_uint_eq(arena_stats(a).in_use, 5 * PAGE);
	tmm_uvm_arena_free(a, big);
	tmm_uvm_arena_free(a, b[4]);
	ck_assert_uint_eq(arena_stats(a).in_use, 0);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/* No kept block is large enough: the window over kept and free space
 * that covers the most kept pages takes the tensor, those pages still
 * made: a kept block grown up, or down where it cannot grow up. */
START_TEST(a_smaller_kept_block_grows_in_place)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *top, *b[3], *grown;
	struct tmm_backend be;
	char *small, *large, *got;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	/* From the top down: three pages freed again, `large`, a live
	 * page, `small`. */
	take(a, 3 * PAGE, &top);
	large = take(a, 2 * PAGE, &b[0]);
	take(a, PAGE, &b[1]);
	small = take(a, PAGE, &b[2]);
	tmm_uvm_arena_free(a, top);
	tmm_uvm_arena_note(a, small, PAGE, true);
	tmm_uvm_arena_note(a, large, 2 * PAGE, true);
	ck_assert(tmm_uvm_arena_keep(a, b[2]));
	ck_assert(tmm_uvm_arena_keep(a, b[0]));
	got = take(a, 5 * PAGE, &grown);
	ck_assert_ptr_eq(got, large);
	ck_assert_uint_eq(grown->size, 5 * PAGE);
	ck_assert(tmm_uvm_arena_on_device(a, got, 2 * PAGE));
	ck_assert(!tmm_uvm_arena_on_device(a, got + 2 * PAGE, PAGE));
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), PAGE);
	ck_assert_uint_eq(arena_stats(a).kept_hits, 1);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	ck_assert_uint_eq(arena_stats(a).in_use, 6 * PAGE);
	/* `small`, hemmed in by the live page above it, grows down into
	 * the free space below it. */
	tmm_uvm_arena_free(a, grown);
	got = take(a, 2 * PAGE, &b[0]);
	ck_assert_ptr_eq(got, small - PAGE);
	ck_assert(tmm_uvm_arena_on_device(a, small, PAGE));
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	ck_assert_uint_eq(arena_stats(a).kept_hits, 2);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	tmm_uvm_arena_free(a, b[0]);
	tmm_uvm_arena_free(a, b[1]);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/*
 * A window may span several kept blocks and the free space between them;
 * what lies outside it of a kept block at its edge stays kept.
 */
START_TEST(a_window_spans_kept_blocks_and_a_gap)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *b[5], *got_b;
	struct tmm_backend be;
	char *p[5], *got;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	/* From the top down: live, K1 (2 pages), gap, K2 (2 pages), live. */
	p[0] = take(a, PAGE, &b[0]);
	p[1] = take(a, 2 * PAGE, &b[1]);
	p[2] = take(a, PAGE, &b[2]);
	p[3] = take(a, 2 * PAGE, &b[3]);
	p[4] = take(a, PAGE, &b[4]);
	tmm_uvm_arena_note(a, p[1], 2 * PAGE, true);
	tmm_uvm_arena_note(a, p[3], 2 * PAGE, true);
	tmm_uvm_arena_free(a, b[2]);
	ck_assert(tmm_uvm_arena_keep(a, b[1]));
	ck_assert(tmm_uvm_arena_keep(a, b[3]));
	/* Four pages: all of K2, the gap, K1's lower page; K1's upper page
	 * stays kept. */
	got = take(a, 4 * PAGE, &got_b);
	ck_assert_ptr_eq(got, p[3]);
	ck_assert_uint_eq(got_b->size, 4 * PAGE);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), PAGE);
	ck_assert(tmm_uvm_arena_on_device(a, p[1] + PAGE, PAGE));
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	ck_assert_uint_eq(arena_stats(a).kept_hits, 1);
	/* The page left kept serves the next tensor of its size. */
	got = take(a, PAGE, &b[1]);
	ck_assert_ptr_eq(got, p[1] + PAGE);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	ck_assert_uint_eq(arena_stats(a).in_use, 7 * PAGE);
	tmm_uvm_arena_free(a, b[0]);
	tmm_uvm_arena_free(a, b[1]);
	tmm_uvm_arena_free(a, b[4]);
	tmm_uvm_arena_free(a, got_b);
	ck_assert_uint_eq(arena_stats(a).in_use, 0);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/*
 * A trim lets the longest kept go first, each with a discard, and of the
 * last only the head that passes the limit; one the backend refuses still
 * frees its pages and says so.
 */
START_TEST(a_trim_lets_the_longest_kept_go_first)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *b[6];
	struct tmm_backend be;
	char *pa, *pb, *pc, *p;
	bool failed = false;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, 3 * MIB), 0);
	pa = take(a, 2 * PAGE, &b[0]);
	take(a, PAGE, &b[1]); /* apart: no merging */
	pb = take(a, 3 * PAGE, &b[2]);
	take(a, PAGE, &b[3]);
	tmm_uvm_arena_note(a, pa, 2 * PAGE, true);
	tmm_uvm_arena_note(a, pb, 3 * PAGE, true);
	ck_assert(tmm_uvm_arena_keep(a, b[0]));
	ck_assert(tmm_uvm_arena_keep(a, b[2]));
	/* pa whole, then pb's first page. */
	ck_assert_uint_eq(tmm_uvm_arena_trim(a, 2 * PAGE, &failed), 3 * PAGE);
	ck_assert(!failed);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 2 * PAGE);
	ck_assert(!tmm_uvm_arena_on_device(a, pa, 2 * PAGE));
	ck_assert(!tmm_uvm_arena_on_device(a, pb, PAGE));
	ck_assert(tmm_uvm_arena_on_device(a, pb + PAGE, 2 * PAGE));
	ck_assert_uint_eq(arena_stats(a).kept_discards, 2);
	/* Already under the limit: nothing goes. */
	ck_assert_uint_eq(tmm_uvm_arena_trim(a, 2 * PAGE, NULL), 0);
	/* The trimmed page is the pool's again; the kept tail serves. */
	p = take(a, 2 * PAGE, &b[0]);
	ck_assert_ptr_eq(p, pb + PAGE);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	/* A refused discard: the pages are free all the same. */
	pc = take(a, PAGE, &b[4]);
	ck_assert(tmm_uvm_arena_keep(a, b[4]));
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_DISCARD "@1"), 0);
	ck_assert_uint_eq(tmm_uvm_arena_trim(a, 0, &failed), PAGE);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert(failed);
	ck_assert_ptr_nonnull(strstr(be.error, TMM_SITE_DISCARD));
	ck_assert_uint_eq(arena_stats(a).discards_failed, 1);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 3);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	p = take(a, PAGE, &b[5]);
	ck_assert_ptr_eq(p, pc);
	tmm_uvm_arena_free(a, b[0]);
	tmm_uvm_arena_free(a, b[1]);
	tmm_uvm_arena_free(a, b[3]);
	tmm_uvm_arena_free(a, b[5]);
	ck_assert_uint_eq(arena_stats(a).in_use, 0);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/* A 1 MiB budget: 2 MiB segments, 32 big pages. */
#define HEMMED_PAGES 32

/* The blocks of hemmed(), and where the kept page and the gap are. */
struct hemmed {
	struct tmm_pool_block *live, *kept, *big;
	char *pk, *pgap;
};

/*
 * One full segment, from the top down: a live page, a kept page (noted
 * on the device), a free page (the gap), and a live block of the rest.
 * Two pages fit only over the kept page and the gap.
 */
static struct hemmed hemmed(struct tmm_uvm_arena *a)
{
	struct tmm_pool_block *gap;
	struct hemmed h;

	take(a, PAGE, &h.live);
	h.pk = take(a, PAGE, &h.kept);
	h.pgap = take(a, PAGE, &gap);
	take(a, (HEMMED_PAGES - 3) * PAGE, &h.big);
	tmm_uvm_arena_note(a, h.pk, PAGE, true);
	ck_assert(tmm_uvm_arena_keep(a, h.kept));
	tmm_uvm_arena_free(a, gap);
	ck_assert_uint_eq(arena_stats(a).segments, 1);
	return h;
}

/* Kept blocks give way before a new segment is made, and go with
 * tmm_uvm_arena_release_empty. */
START_TEST(kept_blocks_never_grow_the_arena)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *two;
	struct tmm_backend be;
	struct hemmed h;
	char *p;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, MIB), 0);
	h = hemmed(a);
	/* Two pages fit only over the kept page and the free one below
	 * it: there, in this segment, with nothing discarded. */
	p = take(a, 2 * PAGE, &two);
	ck_assert_ptr_eq(p, h.pgap);
	ck_assert_uint_eq(arena_stats(a).segments, 1);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 0);
	ck_assert(tmm_uvm_arena_on_device(a, h.pk, PAGE));
	/* A segment holding only a kept block is empty. */
	tmm_uvm_arena_free(a, h.big);
	tmm_uvm_arena_free(a, h.live);
	ck_assert(tmm_uvm_arena_keep(a, two));
	ck_assert_uint_eq(tmm_uvm_arena_release_empty(a),
			  HEMMED_PAGES * PAGE);
	ck_assert_uint_eq(arena_stats(a).segments, 0);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

/*
 * Without host memory to look for a window, an allocation that finds no
 * free block lets the kept pages go, and the pool has room for it then:
 * served all the same, in the same segment.
 */
START_TEST(without_host_memory_kept_pages_give_way)
{
	struct tmm_uvm_arena *a;
	struct tmm_pool_block *two;
	struct tmm_backend be;
	struct hemmed h;
	char *p;

	open_phantom_p100(&be);
	ck_assert_int_eq(tmm_uvm_arena_create(&a, &be, MIB), 0);
	h = hemmed(a);
	ck_assert_int_eq(tmm_fault_set(TMM_SITE_HOST_ALLOC "@1"), 0);
	p = take(a, 2 * PAGE, &two);
	ck_assert_int_eq(tmm_fault_set(""), 0);
	ck_assert_ptr_eq(p, h.pgap);
	ck_assert_uint_eq(arena_stats(a).segments, 1);
	ck_assert_uint_eq(tmm_uvm_arena_kept(a), 0);
	ck_assert_uint_eq(arena_stats(a).kept_discards, 1);
	ck_assert(!tmm_uvm_arena_on_device(a, h.pk, PAGE));
	tmm_uvm_arena_free(a, two);
	tmm_uvm_arena_free(a, h.big);
	tmm_uvm_arena_free(a, h.live);
	ck_assert_uint_eq(arena_stats(a).in_use, 0);
	tmm_uvm_arena_destroy(a);
	be.ops->close(&be);
}
END_TEST

static Suite *kept_suite(void)
{
	Suite *s = suite_create("uvm_arena_kept");
	TCase *tc = tcase_create("kept");

	tcase_add_test(tc, a_kept_block_goes_to_the_next_tensor_of_its_size);
	tcase_add_test(tc, a_larger_kept_block_is_split_its_head_kept);
	tcase_add_test(tc, kept_neighbours_merge_for_a_larger_tensor);
	tcase_add_test(tc, a_smaller_kept_block_grows_in_place);
	tcase_add_test(tc, a_window_spans_kept_blocks_and_a_gap);
	tcase_add_test(tc, a_trim_lets_the_longest_kept_go_first);
	tcase_add_test(tc, kept_blocks_never_grow_the_arena);
	tcase_add_test(tc, without_host_memory_kept_pages_give_way);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(kept_suite);
}
