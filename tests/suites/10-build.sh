# How the examples build: mode switches, clang, install, old headers.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------------------------- the build
# Switching MPI=0/1 must relink the program in the other mode.
if [ $HAVE_MPI = 1 ] && begin build/mode-switch; then
  dir=$B/modeswitch
  links_mpi() { ldd "$dir/allreduce_sm" | grep -q libmpi; }
  mk() { make --no-print-directory -s -C 01_allreduce/c BUILD_DIR="$dir/obj" BIN="$dir/allreduce_sm" "$QUICK_CFLAGS" "$@" >>"$f.out" 2>>"$f.err"; }
  run true
  mk MPI=0 && ! links_mpi || why+="MPI=0 build links libmpi; "
  mk MPI=1 && links_mpi || why+="MPI=1 after MPI=0 did not rebuild for MPI; "
  mk MPI=0 && ! links_mpi || why+="MPI=0 after MPI=1 kept the MPI binary; "
  end
elif [ $HAVE_MPI = 0 ]; then
  skip build/mode-switch "$NO_MPI"
fi
if begin build/help-writes-nothing; then
  run make --no-print-directory -C 01_allreduce/c help BUILD_DIR="$B/helponly"
  want_status 0
  [ ! -e "$B/helponly" ] || why+="make help created $B/helponly; "
  end
fi
if command -v clang >/dev/null && [ $HAVE_MPI = 1 ]; then
  if begin build/clang-MPI=1; then
    run make --no-print-directory -s -C 01_allreduce/c CC=clang MPI=1 BUILD_DIR="$B/clangmpi/obj" BIN="$B/clangmpi/allreduce_sm"
    want_status 0
    ldd "$B/clangmpi/allreduce_sm" 2>/dev/null | grep -q libmpi || why+="not linked with libmpi; "
    end
  fi
else
  skip build/clang-MPI=1 "clang or MPI not installed"
fi
# The facts probe built against the simulation relinks when the
# simulation's object changes (else the facts/sim cases test an old one):
# built into a scratch folder from a copy of the object, whose time is then
# moved ahead.
if begin build/facts-probe-relinks-when-the-simulation-changes; then
  need sim-tools/nccl_facts
  mkdir -p "$f.dir" && cp "$B/sim-pthread/sim.o" "$f.dir/sim.o"
  probe=(make --no-print-directory -s -C "$ROOT/tools" facts FACTS_BIN="$f.dir/nccl_facts"
    RUNTIME_LIBS="$f.dir/sim.o" HAVE_CUPTI=0 HAVE_CUBLAS=0)
  run "${probe[@]}"
  want_status 0
  # The probe newer than its sources, the object newer still: only the
  # object can make it relink (which gives it the time of now).
  touch -d '+30 min' "$f.dir/nccl_facts" && touch -d '+1 hour' "$f.dir/sim.o"
  before=$(stat -c %Y "$f.dir/nccl_facts" 2>/dev/null)
  run "${probe[@]}"
  want_status 0
  after=$(stat -c %Y "$f.dir/nccl_facts" 2>/dev/null)
  [ -n "$before" ] && [ "$after" != "$before" ] ||
    why+="the probe was not relinked after its simulation changed; "
  end
fi

if begin build/install; then
  run make --no-print-directory -s -C 02_allgather/c install "$QUICK_CFLAGS" BUILD_DIR="$B/install/obj" \
    BIN="$B/install/allgather_ce" DESTDIR="$B/install/root" PREFIX=/opt/symmem
  want_status 0
  [ -x "$B/install/root/opt/symmem/bin/allgather_ce" ] || why+="not installed under DESTDIR/PREFIX/bin; "
  end
fi
# Headers too old: the programs refuse to compile, saying why.
for case in "01_allreduce 22605 older than 2.27: symmetric windows need NCCL >= 2.27" \
  "02_allgather 22802 older than 2.28.3: allgather_ce needs NCCL >= 2.28.3"; do
  read -r ex code text <<<"$case"
  if begin "build/old-nccl.h/$ex-$code"; then
    run cc -std=c11 -fsyntax-only -Icommon/include -Itests/old-nccl -DOLD_NCCL_CODE=$code \
      -idirafter "${CUDA_HOME:-/usr/local/cuda}/include" "$ex/c/main.c"
    want_failure
    want_err "#error \"nccl.h is $text\""
    end
  fi
done
if begin build/bad-MPI-value; then
  run make --no-print-directory -C 01_allreduce/c MPI=yes BUILD_DIR="$B/badmpi"
  want_failure
  want_err "MPI=yes: use MPI=1 for the MPI build or MPI=0 (default) for threads"
  end
fi
if begin build/mpi-without-mpicc; then
  run make --no-print-directory -C 01_allreduce/c MPI=1 MPICC=/no/such/mpicc BUILD_DIR="$B/nompicc"
  want_failure
  want_err "MPI=1 needs MPI's compiler wrapper, and '/no/such/mpicc' is not found: install Open MPI"
  [ "$(grep -c . "$f.err")" = 1 ] || why+="$(grep -c . "$f.err") lines on stderr, not one; "
  end
fi

# wheel_layout DIR: a copy of this machine's NCCL in the pip wheel's layout
# (DIR/nccl/include, DIR/nccl/lib/libnccl.so.2 and no libnccl.so): a second
# NCCL at another path, for the cases below.
wheel_layout() {
  local cuda=${CUDA_HOME:-/usr/local/cuda} lib hdr
  lib=$(ls "$cuda/lib64/libnccl.so.2" /usr/lib/x86_64-linux-gnu/libnccl.so.2 2>/dev/null | head -n 1)
  hdr=$(ls "$cuda/include/nccl.h" /usr/include/nccl.h 2>/dev/null | head -n 1)
  rm -rf "$1" && mkdir -p "$1/nccl/include" "$1/nccl/lib"
  cp "$hdr" "$1/nccl/include/" && cp -r "$(dirname "$hdr")"/nccl_device* "$1/nccl/include/" 2>/dev/null
  cp -L "$lib" "$1/nccl/lib/"
}
# nccl_loaded PROGRAM: the libnccl.so.2 path the program loads.
nccl_loaded() { ldd "$1" 2>/dev/null | sed -n 's/.*libnccl.so.2 => \(.*\) (0x[0-9a-f]*)$/\1/p'; }

# NCCL_HOME in the pip wheel's layout: the build links that file and the
# program loads it without LD_LIBRARY_PATH.
if begin build/nccl-home-wheel-layout; then
  w=$B/wheel-layout
  wheel_layout "$w"
  run make --no-print-directory -s -C 01_allreduce/c NCCL_HOME="$w/nccl" BUILD_DIR="$w/obj" BIN="$w/allreduce_sm"
  want_status 0
  [ "$(nccl_loaded "$w/allreduce_sm")" = "$w/nccl/lib/libnccl.so.2" ] ||
    why+="the program does not load $w/nccl/lib/libnccl.so.2; "
  NTHREADS=1 "$w/allreduce_sm" >"$f.run" 2>&1
  grep -q "Results verified correctly\|no usable GPU" "$f.run" || why+="the program did not run: $(head -n 2 "$f.run"); "
  end
fi
# The same in a folder whose path has a space (make's own functions cannot
# name it; the Makefiles quote it for the shell): built (lean: the point is
# the paths), linked with that file, loaded from there.
if begin build/nccl-home-with-a-space; then
  w="$B/wheel layout with a space"
  wheel_layout "$w"
  run make --no-print-directory -s -C 01_allreduce/c NCCL_HOME="$w/nccl" LEAN=1 "$QUICK_CFLAGS" \
    BUILD_DIR="$B/wheel-layout-with-a-space/obj" BIN="$B/wheel-layout-with-a-space/allreduce_sm"
  want_status 0
  no_err "has neither lib/libnccl.so nor lib/libnccl.so.2"
  [ "$(nccl_loaded "$B/wheel-layout-with-a-space/allreduce_sm")" = "$w/nccl/lib/libnccl.so.2" ] ||
    why+="the program loads '$(nccl_loaded "$B/wheel-layout-with-a-space/allreduce_sm")', not $w/nccl/lib/libnccl.so.2; "
  end
fi

# Every build input is recorded per build: changing one rebuilds what
# depends on it, in both directions, through the top-level Makefile (which
# hands its variables to the example's) as users run it. In a scratch copy
# of the sources, so that the user's own build is left alone.
# (MPI_HOME is recorded in MPI builds only, the mode by build/mode-switch.)
# The sources as the suite copies them, also from a folder that another
# git repository ignores (where git lists nothing).
if begin build/sources-copied-inside-another-repository; then
  outer=$TMPDIR/outer-repository
  rm -rf "$outer" && mkdir -p "$outer/inner"
  run git -C "$outer" init -q
  echo "inner/" >"$outer/.gitignore"
  tracked_files Makefile common 01_allreduce tests/checks | (cd "$ROOT" && tar -cf - -T -) | tar -xf - -C "$outer/inner"
  mine=$(tracked_files Makefile common 01_allreduce | sort)
  theirs=$(ROOT=$outer/inner tracked_files Makefile common 01_allreduce | sort)
  [ -n "$mine" ] && [ "$mine" = "$theirs" ] || why+="the copy inside another repository lists $(echo "$theirs" | grep -c .) files, this tree $(echo "$mine" | grep -c .); "
  python3 -c 'import sys; sys.path.insert(0, sys.argv[1] + "/tests/checks"); from markdown import tracked; sys.exit(not tracked("*.c", root=sys.argv[1]))' "$outer/inner" ||
    why+="tests/checks/markdown.py finds no .c file there; "
  end
fi
if begin build/inputs-rebuild; then
  t=$B/inputs-rebuild w=$B/inputs-rebuild-nccl
  rm -rf "$t" && mkdir -p "$t"
  tracked_files Makefile common 01_allreduce | (cd "$ROOT" && tar -cf - -T -) | tar -xf - -C "$t"
  wheel_layout "$w"
  # (the baseline unoptimised; a CFLAGS given after it wins)
  top() { timeout -k 5 "$TIMEOUT" make -j"$(nproc)" --no-print-directory -C "$t" 01_allreduce "$QUICK_CFLAGS" "$@" >"$f.step" 2>&1 || why+="make $* failed: $(tail -n 2 "$f.step" | tr '\n' ' '); "; cat "$f.step" >>"$f.out"; }
  relinked() { ! [ "$t/allreduce_sm" -ot "$f.mark" ] && grep -q "LD      allreduce_sm" "$f.step"; }
  run true
  top
  first=$(nccl_loaded "$t/allreduce_sm")
  [ -n "$first" ] || why+="the first build loads no libnccl.so.2; "
  top NCCL_HOME="$w/nccl"
  [ "$(nccl_loaded "$t/allreduce_sm")" = "$w/nccl/lib/libnccl.so.2" ] || why+="NCCL_HOME=$w/nccl: loads $(nccl_loaded "$t/allreduce_sm"); "
  grep -q "CONFIG .*NCCL_HOME.*changed" "$f.step" || why+="NCCL_HOME's change was not said; "
  top
  [ "$(nccl_loaded "$t/allreduce_sm")" = "$first" ] || why+="back without NCCL_HOME: loads $(nccl_loaded "$t/allreduce_sm"), wanted $first; "
  top
  grep -q "CONFIG\|  CC \|  LD " "$f.step" && why+="an unchanged configuration rebuilt: $(grep -m1 'CONFIG\|  CC \|  LD ' "$f.step"); "
  # The others: each change recompiles or relinks, and is said.
  ln -sfn "${CUDA_HOME:-/usr/local/cuda}" "$t/cuda"
  for input in "CFLAGS=-O1 -g" "LDFLAGS=-Wl,-O1" "CUDA_HOME=$t/cuda"; do
    touch "$f.mark" && sleep 1
    top "$input"
    relinked || why+="$input did not relink; "
    grep -q "CONFIG .*${input%%=*} .*changed" "$f.step" || why+="$input: the change was not said; "
    touch "$f.mark" && sleep 1
    top
    relinked || why+="back from $input did not relink; "
  done
  if command -v clang >/dev/null; then
    top CC=clang
    grep -q "CONFIG .*CC .*changed" "$f.step" && grep -q "  CC      main.c" "$f.step" || why+="CC=clang did not recompile; "
    top
  fi
  echo "V=1 names the old and new values:" >>"$f.out"
  top V=1 NCCL_HOME="$w/nccl"
  grep -q "< NCCL_HOME=[^ ]* .*> NCCL_HOME=$w/nccl" "$f.step" || why+="make V=1 did not show NCCL_HOME's old and new value; "
  end
fi
if begin build/cuda-home-without-toolkit; then
  run make --no-print-directory -C 01_allreduce/c CUDA_HOME="$B/no-such-cuda" BUILD_DIR="$B/no-such-cuda/obj"
  want_failure
  want_err "CUDA_HOME=$B/no-such-cuda has no include/cuda_runtime.h"
  [ ! -e "$B/no-such-cuda/obj" ] || why+="it wrote $B/no-such-cuda/obj before refusing; "
  end
fi

# Each example's own `make test` builds it and runs it once, as NCCL's
# examples do: on every visible GPU (pthread), under mpirun -np NP (MPI).
# Without a GPU it fails with the program's one-line message.
for ex in 01_allreduce:allreduce_sm 02_allgather:allgather_ce; do
  p=${ex#*:} ex=${ex%:*}
  for mode in pthread mpi; do
    c=build/make-test/$ex-$mode
    [ $mode = mpi ] && { mpi_cases "$c" || continue; }
    begin "$c" || continue
    # NP: the default 2 where the GPUs allow it (one rank per GPU without
    # NCCL_MULTI_RANK_GPU_ENABLE), else one per GPU.
    np=2
    [ "$NGPUS" = 1 ] && np=1
    run make --no-print-directory -s -C $ex/c test MPI=$([ $mode = mpi ] && echo 1 || echo 0) NP=$np "$QUICK_CFLAGS" \
      BUILD_DIR="$B/example-test/$p-$mode" BIN="$B/example-test/$p-$mode/$p"
    if [ "$NGPUS" -gt 0 ]; then
      want_status 0
      want_out "Results verified correctly"
      [ $mode = mpi ] && want_out "Number of processes: $np"
    elif [ $mode = mpi ]; then # the same for both processes: rank 0 says it, once
      want_failure
      want_err "$p: rank 0: no usable GPU: cudaGetDeviceCount failed: "
      [ "$(grep -c 'no usable GPU' "$f.err")" = 1 ] || why+="'no usable GPU' said $(grep -c 'no usable GPU' "$f.err") times, not once; "
    else
      want_failure
      want_err "$p: no usable GPU: cudaGetDeviceCount failed: "
    fi
    end
  done
done
# tools/nccl_facts builds everywhere; without a GPU every fact says n/a and
# why, and the probe exits 1 saying so. Its options are checked.
# tools/libgaps.so (a measuring tool for GPU runs) wraps NCCL's two
# collectives: every argument and the result must pass through unchanged.
# A stand-in libnccl prints what it got; the expected lines come from the
# arguments tests/unit/gaps_caller.c passes and nccl.h's values (ncclFloat
# 7, ncclSum 0, ncclInt8 0; ncclInvalidUsage 5, ncclInProgress 7).
if ! grep -qs cuptiActivityEnable "${CUDA_HOME:-/usr/local/cuda}/include/cupti_activity.h"; then
  skip build/tools-gaps-forwards-nccl-calls "no CUPTI under ${CUDA_HOME:-/usr/local/cuda}"
elif begin build/tools-gaps-forwards-nccl-calls; then
  g=$B/tools-cpu/gaps && mkdir -p "$g"
  inc=(${NCCL_HOME:+-I"$NCCL_HOME/include"} -idirafter "${CUDA_HOME:-/usr/local/cuda}/include")
  run make --no-print-directory -s -C tools gaps GAPS_LIB="$g/libgaps.so"
  want_status 0
  cc -std=c11 -Wall -Werror "${inc[@]}" -fPIC -shared -o "$g/libfakenccl.so" tests/unit/gaps_fake_nccl.c &&
    cc -std=c11 -Wall -Werror "${inc[@]}" -o "$g/caller" tests/unit/gaps_caller.c -L"$g" -Wl,-rpath,"$g" -lfakenccl ||
    why+="the stand-in NCCL or its caller did not build; "
  printf '%s\n' "nccl got AllReduce 0x1000 0x2000 12345 7 0 0x3000 0x4000" "AllReduce returned 5" \
    "nccl got AllGather 0x5000 0x6000 678 0 0x7000 0x8000" "AllGather returned 7" >"$f.once"
  cat "$f.once" "$f.once" "$f.once" >"$f.expected"
  rm -f "$f.gaps"
  GAPS_OUT=$f.gaps LD_PRELOAD=$g/libgaps.so run "$g/caller"
  want_status 0
  diff "$f.expected" "$f.out" >/dev/null || why+="with the wrapper, the calls' arguments or results changed: $(diff "$f.expected" "$f.out" | head -n 4 | tr '\n' ' '); "
  grep -q "^gaps: AllReduce count 12345 comm 0x3000 send 0x1000 recv 0x2000: calls 3 (with GPU work 0): host_us [0-9.]* period_us [-0-9.]* (mean [-0-9.]*); GPU side not measured" "$f.gaps" ||
    why+="GAPS_OUT has no line for the 3 AllReduce calls; "
  grep -q "^gaps: AllGather count 678 comm 0x7000 send 0x5000 recv 0x6000: calls 3 " "$f.gaps" ||
    why+="GAPS_OUT has no line for the 3 AllGather calls; "
  if [ "$NGPUS" = 0 ]; then want_err "gaps: CUPTI could not be set up: no GPU work is measured"; fi
  # control: without the wrapper the same output, and no report
  rm -f "$f.gaps"
  GAPS_OUT=$f.gaps "$g/caller" >"$f.plain" 2>&1
  diff -q "$f.expected" "$f.plain" >/dev/null || why+="the caller's own output differs from the expected lines (control); "
  [ ! -e "$f.gaps" ] || why+="a report was written without the wrapper (control); "
  end
fi

if begin build/tools-nccl-facts; then
  run make --no-print-directory -s -C tools facts FACTS_BIN="$B/tools-cpu/nccl_facts"
  want_status 0
  if [ "$NGPUS" = 0 ]; then
    run "$B/tools-cpu/nccl_facts" --only env.cumem-enable-0 --tsv
    want_status 1
    want_err "nccl_facts: no GPU is visible, so no fact could be asked"
    want_out "register.memalloc"   # its control runs too
    want_out "env.cumem-enable-0"
    grep -q "	n/a	.*no GPU: " "$f.out" || why+="no 'n/a ... no GPU' line; "
  fi
  run "$B/tools-cpu/nccl_facts" --help
  want_status 0
  want_out "Usage: nccl_facts [--ranks N] [--tsv] [--only ID[,ID...]] [--timeout S]"
  run "$B/tools-cpu/nccl_facts" --only no.such.fact
  want_status 2
  want_err "nccl_facts: --only names no fact"
  for v in 0 65 4294967298 -1 2x ""; do
    run "$B/tools-cpu/nccl_facts" --ranks "$v"
    want_status 2
    want_err "--ranks takes a whole number from 1 to 64"
  done
  run "$B/tools-cpu/nccl_facts" --timeout 4294967297
  want_status 2
  want_err "--timeout takes a whole number of seconds from 1 to 86400"
  end
fi
if begin build/nccl-home-without-library; then
  run make --no-print-directory -C 01_allreduce/c NCCL_HOME="$B/no-such-nccl" BUILD_DIR="$B/no-such-nccl/obj"
  want_failure
  want_err "NCCL_HOME=$B/no-such-nccl has neither lib/libnccl.so nor lib/libnccl.so.2"
  end
fi
