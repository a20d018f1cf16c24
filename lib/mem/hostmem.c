/* SPDX-License-Identifier: MIT */
/*
 * hostmem.c — the pinned host buffer pool.
 *
 * Pinning host memory maps and locks every page and registers it with the
 * driver; it costs far more than the copy it enables.  Swapping reuses
 * buffers of the same few sizes every iteration, so this pool rounds each
 * request up to a size class and keeps returned buffers on a free list per
 * class: after the first iteration a swap finds its buffer there and the
 * backend is not called at all.
 *
 * Size classes: 4 KiB granules up to 64 KiB (16 classes), then four steps
 * per power of two (80, 96, 112, 128 KiB, 160 KiB, ...).  Above 64 KiB a
 * buffer is less than 25% larger than the request; below, by less than a
 * page, which pinning would round to anyway.
 *
 * What is not handed out is cached, up to cache_limit bytes.  Past the
 * limit the least recently returned buffers go back to the backend, so a
 * pool that served one large model does not hold its pinned memory forever.
 *
 * The bookkeeping lives in records outside the buffers: on a phantom
 * simulated device the "buffers" are PROT_NONE reservations that must never
 * be touched, and on CUDA writing into them would fault pages for nothing.
 * Buffers in use are found by address in a chained hash table; records are
 * allocated in slabs and recycled through a spare list, so steady-state
 * get/put calls neither the backend nor malloc.
 *
 * Not thread-safe: a pool belongs to one context, which one thread uses at
 * a time (tensormm.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/backend/backend.h"
#include "hostmem.h"
#include "lib/base/xalloc.h"

#define HM_GRANULE	 ((size_t)4096)
#define HM_SMALL_MAX	 ((size_t)64 * 1024)
#define HM_NSMALL	 16 /* HM_SMALL_MAX / HM_GRANULE */
#define HM_SMALL_LOG2	 16 /* log2(HM_SMALL_MAX) */
#define HM_STEPS	 4  /* classes per power of two above it */
#define HM_BITS		 ((unsigned)(sizeof(size_t) * CHAR_BIT))
/* The largest class is the top bit of size_t: 2^63 on 64-bit. */
#define HM_MAX_BYTES	 ((size_t)1 << (HM_BITS - 1))
#define HM_NCLASS	 (HM_NSMALL + (HM_BITS - 1 - HM_SMALL_LOG2) * HM_STEPS)

#define HM_SLAB		 64  /* records per slab */
#define HM_MIN_BUCKETS	 64  /* initial hash table size (power of two) */

/* One buffer obtained from the backend.  Never stored inside the buffer. */
struct hm_buf {
	void *ptr;
	unsigned cls;
	/* In use: the hash chain.  Spare record: the spare list. */
	struct hm_buf *hnext;
	/* Cached: the class's free list (head = most recently returned)... */
	struct hm_buf *cprev, *cnext;
	/* ...and the pool-wide LRU list (head = most recently returned). */
	struct hm_buf *lprev, *lnext;
};

struct hm_slab {
	struct hm_slab *next;
	struct hm_buf recs[HM_SLAB];
};

struct tmm_hostmem {
	struct tmm_backend *be;
	int numa_node;
	uint64_t cache_limit;	/* 0: no limit */

	struct hm_buf *free_list[HM_NCLASS];
	struct hm_buf *lru_head, *lru_tail;

	struct hm_buf **bucket;	/* buffers in use, by address */
	size_t nbucket;		/* a power of two */
	unsigned bucket_shift;	/* 64 - log2(nbucket) */
	size_t nused;

	struct hm_buf *spare;	/* records not describing a buffer */
	struct hm_slab *slabs;

	struct tmm_hostmem_stats st;
};

/* ------------------------------------------------------------------------
 * Size classes
 * ---------------------------------------------------------------------- */

static unsigned floor_log2(size_t v)
{
	return (unsigned)(sizeof(unsigned long long) * CHAR_BIT) - 1 -
	       (unsigned)__builtin_clzll((unsigned long long)v);
}

/* The class of a request of 1..HM_MAX_BYTES bytes. */
static unsigned class_of(size_t bytes)
{
	unsigned p;
	size_t step, k;

	if (bytes <= HM_SMALL_MAX)
		return (unsigned)((bytes - 1) / HM_GRANULE);
	/* 2^p < bytes <= 2^(p+1); the steps are 2^p + k * 2^(p-2). */
	p = floor_log2(bytes - 1);
	step = (size_t)1 << (p - 2);
	k = (bytes - ((size_t)1 << p) + step - 1) / step; /* 1..4 */
	return HM_NSMALL + (p - HM_SMALL_LOG2) * HM_STEPS + (unsigned)k - 1;
}

/* The size in bytes of class c (the inverse of class_of's rounding). */
static size_t class_size(unsigned c)
{
	unsigned p, k;

	if (c < HM_NSMALL)
		return (c + 1) * HM_GRANULE;
	c -= HM_NSMALL;
	p = HM_SMALL_LOG2 + c / HM_STEPS;
	k = c % HM_STEPS + 1;
	return ((size_t)1 << p) + k * ((size_t)1 << (p - 2));
}

/* ------------------------------------------------------------------------
 * Records and the in-use table
 * ---------------------------------------------------------------------- */

static struct hm_buf *rec_get(struct tmm_hostmem *hm)
{
	struct hm_buf *b = hm->spare;

	if (!b) {
		struct hm_slab *s = tmm_calloc(1, sizeof(*s));

		if (!s)
			return NULL;
		s->next = hm->slabs;
		hm->slabs = s;
		for (size_t i = HM_SLAB; i-- > 1;) {
			s->recs[i].hnext = hm->spare;
			hm->spare = &s->recs[i];
		}
		b = &s->recs[0];
	} else {
		hm->spare = b->hnext;
	}
	memset(b, 0, sizeof(*b));
	return b;
}

static void rec_put(struct tmm_hostmem *hm, struct hm_buf *b)
{
	b->ptr = NULL;
	b->hnext = hm->spare;
	hm->spare = b;
}

static size_t hash_ptr(const struct tmm_hostmem *hm, const void *p)
{
	/* Buffers are page-aligned: the low 12 bits carry nothing. */
	uint64_t h = ((uint64_t)(uintptr_t)p >> 12) * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> hm->bucket_shift);
}

/*
 * Doubles the table once chains average two entries.  A chained table
 * stays correct when it cannot grow, so a failed allocation here is
 * ignored: get/put never fail for want of a bigger table.
 */
static void table_maybe_grow(struct tmm_hostmem *hm)
{
	struct hm_buf **nb;
	size_t n = hm->nbucket * 2;

	if (hm->nused <= hm->nbucket * 2)
		return;
	nb = tmm_calloc(n, sizeof(*nb));
	if (!nb)
		return;
	hm->bucket_shift--;
	for (size_t i = 0; i < hm->nbucket; i++) {
		struct hm_buf *b = hm->bucket[i], *next;

		for (; b; b = next) {
			size_t h = hash_ptr(hm, b->ptr);

			next = b->hnext;
			b->hnext = nb[h];
			nb[h] = b;
		}
	}
	free(hm->bucket);
	hm->bucket = nb;
	hm->nbucket = n;
}

static void table_insert(struct tmm_hostmem *hm, struct hm_buf *b)
{
	size_t h;

	table_maybe_grow(hm);
	h = hash_ptr(hm, b->ptr);
	b->hnext = hm->bucket[h];
	hm->bucket[h] = b;
	hm->nused++;
}

static struct hm_buf *table_remove(struct tmm_hostmem *hm, const void *p)
{
	struct hm_buf **link = &hm->bucket[hash_ptr(hm, p)];

	for (; *link; link = &(*link)->hnext) {
		struct hm_buf *b = *link;

		if (b->ptr == p) {
			*link = b->hnext;
			b->hnext = NULL;
			hm->nused--;
			return b;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------------
 * The cache: a free list per class and one LRU list across classes
 * ---------------------------------------------------------------------- */

static void cache_push(struct tmm_hostmem *hm, struct hm_buf *b)
{
	struct hm_buf **head = &hm->free_list[b->cls];

	b->cprev = NULL;
	b->cnext = *head;
	if (*head)
		(*head)->cprev = b;
	*head = b;

	b->lprev = NULL;
	b->lnext = hm->lru_head;
	if (hm->lru_head)
		hm->lru_head->lprev = b;
	else
		hm->lru_tail = b;
	hm->lru_head = b;

	hm->st.cached += class_size(b->cls);
}

static void cache_unlink(struct tmm_hostmem *hm, struct hm_buf *b)
{
	if (b->cprev)
		b->cprev->cnext = b->cnext;
	else
		hm->free_list[b->cls] = b->cnext;
	if (b->cnext)
		b->cnext->cprev = b->cprev;

	if (b->lprev)
		b->lprev->lnext = b->lnext;
	else
		hm->lru_head = b->lnext;
	if (b->lnext)
		b->lnext->lprev = b->lprev;
	else
		hm->lru_tail = b->lprev;

	b->cprev = b->cnext = b->lprev = b->lnext = NULL;
	hm->st.cached -= class_size(b->cls);
}

/* Returns a buffer and its record: the buffer to the backend. */
static void buf_release(struct tmm_hostmem *hm, struct hm_buf *b)
{
	hm->be->ops->host_free(hm->be, b->ptr, class_size(b->cls));
	rec_put(hm, b);
}

/* Gives cached buffers back, oldest first, until at most `keep` remain. */
static void cache_trim(struct tmm_hostmem *hm, uint64_t keep)
{
	while (hm->lru_tail && hm->st.cached > keep) {
		struct hm_buf *b = hm->lru_tail;

		cache_unlink(hm, b);
		buf_release(hm, b);
	}
}

uint64_t tmm_hostmem_release_cached(struct tmm_hostmem *hm)
{
	uint64_t before;

	if (!hm)
		return 0;
	before = hm->st.cached;
	cache_trim(hm, 0);
	return before - hm->st.cached;
}

/* ------------------------------------------------------------------------
 * The pool
 * ---------------------------------------------------------------------- */

/*
 * Creates a pool.  Returns 0, -EINVAL without a backend, -ENOMEM (message
 * in be->error).
 */
int tmm_hostmem_create(struct tmm_hostmem **out, struct tmm_backend *be,
		       int numa_node, uint64_t cache_limit)
{
	struct tmm_hostmem *hm;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!be || !be->ops || !be->ops->host_alloc || !be->ops->host_free)
		return -EINVAL;

	hm = tmm_calloc(1, sizeof(*hm));
	if (!hm)
		goto nomem;
	hm->bucket = tmm_calloc(HM_MIN_BUCKETS, sizeof(*hm->bucket));
	if (!hm->bucket)
		goto nomem;
	hm->nbucket = HM_MIN_BUCKETS;
	hm->bucket_shift = 64 - floor_log2(HM_MIN_BUCKETS);
	hm->be = be;
	hm->numa_node = numa_node < 0 ? -1 : numa_node;
	hm->cache_limit = cache_limit;
	hm->st.numa_node = hm->numa_node;
	*out = hm;
	return 0;

nomem:
	free(hm);
	return tmm_backend_fail(be, -ENOMEM, "host buffer pool: out of "
				"memory for its tables");
}

/* Frees every buffer, in use or cached, and the pool. */
void tmm_hostmem_destroy(struct tmm_hostmem *hm)
{
	if (!hm)
		return;
	for (size_t i = 0; i < hm->nbucket; i++) {
		struct hm_buf *b, *next;

		for (b = hm->bucket[i]; b; b = next) {
			next = b->hnext;
			buf_release(hm, b);
		}
	}
	cache_trim(hm, 0);
	while (hm->slabs) {
		struct hm_slab *s = hm->slabs;

		hm->slabs = s->next;
		free(s);
	}
	free(hm->bucket);
	free(hm);
}

/*
 * A buffer of at least `bytes`: a cached one of the same class when there
 * is one, else a new one from the backend.  When the backend is out of
 * memory and the cache holds buffers of other classes, those are given
 * back and the allocation tried once more: pinned memory is scarce, and a
 * cache is the first thing to sacrifice.
 *
 * Returns 0, -EINVAL (no pointer, 0 bytes), -ENOMEM, or the backend's
 * error; the message is in be->error and the pool is unchanged.
 */
int tmm_hostmem_get(struct tmm_hostmem *hm, size_t bytes, void **ptr)
{
	struct hm_buf *b;
	unsigned cls;
	size_t size;
	void *p = NULL;
	int rc;

	if (!hm || !ptr)
		return -EINVAL;
	*ptr = NULL;
	if (bytes == 0)
		return tmm_backend_fail(hm->be, -EINVAL,
					"host buffer of 0 bytes requested");
	if (bytes > HM_MAX_BYTES)
		return tmm_backend_fail(hm->be, -ENOMEM,
					"host buffer of %zu bytes: larger than "
					"the largest size class (%zu bytes)",
					bytes, HM_MAX_BYTES);
	cls = class_of(bytes);
	size = class_size(cls);

	b = hm->free_list[cls];
	if (b) {
		cache_unlink(hm, b);
		hm->st.reuses++;
		goto found;
	}

	/* Take the record first: nothing from the backend needs undoing. */
	b = rec_get(hm);
	if (!b)
		return tmm_backend_fail(hm->be, -ENOMEM,
					"host buffer pool: out of memory for "
					"its records");
	rc = hm->be->ops->host_alloc(hm->be, size, hm->numa_node, &p);
	if (rc == -ENOMEM && hm->st.cached > 0) {
		cache_trim(hm, 0);
		rc = hm->be->ops->host_alloc(hm->be, size, hm->numa_node, &p);
	}
	if (rc < 0) {
		rec_put(hm, b);
		return rc;
	}
	b->ptr = p;
	b->cls = cls;
	hm->st.allocations++;

found:
	table_insert(hm, b);
	hm->st.in_use += size;
	*ptr = b->ptr;
	return 0;
}

/*
 * Returns a buffer to the cache, or to the backend when it alone exceeds
 * the cache limit; then trims the cache to the limit, oldest buffers first.
 * `bytes` must be what the buffer was obtained with.
 */
void tmm_hostmem_put(struct tmm_hostmem *hm, void *ptr, size_t bytes)
{
	struct hm_buf *b;
	size_t size;

	if (!hm || !ptr)
		return;
	b = table_remove(hm, ptr);
	/* Not ours, or returned twice: a caller bug, caught in debug builds. */
	assert(b);
	if (!b)
		return;
	assert(bytes > 0 && bytes <= HM_MAX_BYTES && class_of(bytes) == b->cls);
	(void)bytes; /* the record knows the class */

	size = class_size(b->cls);
	hm->st.in_use -= size;
	if (hm->cache_limit && size > hm->cache_limit) {
		buf_release(hm, b);
		return;
	}
	cache_push(hm, b);
	if (hm->cache_limit)
		cache_trim(hm, hm->cache_limit);
}

void tmm_hostmem_get_stats(const struct tmm_hostmem *hm,
			   struct tmm_hostmem_stats *st)
{
	if (!st)
		return;
	if (!hm) {
		memset(st, 0, sizeof(*st));
		st->numa_node = -1;
		return;
	}
	*st = hm->st;
}
