#!/usr/bin/env bash
# The compiler of `make test-coverage` (tests/coverage.sh), first on PATH
# as cc, gcc, g++ and c++ (mpicc calls gcc): it runs the real one, adding
#   --coverage -fprofile-update=atomic  to a compile of a source of
#                 common/, instruments/, tools/whatran/ or tests/sim/ in the
#                 measured tree (TEST_COVERAGE_TREE); atomic counters, since
#                 the ranks are threads (and ThreadSanitizer's builds would
#                 see plain ones race);
#   --coverage and flush.o, -Wl,--wrap=_exit,--wrap=MPI_Abort  to a link:
#                 the counters of a process that ends with _exit (a rule
#                 violation, the watchdog's exit 3, a failed call) or with
#                 MPI_Abort (which kills the job) are written first.
# Any other use (-E, a probe) is the real compiler's alone.
name=${0##*/}
real=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && [ "$d" -ef "$TEST_COVERAGE_BIN" ] && continue
  [ -x "$d/$name" ] && { real=$d/$name; break; }
done
[ -n "$real" ] || { echo "tests/coverage/compiler.sh: no $name on PATH besides $TEST_COVERAGE_BIN" >&2; exit 127; }
measured=0 link=1 output=0
for a in "$@"; do
  case $a in
    -c | -E | -S | -M | -MM | -r) link=0 ;;
    -o | -o?*) output=1 ;;
    *.c)
      case $(realpath -m -- "$a" 2>/dev/null) in
        "$TEST_COVERAGE_TREE"/common/* | "$TEST_COVERAGE_TREE"/instruments/* | \
          "$TEST_COVERAGE_TREE"/tools/whatran/* | "$TEST_COVERAGE_TREE"/tests/sim/*) measured=1 ;;
      esac
      ;;
  esac
done
extra=()
[ $measured = 1 ] && extra+=(--coverage -fprofile-update=atomic -fprofile-abs-path)
[ $link = 1 ] && [ $output = 1 ] && extra+=(--coverage "$TEST_COVERAGE_BIN/flush.o" -Wl,--wrap=_exit,--wrap=MPI_Abort)
exec "$real" "$@" "${extra[@]}"
