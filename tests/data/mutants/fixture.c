/* generate.py's fixture: each mutant of this file is written out by hand
   in tests/data/mutants/fixture.expected. Not < 1 here: a comment. */
#include <stdatomic.h>
#define LIMIT 10

static int f(atomic_int *flag, int a, int b)
{
    const char *text = "a < 2 && b";
    if (a <= b || b == 0x10) return 1;
    while (a != 07) { if (a > 3) break; a++; }
    atomic_store_explicit(flag, 0u, memory_order_release);
    return atomic_load_explicit(flag, memory_order_acq_rel) >= (text[0] != 'x');
}
