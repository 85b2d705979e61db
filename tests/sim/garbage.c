/* ncclsim: cudaMalloc's large memory (a MiB or more), garbage until it is
 * written without being written (memory.c's new_alloc), and the memset of
 * the streams' worker (queues.c), which zeroes its whole pages by mapping
 * fresh ones. */
#include "sim.h"
#include "garbage.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* cudaMalloc's memory of GARBAGE_FROM bytes or more: a private mapping of
 * one memfd of all-ones bytes (see new_alloc), which grows to the largest
 * such allocation. Its pages read as the file's until written, and a
 * write copies the page: a large allocation starts as garbage without
 * being written. NULL if out of memory. */
static pthread_mutex_t garbage_lock = PTHREAD_MUTEX_INITIALIZER;
static int garbage_fd = -1;
static size_t garbage_bytes;

void *garbage_pages(size_t size, size_t *mapped)
{
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  *mapped = (size + page - 1) / page * page;
  void *p = MAP_FAILED;
  pthread_mutex_lock(&garbage_lock);
  if (garbage_fd < 0)
    garbage_fd = memfd_create("cudaMalloc-garbage", MFD_CLOEXEC);
  if (garbage_fd >= 0 && *mapped > garbage_bytes &&
      ftruncate(garbage_fd, (off_t)*mapped) == 0) {
    void *more = mmap(NULL, *mapped - garbage_bytes, PROT_WRITE, MAP_SHARED,
                      garbage_fd, (off_t)garbage_bytes);
    if (more != MAP_FAILED) {
      memset(more, 0xFF, *mapped - garbage_bytes);
      munmap(more, *mapped - garbage_bytes);
      garbage_bytes = *mapped;
    }
  }
  if (garbage_fd >= 0 && *mapped <= garbage_bytes)
    p = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE, garbage_fd, 0);
  pthread_mutex_unlock(&garbage_lock);
  return p == MAP_FAILED ? NULL : p;
}

/* memset for the stream's worker: the whole pages of a zero memset of a
 * large cudaMalloc allocation become fresh zero pages (the same contents,
 * without writing them); the rest is written. */
void sim_memset(void *dst, int value, size_t count)
{
  unsigned char *d = dst, *from = d, *to = d;
  if (value == 0 && count >= GARBAGE_FROM) {
    pthread_mutex_lock(&lock);
    const sim_alloc *a = find_alloc(dst, count);
    const int remap = a != NULL && a->kind == FROM_CUDA_MALLOC && a->mapped > 0;
    pthread_mutex_unlock(&lock);
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    from = (unsigned char *)(((uintptr_t)d + page - 1) / page * page);
    to = (unsigned char *)(((uintptr_t)d + count) / page * page);
    if (!remap || to <= from ||
        mmap(from, (size_t)(to - from), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
      from = to = d;
  }
  if (from == to) {
    memset(d, value, count);
    return;
  }
  memset(d, 0, (size_t)(from - d));
  memset(to, 0, (size_t)(d + count - to));
}
