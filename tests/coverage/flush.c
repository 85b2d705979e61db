/* Linked into every program and library of `make test-coverage`
 * (tests/coverage/compiler.sh, with -Wl,--wrap=_exit,--wrap=MPI_Abort): a
 * process that ends with _exit, as the simulation's rule violations,
 * common/'s fatal errors and the watchdog do, or that ends its MPI job with
 * MPI_Abort, which kills the job's processes, writes its coverage counters
 * first; exit() writes them by itself. Hidden: each library dumps its own
 * counters. MPI_Abort is a weak reference: a program without MPI has none
 * (its comm is a pointer in Open MPI, an int in MPICH: passed alike). */
void __gcov_dump(void);
_Noreturn void __real__exit(int status);
_Noreturn void __wrap__exit(int status) __attribute__((visibility("hidden")));
int __real_MPI_Abort(void *comm, int code) __attribute__((weak));
int __wrap_MPI_Abort(void *comm, int code) __attribute__((visibility("hidden")));

_Noreturn void __wrap__exit(int status)
{
  __gcov_dump();
  __real__exit(status);
}

int __wrap_MPI_Abort(void *comm, int code)
{
  __gcov_dump();
  return __real_MPI_Abort(comm, code);
}
