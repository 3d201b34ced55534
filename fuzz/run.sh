#!/usr/bin/env bash
# Runs braid's fuzz targets, each for a fixed time, and prints one line per
# target: executions, executions per second, coverage (libFuzzer's cov: and
# ft:), corpus size, and the result. Exits non-zero if any target found
# something; the input that did it is kept under BUILD/crashes/<target>/.
#
#   fuzz/run.sh [BUILD_DIR] [TARGET...]        (make fuzz)
# Environment: FUZZ_SECONDS per target (default 60; 0: no limit, e.g. with
# FUZZ_ARGS=-runs=10000000); FUZZ_JOBS targets at a time (default: the
# number of cores); FUZZ_ARGS extra libFuzzer flags.
#
# Each target starts from its committed seeds (fuzz/corpus/<target>/, read
# only) plus what earlier runs found (BUILD/corpus/<target>/, where new
# inputs go), so longer runs build on shorter ones.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-fuzz}"
shift || true
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-$(nproc)}"
[ -f "$build/targets.txt" ] || { echo "fuzz: no targets in $build (make fuzz-build)" >&2; exit 2; }
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets <"$build/targets.txt"; fi

# The longest input libFuzzer makes per target: beyond these, inputs add
# time but no behaviour (a pairing code is 24 symbols and separators, a
# unit a few characters, the frame header 32 bytes).
max_len_of() {
  case "$1" in
    frame_header) echo 64 ;;
    units_parse) echo 64 ;;
    pairing_code) echo 128 ;;
    spake2_share) echo 400 ;;
    netlab_spec) echo 512 ;;
    *) echo 4096 ;;
  esac
}

run_one() {
  local t="$1"
  local bin="$build/fuzz_$t" seeds="$root/fuzz/corpus/$t" work="$build/corpus/$t" crashes="$build/crashes/$t"
  [ -x "$bin" ] || { echo "fuzz: $bin is missing" >"$build/logs/$t.log"; echo 2 >"$build/logs/$t.rc"; return; }
  [ -d "$seeds" ] || { echo "fuzz: no seeds in $seeds" >"$build/logs/$t.log"; echo 2 >"$build/logs/$t.rc"; return; }
  mkdir -p "$work" "$crashes"
  # -timeout: an input that takes 10 s is a hang (a finding); -rss_limit_mb:
  # so is one that grows memory past 2 GiB.
  local start=$SECONDS
  # shellcheck disable=SC2086
  "$bin" -max_total_time="$seconds" -max_len="$(max_len_of "$t")" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$crashes/" ${FUZZ_ARGS:-} "$work" "$seeds" >"$build/logs/$t.log" 2>&1
  local rc=$?
  echo $((SECONDS - start)) >"$build/logs/$t.time"
  echo $rc >"$build/logs/$t.rc"
}

mkdir -p "$build/logs"
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, ${jobs} at a time"
running=0
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.rc"
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

failed=0
printf '%-16s %12s %7s %9s %7s %8s %7s  %s\n' target execs time/s exec/s cov ft corpus result
for t in "${targets[@]}"; do
  log="$build/logs/$t.log"
  rc="$(cat "$build/logs/$t.rc" 2>/dev/null || echo 2)"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  # The last status line ("#N ... cov: C ft: F corp: K/S ...") has the final figures.
  status="$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")"
  corp="$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$status")"
  if [ "$rc" = 0 ]; then
    result=ok
  else
    failed=1
    artifact="$(ls -t "$build/crashes/$t" 2>/dev/null | head -1)"
    result="FAILED (exit $rc${artifact:+, input: $build/crashes/$t/$artifact}; log: $log)"
  fi
  time="$(cat "$build/logs/$t.time" 2>/dev/null)"
  printf '%-16s %12s %7s %9s %7s %8s %7s  %s\n' "$t" "${execs:--}" "${time:--}" "${rate:--}" "${cov:--}" "${ft:--}" "${corp:--}" "$result"
done
if [ "$failed" != 0 ]; then
  echo "fuzz: a target failed; reproduce with: $build/fuzz_TARGET INPUT" >&2
  for t in "${targets[@]}"; do
    [ "$(cat "$build/logs/$t.rc" 2>/dev/null)" = 0 ] && continue
    echo "---- $t (last lines of $build/logs/$t.log)" >&2
    tail -25 "$build/logs/$t.log" >&2
  done
fi
exit "$failed"
