/* SPDX-License-Identifier: MIT */
/*
 * pool_index.c — the device pool's index of free blocks: a size class
 * per size, an AVL tree per class, and bitmaps of the classes in use.
 *
 * struct tmm_pool (pool_index.h) spans this file, pool.c, which hands
 * out and takes back blocks and keeps the records and the address list,
 * and pool_check.c, which checks the whole for the tests.  Here are only
 * the free blocks: pool.c adds each one that comes free and takes it out
 * again before it changes it.
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
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_block.h"
#include "pool_index.h"

/*
 * Size classes, in units of TMM_POOL_ALIGN: one per unit count below
 * EXACT_CLASSES (1 MiB), then 2^SUBCLASS_BITS per power of two.
 */
#define EXACT_CLASS_SHIFT 12
#define EXACT_CLASSES (1u << EXACT_CLASS_SHIFT)
#define SUBCLASS_BITS 6
#define NO_CLASS UINT32_MAX

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
uint32_t tmm_pool_size_class(uint64_t size)
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
bool tmm_pool_key_less(const struct tmm_block_rec *a,
		       const struct tmm_block_rec *b)
{
	return a->pub.size <
	       b->pub.size + (uint64_t)(a->pub.offset < b->pub.offset);
}

static int height_of(const struct tmm_block_rec *node)
{
	return node ? node->height : 0;
}

static void update_height(struct tmm_block_rec *node)
{
	int hl = height_of(node->left);
	int hr = height_of(node->right);

	node->height = (int16_t)(1 + (hl > hr ? hl : hr));
}

/* Points whatever pointed at `old` (its parent, or the root) at `new`. */
static void replace_child(struct tmm_block_rec **root,
			  struct tmm_block_rec *parent,
			  struct tmm_block_rec *old, struct tmm_block_rec *new)
{
	if (!parent)
		*root = new;
	else if (parent->left == old)
		parent->left = new;
	else
		parent->right = new;
}

/* Both rotations return the subtree's new top; the caller relinks it. */
static struct tmm_block_rec *rotate_right(struct tmm_block_rec *top)
{
	struct tmm_block_rec *pivot = top->left;

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

static struct tmm_block_rec *rotate_left(struct tmm_block_rec *top)
{
	struct tmm_block_rec *pivot = top->right;

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
static struct tmm_block_rec *rebalance(struct tmm_block_rec *node)
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
static void tree_retrace(struct tmm_block_rec **root,
			 struct tmm_block_rec *node)
{
	while (node) {
		struct tmm_block_rec *parent = node->parent;
		int old_height = node->height;
		int hl = height_of(node->left);
		int hr = height_of(node->right);
		struct tmm_block_rec *top;

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

static void tree_insert(struct tmm_block_rec **root, struct tmm_block_rec *node)
{
	struct tmm_block_rec **link = root, *parent = NULL;

	while (*link) {
		parent = *link;
		link = tmm_pool_key_less(node, parent) ? &parent->left :
							 &parent->right;
	}
	node->left = node->right = NULL;
	node->parent = parent;
	node->height = 1;
	*link = node;
	tree_retrace(root, parent);
}

static struct tmm_block_rec *tree_min(struct tmm_block_rec *node)
{
	while (node->left)
		node = node->left;
	return node;
}

/*
 * Removes `node` without searching for it: the parent links lead from it
 * to everything that changes.
 */
static void tree_remove(struct tmm_block_rec **root, struct tmm_block_rec *node)
{
	struct tmm_block_rec *parent = node->parent, *changed;

	if (!node->left || !node->right) {
		struct tmm_block_rec *child = node->left ? node->left :
							   node->right;

		if (child)
			child->parent = parent;
		replace_child(root, parent, node, child);
		changed = parent;
	} else {
		/* The in-order successor takes the removed node's place. */
		struct tmm_block_rec *successor = tree_min(node->right);

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
static struct tmm_block_rec *tree_first_fit(struct tmm_block_rec *node,
					    uint64_t size)
{
	struct tmm_block_rec *best = NULL;

	while (node) {
		bool fits = node->pub.size >= size;

		best = fits ? node : best;
		node = fits ? node->left : node->right;
	}
	return best;
}

static const struct tmm_block_rec *tree_max(const struct tmm_block_rec *node)
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

bool tmm_pool_is_exact_class(uint32_t cls)
{
	return cls < EXACT_CLASSES;
}

/*
 * Moves an exact class's pending blocks into its tree.  Each block is
 * sorted in once per stay in the class, so the cost is O(log k) per block
 * amortised, paid only by classes that an allocation actually looks into.
 */
static void sort_pending(struct tmm_size_class *class)
{
	struct tmm_block_rec *rec = class->pending, *next;

	class->pending = NULL;
	for (; rec; rec = next) {
		next = rec->right;
		rec->state = TMM_BLOCK_FREE_SORTED;
		tree_insert(&class->tree, rec);
	}
}

bool tmm_pool_class_in_use(const struct tmm_pool *pool, uint32_t cls)
{
	return pool->class_bits[cls / 64] >> (cls % 64) & 1;
}

/* The smallest block of a non-empty class, lowest offset first. */
static struct tmm_block_rec *class_min(struct tmm_size_class *class)
{
	if (class->pending)
		sort_pending(class);
	return tree_min(class->tree);
}

/* The smallest free block of at least `size` bytes, lowest offset first. */
struct tmm_block_rec *tmm_pool_find_best_fit(struct tmm_pool *pool,
					     uint64_t size)
{
	uint32_t cls = tmm_pool_size_class(size);

	/*
	 * The bitmap is asked first: most requests find their own class
	 * empty, and the bitmap is hot where the class array is not.
	 */
	if (tmm_pool_class_in_use(pool, cls)) {
		struct tmm_size_class *class = &pool->classes[cls];
		struct tmm_block_rec *fit;

		/* In an exact class every size is `size`. */
		if (tmm_pool_is_exact_class(cls))
			return class_min(class);
		fit = tree_first_fit(class->tree, size);
		if (fit)
			return fit;
	}
	/* Every size in a higher class fits; take that class's smallest. */
	cls = first_class_from(pool, cls + 1);
	return cls == NO_CLASS ? NULL : class_min(&pool->classes[cls]);
}

const struct tmm_block_rec *tmm_pool_find_largest(const struct tmm_pool *pool)
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
void tmm_pool_mark_free(struct tmm_pool *pool, struct tmm_block_rec *rec)
{
	uint32_t cls = tmm_pool_size_class(rec->pub.size);
	struct tmm_size_class *class = &pool->classes[cls];

	pool->free_blocks++;
	if (!tmm_pool_class_in_use(pool, cls)) {
		/*
		 * The usual case, told by the hot bitmap without reading the
		 * class, which would likely be a cache miss.
		 */
		mark_class_used(pool, cls);
		rec->state = TMM_BLOCK_FREE_SORTED;
		rec->left = rec->right = rec->parent = NULL;
		rec->height = 1;
		class->tree = rec;
		return;
	}
	if (tmm_pool_is_exact_class(cls)) {
		rec->state = TMM_BLOCK_FREE_PENDING;
		rec->left = rec->parent = NULL;
		rec->right = class->pending;
		if (rec->right)
			rec->right->left = rec;
		class->pending = rec;
	} else {
		rec->state = TMM_BLOCK_FREE_SORTED;
		tree_insert(&class->tree, rec);
	}
}

/* Takes a free block out of the index; its size must not have changed. */
void tmm_pool_unmark_free(struct tmm_pool *pool, struct tmm_block_rec *rec)
{
	uint32_t cls = tmm_pool_size_class(rec->pub.size);
	struct tmm_size_class *class = &pool->classes[cls];

	if (rec->state == TMM_BLOCK_FREE_PENDING) {
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
