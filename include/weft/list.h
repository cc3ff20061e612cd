/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intrusive lists.  dlist: doubly linked with a sentinel head, O(1) removal
 * of any entry.  slist: singly linked FIFO with a tail pointer, O(1) push at
 * either end and pop at the head.  Neither allocates; neither locks.
 */
#ifndef WEFT_LIST_H
#define WEFT_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "weft/core.h"

struct dlist_entry {
	struct dlist_entry *next;
	struct dlist_entry *prev;
};

#define DLIST_HEAD_INIT(name) { &(name), &(name) }

static inline void dlist_init(struct dlist_entry *head)
{
	head->next = head;
	head->prev = head;
}

static inline bool dlist_empty(const struct dlist_entry *head)
{
	return head->next == head;
}

static inline void dlist_insert_after(struct dlist_entry *item,
				      struct dlist_entry *pos)
{
	item->next = pos->next;
	item->prev = pos;
	pos->next->prev = item;
	pos->next = item;
}

static inline void dlist_insert_tail(struct dlist_entry *item,
				     struct dlist_entry *head)
{
	dlist_insert_after(item, head->prev);
}

static inline void dlist_insert_head(struct dlist_entry *item,
				     struct dlist_entry *head)
{
	dlist_insert_after(item, head);
}

static inline void dlist_remove(struct dlist_entry *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	item->next = item->prev = item;
}

static inline struct dlist_entry *dlist_pop_front(struct dlist_entry *head)
{
	struct dlist_entry *e;

	if (dlist_empty(head))
		return NULL;
	e = head->next;
	dlist_remove(e);
	return e;
}

#define dlist_foreach(head, item)                                              \
	for ((item) = (head)->next; (item) != (head); (item) = (item)->next)

/* Safe against removal of `item` inside the loop body. */
#define dlist_foreach_safe(head, item, tmp)                                    \
	for ((item) = (head)->next, (tmp) = (item)->next; (item) != (head);    \
	     (item) = (tmp), (tmp) = (item)->next)

struct slist_entry {
	struct slist_entry *next;
};

struct slist {
	struct slist_entry *head;
	struct slist_entry *tail;
};

static inline void slist_init(struct slist *list)
{
	list->head = list->tail = NULL;
}

static inline bool slist_empty(const struct slist *list)
{
	return list->head == NULL;
}

static inline void slist_insert_tail(struct slist_entry *item,
				     struct slist *list)
{
	item->next = NULL;
	if (list->tail)
		list->tail->next = item;
	else
		list->head = item;
	list->tail = item;
}

static inline void slist_insert_head(struct slist_entry *item,
				     struct slist *list)
{
	item->next = list->head;
	list->head = item;
	if (!list->tail)
		list->tail = item;
}

static inline struct slist_entry *slist_remove_head(struct slist *list)
{
	struct slist_entry *e = list->head;

	if (e) {
		list->head = e->next;
		if (!list->head)
			list->tail = NULL;
	}
	return e;
}

#endif /* WEFT_LIST_H */
