# The Python variants (nccl4py, CuPy, mpi4py).
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

# ------------------------------------------------- the Python variants
PY_SCRIPTS="01_allreduce/python/allreduce_sm.py 02_allgather/python/allgather_ce.py"
# The PyTorch program of What ran's runs on a GPU needs PyTorch and a GPU
# to run: compiled and checked here only.
PY_CHECKED="$PY_SCRIPTS common/python/example_utils.py common/python/gpu_choice.py tests/whatran/torch_collectives.py"
if command -v python3 >/dev/null; then
  if begin python/compile; then
    run python3 -m py_compile $PY_CHECKED
    want_status 0
    end
  fi
  PYFLAKES=(pyflakes3)
  command -v pyflakes3 >/dev/null || PYFLAKES=(python3 -m pyflakes)
  if "${PYFLAKES[@]}" --version >/dev/null 2>&1; then
    if begin python/pyflakes; then
      run "${PYFLAKES[@]}" $PY_CHECKED
      want_status 0
      end
    fi
  else
    skip python/pyflakes "pyflakes not installed (Debian: apt-get install pyflakes3)"
  fi
fi
# The window report with stand-ins for nccl4py's handles: no window (0 or
# None) and a pending registration are told apart, without a GPU.
if command -v python3 >/dev/null && begin python/window-report-without-nccl4py; then
  run python3 "$ROOT/tests/unit/test_example_utils.py"
  want_status 0
  want_out "test_example_utils: all passed"
  end
fi
# The verification (NaN, a wrong element, the tolerance, AllGather's
# segments) on numpy arrays standing in for the results copied back.
if command -v python3 >/dev/null && python3 -c 'import numpy' 2>/dev/null; then
  if begin python/verification-without-a-gpu; then
    run python3 "$ROOT/tests/unit/test_python_verify.py"
    want_status 0
    want_out "test_python_verify: all passed"
    end
  fi
else
  skip python/verification-without-a-gpu "numpy not installed for python3 (python3 -m pip install numpy)"
fi
# Without mpi4py (a stand-in package that fails to import as a missing one
# does): a message naming the module and what to install, exit 1, no traceback.
if command -v python3 >/dev/null; then
  for script in $PY_SCRIPTS; do
    p=$(basename "$script")
    if begin "python/without-mpi4py/$p"; then
      mkdir -p "$TMPDIR/no-mpi4py/mpi4py"
      printf '%s\n' "raise ModuleNotFoundError(\"No module named 'mpi4py'\", name='mpi4py')" \
        >"$TMPDIR/no-mpi4py/mpi4py/__init__.py"
      PYTHONPATH=$TMPDIR/no-mpi4py run python3 "$script"
      want_status 1
      want_err "$p: No module named 'mpi4py': install the requirements, e.g. pip install -r requirements-cu13.txt"
      ! grep -q Traceback "$f.err" || why+="a traceback instead of the message; "
      end
    fi
  done
fi
# -n takes a whole number from 1 up, as the C programs' -n does: 0, a
# negative number or one with letters is a usage error (exit 2) naming it,
# before any GPU or MPI is touched.
if command -v python3 >/dev/null; then
  for script in $PY_SCRIPTS; do
    p=$(basename "$script")
    for n in 0 -3 12x; do
      if begin "python/count-refused/$p-n-$n"; then
        run python3 "$script" -n "$n"
        want_status 2
        want_err "$p: error: argument -n/--count: invalid count '$n': use a whole number from 1 up"
        end
      fi
    done
  done
fi
PY_REASON=""
if [ -n "$GPU_CASES_SKIPPED" ]; then
  PY_REASON=$GPU_CASES_SKIPPED
elif [ $HAVE_MPI = 0 ]; then
  PY_REASON="$NO_MPI"
elif ! python3 -c "import nccl.core, cupy, mpi4py" >"$LOG/python-import.txt" 2>&1; then
  PY_REASON="nccl4py, cupy or mpi4py does not import: $(tail -n 1 "$LOG/python-import.txt")"
fi
# nccl4py loads its own libnccl; with NCCL_HOME set the Python cases preload
# that NCCL instead, so that they test the NCCL the C programs were built on.
PY_PRELOAD_LIB=
if [ -n "${NCCL_HOME:-}" ] && [ -e "$NCCL_HOME/lib/libnccl.so.2" ]; then
  PY_PRELOAD_LIB=$NCCL_HOME/lib/libnccl.so.2
fi
PY_PRELOAD=(-x "LD_PRELOAD=$PY_PRELOAD_LIB")
PY_SHARED_REASON=$PY_REASON
if [ -z "$PY_REASON" ]; then
  py_nccl=$(LD_PRELOAD=$PY_PRELOAD_LIB python3 -c "import nccl.core as n; print(n.get_version().libnccl.version)" 2>&1 | tail -n 1)
  echo "nccl4py loads libnccl $py_nccl" >>"$LOG/python-import.txt"
  python3 -c "import sys; from packaging.version import Version as V; sys.exit(V(sys.argv[1]) < V('2.30'))" "$py_nccl" 2>/dev/null ||
    PY_SHARED_REASON="nccl4py loads libnccl $py_nccl, older than 2.30 (set NCCL_HOME to an NCCL >= 2.30)"
fi
for script in $PY_SCRIPTS; do
  p=$(basename "$script" .py)
  if [ -n "$PY_REASON" ]; then
    skip "python/gpu/$p" "$PY_REASON"
    continue
  fi
  for n in $(seq 1 "$NGPUS"); do
    if begin "python/gpu/$p-$n"; then
      expected $p $n --mode mpi --no-report >"$f.expected"
      gpu_run "${MPIRUN[@]}" "${PY_PRELOAD[@]}" -np $n python3 "$script"
      want_status 0; want_out_file "$f.expected"; end
    fi
  done
  if [ -n "$PY_SHARED_REASON" ]; then
    skip "python/shared-gpu/$p" "$PY_SHARED_REASON"
    continue
  fi
  for n in $(seq $((NGPUS + 1)) $((NGPUS * 4 < 8 ? NGPUS * 4 : 8))); do
    if begin "python/shared-gpu/$p-$n"; then
      expected $p $n --mode mpi --gpus $NGPUS --shared-sms $GPU_SMS --no-report >"$f.expected"
      NCCL_MULTI_RANK_GPU_ENABLE=1 gpu_run "${MPIRUN[@]}" "${PY_PRELOAD[@]}" -np $n python3 "$script"
      want_status 0; want_out_file "$f.expected"; end
    fi
  done
done

