#!/usr/bin/env bash
# The man page and the bash/zsh completions come from the CLI's own
# definitions: every flag `braid CMD --help` lists (long and short), for
# every command `braid --help` lists, is in
# each of them, the files the build installs are exactly what the binary
# generates now (no drift), the bash script completes, the man page renders.
# With `deb`: the .deb that `make deb` builds holds the binary, the man page
# and both completions under /usr.
set -uo pipefail
braid=$1
build=$2
mode=${3:-docs}
W=$(mktemp -d /tmp/braid-generate.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "$mode" = deb ]; then
  (cd "$W" && cpack -G DEB -B "$W" --config "$build/CPackConfig.cmake" > cpack.out 2>&1) || { cat "$W/cpack.out" >&2; fail "cpack -G DEB failed"; }
  deb=$(ls "$W"/braid_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || fail "no braid_*.deb in $(ls "$W")"
  dpkg-deb -c "$deb" > "$W/list" || fail "dpkg-deb -c failed"
  for f in ./usr/bin/braid ./usr/share/man/man1/braid.1.gz ./usr/share/bash-completion/completions/braid \
           ./usr/share/zsh/vendor-completions/_braid ./usr/lib/systemd/system/braid-serve.service \
           ./usr/lib/systemd/user/braid-serve.service; do
    grep -q " $f\$" "$W/list" || fail "$(basename "$deb") lacks $f: $(cat "$W/list")"
  done
  dpkg-deb -f "$deb" Package Version Depends > "$W/fields" || fail "dpkg-deb -f failed"
  grep -q "^Package: braid" "$W/fields" && grep -q "^Depends: .*libssl3" "$W/fields" &&
    grep -q "^Depends: .*libjs-chart.js" "$W/fields" ||
    fail "package fields: $(cat "$W/fields")"
  echo "$(basename "$deb"): $(grep -c . "$W/list") entries; $(grep Depends "$W/fields")"
  echo PASS
  exit 0
fi

for kind in man bash zsh; do
  "$braid" --generate $kind > "$W/$kind" || fail "--generate $kind exited $?"
done
"$braid" --generate pdf > /dev/null 2>&1 && fail "--generate pdf succeeded"
# What the build installs is what the binary generates.
zcat "$build/share/man/man1/braid.1.gz" | cmp -s - "$W/man" || fail "the built man page differs from --generate man"
cmp -s "$build/share/bash-completion/completions/braid" "$W/bash" || fail "the built bash completion differs"
cmp -s "$build/share/zsh/vendor-completions/_braid" "$W/zsh" || fail "the built zsh completion differs"

# Every command braid has (its help's list), so a command added later is checked too.
"$braid" --help > "$W/top" || fail "--help exited $?"
commands=$(awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }' "$W/top")
for c in send recv; do grep -qx "$c" <<< "$commands" || fail "no $c among the commands: $commands"; done
total=0
for cmd in $commands; do
  "$braid" $cmd --help > "$W/help" || fail "$cmd --help exited $?"
  # The CLI's own flag list: every -x and --name at the start of an option line.
  flags=$(grep -E '^ +-' "$W/help" | sed -E 's/^ +//; s/ .*//' | tr ',' '\n' | grep -E '^-' | grep -v -- '^-h$\|^--help$')
  [ -n "$flags" ] || fail "no flags parsed from braid $cmd --help"
  # (Blocks in variables, not pipes into grep -q: with pipefail a writer cut short by grep's early exit fails.)
  bash_block=$(awk "/^    $cmd\\)/,/fi ;;\$/" "$W/bash")
  zsh_block=$(awk "/^    $cmd\\)/,/&& return 0/" "$W/zsh")
  for f in $flags; do
    man_form=$(printf '%s' "$f" | sed 's/-/\\\\-/g')
    grep -q "\\\\fB$man_form\\\\fR" "$W/man" || fail "the man page lacks $cmd $f"
    grep -Eq -- "(^|[ |'])$f([ |')]|\$)" <<< "$bash_block" || fail "the bash completion lacks $cmd $f"
    grep -Eq -- "[{,'(*]$f[],}[]" <<< "$zsh_block" || fail "the zsh completion lacks $cmd $f"
    total=$((total + 1))
  done
  # And nothing the CLI does not have.
  offered=$(grep -o -- "compgen -W '--help[^']*'" <<< "$bash_block" | sed "s/^compgen -W '//; s/'\$//")
  for f in $offered; do
    [ "$f" = --help ] || grep -qx -- "$f" <<< "$flags" || fail "bash completes $cmd $f, which braid lacks"
  done
done
grep -q '^.SH EXAMPLES' "$W/man" && grep -q '^.SH EXIT STATUS' "$W/man" || fail "the man page has no examples or exit status"

bash -n "$W/bash" || fail "the bash completion does not parse"
got=$(bash -c "source '$W/bash'; COMP_WORDS=(braid send --js); COMP_CWORD=2; _braid; echo \${COMPREPLY[*]}")
[ "$got" = "--json" ] || fail "bash completes 'braid send --js' to '$got'"
got=$(bash -c "source '$W/bash'; COMP_WORDS=(braid recv --links ''); COMP_CWORD=3; _braid; echo \${COMPREPLY[*]}")
[ "$got" = "keep safe skip" ] || fail "bash completes 'braid recv --links' to '$got'"
got=$(bash -c "source '$W/bash'; COMP_WORDS=(braid re); COMP_CWORD=1; _braid; echo \${COMPREPLY[*]}")
[ "$got" = "recv relay refuse" ] || fail "bash completes 'braid re' to '$got'"
if command -v zsh > /dev/null; then zsh -n "$W/zsh" || fail "the zsh completion does not parse"
else echo "note: zsh is not installed here: the zsh completion's syntax is not checked" >&2; fi
if command -v groff > /dev/null; then
  groff -man -Tutf8 "$W/man" > "$W/man.txt" 2> "$W/groff.err" || fail "groff failed: $(cat "$W/groff.err")"
  sed "s/.\x08//g; s/\x1b\[[0-9;]*m//g" "$W/man.txt" > "$W/man.plain"
  grep -q "EXIT STATUS" "$W/man.plain" || fail "the rendered man page has no EXIT STATUS"
else
  echo "note: groff is not installed here: the man page is checked as text, not rendered" >&2
fi
echo "$total flags of $(echo $commands | tr ' ' ',') in the man page, bash and zsh"
echo PASS
