#!/usr/bin/env bash
# Turns a --bench CSV into a PNG: bandwidth against message size (log
# scale), one curve per mode, with the copy roofline measured in the same
# run; the loops' spread as error bars, and the sizes that fit in the L2
# cache circled. Bus bandwidth with several ranks; algorithm bandwidth with one (where
# bus bandwidth is 0 by definition). Needs gnuplot (Debian: gnuplot-nox)
# and python3.
#   tools/plot_bench.sh RESULTS.csv [OUT.png] [TITLE]
# PLOT_DATA_DIR=dir keeps what gnuplot plotted there: curve-N.dat (size,
# bandwidth, error bar low and high) per mode, roof.dat, l2.dat, meta.
#
# The CSV is data, never script: it is read with a CSV parser (RFC 4180
# quoting), refused unless its heading is the one --bench writes, its
# numbers must be numbers, its curves go to data files of fixed names, and
# every text that reaches gnuplot (modes, program, title, file name) is a
# single-quoted gnuplot string, where nothing but a doubled quote is special.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 3 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: tools/plot_bench.sh RESULTS.csv [OUT.png] [TITLE]: plots a --bench CSV" >&2
  [ $# -ge 1 ] && [[ $1 == -h || $1 == --help ]] && exit 0
  exit 2
fi
csv=$1
png=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null || { echo "plot_bench.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -s "$csv" ] || { echo "plot_bench.sh: $csv is empty or missing" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Writes $tmp/curve-N.dat (size, bandwidth) per mode, $tmp/roof.dat, and
# $tmp/meta: program, ranks, bandwidth name, then one mode name per line.
python3 - "$csv" "$tmp" <<'PYTHON' || exit 1
import csv, math, sys
# The headings --bench writes: today's (with cv_pct and the graph columns),
# and the three before it (docs/bench holds CSVs of those).
BEFORE = ("program,ranks,mode,size_bytes,count,time_us,algbw_GBps,busbw_GBps,roof_GBps,pct_roof,"
          "engine,kernels,copies,speedup_vs_plain,coll_slowdown_pct,gemm_slowdown_pct").split(",")
SPREAD = (BEFORE[:6] + ["spread_pct", "time_min_us", "time_max_us"] + BEFORE[6:9] + ["in_l2"]
          + BEFORE[9:14] + ["speedup_in_noise"] + BEFORE[14:] + ["kernel_names"])
GRAPH = ["graph_time_us", "graph_spread_pct", "graph_cv_pct", "graph_time_min_us",
         "graph_time_max_us", "graph_loops_us"]
TODAY = SPREAD[:7] + ["cv_pct"] + SPREAD[7:9] + ["loops_us"] + GRAPH + SPREAD[9:]
HEADINGS = (TODAY + ["gpu"], TODAY, SPREAD, BEFORE + ["kernel_names"], BEFORE)
path, out = sys.argv[1], sys.argv[2]
def refuse(why):
    sys.exit(f"plot_bench.sh: {path}: {why}")
with open(path, newline="", errors="replace") as f:
    rows = list(csv.reader(f))
if not rows or rows[0] not in HEADINGS:
    refuse("not a --bench CSV: its heading is not " + ",".join(HEADINGS[0]))
HEADING = rows[0]
def number(text, what, line):
    try:
        value = float(text)
    except ValueError:
        refuse(f"line {line}: {what} '{text[:40]}' is not a number")
    if not math.isfinite(value):
        refuse(f"line {line}: {what} '{text[:40]}' is not a finite number")
    return value
def clean(text):  # one line of printable text
    return "".join(c for c in text if c.isprintable())[:80]
data = rows[1:]
if not data:
    refuse("no rows after the heading")
col = {name: i for i, name in enumerate(HEADING)}
ranks = int(number(data[0][col["ranks"]], "ranks", 2))
bw = "busbw_GBps" if ranks > 1 else "algbw_GBps"
modes, curves, roof, cached = [], {}, [], []
for n, row in enumerate(data, start=2):
    if len(row) != len(HEADING):
        refuse(f"line {n} has {len(row)} cells, the heading {len(HEADING)}")
    mode = row[col["mode"]]
    if mode.endswith("+gemm"):
        continue
    size = number(row[col["size_bytes"]], "size_bytes", n)
    if mode not in curves:
        modes.append(mode)
        curves[mode] = []
    if row[col[bw]] != "":
        value = number(row[col[bw]], bw, n)
        # The loops' spread as a range of bandwidth: bw x median / slowest
        # to bw x median / fastest (no range in older CSVs).
        low = high = value
        if "time_min_us" in col and row[col["time_min_us"]] != "":
            median = number(row[col["time_us"]], "time_us", n)
            fastest = number(row[col["time_min_us"]], "time_min_us", n)
            slowest = number(row[col["time_max_us"]], "time_max_us", n)
            if fastest > 0 and slowest > 0:
                low, high = value * median / slowest, value * median / fastest
        curves[mode].append((size, value, low, high))
        if "in_l2" in col and row[col["in_l2"]] == "L2":
            cached.append(curves[mode][-1][:2])
        # --graph: the replayed loops as a curve of their own, the same
        # bandwidth scaled by eager time / graph time.
        if "graph_time_us" in col and row[col["graph_time_us"]] != "":
            eager = number(row[col["time_us"]], "time_us", n)
            replay = number(row[col["graph_time_us"]], "graph_time_us", n)
            if replay > 0:
                name = mode + " graph"
                if name not in curves:
                    modes.append(name)
                    curves[name] = []
                g = value * eager / replay
                lo_t = number(row[col["graph_time_max_us"]], "graph_time_max_us", n)
                hi_t = number(row[col["graph_time_min_us"]], "graph_time_min_us", n)
                curves[name].append((size, g, value * eager / lo_t if lo_t > 0 else g,
                                     value * eager / hi_t if hi_t > 0 else g))
    if mode == modes[0] and row[col["roof_GBps"]] != "":
        roof.append((size, number(row[col["roof_GBps"]], "roof_GBps", n)))
for i, mode in enumerate(modes):
    with open(f"{out}/curve-{i}.dat", "w") as f:
        f.writelines(f"{s:.17g} {v:.17g} {lo:.17g} {hi:.17g}\n" for s, v, lo, hi in curves[mode])
with open(f"{out}/roof.dat", "w") as f:
    f.writelines(f"{s:.17g} {v:.17g}\n" for s, v in roof)
with open(f"{out}/l2.dat", "w") as f:  # the sizes that fit in the L2 cache
    f.writelines(f"{s:.17g} {v:.17g}\n" for s, v in cached)
with open(f"{out}/meta", "w") as f:
    name = "bus bandwidth (GB/s)" if ranks > 1 else "algorithm bandwidth (GB/s)"
    gpu = clean(data[0][col["gpu"]]) if "gpu" in col else ""
    f.write("\n".join([clean(data[0][col["program"]]), str(ranks), name, gpu] + [clean(m) for m in modes]) + "\n")
PYTHON

# quote TEXT: TEXT as a single-quoted gnuplot string.
quote() { printf "'%s'" "${1//\'/\'\'}"; }
mapfile -t meta <"$tmp/meta"
program=${meta[0]} ranks=${meta[1]} bw_name=${meta[2]} gpu=${meta[3]}
plot=""
for ((i = 4; i < ${#meta[@]}; i++)); do
  plot+="$(quote "$tmp/curve-$((i - 4)).dat") using 1:2:3:4 with yerrorlines title $(quote "${meta[i]}"), "
done
plot+="$(quote "$tmp/roof.dat") using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'copy roofline'"
[ -s "$tmp/l2.dat" ] &&
  plot+=", $(quote "$tmp/l2.dat") using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'fits in the L2 cache (its speed, not memory)'"
title=${3:-"$program --bench, $ranks rank(s)${gpu:+, $gpu}"}
title=$(printf '%s' "$title" | tr -d '\000-\037')
gnuplot <<GNUPLOT
set terminal pngcairo size 900,560 noenhanced
set output $(quote "$png")
set title $(quote "$title")
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set ylabel $(quote "$bw_name")
set key top left
set grid
plot $plot
GNUPLOT
if [ -n "${PLOT_DATA_DIR:-}" ]; then
  mkdir -p "$PLOT_DATA_DIR" && cp "$tmp"/*.dat "$tmp/meta" "$PLOT_DATA_DIR"/
fi
echo "wrote $png"
