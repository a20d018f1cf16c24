/* SPDX-License-Identifier: MIT */
/*
 * sim_uvm.c — the simulated managed-memory driver (see sim_uvm.h and
 * docs/uvm-model.md).
 *
 * Each allocation starts on a VA block boundary and owns its blocks (the
 * driver's blocks are 2 MiB-aligned runs of address space, and a
 * cudaMallocManaged gets its own).  The runtime sub-allocates large
 * managed segments (lib/mem/uvm_arena.c), so several tensors share a
 * block: everything that must stay one tensor's business is kept per big
 * page.  A block keeps two masks over its big pages, where the device
 * holds a copy and where the host does, and one mask per advice (the
 * driver splits its ranges where advice changes, so advice on one tensor
 * never reaches its neighbour's pages).  A page in neither residency mask
 * has no contents (never populated, or discarded): touching it costs a
 * fault but no copy, as the driver zero-fills a fresh page.  Blocks with
 * device pages sit on one LRU list, most recently touched last, which is
 * what the driver evicts from: the LRU stays per block, as the driver's
 * is per block and per 2 MiB chunk, so neighbours in one block age
 * together.  Eviction takes a block's device pages but those the current
 * work touches, so that one op never needs more than its own pages,
 * whoever shares its blocks; and the end of a migration is kept per page
 * (the driver migrates a prefetch block by block, and a fault waits only
 * for the pages it needs), so a touch of one tensor never waits for the
 * migration of its neighbour.
 *
 * Allocations are found by binary search over an array sorted by address,
 * so a model with many managed allocations costs O(log n) per range.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_uvm.h"
#include "lib/base/xalloc.h"

struct block {
	uint64_t dev;	   /* big pages with a device copy */
	uint64_t host;	   /* big pages with a valid host copy */
	/* Advice, per big page: preferred location host (preferred
	 * device only clears it), accessed by the device, read-mostly. */
	uint64_t prefer_host, accessed_by, read_mostly;
	uint64_t *ready_ns; /* per page: a migration into or out of it
			     * ends then (the allocation's array) */
	uint64_t mark;	   /* the epoch of the work that last touched it */
	uint64_t busy;	   /* the pages that work touches: never its
			    * victims */
	struct block *prev, *next; /* LRU, while it has device pages */
	uint64_t bytes;	   /* bytes of its allocation inside it */
};

struct alloc {
	uintptr_t base;
	size_t bytes;
	size_t nblocks;
	uint64_t *ready_ns; /* pages_per_block per block */
	struct block blocks[];
};

struct tmm_sim_uvm {
	const struct tmm_sim_profile *p;
	uint64_t limit;
	uint64_t page, block;
	struct alloc **allocs; /* sorted by base */
	size_t n, cap;
	struct block lru;      /* sentinel: next is least recently used */
	uint64_t epoch;
	struct tmm_managed_stats st;
};

/* ---- small helpers ---------------------------------------------------- */

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Nanoseconds to move `bytes` at `gbps` (1e9 B/s = 1 B/ns), rounded. */
static uint64_t xfer_ns(uint64_t bytes, double gbps)
{
	if (!bytes || !(gbps > 0))
		return 0;
	return (uint64_t)llround((double)bytes / gbps);
}

/* A path's measured rate, or `otherwise` where the profile has none. */
static double rate_or(double measured, double otherwise)
{
	return measured > 0 ? measured : otherwise;
}

/* Pages p0..p1 (inclusive) as a mask. */
static uint64_t page_mask(unsigned p0, unsigned p1)
{
	unsigned n = p1 - p0 + 1;

	return (n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1) << p0;
}

/* Bytes of the pages in `mask` of block b: every page is full but the
 * last one of an allocation. */
static uint64_t bytes_of(const struct tmm_sim_uvm *u, const struct block *b,
			 uint64_t mask)
{
	unsigned last = (unsigned)((b->bytes - 1) / u->page);
	uint64_t total = (uint64_t)__builtin_popcountll(mask) * u->page;

	if ((mask >> last) & 1)
		total -= u->page - (b->bytes - (uint64_t)last * u->page);
	return total;
}

/* When the migrations of the pages in `mask` of b end. */
static uint64_t ready_of(const struct block *b, uint64_t mask)
{
	uint64_t t = 0;

	for (; mask; mask &= mask - 1)
		t = max_u64(t, b->ready_ns[__builtin_ctzll(mask)]);
	return t;
}

/* The pages in `mask` of b are migrating until `end`. */
static void ready_at(struct block *b, uint64_t mask, uint64_t end)
{
	for (; mask; mask &= mask - 1) {
		unsigned p = (unsigned)__builtin_ctzll(mask);

		b->ready_ns[p] = max_u64(b->ready_ns[p], end);
	}
}

static void lru_unlink(struct block *b)
{
	if (!b->prev)
		return;
	b->prev->next = b->next;
	b->next->prev = b->prev;
	b->prev = b->next = NULL;
}

/* b becomes the most recently used (or leaves the list without pages). */
static void lru_touch(struct tmm_sim_uvm *u, struct block *b)
{
	lru_unlink(b);
	if (!b->dev)
		return;
	b->prev = u->lru.prev;
	b->next = &u->lru;
	u->lru.prev->next = b;
	u->lru.prev = b;
}

static void resident_add(struct tmm_sim_uvm *u, uint64_t bytes)
{
	u->st.resident += bytes;
	u->st.resident_peak = max_u64(u->st.resident_peak, u->st.resident);
}

/* ---- allocations ------------------------------------------------------ */

int tmm_sim_uvm_create(struct tmm_sim_uvm **out,
		       const struct tmm_sim_profile *p, uint64_t limit)
{
	struct tmm_sim_uvm *u;

	*out = NULL;
	if (!p->uvm_page_bytes || !p->uvm_block_bytes ||
	    p->uvm_block_bytes % p->uvm_page_bytes ||
	    p->uvm_block_bytes / p->uvm_page_bytes > 64)
		return -EINVAL;
	u = tmm_calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->p = p;
	u->limit = limit;
	u->page = p->uvm_page_bytes;
	u->block = p->uvm_block_bytes;
	u->lru.prev = u->lru.next = &u->lru;
	*out = u;
	return 0;
}

void tmm_sim_uvm_destroy(struct tmm_sim_uvm *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++) {
		free(u->allocs[i]->ready_ns);
		free(u->allocs[i]);
	}
	free(u->allocs);
	free(u);
}

void tmm_sim_uvm_set_limit(struct tmm_sim_uvm *u, uint64_t limit)
{
	u->limit = limit;
}

/* The index of the first allocation whose base is above addr. */
static size_t upper_bound(const struct tmm_sim_uvm *u, uintptr_t addr)
{
	size_t lo = 0, hi = u->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->allocs[mid]->base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The allocation holding all of [ptr, ptr + bytes), or NULL. */
static struct alloc *find(const struct tmm_sim_uvm *u, const void *ptr,
			  size_t bytes)
{
	uintptr_t a = (uintptr_t)ptr;
	size_t i = upper_bound(u, a);
	struct alloc *al;

	if (i == 0)
		return NULL;
	al = u->allocs[i - 1];
	if (a - al->base > al->bytes || bytes > al->bytes - (a - al->base))
		return NULL;
	return al;
}

int tmm_sim_uvm_add(struct tmm_sim_uvm *u, void *ptr, size_t bytes)
{
	size_t nb = (bytes + u->block - 1) / u->block, i;
	struct alloc *al;

	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 64;
		void *p = tmm_realloc(u->allocs, cap * sizeof(*u->allocs));

		if (!p)
			return -ENOMEM;
		u->allocs = p;
		u->cap = cap;
	}
	al = tmm_calloc(1, sizeof(*al) + nb * sizeof(al->blocks[0]));
	if (!al)
		return -ENOMEM;
	al->ready_ns = tmm_calloc(nb * (u->block / u->page),
				  sizeof(*al->ready_ns));
	if (!al->ready_ns) {
		free(al);
		return -ENOMEM;
	}
	al->base = (uintptr_t)ptr;
	al->bytes = bytes;
	al->nblocks = nb;
	for (size_t b = 0; b < nb; b++) {
		al->blocks[b].bytes = b + 1 < nb ? u->block
						 : bytes - b * u->block;
		al->blocks[b].ready_ns = al->ready_ns + b * (u->block / u->page);
	}
	i = upper_bound(u, al->base);
	memmove(&u->allocs[i + 1], &u->allocs[i],
		(u->n - i) * sizeof(*u->allocs));
	u->allocs[i] = al;
	u->n++;
	return 0;
}

void tmm_sim_uvm_remove(struct tmm_sim_uvm *u, const void *ptr)
{
	size_t i = upper_bound(u, (uintptr_t)ptr);
	struct alloc *al;

	if (i == 0 || u->allocs[i - 1]->base != (uintptr_t)ptr)
		return;
	al = u->allocs[--i];
	for (size_t b = 0; b < al->nblocks; b++) {
		u->st.resident -= bytes_of(u, &al->blocks[b],
					   al->blocks[b].dev);
		lru_unlink(&al->blocks[b]);
	}
	free(al->ready_ns);
	free(al);
	memmove(&u->allocs[i], &u->allocs[i + 1],
		(u->n - i - 1) * sizeof(*u->allocs));
	u->n--;
}

bool tmm_sim_uvm_contains(const struct tmm_sim_uvm *u, const void *ptr,
			  size_t bytes)
{
	return find(u, ptr, bytes) != NULL;
}

/* The blocks of an allocation that a range touches. */
struct span {
	uint64_t off, end;    /* the range, as offsets in the allocation */
	uint64_t first, last; /* its blocks (first > last: none) */
};

static struct span span_of(const struct tmm_sim_uvm *u, const struct alloc *al,
			   const void *ptr, size_t bytes)
{
	struct span s = { .first = 1, .last = 0 };

	if (!bytes)
		return s;
	s.off = (uintptr_t)ptr - al->base;
	s.end = s.off + bytes;
	s.first = s.off / u->block;
	s.last = (s.end - 1) / u->block;
	return s;
}

/* The pages of block bi that the span touches. */
static uint64_t span_mask(const struct tmm_sim_uvm *u, const struct span *s,
			  uint64_t bi)
{
	uint64_t b0 = bi * u->block;
	uint64_t lo = max_u64(s->off, b0) - b0;
	uint64_t hi = (s->end < b0 + u->block ? s->end : b0 + u->block) - b0;

	return page_mask((unsigned)(lo / u->page),
			 (unsigned)((hi - 1) / u->page));
}

/* ---- eviction --------------------------------------------------------- */

/* Marks the pages m of b as the current work's (u->epoch). */
static void mark_busy(struct tmm_sim_uvm *u, struct block *b, uint64_t m)
{
	if (b->mark != u->epoch) {
		b->mark = u->epoch;
		b->busy = 0;
	}
	b->busy |= m;
}

/* Moves every device page of b that the current work does not touch to
 * the host; returns the bytes written back (pages whose only valid copy
 * was the device's). */
static uint64_t evict_block(struct tmm_sim_uvm *u, struct block *b)
{
	uint64_t out = b->dev & ~(b->mark == u->epoch ? b->busy : 0);
	uint64_t wb = bytes_of(u, b, out & ~b->host);

	if (!out)
		return 0;
	u->st.resident -= bytes_of(u, b, out);
	b->host |= out;
	b->dev &= ~out;
	if (!b->dev)
		lru_unlink(b);
	u->st.evictions++;
	u->st.eviction_bytes += wb;
	return wb;
}

/*
 * Makes room for `need` more device bytes by evicting least recently used
 * blocks, but for the pages the current work touches.  Returns the bytes
 * written back.  When only the current work's pages are left, the limit
 * is exceeded rather than the work refused (the runtime never lets one op
 * need more than its budget).
 */
static uint64_t make_room(struct tmm_sim_uvm *u, uint64_t need)
{
	struct block *b = u->lru.next;
	uint64_t wb = 0;

	while (u->st.resident + need > u->limit && b != &u->lru) {
		struct block *next = b->next;

		wb += evict_block(u, b);
		b = next;
	}
	return wb;
}

/* ---- access ----------------------------------------------------------- */

/* What servicing one piece of work costs, summed over its blocks. */
struct cost {
	uint64_t faults, migrated, written_back, remote, to_host;
	uint64_t fresh; /* pages that held nothing, filled on the device */
};

/* The host touches pages m of b: device-only pages come back first. */
static void host_touch(struct tmm_sim_uvm *u, struct block *b, uint64_t m,
		       bool write, struct cost *c)
{
	uint64_t ondev = m & b->dev;

	uint64_t gone = write ? ondev : ondev & ~b->read_mostly;

	c->to_host += bytes_of(u, b, ondev & ~b->host);
	b->host |= m;
	/* A write invalidates the device copy; a read of a page that is
	 * not read-mostly migrates it. */
	u->st.resident -= bytes_of(u, b, gone);
	b->dev &= ~gone;
	lru_touch(u, b);
}

/* A kernel touches pages m of b. */
static void device_touch(struct tmm_sim_uvm *u, struct block *b, uint64_t m,
			 bool write, struct cost *c)
{
	uint64_t remote = m & b->prefer_host & b->accessed_by;
	uint64_t local = m & ~remote, miss, need;

	if (remote) {
		/* Mapped over the bus: host pages stay where they are. */
		miss = remote & ~b->dev;
		c->remote += bytes_of(u, b, miss);
		b->host |= miss;
		/* A write through the mapping leaves a device copy of the
		 * same pages stale. */
		if (write)
			b->host &= ~(remote & b->dev);
	}
	miss = local & ~b->dev;
	if (miss) {
		c->faults += (uint64_t)__builtin_popcountll(miss);
		c->migrated += bytes_of(u, b, miss & b->host);
		c->fresh += bytes_of(u, b, miss & ~b->host);
		need = bytes_of(u, b, miss);
		c->written_back += make_room(u, need);
		b->dev |= miss;
		resident_add(u, need);
		/* A migration leaves no host copy; read-mostly pages are
		 * duplicated instead. */
		b->host &= ~(miss & ~b->read_mostly);
	}
	if (write)
		b->host &= ~local; /* the device copy is the only valid one */
	lru_touch(u, b);
}

int tmm_sim_uvm_access(struct tmm_sim_uvm *u, uint64_t *t,
		       const struct tmm_managed_range *ranges, unsigned n,
		       unsigned *bad)
{
	const struct tmm_sim_profile *p = u->p;
	struct alloc *al;
	struct span sp;
	struct cost c = { 0 };
	uint64_t start = t[TMM_ENGINE_COMPUTE], now = start, batches;

	u->epoch++;
	/* First mark every block the work touches: none may be evicted to
	 * make room for another. */
	for (unsigned i = 0; i < n; i++) {
		al = find(u, ranges[i].ptr, ranges[i].bytes);
		if (!al) {
			if (bad)
				*bad = i;
			return -EINVAL;
		}
		sp = span_of(u, al, ranges[i].ptr, ranges[i].bytes);
		for (uint64_t bi = sp.first; bi <= sp.last; bi++)
			mark_busy(u, &al->blocks[bi], span_mask(u, &sp, bi));
	}
	for (unsigned i = 0; i < n; i++) {
		const struct tmm_managed_range *r = &ranges[i];

		al = find(u, r->ptr, r->bytes);
		sp = span_of(u, al, r->ptr, r->bytes);
		for (uint64_t bi = sp.first; bi <= sp.last; bi++) {
			struct block *b = &al->blocks[bi];
			uint64_t m = span_mask(u, &sp, bi);

			/* A migration of these pages still under way. */
			now = max_u64(now, ready_of(b, m));
			if (r->by_host)
				host_touch(u, b, m, r->write, &c);
			else
				device_touch(u, b, m, r->write, &c);
		}
	}
	batches = p->uvm_fault_batch
			  ? (c.faults + p->uvm_fault_batch - 1) /
				    p->uvm_fault_batch
			  : c.faults;
	now += batches * p->uvm_batch_ns + c.faults * p->uvm_fault_ns +
	       xfer_ns(c.migrated, p->uvm_fault_gbps) +
	       xfer_ns(c.fresh, p->uvm_first_touch_gbps) +
	       xfer_ns(c.written_back,
		       rate_or(p->uvm_evict_gbps, p->d2h_gbps)) +
	       xfer_ns(c.remote, p->uvm_remote_gbps) +
	       xfer_ns(c.to_host, p->d2h_gbps);
	t[TMM_ENGINE_COMPUTE] = now;
	u->st.stall_ns += now - start;
	u->st.fault_batches += batches;
	u->st.faults += c.faults;
	u->st.fault_bytes += c.migrated;
	u->st.remote_bytes += c.remote;
	return 0;
}

/* ---- prefetch, advice, discard ---------------------------------------- */

int tmm_sim_uvm_prefetch(struct tmm_sim_uvm *u, uint64_t *t,
			 enum tmm_engine e, const void *ptr, size_t bytes,
			 enum tmm_location to, uint64_t *moved_out,
			 uint64_t *busy_ns)
{
	const struct tmm_sim_profile *p = u->p;
	struct alloc *al = find(u, ptr, bytes);
	uint64_t moved = 0, fresh = 0, wb = 0, start, end, need;
	struct span sp;

	*moved_out = *busy_ns = 0;
	if (!al)
		return -EINVAL;
	sp = span_of(u, al, ptr, bytes);
	u->epoch++;
	start = max_u64(t[e], t[TMM_ENGINE_COMPUTE]);
	for (uint64_t bi = sp.first; bi <= sp.last; bi++) {
		uint64_t m = span_mask(u, &sp, bi);

		mark_busy(u, &al->blocks[bi], m);
		start = max_u64(start, ready_of(&al->blocks[bi], m));
	}
	for (uint64_t bi = sp.first; bi <= sp.last; bi++) {
		struct block *b = &al->blocks[bi];
		uint64_t m = span_mask(u, &sp, bi);

		if (to == TMM_LOC_DEVICE) {
			uint64_t miss = m & ~b->dev;

			moved += bytes_of(u, b, miss & b->host);
			fresh += bytes_of(u, b, miss & ~b->host);
			need = bytes_of(u, b, miss);
			wb += make_room(u, need);
			b->dev |= miss;
			resident_add(u, need);
			b->host &= ~(miss & ~b->read_mostly);
		} else {
			uint64_t ondev = m & b->dev;
			/* A read-mostly page gets a host copy and keeps its
			 * device one (Runtime API, cudaMemAdvise: a
			 * prefetch of a read-mostly range makes a read-only
			 * copy at its destination). */
			uint64_t gone = ondev & ~b->read_mostly;

			moved += bytes_of(u, b, ondev & ~b->host);
			u->st.resident -= bytes_of(u, b, gone);
			b->host |= ondev;
			b->dev &= ~gone;
		}
		lru_touch(u, b);
	}
	if (wb) {
		/* The evictions this prefetch forced write back first. */
		uint64_t d = max_u64(t[TMM_ENGINE_D2H],
				     t[TMM_ENGINE_COMPUTE]);

		t[TMM_ENGINE_D2H] =
			d + xfer_ns(wb, rate_or(p->uvm_evict_gbps,
						p->d2h_gbps));
		start = max_u64(start, t[TMM_ENGINE_D2H]);
	}
	end = start;
	if (moved)
		end += p->copy_latency_ns +
		       xfer_ns(moved,
			       to == TMM_LOC_DEVICE
				       ? rate_or(p->uvm_prefetch_h2d_gbps,
						 p->h2d_gbps)
				       : rate_or(p->uvm_prefetch_d2h_gbps,
						 p->d2h_gbps));
	/* Pages that held nothing are only made on the device. */
	end += xfer_ns(fresh, p->uvm_prefetch_fresh_gbps);
	t[e] = max_u64(t[e], end);
	*moved_out = moved;
	*busy_ns = end - start;
	for (uint64_t bi = sp.first; bi <= sp.last; bi++)
		ready_at(&al->blocks[bi], span_mask(u, &sp, bi), end);
	if (to == TMM_LOC_DEVICE)
		u->st.prefetch_bytes += moved;
	return 0;
}

int tmm_sim_uvm_advise(struct tmm_sim_uvm *u, const void *ptr, size_t bytes,
		       enum tmm_advice advice)
{
	struct alloc *al = find(u, ptr, bytes);
	struct span sp;

	if (!al)
		return -EINVAL;
	sp = span_of(u, al, ptr, bytes);
	for (uint64_t bi = sp.first; bi <= sp.last; bi++) {
		struct block *b = &al->blocks[bi];
		uint64_t m = span_mask(u, &sp, bi);

		switch (advice) {
		case TMM_ADVISE_PREFERRED_DEVICE:
		case TMM_ADVISE_UNSET_PREFERRED:
			b->prefer_host &= ~m;
			break;
		case TMM_ADVISE_PREFERRED_HOST:
			b->prefer_host |= m;
			break;
		case TMM_ADVISE_ACCESSED_BY_DEVICE:
			b->accessed_by |= m;
			break;
		case TMM_ADVISE_UNSET_ACCESSED_BY:
			b->accessed_by &= ~m;
			break;
		case TMM_ADVISE_READ_MOSTLY:
			b->read_mostly |= m;
			break;
		case TMM_ADVISE_UNSET_READ_MOSTLY: {
			/* Duplicates collapse into one copy: at the
			 * preferred location where that holds one, else
			 * (CUDA: "arbitrary") on the device. */
			uint64_t dup = m & b->dev & b->host;
			uint64_t to_host = dup & b->prefer_host;

			b->read_mostly &= ~m;
			b->host &= ~(dup & ~to_host);
			b->dev &= ~to_host;
			u->st.resident -= bytes_of(u, b, to_host);
			if (!b->dev)
				lru_unlink(b);
			break;
		}
		default:
			return -EINVAL;
		}
	}
	return 0;
}

bool tmm_sim_uvm_pages_of(const struct tmm_sim_uvm *u, const void *ptr,
			  size_t bytes, void **lo, size_t *len)
{
	const struct alloc *al = find(u, ptr, bytes);
	uint64_t off, end;

	if (!al || !bytes)
		return false;
	off = (uintptr_t)ptr - al->base;
	end = off + bytes;
	off -= off % u->page;
	end += (u->page - end % u->page) % u->page;
	if (end > al->bytes)
		end = al->bytes;
	*lo = (void *)(al->base + off);
	*len = (size_t)(end - off);
	return true;
}

int tmm_sim_uvm_discard(struct tmm_sim_uvm *u, const void *ptr, size_t bytes)
{
	struct alloc *al = find(u, ptr, bytes);
	struct span sp;

	if (!al)
		return -EINVAL;
	sp = span_of(u, al, ptr, bytes);
	for (uint64_t bi = sp.first; bi <= sp.last; bi++) {
		struct block *b = &al->blocks[bi];
		uint64_t m = span_mask(u, &sp, bi);

		u->st.discard_bytes += bytes_of(u, b, m & (b->dev | b->host));
		u->st.resident -= bytes_of(u, b, m & b->dev);
		b->dev &= ~m;
		b->host &= ~m;
		lru_touch(u, b);
	}
	return 0;
}

void tmm_sim_uvm_stats(const struct tmm_sim_uvm *u,
		       struct tmm_managed_stats *st)
{
	*st = u->st;
}
