# The seam between common/ (what a lesson calls) and instruments/ (what
# watches and measures it): the lean build, a lesson copied with common/
# alone, the boundary, common/'s size, and CMake beside make.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: third (tests/run_tests.sh runs the lanes of a whole run at once)

EXAMPLES_PROGRAMS="01_allreduce:allreduce_sm 02_allgather:allgather_ce"
SIM_LINK=(RUNTIME_LIBS="$B/sim-pthread/sim.o" LDFLAGS="-Wl,--wrap=set_error_rank" "$QUICK_CFLAGS")

# lean_run PROGRAM PATH: runs a simulated lean build on 2 ranks and compares
# its stdout with the oracle's, which for a lean build has no report of
# what ran (nothing measures it).
lean_run() {
  expected "$1" 2 --count $SMALL --mode pthread --gpus 8 --no-report >"$f.expected"
  SIM_DIR=$TMPDIR NTHREADS=2 run "$2" -n $SMALL
  want_status 0
  want_out_file "$f.expected"
  no_violation
}

# instrument_symbols OBJECT-DIR: the global symbols the instruments' objects
# of a full build define, less the seam's own names (instruments.h), which
# the lean stand-in defines too.
instrument_symbols() {
  local seam
  seam=$(grep -oE '\b(watch|instruments)_[a-z_]+\b' "$ROOT/common/include/instruments.h" | sort -u)
  find "$1" -path '*/instruments/*' -name '*.o' -exec nm -g --defined-only {} + |
    awk 'NF == 3 { print $3 }' | sort -u | grep -vxF -f <(echo "$seam")
}

# make LEAN=1 on the simulation: the lesson's output line for line, -h with
# the lesson's options only, and not one symbol of the instruments inside.
if begin seam/lean-build-on-the-simulation; then
  need sim-pthread/sim.o programs-sim-pthread
  for p in $EXAMPLES_PROGRAMS; do
    ex=${p%%:*} prog=${p##*:} bin=$B/lean/$prog
    run make --no-print-directory -s -C "$ex/c" LEAN=1 BUILD_DIR="$B/lean/obj-$prog" BIN="$bin" "${SIM_LINK[@]}"
    want_status 0
    lean_run "$prog" "$bin"
    run "$bin" -h
    want_status 0
    want_out "Usage: $prog [-n COUNT] [-h]"
    no_out "--bench"
    run "$bin" --bench
    want_status 2
    want_err "$prog: unknown option '--bench'"
    syms=$(instrument_symbols "$B/sim-pthread/obj-$prog")
    [ -n "$syms" ] || why+="found no instrument symbol in the full build to look for; "
    nm "$B/sim-pthread/$prog" | grep -qwF "$(echo "$syms" | head -n 1)" ||
      why+="the full build lacks $(echo "$syms" | head -n 1) (the check could not fail); "
    found=$(nm "$bin" | awk '{ print $NF }' | grep -xF -f <(echo "$syms") | head -n 3 | tr '\n' ' ')
    [ -z "$found" ] || why+="$prog LEAN=1 holds instrument symbols: $found; "
  done
  end
fi

# On a real build (this machine's CUDA and NCCL), ldd of a lean build lists
# no CUPTI or cuBLAS, where the full build lists them.
if begin seam/lean-build-links-no-cupti-or-cublas; then
  need real-programs-pthread
  run make --no-print-directory -s -C 01_allreduce/c LEAN=1 BUILD_DIR="$B/lean-real/obj" BIN="$B/lean-real/allreduce_sm"
  want_status 0
  lean_libs=$(ldd "$B/lean-real/allreduce_sm" | grep -oE 'lib(cupti|cublas|cublasLt)\.so[^ ]*' | tr '\n' ' ')
  [ -z "$lean_libs" ] || why+="LEAN=1 links $lean_libs; "
  full_libs=$(ldd "$B/real-pthread/allreduce_sm" | grep -oE 'lib(cupti|cublas)\.so[^ ]*' | tr '\n' ' ')
  if [ -e "${CUDA_HOME:-/usr/local/cuda}/include/cupti.h" ] && [ -z "$full_libs" ]; then
    why+="the full build links no CUPTI either (the check could not fail); "
  fi
  end
fi

# A lesson folder and common/, copied alone to a scratch folder, build (no
# instruments/ beside them: the stand-in) and run, with make and, where
# cmake is installed, with CMake from the lesson's folder.
if begin seam/lesson-copied-with-common-alone; then
  need sim-pthread/sim.o
  d=$B/copied-lesson
  rm -rf "$d" && mkdir -p "$d"
  tracked_files common 01_allreduce/c 02_allgather/c | grep -v '/python/' |
    (cd "$ROOT" && tar -cf - -T -) | tar -xf - -C "$d"
  [ ! -e "$d/instruments" ] || why+="the copy has instruments/; "
  for p in $EXAMPLES_PROGRAMS; do
    ex=${p%%:*} prog=${p##*:}
    run make --no-print-directory -s -C "$d/$ex/c" "${SIM_LINK[@]}"
    want_status 0
    lean_run "$prog" "$d/$ex/c/$prog"
    command -v cmake >/dev/null || continue
    run cmake -S "$d/$ex/c" -B "$d/$ex/c/cmake-build" "${CMAKE_NCCL[@]}" \
      -DRUNTIME_LIBS="$B/sim-pthread/sim.o" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--wrap=set_error_rank
    want_status 0
    run cmake --build "$d/$ex/c/cmake-build" -j"$(nproc)"
    want_status 0
    lean_run "$prog" "$d/$ex/c/cmake-build/$prog"
  done
  run make --no-print-directory -s -C "$d/01_allreduce/c" LEAN=0
  want_failure
  want_err "LEAN=0, but"
  end
fi

# No file under common/ includes a header of instruments/; the check finds
# one planted in a copy (its control). The build enforces the same: common/
# is compiled without instruments/include on its path.
# boundary_crossings ROOT: common/'s lines that include an instruments header.
boundary_crossings() {
  local h
  for h in "$1"/instruments/include/*.h; do
    grep -rnE "#[[:space:]]*include[[:space:]]*[\"<]([^\">]*/)?$(basename "$h")[\">]" "$1/common" || true
  done
}
if begin seam/common-never-includes-instruments; then
  run true
  crossings=$(boundary_crossings "$ROOT")
  [ -z "$crossings" ] || why+="common/ includes instruments/: $crossings; "
  c=$TMPDIR/boundary-control
  rm -rf "$c" && mkdir -p "$c" && cp -r "$ROOT/common" "$ROOT/instruments" "$c/"
  sed -i '1i #include "watchdog.h"' "$c/common/src/driver.c"
  [ -n "$(boundary_crossings "$c")" ] || why+="the check misses a planted include (control); "
  end
fi

# common/ stays what a learner can read: at most COMMON_LINES lines of C.
# The layer upstream's examples share is about 450 lines; ours adds the MPI
# and pthread transports in one program, rank-ordered output, strict
# options, the GPU-sharing checks and the seam, and measured 1,900 lines
# when the instruments moved out. The budget leaves 5% for fixes; growing
# past it is a decision, taken by raising it here and saying why. Raised
# to 2100 for one GPU per task: MPI processes that each see their own GPU
# as device 0 compare the GPUs' UUIDs (transport_gpu_load), about 90 lines.
# Raised to 2200 for the device API lesson (03_allreduce_lsa): its checks
# (the loaded NCCL against its headers, device API support and one LSA
# team), its kernel's descriptor for the instruments and C++ linkage of
# example.h, about 70 lines. Raised to 2350 for the fast-kernel lesson
# (04_allreduce_fast): a fill that differs per rank and element, with its
# checks (verify.c, which the kernels' offset test uses too), a kernel's
# variants as the bench's modes, the ranks per GPU; about 115 lines.
COMMON_LINES=2350
if begin seam/common-line-budget; then
  run true
  lines=$(tracked_files common | grep -E '\.[ch]$' | (cd "$ROOT" && xargs cat) | wc -l)
  [ "$lines" -gt 0 ] && [ "$lines" -le $COMMON_LINES ] ||
    why+="common/ has $lines lines of C, the budget $COMMON_LINES; "
  echo "common/: $lines lines of C (budget $COMMON_LINES)" >"$f.out"
  end
fi

# CMake beside make: the same programs on the simulation, their output line
# for line, and ctest running each once; lean too; NCCL found in a pip
# wheel's layout.
cmake_build() { # cmake_build DIR ARGS...: configures and builds; sets $status
  local dir=$1
  shift
  rm -rf "$dir"
  run cmake -S "$ROOT" -B "$dir" "${CMAKE_NCCL[@]}" "$@"
  [ "$status" = 0 ] || return
  cmake --build "$dir" -j"$(nproc)" >>"$f.out" 2>>"$f.err"
  status=$?
}
# ctest_passed N FILE: whether FILE has ctest's summary that all N tests
# passed, in either ctest's words: "100% tests passed, 0 tests failed out
# of N" (3.25), "100% tests passed out of N" (newer); a failure reads
# "50% tests passed, 1 tests failed out of 2".
ctest_passed() { grep -qE "^100% tests passed(, 0 tests failed)? out of $1\$" "$2"; }
if begin seam/cmake/ctest-summary-read-in-any-wording; then
  for line in "100% tests passed, 0 tests failed out of 2:yes" "100% tests passed out of 2:yes" \
    "50% tests passed, 1 tests failed out of 2:no" "0% tests passed, 2 tests failed out of 2:no" \
    "100% tests passed out of 1:no" "100% tests passed out of 20:no" "No tests were found!!!:no"; do
    printf 'Test project /x\n%s\n' "${line%:*}" >"$f.out"
    got=$(ctest_passed 2 "$f.out" && echo yes || echo no)
    [ "$got" = "${line##*:}" ] || why+="'${line%:*}' read as all 2 passed: $got, wanted ${line##*:}; "
  done
  end
fi
if ! command -v cmake >/dev/null; then
  skip seam/cmake/sim-pthread "cmake is not installed"
  skip seam/cmake/sim-lean "cmake is not installed"
else
  for lean in OFF ON; do
    c=seam/cmake/sim-pthread
    [ $lean = ON ] && c=seam/cmake/sim-lean
    if begin "$c"; then
      need sim-pthread/sim.o
      dir=$B/${c//\//-}
      cmake_build "$dir" -DLEAN=$lean -DRUNTIME_LIBS="$B/sim-pthread/sim.o" \
        -DCMAKE_EXE_LINKER_FLAGS=-Wl,--wrap=set_error_rank
      want_status 0
      for p in $EXAMPLES_PROGRAMS; do
        ex=${p%%:*} prog=${p##*:}
        if [ $lean = ON ]; then
          lean_run "$prog" "$dir/$ex/c/$prog"
        else
          expected "$prog" 2 --count $SMALL --mode pthread --gpus 8 >"$f.expected"
          SIM_DIR=$TMPDIR NTHREADS=2 run "$dir/$ex/c/$prog" -n $SMALL
          want_status 0
          want_out_file "$f.expected"
          no_violation
        fi
      done
      (cd "$dir" && SIM_DIR=$TMPDIR run ctest --output-on-failure)
      want_status 0
      ctest_passed 2 "$f.out" || why+="ctest did not say that all 2 tests passed; "
      # What ctest counted, where it was not that (the logs may not travel).
      [ -n "$why" ] && why+="ctest said: '$(grep -m 1 -E 'tests (passed|failed)|No tests' "$f.out")'; "
      end
    fi
  done
fi
if command -v cmake >/dev/null && begin seam/cmake/nccl-in-a-wheel-layout-and-ctest; then
  need sim-pthread/sim.o
  w=$B/cmake-wheel
  rm -rf "$w" && mkdir -p "$w/nccl/include" "$w/nccl/lib"
  # The suite's NCCL (programs.sh), laid out as the wheel lays it out.
  cp "$SUITE_NCCL_H" "$w/nccl/include/" && cp -L "$SUITE_NCCL_SO" "$w/nccl/lib/libnccl.so.2" ||
    why+="no NCCL to lay out (nccl.h: '$SUITE_NCCL_H', libnccl.so.2: '$SUITE_NCCL_SO'); "
  run cmake -S "$ROOT" -B "$w/build" -DNCCL_HOME="$w/nccl"
  want_status 0
  want_out "Found NCCL: $w/nccl/lib/libnccl.so.2"
  # Without a GPU, ctest reports the program skipped (it says "no usable
  # GPU"), not failed.
  if [ "$NGPUS" = 0 ]; then
    run cmake --build "$w/build" --target allreduce_sm -j"$(nproc)"
    want_status 0
    run ctest --test-dir "$w/build" -R allreduce_sm
    want_status 0
    want_out "allreduce_sm (Skipped)"
  fi
  rm -rf "$w/empty" && mkdir -p "$w/empty"
  run cmake -S "$ROOT" -B "$w/build-empty" -DNCCL_HOME="$w/empty"
  want_failure
  want_err "Could NOT find NCCL"
  end
fi
