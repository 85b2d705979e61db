/* ncclsim: cudaMalloc's memory of GARBAGE_FROM bytes or more, and the
 * memset of the streams' worker (garbage.c). */
#ifndef NCCLSIM_GARBAGE_H
#define NCCLSIM_GARBAGE_H

#include <stddef.h>

#define GARBAGE_FROM ((size_t)1 << 20)
/* A private mapping of `size` all-ones bytes, whole pages (*mapped bytes:
 * the sim_alloc's mapped, where a smaller cudaMalloc's is 0), not written
 * until the program writes them; NULL if out of memory. */
void *garbage_pages(size_t size, size_t *mapped);
/* memset, zeroing the whole pages of a large cudaMalloc's memory by
 * mapping fresh ones. */
void sim_memset(void *dst, int value, size_t count);

#endif
