#!/usr/bin/env bash
# The README's install paths, each from the state the quick start leaves in a fresh clone: the
# committed tree cloned, scripts/setup.sh run in it (the quick start's first command, which builds
# `baton` alone), then, as the README's "Install" says:
#   - the .deb:          cmake --build build --target package   (then what dpkg -i would install)
#   - cmake --install:   cmake --build build && cmake --install build --prefix DIR
#   - pip install .:     into a fresh virtual environment, the binary the build made, then without it
#                        (the build backend builds one), `pip wheel` for other machines, and in a
#                        clone where nothing ran before (the backend fetches and builds all)
# Each is used once installed (--version, a man page, the hook). The clone is configured as a user's
# first build is (without -Werror), without the tests (a user's machine has no GoogleTest, and
# `cmake --build build` would build them all); its baton is the one cold compile (about 3 minutes on
# 2 cores), which baton-portable and the pip backend's build-wheel/ then share through ccache.
#   install_paths_test.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
step() {  # step LOG COMMAND...: runs it, its output in LOG, the log's end on failure
  local log=$work/$1
  shift
  "$@" >"$log" 2>&1 || { tail -25 "$log"; fail "$*"; }
}

git clone -q "$src" "$work/baton"
cd "$work/baton"
version=$(sed -n 's/^project(baton VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || fail "no version in CMakeLists.txt"

# The quick start (scripts/quickstart.sh without a terminal: one frame of baton top).
step setup.log scripts/setup.sh -DBATON_BUILD_TESTS=OFF
step top.log build/src/cli/baton top --once --no-gpus
[ ! -e build/src/cli/baton-portable ] || fail "the quick start built more than baton"
echo "quick start: $(grep -o 'configuring and building baton [0-9]* s' "$work/setup.log")"

# The .deb: the package target builds what the quick start did not (the portable binary, the man
# pages, the completions) and leaves the package in build/.
step package.log cmake --build build --target package
debs=(build/baton_"${version}"_*.deb)
[ -f "${debs[0]}" ] || { ls build; fail "no build/baton_${version}_*.deb"; }
deb=${debs[0]}
dpkg-deb -c "$deb" | awk '{print $NF}' >"$work/deb-files"
for f in ./usr/bin/baton ./usr/share/man/man1/baton.1.gz ./usr/share/man/man1/baton-run.1.gz \
         ./usr/share/bash-completion/completions/baton ./usr/share/zsh/vendor-completions/_baton \
         ./usr/share/fish/vendor_completions.d/baton.fish ./usr/share/doc/baton/README.md; do
  grep -qx -- "$f" "$work/deb-files" || fail "the .deb lacks $f"
done
dpkg-deb -x "$deb" "$work/deb"
"$work/deb/usr/bin/baton" --version | grep -q "^baton $version " || fail "the .deb's baton does not run"
echo "the .deb: $(basename "$deb"), $(wc -l <"$work/deb-files") entries, its baton runs"

# cmake --install, anywhere.
step build.log cmake --build build
step install.log cmake --install build --prefix "$work/prefix"
for f in bin/baton share/man/man1/baton-top.1.gz share/bash-completion/completions/baton share/doc/baton/cli.md; do
  [ -e "$work/prefix/$f" ] || fail "cmake --install did not install $f"
done
"$work/prefix/bin/baton" --version | grep -q "^baton $version " || fail "the installed baton does not run"
MANPATH="$work/prefix/share/man" man -w baton-runs >/dev/null || fail "man finds no baton-runs page"
echo "cmake --install: its baton runs, man finds its pages"

# pip install . in the environment one trains in (a fresh venv here), offline.
# (with the system's packages: Debian's PyTorch is what the hook runs beside)
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
step pip.log env BATON_PORTABLE=build/src/cli/baton-portable "$work/venv/bin/pip" install --no-index .
"$work/venv/bin/baton" --version | grep -q "^baton $version " || fail "pip's baton does not run"
(cd / && "$work/venv/bin/python" -c "import baton, baton.torch; print(baton.__version__)") >/dev/null ||
  fail "pip's hook does not import"
step pip-uninstall.log "$work/venv/bin/pip" uninstall -y baton
[ ! -e "$work/venv/bin/baton" ] || fail "pip uninstall left bin/baton"
# Without BATON_PORTABLE the build backend builds the binary itself (build-wheel/).
step pip-build.log "$work/venv/bin/pip" install --no-index .
"$work/venv/bin/baton" --version | grep -q "^baton $version " || fail "the backend's baton does not run"
step wheel.log "$work/venv/bin/pip" wheel --no-index --no-deps -w dist .
wheels=(dist/baton-"$version"-py3-none-manylinux_*.whl)
[ -f "${wheels[0]}" ] || { ls dist; fail "no wheel in dist/"; }
echo "pip install .: with the build's binary and without it; pip wheel: $(basename "${wheels[0]}")"

# pip install . in a clone where nothing ran before: the backend fetches the live page's chart
# library (the npm registry) and builds the binary itself.
git clone -q "$src" "$work/untouched"
step pip-untouched.log "$work/venv/bin/pip" install --no-index "$work/untouched"
[ -f "$work/untouched/.deps/uplot-1.6.32/package/dist/uPlot.iife.min.js" ] || fail "the backend fetched no uPlot"
"$work/venv/bin/baton" --version | grep -q "^baton $version " || fail "the untouched clone's baton does not run"
echo "pip install . in an untouched clone: fetched and built by the backend"
echo "every install path works from a fresh clone"
