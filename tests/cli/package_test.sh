#!/usr/bin/env bash
# cmake --install and the .deb, end to end: CPack builds baton_<version>_<arch>.deb from the build tree, dpkg installs
# it, the installed baton runs (--version), its man pages are found (man -w), each shell's
# completion works (bash completes a word, zsh parses its script, fish completes a word), and
# dpkg removes it leaving none of its files. Needs root (or sudo without a password): exit 77
# (skipped) without, and when a baton package is installed already (it is never replaced).
#   package_test.sh BUILD_DIR VERSION
set -euo pipefail
build=$1
version=$2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo -n true 2>/dev/null || { echo "SKIP: installing a package needs root or password-less sudo"; exit 77; }
  sudo="sudo -n"
fi
if dpkg-query -W -f='${Status}' baton 2>/dev/null | grep -q "install ok installed"; then
  echo "SKIP: a baton package is installed already; not replacing it"; exit 77
fi
work=$(mktemp -d)
installed=0
cleanup() {
  [ "$installed" = 1 ] && $sudo dpkg -r baton >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# cmake --install into a prefix: the same files the package holds.
cmake --install "$build" --prefix "$work/prefix" >/dev/null || fail "cmake --install"
for f in bin/baton share/man/man1/baton.1.gz share/man/man1/baton-run.1.gz \
         share/bash-completion/completions/baton share/zsh/vendor-completions/_baton \
         share/fish/vendor_completions.d/baton.fish share/doc/baton/cli.md share/doc/baton/README.md; do
  [ -e "$work/prefix/$f" ] || fail "cmake --install did not install $f"
done
"$work/prefix/bin/baton" --version >/dev/null || fail "the installed binary does not run"

(cd "$build" && cpack -G DEB -B "$work" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
arch=$(dpkg --print-architecture)
deb="$work/baton_${version}_${arch}.deb"
[ -f "$deb" ] || { ls "$work"; fail "no $deb"; }
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb -f "$deb" Depends | grep -q "libc6 (>= 2.34)" || fail "Depends: $(dpkg-deb -f "$deb" Depends)"

$sudo dpkg -i "$deb" >/dev/null || fail "dpkg -i"
installed=1
[ "$(command -v baton)" = /usr/bin/baton ] || fail "baton is not /usr/bin/baton: $(command -v baton || true)"
/usr/bin/baton --version | grep -Eq "^baton ${version//./\\.} \(commit [0-9a-f]{12}(-dirty)?\)$" ||
  fail "baton --version: $(/usr/bin/baton --version)"
man -w baton | grep -q "/usr/share/man/man1/baton.1.gz" || fail "man -w baton: $(man -w baton 2>&1)"
man -w baton-top | grep -q "baton-top.1.gz" || fail "man -w baton-top"
man -P cat baton-runs 2>/dev/null | grep -q "prune" || fail "man baton-runs does not describe prune"
# bash: the installed completion completes a subcommand and an option's choices.
got=$(bash -c 'source /usr/share/bash-completion/completions/baton
  COMP_WORDS=(baton sna); COMP_CWORD=1; _baton; echo "${COMPREPLY[*]}"
  COMP_WORDS=(baton runs export 1 --format ""); COMP_CWORD=5; _baton; echo "${COMPREPLY[*]}"')
[ "$got" = $'snapshot\njsonl csv' ] || fail "bash completion gave: $got"
zsh -n /usr/share/zsh/vendor-completions/_baton || fail "zsh cannot parse _baton"
got=$(fish -c 'complete -C "baton sna"' | cut -f1)
[ "$got" = snapshot ] || fail "fish completion gave: $got"
[ -f /usr/share/doc/baton/findings.md ] || fail "no documentation in /usr/share/doc/baton"
files=$(dpkg -L baton | grep -v '/$' || true)

$sudo dpkg -r baton >/dev/null || fail "dpkg -r"
installed=0
! dpkg-query -W -f='${Status}' baton 2>/dev/null | grep -q "install ok installed" || fail "still installed"
for f in $files; do
  [ -d "$f" ] && continue
  [ ! -e "$f" ] || fail "$f left after dpkg -r"
done
echo "PASS: $(basename "$deb") installed (baton --version, man pages, bash/zsh/fish completions, docs) and removed cleanly"
