/* A program that reaches NCCL only through a library it opens itself with
 * dlopen(RTLD_LOCAL), as Python opens PyTorch's libtorch_cuda.so and, with
 * it, libnccl.so.2 and the CUDA runtime: NCCL is then in no global scope,
 * where a preloaded library's dlsym(RTLD_NEXT) or dlsym(RTLD_DEFAULT)
 * would look for it. The program links neither NCCL nor CUDA. For
 * tools/whatran's cases (tests/suites/63-whatran.sh).
 *
 *   dlopen_style LIBRARY ENTRY
 *
 * opens LIBRARY, runs its function ENTRY (int ENTRY(void)) and exits with
 * its status; 2 when the library or the function cannot be found, saying
 * which. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: dlopen_style LIBRARY ENTRY\n");
    return 2;
  }
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "dlopen_style: dlopen %s: %s\n", argv[1], dlerror());
    return 2;
  }
  int (*entry)(void);
  *(void **)&entry = dlsym(library, argv[2]);
  if (entry == NULL) {
    fprintf(stderr, "dlopen_style: %s has no %s: %s\n", argv[1], argv[2],
            dlerror());
    return 2;
  }
  return entry();
}
