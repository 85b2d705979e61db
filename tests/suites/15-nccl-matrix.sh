# The programs against the oldest nvidia-nccl-cu13 wheel on PyPI (2.27.7),
# the oldest the device API lesson builds against (2.30.7), and the newest
# there when the matrix was set (2.32.6: `pip index versions
# nvidia-nccl-cu13` on 2026-12-06): built through NCCL_HOME in the
# wheel's layout (both modes against the newest, threads against the
# others), run up to the GPU check, and the unit tests that need only the
# library (its version, a real ncclGetUniqueId).
#
# Wheels (about 200 MB each) are kept in NCCL_WHEELS (default
# ~/.cache/nccl-wheels); a missing one is downloaded with pip when
# NCCL_MATRIX_DOWNLOAD=1 (.ci/run sets it), else its cases are skipped.
# NCCL_MATRIX="2.27.7 2.30.7 2.32.6" picks the versions (oldest first,
# newest last).
# Cases: nccl-matrix/2.27.7/..., nccl-matrix/2.30.7/... and
# nccl-matrix/2.32.6/... (one family per wheel version), allreduce_lsa
# among them (nvcc and CMake, or make's refusal).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: own (`make test-nccl-matrix`, which .ci/run runs: a matrix of
# downloads and builds, kept out of `make test`'s five minutes)

WHEELS=${NCCL_WHEELS:-$HOME/.cache/nccl-wheels}
for v in ${NCCL_MATRIX:-2.27.7 2.30.7 2.32.6}; do
  code=$(echo "$v" | awk -F. '{ printf "%d%02d%02d", $1, $2, $3 }')
  m=$B/nccl-matrix/$v
  whl=$(ls "$WHEELS"/nvidia_nccl_cu13-"$v"-*.whl 2>/dev/null | head -n 1)
  reason=""
  if [ -z "$LIST" ] && [ -z "$whl" ] && [ "${NCCL_MATRIX_DOWNLOAD:-0}" = 1 ] &&
    [[ -z $FILTER || "nccl-matrix/$v/" =~ $FILTER || $FILTER == *nccl-matrix* ]]; then
    mkdir -p "$WHEELS"
    timeout 300 python3 -m pip download -q --no-deps -d "$WHEELS" "nvidia-nccl-cu13==$v" >"$LOG/nccl-matrix-$v-download.log" 2>&1 ||
      reason="pip download nvidia-nccl-cu13==$v failed: $(tail -n 1 "$LOG/nccl-matrix-$v-download.log")"
    whl=$(ls "$WHEELS"/nvidia_nccl_cu13-"$v"-*.whl 2>/dev/null | head -n 1)
  fi
  [ -n "$whl" ] || reason=${reason:-"no nvidia_nccl_cu13-$v wheel in $WHEELS (NCCL_MATRIX_DOWNLOAD=1 downloads it)"}
  if [ -z "$LIST" ] && [ -n "$whl" ] && [ ! -e "$m/nvidia/nccl/lib/libnccl.so.2" ]; then
    rm -rf "$m" && mkdir -p "$m" && python3 -m zipfile -e "$whl" "$m" ||
      reason="cannot unpack $whl"
  fi
  home=$m/nvidia/nccl
  # Both modes against the newest; the others in threads mode only (the
  # MPI build adds no code that depends on NCCL's version).
  matrix=${NCCL_MATRIX:-2.27.7 2.30.7 2.32.6}
  modes="0 1"
  [ "$v" != "${matrix##* }" ] && modes=0
  for mode in $modes; do
    for p in $PROGRAMS; do
      c="nccl-matrix/$v/build-$p-MPI=$mode"
      if [ -n "$reason" ]; then skip "$c" "$reason"; continue; fi
      [ $mode = 1 ] && { mpi_cases "$c" || continue; }
      begin "$c" || continue
      dir=01_allreduce
      [ $p = allgather_ce ] && dir=02_allgather
      run make --no-print-directory -s -C $dir/c MPI=$mode NCCL_HOME="$home" "$QUICK_CFLAGS" \
        BUILD_DIR="$m/obj-$p-$mode" BIN="$m/$p-$mode"
      if [ $p = allgather_ce ] && [ "$code" -lt 22803 ]; then
        want_failure # CTAPolicy ZERO needs 2.28: make says so in one line, before compiling
        want_err "allgather_ce needs NCCL >= 2.28.3, and the nccl.h this build finds (in NCCL_HOME=$home) is $v: build with a newer NCCL"
        ! grep -q "error:" "$f.err" || why+="a compiler error beside make's line; "
      else
        want_status 0
        ldd "$m/$p-$mode" 2>/dev/null | grep -q "libnccl.so.2 => $home/lib/libnccl.so.2" ||
          why+="$p does not load the wheel's libnccl.so.2; "
        if [ $mode = 0 ]; then
          CUDA_VISIBLE_DEVICES= "$m/$p-$mode" >"$f.run" 2>&1
          grep -q "no usable GPU" "$f.run" || why+="did not stop at the GPU check: $(head -n 1 "$f.run"); "
        fi
      fi
      end
    done
  done
  # The device API lessons: nvcc against the wheel's headers (>= 2.30.7),
  # or make's one-line refusal of older ones, before any compiler runs.
  for lesson in 03_allreduce_lsa:allreduce_lsa 04_allreduce_fast:allreduce_fast; do
    dir=${lesson%%:*} prog=${lesson#*:}
    c="nccl-matrix/$v/build-$prog-MPI=0"
    if [ -n "$reason" ]; then skip "$c" "$reason"
    elif [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then skip "$c" "no nvcc in ${CUDA_HOME:-/usr/local/cuda}/bin"
    elif begin "$c"; then
      run make --no-print-directory -s -C $dir/c NCCL_HOME="$home" CUDA_ARCH=90 "$QUICK_CFLAGS" \
        BUILD_DIR="$m/obj-$prog" BIN="$m/$prog"
      if [ "$code" -lt 23007 ]; then
        want_failure
        want_err "$prog needs NCCL >= 2.30.7, and the nccl.h this build finds (in NCCL_HOME=$home) is $v: build with a newer NCCL"
        ! grep -q "error:" "$f.err" || why+="a compiler error beside make's line; "
      else
        want_status 0
        CUDA_VISIBLE_DEVICES= "$m/$prog" >"$f.run" 2>&1
        grep -q "no usable GPU" "$f.run" || why+="did not stop at the GPU check: $(head -n 1 "$f.run"); "
      fi
      end
    fi
  done
  # With the oldest wheel's library loaded, which has no device API
  # functions (ncclCommQueryProperties, ncclDevCommCreate): the program
  # starts (lazy binding, common/example.mk) and stops at its own checks
  # (here the GPU's, before the version's), never with the loader's
  # "symbol lookup error". The control links with -z now, as Ubuntu's gcc
  # does by default, and must fail in the loader.
  oldest=${matrix%% *}
  old_lib=$B/nccl-matrix/$oldest/nvidia/nccl/lib
  c="nccl-matrix/$v/allreduce_lsa-starts-with-nccl-$oldest"
  if [ -n "$reason" ] || [ "$code" -lt 23007 ]; then :
  elif [ ! -e "$old_lib/libnccl.so.2" ]; then skip "$c" "no NCCL $oldest library in $old_lib (its wheel: NCCL_MATRIX_DOWNLOAD=1)"
  elif [ ! -x "$m/allreduce_lsa" ]; then skip "$c" "allreduce_lsa was not built against $v (nccl-matrix/$v/build-allreduce_lsa-MPI=0)"
  elif begin "$c"; then
    CUDA_VISIBLE_DEVICES= LD_LIBRARY_PATH=$old_lib run "$m/allreduce_lsa"
    want_status 1
    want_err "no usable GPU"
    no_err "symbol lookup error"
    run make --no-print-directory -s -C 03_allreduce_lsa/c NCCL_HOME="$home" CUDA_ARCH=90 "$QUICK_CFLAGS" \
      LDFLAGS=-Wl,-z,now BUILD_DIR="$m/obj-allreduce_lsa-now" BIN="$m/allreduce_lsa-now"
    [ "$status" = 0 ] || why+="the control's build failed; "
    CUDA_VISIBLE_DEVICES= LD_LIBRARY_PATH=$old_lib "$m/allreduce_lsa-now" >"$f.now" 2>&1
    grep -q "symbol lookup error" "$f.now" || why+="the control (-z now) did not fail in the loader: $(head -n 1 "$f.now"); "
    end
  fi
  # The same with CMake, where it builds it (>= 2.30.7), from the top.
  c="nccl-matrix/$v/cmake-allreduce_lsa"
  if [ -n "$reason" ]; then skip "$c" "$reason"
  elif [ "$code" -lt 23007 ]; then skip "$c" "allreduce_lsa needs NCCL >= 2.30.7; CMake leaves it out, with a message, below"
  elif ! command -v cmake >/dev/null; then skip "$c" "cmake not installed"
  elif [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then skip "$c" "no nvcc in ${CUDA_HOME:-/usr/local/cuda}/bin"
  elif begin "$c"; then
    run cmake -S . -B "$m/cmake" -DNCCL_HOME="$home" -DCUDA_ARCH=90 -DCMAKE_BUILD_TYPE=Debug
    want_status 0
    [ "$status" = 0 ] && run cmake --build "$m/cmake" -j"$(nproc)" --target allreduce_lsa allreduce_fast
    want_status 0
    for prog in 03_allreduce_lsa/c/allreduce_lsa 04_allreduce_fast/c/allreduce_fast; do
      CUDA_VISIBLE_DEVICES= "$m/cmake/$prog" >"$f.run" 2>&1
      grep -q "no usable GPU" "$f.run" || why+="$prog did not stop at the GPU check: $(head -n 1 "$f.run"); "
    done
    end
  fi
  c="nccl-matrix/$v/unit-version-and-unique-id"
  if [ -n "$reason" ]; then skip "$c" "$reason"
  elif begin "$c"; then
    # The unit tests, built against the wheel into their own folder.
    run make --no-print-directory -s -C tests B="$m/tests" NCCL_HOME="$home" \
      "$m/tests/unit/gpu_facts" "$m/tests/unit/test_bootstrap"
    want_status 0
    "$m/tests/unit/gpu_facts" >"$f.facts" 2>&1
    grep -q "^nccl=$code " "$f.facts" || why+="ncclGetVersion says '$(cat "$f.facts")', wanted nccl=$code; "
    "$m/tests/unit/test_bootstrap" 2 >"$f.boot" 2>&1 || why+="test_bootstrap with the real ncclGetUniqueId failed: $(tail -n 1 "$f.boot"); "
    end
  fi
  # nccl_facts lays out ncclCommProperties_t itself (tools/facts/props_2_30.h
  # says why): every field where this NCCL's own header has it, for the
  # versions whose headers declare the struct; a field moved in a copy of
  # the layout must fail (the control).
  c="nccl-matrix/$v/facts-properties-layout"
  if [ -n "$reason" ]; then skip "$c" "$reason"
  elif ! grep -qs "ncclCommProperties" "$home"/include/nccl_device/*.h; then skip "$c" "nccl.h $v declares no ncclCommProperties_t"
  elif begin "$c"; then
    layout=(cc -std=c11 -fsyntax-only -I"$home/include" -idirafter "${CUDA_HOME:-/usr/local/cuda}/include")
    run "${layout[@]}" -I"$ROOT/tools/facts" "$ROOT/tests/unit/props_layout.c"
    want_status 0
    mkdir -p "$f.moved" && sed 's/int rank, nRanks, cudaDev;/int nRanks, rank, cudaDev;/' \
      "$ROOT/tools/facts/props_2_30.h" >"$f.moved/props_2_30.h"
    "${layout[@]}" -I"$f.moved" "$ROOT/tests/unit/props_layout.c" >/dev/null 2>&1 &&
      why+="a layout with rank and nRanks swapped passes too (control); "
    end
  fi
done
