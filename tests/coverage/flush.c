/* Linked into every program and library of `make test-coverage`
 * (tests/coverage/compiler.sh, with -Wl,--wrap=_exit): a process that ends
 * with _exit, as the simulation's rule violations, common/'s fatal errors
 * and the watchdog do, writes its coverage counters first; exit() writes
 * them by itself. Hidden: each library dumps its own counters. */
void __gcov_dump(void);
_Noreturn void __real__exit(int status);
_Noreturn void __wrap__exit(int status) __attribute__((visibility("hidden")));

_Noreturn void __wrap__exit(int status)
{
  __gcov_dump();
  __real__exit(status);
}
