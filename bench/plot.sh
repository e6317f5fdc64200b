#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/plot.sh [DIR]: the benchmark plots, as SVG, from the data files that
# bench/run writes into DIR (default bench/results):
#   scaling.svg        CPU per second and RSS of hugecollapsed against the
#                      number of idle processes (plus a ticker), next to
#                      khugepaged's CPU at its defaults (scaling.dat);
#   time_to_huge.svg   percent huge over time of a process that turns hot,
#                      at each of those sizes (tth_scale_N.dat);
#   time_to_huge_seed.svg  the seed scenario's hot2 under khugepaged at its
#                      defaults, at an equal budget, and hugecollapsed
#                      (tth_seed_SETUP_VARIANT.dat);
#   frontier.svg       CPU per second against time to huge, per system
#                      and size of already-huge memory (frontier.dat);
#   real_PROGRAM_MODE.svg  bench/run --real: percent of a real program's
#                      anonymous memory that is huge over time, one line
#                      per setup (real_PROGRAM_MODE_SETUP.dat).
# Needs gnuplot (Debian: gnuplot-nox, installed by scripts/deps.sh).
set -euo pipefail

DIR=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/results}
command -v gnuplot >/dev/null || {
	echo "bench/plot.sh: needs gnuplot (apt-get install gnuplot-nox)" >&2
	exit 1
}
if [[ -s $DIR/scaling.dat ]]; then
	gnuplot <<EOG
set terminal svg size 800,480 font "sans,12" background "white"
set output "$DIR/scaling.svg"
set title "Idle processes + a ticker (/bin/true 10x/s), default settings"
set xlabel "idle processes"
set ylabel "CPU, % of one CPU"
set y2label "hugecollapsed RSS, MiB"
set logscale x
set xrange [50:20000]
set yrange [0:1.2<*]
set y2range [0:*]
set ytics nomirror
set y2tics
set key top left
set grid
plot "$DIR/scaling.dat" using 1:2 with linespoints lw 2 pt 7 title "hugecollapsed CPU", \
     "" using 1:6 with linespoints lw 2 pt 5 title "khugepaged CPU (defaults)", \
     "" using 1:(\$4/1024) axes x1y2 with linespoints dt 2 pt 9 title "hugecollapsed RSS", \
     1 with lines dt 3 lc rgb "red" title "1% target (10000)"
EOG
else
	echo "bench/plot.sh: no $DIR/scaling.dat (BENCH_ONLY=scale bench/run writes it): no scaling.svg" >&2
fi

files=()
for f in "$DIR"/tth_scale_*.dat; do [[ -s $f ]] && files+=("$f"); done
if ((${#files[@]})); then
	plot=
	for f in $(printf '%s\n' "${files[@]}" | sort -t_ -k3 -n); do
		n=${f##*tth_scale_}
		n=${n%.dat}
		plot+="${plot:+, }\"$f\" using 1:2 with lines lw 2 title \"$n idle processes\""
	done
	gnuplot <<EOG
set terminal svg size 800,480 font "sans,12" background "white"
set output "$DIR/time_to_huge.svg"
set title "A 128 MiB process turns hot: hugecollapsed, default settings"
set xlabel "seconds since the process was ready"
set ylabel "% of its buffer PMD-mapped"
set yrange [0:105]
set key bottom right
set grid
plot $plot
EOG
fi
# The seed scenario: hot2 (started after hot1 and a cold task) under
# khugepaged at its defaults (a), khugepaged at hugecollapsed's budget (b)
# and hugecollapsed (c); seconds of hot2's own life, % of it huge.
plot=
for f in "$DIR"/tth_seed_[abc]_*.dat; do
	[[ -s $f ]] || continue
	base=${f##*/tth_seed_}
	base=${base%.dat}
	case ${base%%_*} in
	a) label="khugepaged, defaults" ;;
	b) label="khugepaged, equal budget" ;;
	*) label="hugecollapsed" ;;
	esac
	plot+="${plot:+, }\"$f\" using 1:3 with linespoints lw 2 title \"$label (MADV_${base#*_} cold task)\""
done
if [[ -n $plot ]]; then
	gnuplot <<EOG
set terminal svg size 800,480 font "sans,12" background "white"
set output "$DIR/time_to_huge_seed.svg"
set title "hot2 after hot1 and a cold task (128 MiB each): % PMD-mapped over time"
set xlabel "seconds of hot2's life"
set ylabel "% of hot2's buffer PMD-mapped"
set yrange [0:105]
set key bottom right
set grid
plot $plot
EOG
fi
# Real programs: one plot per program and THP mode, a line per setup.
declare -A groups=()
for f in "$DIR"/real_*_*_*.dat; do
	[[ -s $f ]] || continue
	base=${f##*/real_}
	groups[${base%_*}]=1
done
for g in "${!groups[@]}"; do
	plot=
	for setup in kdef kbud idle off paced; do
		f=$DIR/real_${g}_$setup.dat
		[[ -s $f ]] || continue
		case $setup in
		kdef) label="khugepaged, defaults" ;;
		kbud) label="khugepaged, the daemon's budget" ;;
		idle) label="hugecollapsed, khugepaged=idle" ;;
		off) label="hugecollapsed, khugepaged=off" ;;
		paced) label="hugecollapsed idle, blocks_per_call 16, pause_ms 5" ;;
		esac
		plot+="${plot:+, }\"$f\" using 1:2 with linespoints lw 2 title \"$label\""
	done
	gnuplot <<EOG
set terminal svg size 800,480 font "sans,12" background "white"
set output "$DIR/real_$g.svg"
set title "${g%_*} (THP enabled=${g##*_}): filled at 4 KiB, then collapsed"
set xlabel "seconds since THP was enabled and the collapser started"
set ylabel "% of its anonymous memory huge"
set yrange [0:105]
set key bottom right
set grid
plot $plot
EOG
done
# The cost-latency frontier: CPU per second against time to 90% huge, one
# curve per system and size of already-huge memory (frontier.dat).
if [[ -s $DIR/frontier.dat ]]; then
	plot=
	for size in $(awk '!/^#/ { print $1 }' "$DIR/frontier.dat" | sort -nu); do
		for sys in khugepaged hugecollapsed; do
			grep -q " $sys " "$DIR/frontier.dat" || continue
			plot+="${plot:+, }\"< awk '\$1 == $size && \$2 == \\\"$sys\\\"' $DIR/frontier.dat\" using 5:4 with linespoints lw 2 title \"$sys, $((size >> 10)) GiB huge\""
		done
	done
	gnuplot <<EOG
set terminal svg size 800,480 font "sans,12" background "white"
set output "$DIR/frontier.svg"
set title "Cost against responsiveness: 100 idle processes + a ticker, nothing to collapse"
set xlabel "seconds until a new hot 128 MiB process is 90% huge"
set ylabel "CPU per second, µs (khugepaged + hugecollapsed)"
set logscale xy
set key top right
set grid
plot $plot
EOG
fi
svgs=$(ls "$DIR"/*.svg 2>/dev/null | tr '\n' ' ')
[[ -n $svgs ]] || {
	echo "bench/plot.sh: nothing to plot in $DIR" >&2
	exit 1
}
echo "bench/plot.sh: wrote $svgs"
