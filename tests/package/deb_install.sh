#!/usr/bin/env bash
# The .deb (cmake/PredropPackage.cmake) and the Python package (python/pyproject.toml), as a
# user gets them, without touching the live system:
#   - cpack -G DEB builds the package from this build folder into WORKDIR;
#   - dpkg-deb -I: name, version, architecture, Depends from dpkg-shlibdeps (libuv, libsrtp2,
#     libav*), the conffile /etc/predrop/stream.toml;
#   - dpkg -x into a throwaway root: every program there answers --version with the project's
#     version and --help with its usage; the systemd unit runs /usr/bin/predrop-server on
#     /etc/predrop/stream.toml;
#   - pip installs ./python offline (Debian's setuptools, --no-build-isolation) into a
#     --system-site-packages venv; the package imports and loads the packaged
#     libpredrop_ddl_capi.so.
# Exit 77 (skipped, with the reason) without cpack, dpkg-deb, dpkg-shlibdeps or python3 -m venv.
#   deb_install.sh BUILD_DIR SOURCE_DIR VERSION WORKDIR [PYTHON]
# PYTHON is Debian's interpreter (default /usr/bin/python3: its setuptools and wheel are the
# packages python3-setuptools and python3-wheel; a pyenv or other python3 on PATH has neither).
set -euo pipefail
build="$1"
source_dir="$2"
version="$3"
work="$4"
python="${5:-/usr/bin/python3}"

skip() {
  echo "SKIP: $*"
  exit 77
}
for tool in cpack dpkg-deb dpkg-shlibdeps "$python"; do
  command -v "$tool" >/dev/null || skip "$tool not found (the package test needs cpack and dpkg)"
done
"$python" -c 'import ensurepip, setuptools, wheel' 2>/dev/null ||
  skip "$python lacks venv, setuptools or wheel (python3-venv python3-setuptools python3-wheel)"

rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# ---- build the package ----
(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log" >&2; fail "cpack -G DEB"; }
deb=$(find "$work/out" -maxdepth 1 -name 'predrop_*.deb' | head -n 1)
[[ -n "$deb" ]] || fail "no predrop_*.deb in $work/out"
echo "package: $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# ---- its metadata ----
info=$(dpkg-deb -I "$deb")
echo "$info" | grep -E "^ (Package|Version|Architecture|Depends):"
field() { echo "$info" | sed -n "s/^ $1: //p"; }
[[ "$(field Package)" == predrop ]] || fail "Package is not predrop"
[[ "$(field Version)" == "$version" ]] || fail "Version $(field Version), expected $version"
[[ "$(field Architecture)" == "$(dpkg --print-architecture)" ]] || fail "Architecture"
depends=$(field Depends)
for lib in libc6 libuv1 libsrtp2 libavcodec libavformat libstdc++6; do
  [[ "$depends" == *"$lib"* ]] || fail "Depends lacks $lib: $depends"
done
dpkg-deb -e "$deb" "$work/control"
grep -qx /etc/predrop/stream.toml "$work/control/conffiles" || fail "conffiles lacks the config"

# ---- its files, in a throwaway root ----
root="$work/root"
dpkg -x "$deb" "$root"
for f in usr/bin/predrop-server usr/bin/predrop-client usr/bin/predrop-load \
  usr/bin/predrop-ddl-worker usr/bin/predrop-ddl-job lib/systemd/system/predrop-server.service \
  etc/predrop/stream.toml usr/share/predrop/configs/stream.toml usr/share/doc/predrop/README.md \
  usr/share/doc/predrop/docs/operations.md; do
  [[ -e "$root/$f" || -e "$root/usr/$f" ]] || fail "/$f is not in the package"
done
capi=$(find "$root/usr/lib" -name libpredrop_ddl_capi.so | head -n 1)
[[ -n "$capi" ]] || fail "libpredrop_ddl_capi.so is not in the package"
unit="$root/lib/systemd/system/predrop-server.service"
[[ -e "$unit" ]] || unit="$root/usr/lib/systemd/system/predrop-server.service"
grep -qx 'ExecStart=/usr/bin/predrop-server -c /etc/predrop/stream.toml' "$unit" ||
  fail "the unit's ExecStart: $(grep ExecStart "$unit")"

for p in predrop-server predrop-client predrop-load predrop-ddl-worker predrop-ddl-job; do
  out=$("$root/usr/bin/$p" --version)
  [[ "$out" == "$p $version" ]] || fail "$p --version printed '$out'"
  "$root/usr/bin/$p" --help >"$work/$p.help"
  grep -q -- '--version' "$work/$p.help" || fail "$p --help does not list --version"
  echo "$out: --help $(wc -l <"$work/$p.help") lines"
done
grep -q -- '-c,--config' "$work/predrop-server.help" || fail "predrop-server --help lacks -c"

# ---- the Python package, offline, in a venv that sees Debian's packages ----
"$python" -m venv --system-site-packages "$work/venv"
cp -r "$source_dir/python" "$work/python-src"  # setuptools writes build/ and *.egg-info here
"$work/venv/bin/pip" install --quiet --no-index --no-deps --no-build-isolation \
  "$work/python-src" >"$work/pip.log" 2>&1 || { cat "$work/pip.log" >&2; fail "pip install"; }
cd "$work"  # not the source tree: `import predrop` must find the installed package
PREDROP_DDL_CAPI="$capi" "$work/venv/bin/python" -c '
import os, sys, predrop, predrop.capi, predrop.relay
where = os.path.dirname(predrop.__file__)
assert where.startswith(sys.prefix) and "site-packages" in where, where
predrop.capi.load()
print("python: predrop", where, "loads", predrop.capi.find_library())
' || fail "the Python package does not import or load the library"
echo "ok"
