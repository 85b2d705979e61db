# Wall-time limits that follow the machine's speed, sourced by run_tests.sh.
#
# The simulated GPU's times read a simulated clock (tests/sim/clock.c), which
# no load changes. A limit that must be wall time (a real hang, a watchdog's
# --timeout over real waiting) is written $(wall_limit S) instead of S: S
# seconds on a quiet machine, times how much slower this machine runs now.
#
# That factor is measured once per run: a fixed CPU workload (a shell loop
# of SPEED_TURNS turns, three times) takes SPEED_QUIET_MS on a quiet machine
# of the kind the limits were set on; the median of its three wall times
# over that is the factor, never below 1. TEST_SPEED=F sets it instead (a
# number >= 1).

SPEED_TURNS=100000 SPEED_QUIET_MS=120

# speed_factor: prints the factor, to 0.1, measuring it at the first call
# of the run (the lanes share it through $LOG/speed).
speed_factor() {
  if [ -n "${TEST_SPEED:-}" ]; then
    echo "$TEST_SPEED"
    return
  fi
  (
    flock 9
    if [ ! -s "$LOG/speed" ]; then
      local times=() start i
      for _ in 1 2 3; do
        start=${EPOCHREALTIME/./}
        for ((i = 0; i < SPEED_TURNS; i++)); do :; done
        times+=($(((${EPOCHREALTIME/./} - start) / 1000)))
      done
      local median
      median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
      awk -v ms="$median" -v quiet="$SPEED_QUIET_MS" \
        'BEGIN { f = ms / quiet; printf "%.1f\n", f < 1 ? 1 : f }' >"$LOG/speed.new"
      mv "$LOG/speed.new" "$LOG/speed"
    fi
  ) 9>"$LOG/speed.lock"
  cat "$LOG/speed"
}

# wall_limit S: S seconds scaled by speed_factor, a whole number (rounded
# up), for a program's --timeout or a case's own wait; never more than half
# the limit of the command that waits (TEST_TIMEOUT), so that a case that
# reaches it still ends inside that limit and says what it saw, and never
# less than S.
wall_limit() {
  awk -v s="$1" -v f="$(speed_factor)" -v cap=$((TIMEOUT / 2)) 'BEGIN {
    t = s * f; t = t == int(t) ? t : int(t) + 1
    if (t > cap) t = cap
    printf "%d\n", t < s ? s : t }'
}
