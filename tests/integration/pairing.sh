#!/usr/bin/env bash
# Pairing through the real binary over loopback (issue 14): short one-time
# codes, codes kept out of argv, identity by key with labels, `braid peers`.
# One case per run: pairing.sh BRAID_BINARY CASE. The receiver prints its
# own code (no --code) unless a case says otherwise; every host has its own
# XDG_CONFIG_HOME (so its own key), and all of them claim this machine's
# host name — two "machines with the same name".
set -uo pipefail
BRAID=$1
CASE=$2
. "$(dirname "$0")/lib.sh"
workspace pairing

# start_recv [extra recv args...]: a long-running receiver (no --once), sets PORT and CODE.
start_recv() {
  rm -f "$W/recv.out"
  XDG_CONFIG_HOME=$W/rcfg "$BRAID" recv --dir "$W/dst" --listen 127.0.0.1:0 --yes "$@" \
    > "$W/recv.out" 2> "$W/recv.err" < /dev/null &
  RECV_PID=$!
  for _ in $(seq 200); do grep -q listening "$W/recv.out" 2>/dev/null && break; sleep 0.05; done
  PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$W/recv.out" | head -1 | cut -d: -f2)
  [ -n "$PORT" ] || fail "receiver did not start"
  CODE=$(sed -n 's/^braid: code \([^ ]*\) listening on.*/\1/p' "$W/recv.out")
  [ -n "$CODE" ] || fail "no code in the receiver's first line"
}

# The receiver's code now: the last one it printed.
live_code() { sed -n 's/^braid: code \([^ ]*\).*/\1/p' "$W/recv.out" | tail -1; }

# send CFG [args...]: a sender with config dir $W/CFG and the code in
# BRAID_CODE if SEND_CODE is set; sets SEND_RC.
send() {
  local cfg=$1
  shift
  mkdir -p "$W/$cfg"
  if [ -n "${SEND_CODE:-}" ]; then
    BRAID_CODE=$SEND_CODE XDG_CONFIG_HOME=$W/$cfg "$BRAID" send "$@" > "$W/send.out" 2> "$W/send.err" < /dev/null
  else
    XDG_CONFIG_HOME=$W/$cfg "$BRAID" send "$@" > "$W/send.out" 2> "$W/send.err" < /dev/null
  fi
  SEND_RC=$?
}

# peers CFG: `braid peers` of that host, on stdout.
peers() { XDG_CONFIG_HOME=$W/$1 "$BRAID" peers; }

echo "payload $CASE" > "$W/src/f.txt"
HOST=$(hostname | tr -c 'A-Za-z0-9._@:+\n-' '-' | cut -c1-64)
# Three list words no generated code of this run is likely to hold (p = 2^-44).
WRONG_WORDS=chalk-lagoon-tiara-wharf

case "$CASE" in
  codes)  # format, number + 4 words; spent after one pairing: a second identity cannot use it
    start_recv
    [[ "$CODE" =~ ^[0-9]{4}(-[a-z]{3,8}){4}$ ]] || fail "the code '$CODE' is not NNNN-word-word-word-word"
    SEND_CODE=$CODE send scfg "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "first send exited $SEND_RC"
    cmp -s "$W/src/f.txt" "$W/dst/f.txt" || fail "the file did not arrive"
    grep -q "paired with" "$W/send.err" || fail "the sender did not say it paired"
    # Typed sloppily (upper case, dots, four-letter prefixes) it is still the same code
    # (it parses: the failure is the receiver's answer), but spent: the receiver now
    # pairs against its new code, so the old one is a wrong attempt.
    sloppy=$(echo "$CODE" | tr 'a-z-' 'A-Z.' | sed -E 's/\.([A-Z]{4})[A-Z]*/.\1/g')
    [ "$sloppy" != "$CODE" ] || fail "the sloppy code is the code"
    SEND_CODE=$sloppy send scfg2 "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 4 ] || fail "a second identity with the spent code exited $SEND_RC, expected 4"
    grep -q "pairing failed: the receiver .* rejected our pairing code" "$W/send.err" ||
      fail "no clear message: $(cat "$W/send.err")"
    [ "$(peers rcfg | grep -c SHA256:)" -eq 1 ] || fail "the receiver pinned more than one peer: $(peers rcfg)"
    new=$(live_code)
    [ "$new" != "$CODE" ] || fail "no new code after the first one was spent"
    # The pinned sender needs no code any more.
    SEND_CODE= send scfg "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "the paired sender without a code exited $SEND_RC: $(cat "$W/send.err")"
    ;;

  typo)  # a mistyped word is named with a suggestion, exit 2, before any connection
    start_recv
    # A fixed typo (a random word's swapped letters can spell another word,
    # or sit one swap from several): 'lagoon' typed 'lagono'.
    word=lagoon
    swapped=lagono
    typo="$(echo "$CODE" | cut -d- -f1)-$swapped-$(echo "$CODE" | cut -d- -f3-)"
    SEND_CODE=$typo send scfg "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 2 ] || fail "a mistyped code exited $SEND_RC, expected 2"
    grep -q "unknown word '$swapped'" "$W/send.err" || fail "the word is not named: $(cat "$W/send.err")"
    grep -q "did you mean .*'$word'" "$W/send.err" || fail "no suggestion: $(cat "$W/send.err")"
    [ "$(wc -l < "$W/send.err")" -eq 1 ] || fail "more than one line: $(cat "$W/send.err")"
    ! grep -q "wrong" "$W/recv.err" || fail "the receiver saw an attempt: $(cat "$W/recv.err")"
    ;;

  retire)  # 3 wrong attempts retire the code; the old code then fails, the new one works
    start_recv
    number=${CODE%%-*}
    for i in 1 2 3; do
      SEND_CODE=$number-$WRONG_WORDS send "s$i" "$W/src/f.txt" "127.0.0.1:$PORT"
      [ "$SEND_RC" -eq 4 ] || fail "wrong attempt $i exited $SEND_RC, expected 4"
    done
    for _ in $(seq 50); do grep -q "retired" "$W/recv.out" && break; sleep 0.1; done
    grep -q "3 wrong attempts and is retired" "$W/recv.out" || fail "the receiver did not retire the code: $(cat "$W/recv.out")"
    new=$(live_code)
    [ -n "$new" ] && [ "$new" != "$CODE" ] || fail "no new code printed"
    SEND_CODE=$CODE send s4 "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 4 ] || fail "the retired code exited $SEND_RC, expected 4"
    [ ! -e "$W/dst/f.txt" ] || fail "a file arrived with a retired code"
    SEND_CODE=$new send s5 "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "the new code exited $SEND_RC: $(cat "$W/send.err")"
    cmp -s "$W/src/f.txt" "$W/dst/f.txt" || fail "the file did not arrive with the new code"
    [ "$(peers rcfg | grep -c SHA256:)" -eq 1 ] || fail "wrong attempts were pinned: $(peers rcfg)"
    ;;

  same-name)  # two senders with the same host name both pair, stay distinct, and are listed
    start_recv
    SEND_CODE=$CODE send scfg "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "first sender exited $SEND_RC"
    SEND_CODE=$(live_code) send scfg2 "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "second sender with the same name exited $SEND_RC: $(cat "$W/send.err")"
    ! grep -q "HAS CHANGED" "$W/send.err" "$W/recv.err" || fail "the second host was taken for the first"
    peers rcfg > "$W/peers.out" || fail "braid peers exited $?"
    [ "$(grep -c SHA256: "$W/peers.out")" -eq 2 ] || fail "not both listed: $(cat "$W/peers.out")"
    grep -Eq "^  $HOST +SHA256:" "$W/peers.out" || fail "no '$HOST': $(cat "$W/peers.out")"
    grep -Eq "^  $HOST-2 +SHA256:" "$W/peers.out" || fail "no '$HOST-2': $(cat "$W/peers.out")"
    grep -q "UTC" "$W/peers.out" || fail "no pairing time: $(cat "$W/peers.out")"
    # Both stay trusted by key, whatever they claim: no code needed now.
    SEND_CODE= send scfg "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "first sender again exited $SEND_RC"
    SEND_CODE= send scfg2 "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "second sender again exited $SEND_RC"
    # Labels are the user's: rename by label and by key prefix, forget.
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers rename "$HOST-2" laptop > /dev/null || fail "rename exited $?"
    key=$(peers rcfg | awk -v h="$HOST" '$1 == h {print $2}')
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers rename "$key" desktop > /dev/null || fail "rename by key exited $?"
    peers rcfg > "$W/peers.out"
    grep -Eq "^  laptop +SHA256:.* $HOST$" "$W/peers.out" && grep -Eq "^  desktop +SHA256:" "$W/peers.out" ||
      fail "renames not listed: $(cat "$W/peers.out")"
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers rename laptop desktop 2> "$W/rename.err"; rc=$?
    [ "$rc" -eq 2 ] && grep -q "already names another peer" "$W/rename.err" || fail "a taken label: exit $rc"
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers forget laptop > /dev/null || fail "forget exited $?"
    [ "$(peers rcfg | grep -c SHA256:)" -eq 1 ] || fail "forget left: $(peers rcfg)"
    SEND_CODE= send scfg2 "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 4 ] || fail "a forgotten peer without a code exited $SEND_RC, expected 4"
    XDG_CONFIG_HOME=$W/rcfg "$BRAID" peers forget nobody 2> "$W/forget.err"; rc=$?
    [ "$rc" -eq 2 ] || fail "forgetting an unknown peer exited $rc, expected 2"
    ;;

  name)  # --name labels the peer on both ends; a --name already in use is refused before pairing
    start_recv --name my-laptop
    SEND_CODE=$CODE send scfg --name my-nas "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send --name exited $SEND_RC: $(cat "$W/send.err")"
    peers scfg | grep -Eq "^  my-nas +SHA256:.* $HOST$" || fail "sender's label: $(peers scfg)"
    peers rcfg | grep -Eq "^  my-laptop +SHA256:.* $HOST$" || fail "receiver's label: $(peers rcfg)"
    before=$(live_code)
    SEND_CODE=$before send scfg --name my-nas "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 2 ] || fail "a --name in use exited $SEND_RC, expected 2"
    grep -q "already names a known peer" "$W/send.err" || fail "no clear message: $(cat "$W/send.err")"
    [ "$(live_code)" = "$before" ] || fail "the refused run spent the code"
    ;;

  changed)  # a peer addressed by a pinned label with another key: the loud refusal, exit 5, even with the code
    start_recv
    SEND_CODE=$CODE send scfg --name localhost "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "first send exited $SEND_RC"
    SEND_CODE= send scfg "$W/src/f.txt" "localhost:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "addressed by its label, the pinned receiver exited $SEND_RC: $(cat "$W/send.err")"
    kill "$RECV_PID"; wait "$RECV_PID" 2>/dev/null; RECV_PID=
    rm -rf "$W/rcfg"  # the receiver gets a new key
    start_recv
    SEND_CODE=$CODE send scfg "$W/src/f.txt" "localhost:$PORT"
    [ "$SEND_RC" -eq 5 ] || fail "a changed key under a pinned label exited $SEND_RC, expected 5"
    grep -q "@@@ WARNING: THE IDENTITY OF PEER 'localhost' HAS CHANGED @@@" "$W/send.err" ||
      fail "no loud message: $(cat "$W/send.err")"
    grep -q "braid peers forget localhost" "$W/send.err" || fail "the message does not say what to do"
    # By address, the new key is just a new peer: the (still live) code pairs it under its own label.
    SEND_CODE=$(live_code) send scfg "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "by address with the code exited $SEND_RC: $(cat "$W/send.err")"
    [ "$(peers scfg | grep -c SHA256:)" -eq 2 ] || fail "both keys are not pinned: $(peers scfg)"
    ;;

  code-sources)  # BRAID_CODE and --code-file keep the code out of argv; conflicts, bad files, weak codes: exit 2
    # 20 random-looking characters, fixed: a fresh random draw is now and then
    # judged weak by the conservative estimator (runs, keyboard walks) and
    # the test failed by chance (seen once in make test).
    chosen=k7Qm2Vx9Rt4Lp8Wz3Nc6
    printf '%s\n' "$chosen" > "$W/code.txt"
    chmod 600 "$W/code.txt"
    start_recv --code-file "$W/code.txt"
    tr '\0' ' ' < "/proc/$RECV_PID/cmdline" > "$W/cmdline"
    ! grep -qF "$chosen" "$W/cmdline" || fail "the code is in the receiver's argv"
    ! grep -qF "(ps)" "$W/recv.err" || fail "a warning about ps for --code-file: $(cat "$W/recv.err")"
    SEND_CODE=$chosen send scfg "$W/src/f.txt" "127.0.0.1:$PORT"
    [ "$SEND_RC" -eq 0 ] || fail "send with BRAID_CODE exited $SEND_RC: $(cat "$W/send.err")"
    ! grep -qF "(ps)" "$W/send.err" || fail "a warning about ps for BRAID_CODE"
    # --code works, with one warning that it shows in ps.
    XDG_CONFIG_HOME=$W/s2 "$BRAID" send --code "$(live_code)" "$W/src/f.txt" "127.0.0.1:$PORT" 2> "$W/s2.err" > /dev/null ||
      fail "send --code exited $?: $(cat "$W/s2.err")"
    [ "$(grep -cF "(ps)" "$W/s2.err")" -eq 1 ] && grep -q "BRAID_CODE" "$W/s2.err" ||
      fail "no single warning about ps: $(cat "$W/s2.err")"
    check_usage() {  # check_usage WHAT EXPECTED_TEXT CMD...: exit 2 and one line
      local what=$1 text=$2
      shift 2
      "$@" > /dev/null 2> "$W/usage.err" < /dev/null; local rc=$?
      [ "$rc" -eq 2 ] || fail "$what exited $rc, expected 2: $(cat "$W/usage.err")"
      [ "$(wc -l < "$W/usage.err")" -eq 1 ] || fail "$what: not one line: $(cat "$W/usage.err")"
      grep -q -- "$text" "$W/usage.err" || fail "$what: no '$text': $(cat "$W/usage.err")"
    }
    export XDG_CONFIG_HOME=$W/s3
    check_usage "two sources" "given twice" env BRAID_CODE="$chosen" "$BRAID" send --code-file "$W/code.txt" "$W/src/f.txt" "127.0.0.1:$PORT"
    check_usage "--code and BRAID_CODE" "given twice" env BRAID_CODE="$chosen" "$BRAID" recv --code "$chosen" --dir "$W/x"
    check_usage "a missing --code-file" "cannot read --code-file" "$BRAID" recv --code-file "$W/none" --dir "$W/x"
    : > "$W/empty.txt"
    check_usage "an empty --code-file" "is empty" "$BRAID" send --code-file "$W/empty.txt" "$W/src/f.txt" "127.0.0.1:$PORT"
    check_usage "a weak --code (recv)" "too easy to guess" "$BRAID" recv --code hunter2 --dir "$W/x"
    check_usage "a weak --code (send)" "too easy to guess" "$BRAID" send --code secret "$W/src/f.txt" "127.0.0.1:$PORT"
    check_usage "a weak BRAID_CODE" "too easy to guess" env BRAID_CODE=password "$BRAID" recv --dir "$W/x"
    [ ! -e "$W/x" ] || fail "a refused receiver created its directory"
    ;;

  *) fail "unknown case" ;;
esac
echo "PASS [$CASE]"
