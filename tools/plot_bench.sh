#!/usr/bin/env bash
# Turns a --bench CSV into a PNG: bandwidth against message size (log
# scale), one curve per mode, with the copy roofline measured in the same
# run. Bus bandwidth with several ranks; algorithm bandwidth with one (where
# bus bandwidth is 0 by definition). Needs gnuplot (Debian: gnuplot-nox).
#   tools/plot_bench.sh RESULTS.csv [OUT.png] [TITLE]
set -euo pipefail
csv=${1:?usage: tools/plot_bench.sh RESULTS.csv [OUT.png] [TITLE]}
png=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null || { echo "plot_bench.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
[ -s "$csv" ] || { echo "plot_bench.sh: $csv is empty or missing" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Columns: program,ranks,mode,size_bytes,count,time_us,algbw,busbw,roof,...
program=$(awk -F, 'NR == 2 { print $1 }' "$csv")
ranks=$(awk -F, 'NR == 2 { print $2 }' "$csv")
bw_col=8 bw_name="bus bandwidth (GB/s)"
if [ "$ranks" = 1 ]; then bw_col=7 bw_name="algorithm bandwidth (GB/s)"; fi
modes=$(awk -F, 'NR > 1 && $3 !~ /\+gemm$/ { print $3 }' "$csv" | awk '!seen[$0]++')
plot=""
for m in $modes; do
  awk -F, -v m="$m" -v c=$bw_col 'NR > 1 && $3 == m { print $4, $c }' "$csv" >"$tmp/$m.dat"
  plot+="'$tmp/$m.dat' using 1:2 with linespoints title '$m', "
done
first=$(echo "$modes" | head -n 1)
awk -F, -v m="$first" 'NR > 1 && $3 == m { print $4, $9 }' "$csv" >"$tmp/roof.dat"
plot+="'$tmp/roof.dat' using 1:2 with lines dashtype 2 lc rgb 'gray40' title 'copy roofline'"

title=${3:-"$program --bench, $ranks rank(s)"}
gnuplot <<GNUPLOT
set terminal pngcairo size 900,560 noenhanced
set output '$png'
set title '$title'
set logscale x 2
set format x '%.0b%B'
set xlabel 'message size (bytes)'
set ylabel '$bw_name'
set key top left
set grid
plot $plot
GNUPLOT
echo "wrote $png"
