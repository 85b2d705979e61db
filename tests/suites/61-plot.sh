# tools/plot_bench.sh: a --bench CSV drawn, the curves against the
# definitions, a hostile CSV, its usage. Each case makes its own CSV.
# Sourced by tests/run_tests.sh (tests/lib/tap.sh: begin, need, run, want_*, end).
# Lane: first (tests/run_tests.sh runs the lanes of a whole run at once)

if command -v gnuplot >/dev/null; then
  for p in $PROGRAMS; do
    if begin "plot/png/$p"; then
      sim_run sim-pthread $p 2 --bench -b 1K -e 64K -f 4 -w 1 -i 2 --csv "$f.csv" --overlap
      want_status 0
      run tools/plot_bench.sh "$f.csv" "$f.png"
      want_status 0
      [ "$(head -c 4 "$f.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e47 ] || why+="no PNG written; "
      end
    fi
  done
  # What was plotted, against the definitions: with one rank the bus
  # bandwidth is 0 by definition, so the curves are algbw = size / time;
  # with more, busbw (AllReduce: 2(n-1)/n algbw, which equals algbw at 2
  # ranks and not at 3). The error bars: the bandwidth times median /
  # slowest loop and median / fastest loop; the roofline: the first mode's
  # roof_GBps at each size. Sizes of 1 and 4 MiB, so that the bandwidths
  # stay well above the CSV's 0.001 GB/s rounding even when a loaded
  # machine slows the simulation down.
  for n in 1 2 3; do
    if begin "plot/curves/allreduce_sm-$n"; then
      csv=$f.csv
      sim_run sim-pthread allreduce_sm $n --bench -b 1M -e 4M -f 4 -w 0 -i 2 -r 2 --csv "$f.sim.csv"
      want_status 0
      # The simulated clock gives every loop the same time (tests/sim/clock.c),
      # so the error bars are drawn from loops set apart here: the fastest
      # 0.9 and the slowest 1.25 times the median.
      python3 - "$f.sim.csv" "$csv" <<'PY' || why+="the CSV could not be spread; "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[2], "w", newline="") as out:
    w = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
    w.writeheader()
    for r in rows:
        t = float(r["time_us"])
        r["time_min_us"], r["time_max_us"] = f"{0.9 * t:.3f}", f"{1.25 * t:.3f}"
        w.writerow(r)
PY
      PLOT_DATA_DIR=$f.data run tools/plot_bench.sh "$csv" "$f.png"
      want_status 0
      python3 - "$csv" "$f.data" "$n" >"$f.check" 2>&1 <<'PY' || why+="$(head -n 2 "$f.check" | tr '\n' ' '); "
import csv, sys
sys.path.insert(0, "tests/oracles")
from bench_oracle import BUS  # noqa: E402  (the definitions, in one place)
path, data, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
every = list(csv.DictReader(open(path)))
rows = [r for r in every if r["mode"] == "sym"]
def bw(r, t):
    return int(r["size_bytes"]) / t / 1e3 * (BUS["allreduce_sm"](n) if n > 1 else 1)
want = []
for r in rows:
    v = bw(r, float(r["time_us"]))
    t, lo, hi = float(r["time_us"]), float(r["time_min_us"]), float(r["time_max_us"])
    want.append((int(r["size_bytes"]), v, v * t / hi, v * t / lo))
meta = open(f"{data}/meta").read().split("\n")
modes = meta[4:]
# where it ran: the simulation names its GPUs so (tests/sim/cuda.c)
if meta[3] != "NVIDIA H200 (simulated)" or {r["gpu"] for r in every} != {meta[3]}:
    sys.exit(f"the plot's GPU is '{meta[3]}', wanted 'NVIDIA H200 (simulated)' from every row's gpu")
got = [tuple(map(float, l.split())) for l in open(f"{data}/curve-{modes.index('sym')}.dat")]
name = "algorithm bandwidth (GB/s)" if n == 1 else "bus bandwidth (GB/s)"
if meta[2] != name:
    sys.exit(f"the y axis is '{meta[2]}', wanted '{name}'")
def near(g, w):
    return abs(g - w) <= 0.0011 + 2e-3 * w
if len(got) != len(want) or any(g[0] != w[0] or not all(map(near, g[1:], w[1:])) for g, w in zip(got, want)):
    sys.exit(f"plotted (size, bw, low, high) {got}, the definition gives {want}")
if max(w[1] for w in want) < 0.01:
    sys.exit("the values are too small to tell the curves apart")
if all(w[2] == w[3] for w in want):
    sys.exit("no error bar has a length: the loops' times are all equal")
first = every[0]["mode"]
roof = [(float(r["size_bytes"]), float(r["roof_GBps"])) for r in every if r["mode"] == first]
got_roof = [tuple(map(float, l.split())) for l in open(f"{data}/roof.dat")]
if got_roof != roof:
    sys.exit(f"roofline points {got_roof}, the CSV's {first} rows give {roof}")
PY
      end
    fi
  done
  # A hostile CSV: the plot refuses a heading it does not know, and never
  # runs text from the CSV as gnuplot commands, nor uses it as a path.
  if begin "plot/hostile-csv"; then
    good=$f.good.csv
    sim_run sim-pthread allreduce_sm 2 --bench -b 1K -e 64K -f 4 -w 1 -i 2 --csv "$good"
    want_status 0
    rm -f "$TMPDIR/pwned"
    # The program cell ends the title's string and calls system() in a
    # script that pastes it into `set title '...'`.
    payload="x'; system('touch '.'$TMPDIR/pwned') #"
    { head -n 1 "$good"
      tail -n +2 "$good" | while IFS= read -r line; do printf '%s\n' "$payload,${line#*,}"; done
    } >"$f.csv"
    run tools/plot_bench.sh "$f.csv" "$f.png"
    want_status 0
    [ ! -e "$TMPDIR/pwned" ] || why+="a command from the CSV or the title ran; "
    [ "$(head -c 4 "$f.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e47 ] || why+="no PNG written; "
    printf 'a,b,c\n1,2,3\n' >"$f.bad.csv"
    run tools/plot_bench.sh "$f.bad.csv" "$f.bad.png"
    want_status 1
    want_err "not a --bench CSV: its heading is not program,ranks,mode,"
    end
  fi
  if begin "plot/usage"; then
    run tools/plot_bench.sh
    want_status 2
    want_err "usage: tools/plot_bench.sh RESULTS.csv [OUT.png] [TITLE]"
    ! grep -q "parameter null or not set\|unbound variable" "$f.err" || why+="a shell error instead of the usage; "
    run tools/plot_bench.sh --help
    want_status 0
    want_err "usage: tools/plot_bench.sh"
    end
  fi
  if begin "plot/missing-csv"; then
    run tools/plot_bench.sh "$LOG/no-such.csv"
    want_status 1
    want_err "is empty or missing"
    end
  fi
else
  skip "plot/*" "gnuplot not installed (Debian: apt-get install gnuplot-nox)"
fi
