# How the examples build: mode switches, clang, install, old headers.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).

# ------------------------------------------------------------- the build
# Switching MPI=0/1 must relink the program in the other mode.
if [ $HAVE_MPI = 1 ] && begin build/mode-switch; then
  dir=$B/modeswitch
  links_mpi() { ldd "$dir/allreduce_sm" | grep -q libmpi; }
  mk() { make --no-print-directory -s -C 01_allreduce/c BUILD_DIR="$dir/obj" BIN="$dir/allreduce_sm" "$@" >>"$f.out" 2>>"$f.err"; }
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
if begin build/install; then
  run make --no-print-directory -s -C 02_allgather/c install BUILD_DIR="$B/install/obj" \
    BIN="$B/install/allgather_ce" DESTDIR="$B/install/root" PREFIX=/opt/symmem
  want_status 0
  [ -x "$B/install/root/opt/symmem/bin/allgather_ce" ] || why+="not installed under DESTDIR/PREFIX/bin; "
  end
fi
# Headers too old: the programs refuse to compile, saying why.
for case in "01_allreduce 22605 older than 2.27: symmetric windows need NCCL >= 2.27" \
  "02_allgather 22703 older than 2.28: allgather_ce needs NCCL >= 2.28"; do
  read -r ex code text <<<"$case"
  if begin "build/$ex-with-nccl.h-$code"; then
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

# NCCL_HOME in the pip wheel's layout (include/, lib/libnccl.so.2 and no
# libnccl.so), made here from the NCCL this machine has: the build links
# that file and the program loads it without LD_LIBRARY_PATH.
if begin build/nccl-home-wheel-layout; then
  cuda=${CUDA_HOME:-/usr/local/cuda}
  lib=$(ls "$cuda/lib64/libnccl.so.2" /usr/lib/x86_64-linux-gnu/libnccl.so.2 2>/dev/null | head -n 1)
  hdr=$(ls "$cuda/include/nccl.h" /usr/include/nccl.h 2>/dev/null | head -n 1)
  w=$B/wheel-layout
  rm -rf "$w" && mkdir -p "$w/nccl/include" "$w/nccl/lib"
  cp "$hdr" "$(dirname "$hdr")"/nccl_device* "$w/nccl/include/" 2>/dev/null
  cp -L "$lib" "$w/nccl/lib/"
  run make --no-print-directory -s -C 01_allreduce/c NCCL_HOME="$w/nccl" BUILD_DIR="$w/obj" BIN="$w/allreduce_sm"
  want_status 0
  ldd "$w/allreduce_sm" 2>/dev/null | grep -q "libnccl.so.2 => $w/nccl/lib/libnccl.so.2" ||
    why+="the program does not load $w/nccl/lib/libnccl.so.2; "
  NTHREADS=1 "$w/allreduce_sm" >"$f.run" 2>&1
  grep -q "Results verified correctly\|no usable GPU" "$f.run" || why+="the program did not run: $(head -n 2 "$f.run"); "
  end
fi
if begin build/nccl-home-without-library; then
  run make --no-print-directory -C 01_allreduce/c NCCL_HOME="$B/no-such-nccl" BUILD_DIR="$B/no-such-nccl/obj"
  want_failure
  want_err "NCCL_HOME=$B/no-such-nccl has neither lib/libnccl.so nor lib/libnccl.so.2"
  end
fi
