/*
 * pool.c — the device memory pool: best fit with coalescing, over offsets.
 *
 * The arena is one big device allocation made up front (SuperNeurons
 * §3.2.1), so that the runtime never calls cudaMalloc/cudaFree, which are
 * slow and synchronise the device, on its hot path.  This file only hands
 * out and takes back ranges of offsets into that arena; it never touches
 * the arena itself, because device memory is not readable from the host.
 *
 * Every block, free or used, has an out-of-band host record, and all
 * records are chained in one doubly-linked list in address order that
 * covers the arena exactly.  Freeing finds its neighbours in O(1) and
 * merges with the free ones, so no two free blocks are ever adjacent.
 *
 * Free blocks are indexed by size class.  Classes are exact below 1 MiB
 * (one per multiple of TMM_POOL_ALIGN) and 64 per power of two above, and
 * a two-level bitmap says which classes hold anything.  Within a class the
 * blocks are an AVL tree keyed by (size, offset), with parent links so
 * that a block leaves it without a search.  The best fit — the smallest
 * free block that fits, the lowest offset among equals — is the first key
 * not below (size, 0) in the request's class, or else the smallest key of
 * the next non-empty class: exact, and O(log n) at worst (every block in
 * one class).
 *
 * An exact class, whose blocks all have one size, also keeps an unsorted
 * list: a block arriving in a non-empty exact class waits there and is
 * sorted into the tree only when a request looks at the class, so that
 * one allocation may sort many blocks, O(log n) amortised per block.
 * Best-fit remainders pile up by the hundred in the classes of small
 * sizes, and most are merged away by a free before any request looks;
 * sorting each one in on arrival cost more than anything else here.
 *
 * Why not one tree over all free blocks: with thousands of free blocks a
 * lookup walks 13+ levels of dependent loads and unpredictable branches,
 * and an alloc+free pair does about four — 800 ns per pair where the
 * budget is 200 (bench/bench_pool.c).  A B+tree still needed ~500 ns.
 *
 * Records are carved from slabs and recycled through a free list, so in
 * steady state alloc and free do no host allocation, and free never fails.
 *
 * An allocation takes the low end of the chosen free block; the rest, if
 * any, stays free.  Offsets and sizes are multiples of TMM_POOL_ALIGN.
 */
#include "pool.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

#define CACHE_LINE 64

/*
 * Record slabs: a small first one, so that small pools stay small, then
 * 2 MiB ones that the kernel may back with a huge page each.  Records are
 * visited in random order; with 4 KiB pages most visits also missed the
 * TLB, which cost about a tenth of an alloc+free pair.
 */
#define FIRST_SLAB_RECORDS 32u
#define HUGE_SLAB_BYTES (2u << 20)

/* An AVL tree of 2^64 nodes is under 93 levels high; deeper means a cycle. */
#define MAX_TREE_DEPTH 128

/*
 * Size classes, in units of TMM_POOL_ALIGN: one per unit count below
 * EXACT_CLASSES (1 MiB), then 2^SUBCLASS_BITS per power of two.
 */
#define EXACT_CLASS_SHIFT 12
#define EXACT_CLASSES (1u << EXACT_CLASS_SHIFT)
#define SUBCLASS_BITS 6
#define NO_CLASS UINT32_MAX

/* The free states share BLOCK_FREE_BIT, so "is it free" is one test. */
#define BLOCK_FREE_BIT 2u

enum block_state {
	BLOCK_RECYCLED = 0,	/* on the spare list, describes nothing */
	BLOCK_USED = 1,		/* in the address list, handed to a caller */
	BLOCK_FREE_SORTED = BLOCK_FREE_BIT,	/* free, in its class tree */
	BLOCK_FREE_PENDING = BLOCK_FREE_BIT | 1, /* free, in its exact
						  * class's unsorted list */
};

/*
 * The host record of one block.  The public part comes first so that the
 * pointer handed to callers converts back at no cost; one record is one
 * cache line, so visiting a neighbour or a tree node costs one line.
 */
struct block_rec {
	_Alignas(CACHE_LINE) struct tmm_pool_block pub;
	struct block_rec *prev;		/* lower neighbour in the arena */
	struct block_rec *next;		/* higher neighbour; spare link */
	struct block_rec *left;		/* class tree children, or the */
	struct block_rec *right;	/* pending list's prev and next */
	struct block_rec *parent;	/* class tree parent */
	uint32_t owner;			/* pool_tag(): another pool's block */
	int16_t height;			/* of the class subtree rooted here */
	uint16_t state;			/* enum block_state */
};

_Static_assert(sizeof(struct block_rec) == CACHE_LINE,
	       "a block record should fill exactly one cache line");

struct record_slab {
	_Alignas(CACHE_LINE) struct record_slab *next;
	size_t count;
	struct block_rec records[];
};

/*
 * The free blocks of one size class: a tree, and for an exact class also
 * a list of blocks not sorted into the tree yet.  Side by side, so that
 * looking at a class costs one cache line.
 */
struct size_class {
	struct block_rec *tree;
	struct block_rec *pending;
};

struct tmm_pool {
	uint32_t tag;			/* pool_tag(this), in every record */
	uint64_t capacity;
	uint64_t limit;			/* in_use may not pass it (alloc) */
	uint64_t in_use;
	uint64_t peak;
	uint64_t free_blocks;
	uint64_t used_blocks;
	struct block_rec *lowest;	/* head of the address-ordered list */
	struct block_rec *spare_records; /* linked by next */
	struct record_slab *slabs;
	struct block_rec *fresh;	/* never used records of the newest */
	struct block_rec *fresh_end;	/* slab, touched only when needed */
	size_t records_total;		/* records ever handed out */

	/* The index of free blocks; the arrays follow this struct. */
	uint32_t class_count;		/* classes up to the capacity's */
	uint32_t word_count;		/* 64-bit words of class_bits */
	uint32_t group_count;		/* 64-bit words of word_bits */
	struct size_class *classes;	/* [class_count] */
	uint64_t *class_bits;		/* bit c: class c is not empty */
	uint64_t *word_bits;		/* bit w: class_bits[w] is not 0 */
};

static struct block_rec *block_of(struct tmm_pool_block *pub)
{
	return (struct block_rec *)((char *)pub -
				    offsetof(struct block_rec, pub));
}

/*
 * A 32-bit stamp of a pool's address for its records: a pointer would not
 * fit in the record's cache line next to the parent link.  Two live pools
 * whose addresses are under 4 GiB apart never share a stamp.
 */
static uint32_t pool_tag(const struct tmm_pool *pool)
{
	uint64_t address = (uint64_t)(uintptr_t)pool;

	return (uint32_t)(address ^ (address >> 32));
}

static uint64_t round_up_to_align(uint64_t bytes)
{
	return (bytes + (TMM_POOL_ALIGN - 1)) & ~(uint64_t)(TMM_POOL_ALIGN - 1);
}

/* Index of the highest set bit; `bits` is not 0. */
static unsigned highest_bit(uint64_t bits)
{
#if defined(__GNUC__)
	return 63u - (unsigned)__builtin_clzll(bits);
#else
	unsigned bit = 0;

	while (bits >>= 1)
		bit++;
	return bit;
#endif
}

/* Index of the lowest set bit; `bits` is not 0. */
static unsigned lowest_bit(uint64_t bits)
{
#if defined(__GNUC__)
	return (unsigned)__builtin_ctzll(bits);
#else
	unsigned bit = 0;

	while (!(bits & 1)) {
		bits >>= 1;
		bit++;
	}
	return bit;
#endif
}

/*
 * The class of a size.  Classes are ordered like the sizes in them: every
 * size in class c is smaller than every size in class c + 1.
 */
static uint32_t size_class(uint64_t size)
{
	uint64_t units = size / TMM_POOL_ALIGN;
	unsigned top;

	if (units < EXACT_CLASSES)
		return (uint32_t)units;
	top = highest_bit(units);
	return EXACT_CLASSES +
	       ((top - EXACT_CLASS_SHIFT) << SUBCLASS_BITS) +
	       (uint32_t)((units >> (top - SUBCLASS_BITS)) &
			  ((1u << SUBCLASS_BITS) - 1));
}

/* ------------------------------------------------------------------------
 * Record slabs and recycling
 * ---------------------------------------------------------------------- */

static int grow_records(struct tmm_pool *pool)
{
	bool first = !pool->slabs;
	size_t bytes = HUGE_SLAB_BYTES;
	struct record_slab *slab;

	if (first)
		bytes = sizeof(*slab) +
			FIRST_SLAB_RECORDS * sizeof(struct block_rec);

	/* aligned_alloc wants a size that is a multiple of the alignment. */
	slab = aligned_alloc(first ? CACHE_LINE : HUGE_SLAB_BYTES, bytes);
	if (!slab)
		return -ENOMEM;
#ifdef MADV_HUGEPAGE
	/* Only a hint: without transparent huge pages nothing changes. */
	if (!first)
		(void)madvise(slab, bytes, MADV_HUGEPAGE);
#endif
	slab->count = (bytes - sizeof(*slab)) / sizeof(slab->records[0]);
	slab->next = pool->slabs;
	pool->slabs = slab;
	pool->fresh = slab->records;
	pool->fresh_end = slab->records + slab->count;
	return 0;
}

/*
 * Returns a recycled record, else a fresh one, or NULL when the host is
 * out of memory.
 */
static struct block_rec *take_record(struct tmm_pool *pool)
{
	struct block_rec *rec = pool->spare_records;

	if (rec) {
		pool->spare_records = rec->next;
	} else {
		if (pool->fresh == pool->fresh_end && grow_records(pool) < 0)
			return NULL;
		rec = pool->fresh++;
		rec->owner = pool->tag;
		pool->records_total++;
	}
	rec->prev = rec->next = rec->left = rec->right = rec->parent = NULL;
	return rec;
}

static void recycle_record(struct tmm_pool *pool, struct block_rec *rec)
{
	rec->state = BLOCK_RECYCLED;
	rec->prev = rec->left = rec->right = rec->parent = NULL;
	rec->next = pool->spare_records;
	pool->spare_records = rec;
}

/* ------------------------------------------------------------------------
 * Class trees: AVL trees of free records ordered by (size, offset).  Keys
 * are unique because offsets are.  Nodes are the records themselves
 * (callers hold pointers to them), so removal splices nodes rather than
 * copying keys between them.
 * ---------------------------------------------------------------------- */

/*
 * (size, offset) order, as arithmetic rather than branches: which way a
 * search goes is unpredictable, and a branch there mispredicts half the
 * time.  A size is at most the capacity, so size + 1 cannot wrap.
 */
static bool key_less(const struct block_rec *a, const struct block_rec *b)
{
	return a->pub.size <
	       b->pub.size + (uint64_t)(a->pub.offset < b->pub.offset);
}

static int height_of(const struct block_rec *node)
{
	return node ? node->height : 0;
}

static void update_height(struct block_rec *node)
{
	int hl = height_of(node->left);
	int hr = height_of(node->right);

	node->height = (int16_t)(1 + (hl > hr ? hl : hr));
}

/* Points whatever pointed at `old` (its parent, or the root) at `new`. */
static void replace_child(struct block_rec **root, struct block_rec *parent,
			  struct block_rec *old, struct block_rec *new)
{
	if (!parent)
		*root = new;
	else if (parent->left == old)
		parent->left = new;
	else
		parent->right = new;
}

/* Both rotations return the subtree's new top; the caller relinks it. */
static struct block_rec *rotate_right(struct block_rec *top)
{
	struct block_rec *pivot = top->left;

	top->left = pivot->right;
	if (top->left)
		top->left->parent = top;
	pivot->right = top;
	pivot->parent = top->parent;
	top->parent = pivot;
	update_height(top);
	update_height(pivot);
	return pivot;
}

static struct block_rec *rotate_left(struct block_rec *top)
{
	struct block_rec *pivot = top->right;

	top->right = pivot->left;
	if (top->right)
		top->right->parent = top;
	pivot->left = top;
	pivot->parent = top->parent;
	top->parent = pivot;
	update_height(top);
	update_height(pivot);
	return pivot;
}

/*
 * Restores the AVL balance at `node`, whose children's heights differ by
 * two; returns the subtree's new top.
 */
static struct block_rec *rebalance(struct block_rec *node)
{
	if (height_of(node->left) > height_of(node->right)) {
		if (height_of(node->left->left) < height_of(node->left->right))
			node->left = rotate_left(node->left);
		return rotate_right(node);
	}
	if (height_of(node->right->right) < height_of(node->right->left))
		node->right = rotate_right(node->right);
	return rotate_left(node);
}

/*
 * Walks up from `node`, whose subtree changed, restoring the balance.  It
 * stops as soon as a subtree keeps its old height: nothing above it can
 * have changed, so most updates touch only a level or two.
 */
static void tree_retrace(struct block_rec **root, struct block_rec *node)
{
	while (node) {
		struct block_rec *parent = node->parent;
		int old_height = node->height;
		int hl = height_of(node->left);
		int hr = height_of(node->right);
		struct block_rec *top;

		/* Still balanced, the usual case: only the height changes. */
		if (hl - hr <= 1 && hr - hl <= 1) {
			int height = 1 + (hl > hr ? hl : hr);

			if (height == old_height)
				break;
			node->height = (int16_t)height;
			node = parent;
			continue;
		}
		top = rebalance(node);
		replace_child(root, parent, node, top);
		if (top->height == old_height)
			break;
		node = parent;
	}
}

static void tree_insert(struct block_rec **root, struct block_rec *node)
{
	struct block_rec **link = root, *parent = NULL;

	while (*link) {
		parent = *link;
		link = key_less(node, parent) ? &parent->left : &parent->right;
	}
	node->left = node->right = NULL;
	node->parent = parent;
	node->height = 1;
	*link = node;
	tree_retrace(root, parent);
}

static struct block_rec *tree_min(struct block_rec *node)
{
	while (node->left)
		node = node->left;
	return node;
}

/*
 * Removes `node` without searching for it: the parent links lead from it
 * to everything that changes.
 */
static void tree_remove(struct block_rec **root, struct block_rec *node)
{
	struct block_rec *parent = node->parent, *changed;

	if (!node->left || !node->right) {
		struct block_rec *child = node->left ? node->left : node->right;

		if (child)
			child->parent = parent;
		replace_child(root, parent, node, child);
		changed = parent;
	} else {
		/* The in-order successor takes the removed node's place. */
		struct block_rec *successor = tree_min(node->right);

		if (successor->parent == node) {
			changed = successor;
		} else {
			changed = successor->parent;
			changed->left = successor->right;
			if (successor->right)
				successor->right->parent = changed;
			successor->right = node->right;
			node->right->parent = successor;
		}
		successor->left = node->left;
		node->left->parent = successor;
		successor->parent = parent;
		successor->height = node->height;
		replace_child(root, parent, node, successor);
	}
	node->left = node->right = node->parent = NULL;
	tree_retrace(root, changed);
}

/* The first node of at least `size` bytes: smallest, then lowest offset. */
static struct block_rec *tree_first_fit(struct block_rec *node,
					uint64_t size)
{
	struct block_rec *best = NULL;

	while (node) {
		bool fits = node->pub.size >= size;

		best = fits ? node : best;
		node = fits ? node->left : node->right;
	}
	return best;
}

static const struct block_rec *tree_max(const struct block_rec *node)
{
	while (node->right)
		node = node->right;
	return node;
}

/* ------------------------------------------------------------------------
 * The class index
 * ---------------------------------------------------------------------- */

static void mark_class_used(struct tmm_pool *pool, uint32_t cls)
{
	uint32_t word = cls / 64;

	pool->class_bits[word] |= 1ull << (cls % 64);
	pool->word_bits[word / 64] |= 1ull << (word % 64);
}

static void mark_class_empty(struct tmm_pool *pool, uint32_t cls)
{
	uint32_t word = cls / 64;

	pool->class_bits[word] &= ~(1ull << (cls % 64));
	if (!pool->class_bits[word])
		pool->word_bits[word / 64] &= ~(1ull << (word % 64));
}

/* The first non-empty class at or above `cls`, or NO_CLASS. */
static uint32_t first_class_from(const struct tmm_pool *pool, uint32_t cls)
{
	uint32_t word = cls / 64;
	uint64_t bits;

	if (cls >= pool->class_count)
		return NO_CLASS;
	bits = pool->class_bits[word] & (~0ull << (cls % 64));
	if (bits)
		return word * 64 + lowest_bit(bits);
	/* Then whole words, found through the summary bitmap. */
	for (word++; word < pool->word_count; word = (word / 64 + 1) * 64) {
		bits = pool->word_bits[word / 64] & (~0ull << (word % 64));
		if (bits) {
			word = (word / 64) * 64 + lowest_bit(bits);
			return word * 64 + lowest_bit(pool->class_bits[word]);
		}
	}
	return NO_CLASS;
}

/* The highest non-empty class, or NO_CLASS. */
static uint32_t last_class(const struct tmm_pool *pool)
{
	uint32_t group = pool->group_count, word;

	while (group-- > 0) {
		if (pool->word_bits[group]) {
			word = group * 64 + highest_bit(pool->word_bits[group]);
			return word * 64 + highest_bit(pool->class_bits[word]);
		}
	}
	return NO_CLASS;
}

static bool is_exact_class(uint32_t cls)
{
	return cls < EXACT_CLASSES;
}

static bool is_free(const struct block_rec *rec)
{
	return rec->state & BLOCK_FREE_BIT;
}

/*
 * Moves an exact class's pending blocks into its tree.  Each block is
 * sorted in once per stay in the class, so the cost is O(log k) per block
 * amortised, paid only by classes that an allocation actually looks into.
 */
static void sort_pending(struct size_class *class)
{
	struct block_rec *rec = class->pending, *next;

	class->pending = NULL;
	for (; rec; rec = next) {
		next = rec->right;
		rec->state = BLOCK_FREE_SORTED;
		tree_insert(&class->tree, rec);
	}
}

static bool class_in_use(const struct tmm_pool *pool, uint32_t cls)
{
	return pool->class_bits[cls / 64] >> (cls % 64) & 1;
}

/* The smallest block of a non-empty class, lowest offset first. */
static struct block_rec *class_min(struct size_class *class)
{
	if (class->pending)
		sort_pending(class);
	return tree_min(class->tree);
}

/* The smallest free block of at least `size` bytes, lowest offset first. */
static struct block_rec *find_best_fit(struct tmm_pool *pool, uint64_t size)
{
	uint32_t cls = size_class(size);

	/*
	 * The bitmap is asked first: most requests find their own class
	 * empty, and the bitmap is hot where the class array is not.
	 */
	if (class_in_use(pool, cls)) {
		struct size_class *class = &pool->classes[cls];
		struct block_rec *fit;

		/* In an exact class every size is `size`. */
		if (is_exact_class(cls))
			return class_min(class);
		fit = tree_first_fit(class->tree, size);
		if (fit)
			return fit;
	}
	/* Every size in a higher class fits; take that class's smallest. */
	cls = first_class_from(pool, cls + 1);
	return cls == NO_CLASS ? NULL : class_min(&pool->classes[cls]);
}

static const struct block_rec *find_largest(const struct tmm_pool *pool)
{
	uint32_t cls = last_class(pool);

	if (cls == NO_CLASS)
		return NULL;
	/* All blocks of an exact class have the same size: any will do. */
	if (pool->classes[cls].pending)
		return pool->classes[cls].pending;
	return tree_max(pool->classes[cls].tree);
}

/*
 * Adds a free block to the index: as the whole tree of an empty class, on
 * the unsorted list of a non-empty exact class, or into a larger class's
 * tree.
 */
static void mark_free(struct tmm_pool *pool, struct block_rec *rec)
{
	uint32_t cls = size_class(rec->pub.size);
	struct size_class *class = &pool->classes[cls];

	pool->free_blocks++;
	if (!class_in_use(pool, cls)) {
		/*
		 * The usual case, told by the hot bitmap without reading the
		 * class, which would likely be a cache miss.
		 */
		mark_class_used(pool, cls);
		rec->state = BLOCK_FREE_SORTED;
		rec->left = rec->right = rec->parent = NULL;
		rec->height = 1;
		class->tree = rec;
		return;
	}
	if (is_exact_class(cls)) {
		rec->state = BLOCK_FREE_PENDING;
		rec->left = rec->parent = NULL;
		rec->right = class->pending;
		if (rec->right)
			rec->right->left = rec;
		class->pending = rec;
	} else {
		rec->state = BLOCK_FREE_SORTED;
		tree_insert(&class->tree, rec);
	}
}

/* Takes a free block out of the index; its size must not have changed. */
static void unmark_free(struct tmm_pool *pool, struct block_rec *rec)
{
	uint32_t cls = size_class(rec->pub.size);
	struct size_class *class = &pool->classes[cls];

	if (rec->state == BLOCK_FREE_PENDING) {
		if (rec->left)
			rec->left->right = rec->right;
		else
			class->pending = rec->right;
		if (rec->right)
			rec->right->left = rec->left;
		rec->left = rec->right = NULL;
	} else {
		tree_remove(&class->tree, rec);
	}
	if (!class->tree && !class->pending)
		mark_class_empty(pool, cls);
	pool->free_blocks--;
}

/* Takes `rec` (not the lowest block) out of the address list. */
static void unlink_block(struct block_rec *rec)
{
	rec->prev->next = rec->next;
	if (rec->next)
		rec->next->prev = rec->prev;
}

/* ------------------------------------------------------------------------
 * The interface
 * ---------------------------------------------------------------------- */

/*
 * A capacity that is not a multiple of TMM_POOL_ALIGN is rounded down: the
 * tail could never hold an aligned block.  Returns 0, -EINVAL when nothing
 * is left (capacity below TMM_POOL_ALIGN) or `out` is NULL, -ENOMEM.
 */
int tmm_pool_create(struct tmm_pool **out, uint64_t capacity)
{
	struct tmm_pool *pool;
	struct block_rec *whole;
	uint64_t usable = capacity & ~(uint64_t)(TMM_POOL_ALIGN - 1);
	uint32_t classes, words, groups;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (usable == 0)
		return -EINVAL;

	/* The index arrays live right after the struct: one allocation. */
	classes = size_class(usable) + 1;
	words = (classes + 63) / 64;
	groups = (words + 63) / 64;
	pool = calloc(1, sizeof(*pool) + classes * sizeof(struct size_class) +
				 (words + groups) * sizeof(uint64_t));
	if (!pool)
		return -ENOMEM;
	pool->class_count = classes;
	pool->word_count = words;
	pool->group_count = groups;
	pool->classes = (struct size_class *)(pool + 1);
	pool->class_bits = (uint64_t *)(pool->classes + classes);
	pool->word_bits = pool->class_bits + words;
	pool->tag = pool_tag(pool);
	pool->capacity = usable;
	pool->limit = usable;

	whole = take_record(pool);
	if (!whole)
		goto err;
	whole->pub.offset = 0;
	whole->pub.size = usable;
	pool->lowest = whole;
	mark_free(pool, whole);

	*out = pool;
	return 0;
err:
	free(pool);
	return -ENOMEM;
}

void tmm_pool_destroy(struct tmm_pool *pool)
{
	struct record_slab *slab, *next;

	if (!pool)
		return;
	for (slab = pool->slabs; slab; slab = next) {
		next = slab->next;
		free(slab);
	}
	free(pool);
}

/*
 * Returns 0 and sets *out, -EINVAL for 0 bytes or NULL arguments, -ENOMEM
 * when no free block is large enough or the host cannot hold one more
 * record.  On failure the pool is unchanged.
 */
int tmm_pool_alloc(struct tmm_pool *pool, uint64_t bytes,
		   struct tmm_pool_block **out)
{
	struct block_rec *chosen, *rest;
	uint64_t size;

	if (!pool || !out || bytes == 0)
		return -EINVAL;
	/* Checked before rounding, which could otherwise wrap around. */
	if (bytes > pool->capacity)
		return -ENOMEM;
	size = round_up_to_align(bytes);
	/* The limit is the caller's share of a device used by several
	 * processes (gpu_share.c): past it is like having no hole. */
	if (size > pool->limit - (pool->in_use < pool->limit ? pool->in_use
							     : pool->limit))
		return -ENOMEM;

	chosen = find_best_fit(pool, size);
	if (!chosen)
		return -ENOMEM;

	if (chosen->pub.size > size && size >= TMM_POOL_LARGE) {
		/* A large block comes from the top of the hole, a small one
		 * from the bottom: sizes that mix in one region leave small
		 * gaps between large blocks, and a large allocation then
		 * finds no hole although the bytes are free. */
		rest = take_record(pool);
		if (!rest)
			return -ENOMEM;
		unmark_free(pool, chosen);
		rest->pub.offset = chosen->pub.offset;
		rest->pub.size = chosen->pub.size - size;
		chosen->pub.offset += rest->pub.size;
		chosen->pub.size = size;
		rest->next = chosen;
		rest->prev = chosen->prev;
		if (chosen->prev)
			chosen->prev->next = rest;
		else
			pool->lowest = rest;
		chosen->prev = rest;
		mark_free(pool, rest);
	} else if (chosen->pub.size > size) {
		/* Get the record first so that failure changes nothing. */
		rest = take_record(pool);
		if (!rest)
			return -ENOMEM;
		unmark_free(pool, chosen);
		rest->pub.offset = chosen->pub.offset + size;
		rest->pub.size = chosen->pub.size - size;
		chosen->pub.size = size;
		rest->prev = chosen;
		rest->next = chosen->next;
		if (chosen->next)
			chosen->next->prev = rest;
		chosen->next = rest;
		mark_free(pool, rest);
	} else {
		unmark_free(pool, chosen);
	}

	chosen->state = BLOCK_USED;
	pool->used_blocks++;
	pool->in_use += size;
	if (pool->in_use > pool->peak)
		pool->peak = pool->in_use;
	*out = &chosen->pub;
	return 0;
}

/*
 * NULL arguments are ignored, and so are blocks that are not currently
 * allocated from this pool (a double free, or another pool's block), as
 * far as the record can tell: a record that was recycled and handed out
 * again cannot be told apart from its new self.
 */
void tmm_pool_free(struct tmm_pool *pool, struct tmm_pool_block *block)
{
	struct block_rec *rec, *lower, *higher;
	bool lower_free, higher_free;

	if (!pool || !block)
		return;
	rec = block_of(block);
	if (rec->owner != pool->tag || rec->state != BLOCK_USED)
		return;

	pool->used_blocks--;
	pool->in_use -= rec->pub.size;

	/*
	 * Both neighbours are read before acting on either, so that the two
	 * cache misses overlap instead of following each other.
	 */
	lower = rec->prev;
	higher = rec->next;
	lower_free = lower && is_free(lower);
	higher_free = higher && is_free(higher);
	if (higher_free) {
		unmark_free(pool, higher);
		rec->pub.size += higher->pub.size;
		unlink_block(higher);
		recycle_record(pool, higher);
	}
	if (lower_free) {
		/* The lower block absorbs this one; its key changes. */
		unmark_free(pool, lower);
		lower->pub.size += rec->pub.size;
		unlink_block(rec);
		recycle_record(pool, rec);
		rec = lower;
	}
	mark_free(pool, rec);
}

int tmm_pool_alloc_at(struct tmm_pool *pool, uint64_t offset,
		      uint64_t bytes, struct tmm_pool_block **out)
{
	struct block_rec *rec, *lower = NULL, *higher = NULL;
	uint64_t size, end, rec_end;

	if (!pool || !out || bytes == 0 || offset % TMM_POOL_ALIGN)
		return -EINVAL;
	if (bytes > pool->capacity || offset > pool->capacity)
		return -ENOMEM;
	size = round_up_to_align(bytes);
	end = offset + size;
	/* A walk: this is for compaction, which is rare. */
	for (rec = pool->lowest;
	     rec && rec->pub.offset + rec->pub.size <= offset;
	     rec = rec->next)
		;
	if (!rec || !is_free(rec) || rec->pub.offset > offset ||
	    end > rec->pub.offset + rec->pub.size)
		return -ENOMEM;
	rec_end = rec->pub.offset + rec->pub.size;
	/* Records first, so that failure changes nothing. */
	if (offset > rec->pub.offset && !(lower = take_record(pool)))
		return -ENOMEM;
	if (end < rec_end && !(higher = take_record(pool))) {
		if (lower)
			recycle_record(pool, lower);
		return -ENOMEM;
	}
	unmark_free(pool, rec);
	if (lower) {
		lower->pub.offset = rec->pub.offset;
		lower->pub.size = offset - rec->pub.offset;
		lower->prev = rec->prev;
		lower->next = rec;
		if (rec->prev)
			rec->prev->next = lower;
		else
			pool->lowest = lower;
		rec->prev = lower;
		mark_free(pool, lower);
	}
	if (higher) {
		higher->pub.offset = end;
		higher->pub.size = rec_end - end;
		higher->prev = rec;
		higher->next = rec->next;
		if (rec->next)
			rec->next->prev = higher;
		rec->next = higher;
		mark_free(pool, higher);
	}
	rec->pub.offset = offset;
	rec->pub.size = size;
	rec->state = BLOCK_USED;
	pool->used_blocks++;
	pool->in_use += size;
	if (pool->in_use > pool->peak)
		pool->peak = pool->in_use;
	*out = &rec->pub;
	return 0;
}

/*
 * Frees the front of a used block: what a shrinking input gives back row
 * by row while a split op runs (TSPLIT Eq. 5), so that the output placed
 * below it can grow into those rows with tmm_pool_extend.
 */
int tmm_pool_trim(struct tmm_pool *pool, struct tmm_pool_block *block,
		  uint64_t bytes)
{
	struct block_rec *rec, *lower, *freed = NULL;

	if (!pool || !block || bytes == 0 || bytes % TMM_POOL_ALIGN)
		return -EINVAL;
	rec = block_of(block);
	if (rec->owner != pool->tag || rec->state != BLOCK_USED ||
	    bytes >= rec->pub.size)
		return -EINVAL;
	lower = rec->prev;
	if (lower && is_free(lower)) {
		/* The free neighbour absorbs the front; its key changes. */
		unmark_free(pool, lower);
		lower->pub.size += bytes;
		mark_free(pool, lower);
	} else {
		freed = take_record(pool);
		if (!freed)
			return -ENOMEM;
		freed->pub.offset = rec->pub.offset;
		freed->pub.size = bytes;
		freed->prev = lower;
		freed->next = rec;
		if (lower)
			lower->next = freed;
		else
			pool->lowest = freed;
		rec->prev = freed;
		mark_free(pool, freed);
	}
	rec->pub.offset += bytes;
	rec->pub.size -= bytes;
	pool->in_use -= bytes;
	return 0;
}

/* Grows a used block into the free block right above it. */
int tmm_pool_extend(struct tmm_pool *pool, struct tmm_pool_block *block,
		    uint64_t bytes)
{
	struct block_rec *rec, *higher;
	uint64_t size;

	if (!pool || !block || bytes == 0)
		return -EINVAL;
	rec = block_of(block);
	if (rec->owner != pool->tag || rec->state != BLOCK_USED)
		return -EINVAL;
	if (bytes > pool->capacity)
		return -ENOMEM;
	size = round_up_to_align(bytes);
	/* The limit binds growth as it binds allocation (gpu_share.c). */
	if (pool->in_use + size > pool->limit)
		return -ENOMEM;
	higher = rec->next;
	if (!higher || !is_free(higher) || higher->pub.size < size)
		return -ENOMEM;
	unmark_free(pool, higher);
	if (higher->pub.size == size) {
		unlink_block(higher);
		recycle_record(pool, higher);
	} else {
		higher->pub.offset += size;
		higher->pub.size -= size;
		mark_free(pool, higher);
	}
	rec->pub.size += size;
	pool->in_use += size;
	if (pool->in_use > pool->peak)
		pool->peak = pool->in_use;
	return 0;
}

void tmm_pool_walk(const struct tmm_pool *pool,
		   void (*fn)(void *arg, const struct tmm_pool_block *block,
			      int used),
		   void *arg)
{
	for (const struct block_rec *rec = pool ? pool->lowest : NULL; rec;
	     rec = rec->next)
		fn(arg, &rec->pub, !is_free(rec));
}

/*
 * Returns 1 when a free block can hold `bytes` now, else 0 (also for 0
 * bytes or a NULL pool).  The host memory a split may need for one more
 * record is not counted: that alloc can still fail if the host runs out.
 */
int tmm_pool_fits(const struct tmm_pool *pool, uint64_t bytes)
{
	const struct block_rec *largest;

	if (!pool || bytes == 0 || bytes > pool->capacity)
		return 0;
	largest = find_largest(pool);
	return largest && largest->pub.size >= round_up_to_align(bytes);
}

void tmm_pool_set_limit(struct tmm_pool *pool, uint64_t limit)
{
	if (!pool)
		return;
	limit &= ~(uint64_t)(TMM_POOL_ALIGN - 1);
	pool->limit = limit < pool->capacity ? limit : pool->capacity;
}

/* Fills *st; all zero for a NULL pool.  O(log n) for largest_free. */
uint64_t tmm_pool_in_use(const struct tmm_pool *pool)
{
	return pool ? pool->in_use : 0;
}

void tmm_pool_get_stats(const struct tmm_pool *pool,
			struct tmm_pool_stats *st)
{
	const struct block_rec *largest;
	uint64_t free_bytes;

	if (!st)
		return;
	*st = (struct tmm_pool_stats){ 0 };
	if (!pool)
		return;
	largest = find_largest(pool);
	st->capacity = pool->capacity;
	st->limit = pool->limit;
	st->in_use = pool->in_use;
	st->peak = pool->peak;
	st->largest_free = largest ? largest->pub.size : 0;
	st->free_blocks = pool->free_blocks;
	st->used_blocks = pool->used_blocks;
	free_bytes = pool->capacity - pool->in_use;
	st->fragmentation = free_bytes ?
		1.0 - (double)st->largest_free / (double)free_bytes : 0.0;
}

/* ------------------------------------------------------------------------
 * Invariant checking (for tests): trusts no count and no pointer chain.
 * ---------------------------------------------------------------------- */

static const struct block_rec *tree_find(const struct block_rec *node,
					 const struct block_rec *key)
{
	int depth = 0;

	while (node && depth++ < MAX_TREE_DEPTH) {
		if (node == key)
			return node;
		node = key_less(key, node) ? node->left : node->right;
	}
	return NULL;
}

/* Is a free block where its state says: in its class tree or list? */
static bool is_indexed(const struct tmm_pool *pool,
		       const struct block_rec *rec)
{
	uint32_t cls = size_class(rec->pub.size);

	if (rec->state == BLOCK_FREE_SORTED)
		return tree_find(pool->classes[cls].tree, rec) == rec;
	/* A well-formed list (checked) that links to rec holds it. */
	return is_exact_class(cls) &&
	       (rec->left ? rec->left->right == rec :
			    pool->classes[cls].pending == rec);
}

struct tree_walk {
	const struct tmm_pool *pool;
	uint32_t cls;
	const struct block_rec *last;	/* previous node in key order */
	uint64_t nodes;
};

/*
 * Checks the subtree at `node`, whose parent must be `parent`; returns its
 * height, or -1 when an invariant is broken.
 */
static int check_subtree(struct tree_walk *walk, const struct block_rec *node,
			 const struct block_rec *parent, int depth)
{
	int hl, hr;

	if (!node)
		return 0;
	if (depth > MAX_TREE_DEPTH || node->parent != parent ||
	    node->owner != walk->pool->tag ||
	    node->state != BLOCK_FREE_SORTED ||
	    size_class(node->pub.size) != walk->cls)
		return -1;
	hl = check_subtree(walk, node->left, node, depth + 1);
	if (hl < 0)
		return -1;
	if (walk->last && !key_less(walk->last, node))
		return -1;
	walk->last = node;
	walk->nodes++;
	hr = check_subtree(walk, node->right, node, depth + 1);
	if (hr < 0 || hl - hr > 1 || hr - hl > 1)
		return -1;
	if (node->height != 1 + (hl > hr ? hl : hr))
		return -1;
	return node->height;
}

/* Counts a pending list of `cls`; returns -1 when it is malformed. */
static int check_pending(const struct tmm_pool *pool, uint32_t cls,
			 uint64_t *nodes)
{
	const struct block_rec *rec, *prev = NULL;

	for (rec = pool->classes[cls].pending; rec; rec = rec->right) {
		if (++*nodes > pool->records_total || rec->left != prev ||
		    rec->parent || rec->owner != pool->tag ||
		    rec->state != BLOCK_FREE_PENDING ||
		    size_class(rec->pub.size) != cls)
			return -1;
		prev = rec;
	}
	return 0;
}

/*
 * Every class tree is a valid AVL tree of its own free blocks, every
 * pending list a well-formed list of them, and the bitmaps say which
 * classes are not empty.
 */
static int check_index(const struct tmm_pool *pool, uint64_t *nodes)
{
	uint32_t cls, word;

	*nodes = 0;
	for (cls = 0; cls < pool->class_count; cls++) {
		const struct size_class *class = &pool->classes[cls];
		struct tree_walk walk = { .pool = pool, .cls = cls };

		if (!class->tree && !class->pending) {
			if (class_in_use(pool, cls))
				return -1;
			continue;
		}
		/* Only exact classes may hold blocks unsorted. */
		if (!class_in_use(pool, cls) ||
		    (class->pending && !is_exact_class(cls)) ||
		    check_pending(pool, cls, nodes) < 0 ||
		    check_subtree(&walk, class->tree, NULL, 0) < 0)
			return -1;
		*nodes += walk.nodes;
	}
	/* No stray bits past the last class; summary bits match words. */
	if (pool->class_count % 64 &&
	    pool->class_bits[pool->word_count - 1] >> (pool->class_count % 64))
		return -1;
	for (word = 0; word < pool->group_count * 64; word++) {
		bool summary = pool->word_bits[word / 64] >> (word % 64) & 1;
		bool any = word < pool->word_count && pool->class_bits[word];

		if (summary != any)
			return -1;
	}
	return 0;
}

/* Returns 0, -EINVAL for a NULL pool, -EFAULT when an invariant is broken. */
int tmm_pool_check(const struct tmm_pool *pool)
{
	const struct block_rec *rec, *prev = NULL;
	const struct record_slab *slab;
	uint64_t expect_offset = 0, used_bytes = 0, indexed;
	uint64_t free_count = 0, used_count = 0, largest = 0;
	size_t steps = 0, slab_records = 0, spare = 0;

	if (!pool)
		return -EINVAL;
	if (pool->capacity == 0 || pool->capacity % TMM_POOL_ALIGN ||
	    pool->class_count != size_class(pool->capacity) + 1)
		return -EFAULT;

	/* Every slab record is handed out already, or still fresh. */
	for (slab = pool->slabs; slab; slab = slab->next) {
		slab_records += slab->count;
		if (slab_records > SIZE_MAX / 2)
			return -EFAULT;
	}
	if (!pool->slabs || pool->fresh < pool->slabs->records ||
	    pool->fresh > pool->fresh_end ||
	    pool->fresh_end != pool->slabs->records + pool->slabs->count ||
	    slab_records != pool->records_total +
				    (size_t)(pool->fresh_end - pool->fresh))
		return -EFAULT;

	if (check_index(pool, &indexed) < 0)
		return -EFAULT;

	/* The address list: contiguous, aligned, covering the arena. */
	for (rec = pool->lowest; rec; prev = rec, rec = rec->next) {
		if (++steps > pool->records_total)
			return -EFAULT;
		if (rec->owner != pool->tag || rec->prev != prev ||
		    rec->pub.offset != expect_offset || rec->pub.size == 0 ||
		    rec->pub.size % TMM_POOL_ALIGN ||
		    rec->pub.size > pool->capacity - expect_offset)
			return -EFAULT;
		if (is_free(rec)) {
			if (prev && is_free(prev))
				return -EFAULT;
			if (!is_indexed(pool, rec))
				return -EFAULT;
			free_count++;
			if (rec->pub.size > largest)
				largest = rec->pub.size;
		} else if (rec->state == BLOCK_USED) {
			used_count++;
			used_bytes += rec->pub.size;
		} else {
			return -EFAULT;
		}
		expect_offset += rec->pub.size;
	}
	if (expect_offset != pool->capacity)
		return -EFAULT;

	/*
	 * Every list free block is in its class's tree or list, and those
	 * hold as many distinct free records as the address list has: the
	 * two sets are equal.
	 */
	if (indexed != free_count || free_count != pool->free_blocks ||
	    used_count != pool->used_blocks || used_bytes != pool->in_use ||
	    pool->peak < pool->in_use || pool->peak > pool->capacity)
		return -EFAULT;
	rec = find_largest(pool);
	if ((rec ? rec->pub.size : 0) != largest)
		return -EFAULT;

	/* Every record is either in the arena list or spare. */
	for (rec = pool->spare_records; rec; rec = rec->next) {
		if (++spare > pool->records_total ||
		    rec->state != BLOCK_RECYCLED || rec->owner != pool->tag)
			return -EFAULT;
	}
	if (steps + spare != pool->records_total)
		return -EFAULT;
	return 0;
}
