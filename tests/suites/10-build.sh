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

