#!/usr/bin/env bash
# The command line's conventions: --version; bare `braid` shows what it can
# do; a mistyped command or flag gets one clear line with a suggestion and
# exit 2; help has examples and the exit codes.
set -uo pipefail
braid=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

v=$("$braid" --version) || fail "--version exited $?"
[[ "$v" =~ ^braid\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version printed '$v'"

"$braid" > /dev/null 2> err; rc=$?
[ $rc -eq 2 ] || fail "bare braid exited $rc, expected 2"
grep -q "Examples:" err && grep -q "send" err && grep -q "recv" err || fail "bare braid did not show the commands and examples"

"$braid" sned f 127.0.0.1 2> err; rc=$?
[ $rc -eq 2 ] || fail "unknown command exited $rc"
grep -q "unknown command 'sned' (did you mean 'send'?)" err || fail "no suggestion for a mistyped command: $(cat err)"
[ "$(wc -l < err)" -eq 1 ] || fail "more than one line for a mistyped command: $(cat err)"

"$braid" frobnicate 2> err; rc=$?
[ $rc -eq 2 ] || fail "unknown command exited $rc"
! grep -q "did you mean" err || fail "a suggestion for something not close to any command: $(cat err)"

"$braid" send --lanee x f 127.0.0.1 2> err; rc=$?
[ $rc -eq 2 ] || fail "unknown flag exited $rc"
grep -q "unknown flag '--lanee' (did you mean '--lane'?)" err || fail "no suggestion for a mistyped flag: $(cat err)"

"$braid" --help > out 2>&1 || fail "--help exited $?"
grep -q "Exit codes:" out && grep -q "braid send --code" out || fail "help has no examples or exit codes"
# recv needs no --dir: it receives into the current directory, like scp and rsync.
"$braid" recv --help | grep -q "default: the current directory" || fail "recv --dir is not optional"
echo PASS
