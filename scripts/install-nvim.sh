#!/usr/bin/env bash
# Installs a Neovim from Debian's own packages into a private prefix, without touching the
# system: the .debs (Neovim, its libraries and the suite's glibc) are unpacked under PREFIX and
# PREFIX/bin/nvim starts Neovim through the unpacked dynamic loader.
#
#   scripts/install-nvim.sh SUITE PREFIX
#     SUITE   trixie (Neovim 0.10.x) | sid (the newest Neovim)
#     PREFIX  where to install
#
# Prints the path of the installed nvim as its last line. An existing working install is reused.
# Progress goes to stderr: a line per phase, a line per quarter of the package lists and one per
# package downloaded (about twenty lines in all, so that a CI log stays readable).
set -euo pipefail
suite="${1:?suite (trixie|sid)}"
prefix="${2:?install prefix}"
wrapper="$prefix/bin/nvim"
if [ -x "$wrapper" ] && "$wrapper" --version >/dev/null 2>&1; then
  echo "$wrapper"; exit 0
fi
say() { echo "install-nvim: $*" >&2; }
# Reads apt's status lines (APT::Status-Fd) and says when each quarter of the work is done.
quarters() {
  awk -F: -v what="$1" 'BEGIN { mark = 25 }
    $1 == "dlstatus" { while (mark < 100 && $3 + 0 >= mark) { printf "install-nvim:   %s %d%%\n", what, mark; mark += 25 } }
    END { printf "install-nvim:   %s done\n", what }' >&2
}
command -v apt-get >/dev/null || { echo "install-nvim: apt-get is needed (Debian/Ubuntu); set FLEMMA_NVIM_0_10 / FLEMMA_NVIM_LATEST to your own Neovim binaries instead" >&2; exit 1; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
rm -rf "$prefix"; mkdir -p "$work/lists/partial" "$work/debs" "$prefix/bin"
echo "deb http://deb.debian.org/debian $suite main" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-"
          -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root" -qq)
say "Neovim from Debian $suite into $prefix"
say "[1/4] package lists of Debian $suite (deb.debian.org)"
apt-get "${apt_opts[@]}" -o APT::Status-Fd=3 update 3>&1 >/dev/null | quarters "package lists"
pkgs=(neovim neovim-runtime libc6 libgcc-s1 libluajit-5.1-2 libluajit-5.1-common
      libunibilium4 libuv1t64 lua-lpeg lua-luv libmsgpack-c2 libvterm0 libutf8proc3)
# The tree-sitter library's package name differs per suite: take the one neovim depends on.
ts="$(apt-cache "${apt_opts[@]}" depends neovim | sed -n 's/.*Depends: \(libtree-sitter[0-9.]*\).*/\1/p' | head -1)"
[ -n "$ts" ] && pkgs+=("$ts")
say "[2/4] downloading ${#pkgs[@]} packages"
(cd "$work/debs" && n=0 && for p in "${pkgs[@]}"; do
   n=$((n + 1))
   if apt-get "${apt_opts[@]}" download "$p" >/dev/null 2>&1; then
     size="$(du -k "$work/debs/${p}"_*.deb 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')"
     say "  $n/${#pkgs[@]} $p ($size kB)"
   else
     say "  $n/${#pkgs[@]} $p (not in $suite, skipped)"
   fi
 done)
ls "$work/debs"/neovim_*.deb >/dev/null
say "[3/4] unpacking into $prefix/root"
for f in "$work/debs"/*.deb; do dpkg -x "$f" "$prefix/root"; done
lib="$prefix/root/usr/lib/x86_64-linux-gnu"
runtime="$prefix/root/usr/share/nvim/runtime"
mkdir -p "$runtime/parser"
cp -f "$prefix/root/usr/lib/nvim/parser/"*.so "$runtime/parser/" 2>/dev/null || true
# Point the binary at the unpacked loader so that v:progpath is nvim itself (the TUI re-executes it).
say "[4/4] pointing nvim at the unpacked libraries (patchelf)"
if ! command -v patchelf >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq patchelf >&2
  else echo "install-nvim: patchelf is needed: sudo apt-get install patchelf" >&2; exit 1; fi
fi
patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --set-rpath "$lib" "$prefix/root/usr/bin/nvim"
cat > "$wrapper" <<WRAP
#!/bin/sh
export VIMRUNTIME="$runtime"
export LUA_CPATH="$lib/lua/5.1/?.so;\${LUA_CPATH:-;}"
exec "$prefix/root/usr/bin/nvim" "\$@"
WRAP
chmod +x "$wrapper"
say "$("$wrapper" --version | head -1) ready in ${SECONDS} s"
echo "$wrapper"
