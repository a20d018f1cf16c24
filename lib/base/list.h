/* SPDX-License-Identifier: MIT */
/*
 * list.h — an intrusive, circular, doubly-linked list.
 *
 * The mover keeps tensors on lists (device-resident in LRU order, pending
 * swap-outs in issue order) and moves them between lists on every op; an
 * intrusive list does that in O(1) with no allocation.
 */
#ifndef TMM_LIST_H
#define TMM_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct tmm_list {
	struct tmm_list *prev, *next;
};

#define tmm_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline void tmm_list_init(struct tmm_list *l)
{
	l->prev = l->next = l;
}

static inline bool tmm_list_empty(const struct tmm_list *l)
{
	return l->next == l;
}

/* Is the node on some list?  (Nodes are re-initialised when removed.) */
static inline bool tmm_list_linked(const struct tmm_list *n)
{
	return n->next != n;
}

static inline void tmm_list_add_tail(struct tmm_list *head,
				     struct tmm_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void tmm_list_del(struct tmm_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	tmm_list_init(n);
}

/* Moves a linked node to the tail (most recently used end). */
static inline void tmm_list_move_tail(struct tmm_list *head,
				      struct tmm_list *n)
{
	tmm_list_del(n);
	tmm_list_add_tail(head, n);
}

#endif /* TMM_LIST_H */
