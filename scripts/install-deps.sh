#!/usr/bin/env bash
# Installs keel's build and test dependencies from Debian 12 packages. Idempotent: installs only what is missing,
# and runs `apt-get update` at most once.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev
  libpcre2-dev libutf8proc-dev libboost1.74-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-jinja2
  clang-14 libclang-rt-14-dev clang-format
  curl nodejs npm
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# npm may come from outside Debian (an image's own Node); accept a working one.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}"); missing=("${missing[@]/nodejs}")
fi
filtered=()
for p in "${missing[@]}"; do [ -n "$p" ] && filtered+=("$p"); done
if [ ${#filtered[@]} -eq 0 ]; then
  echo "install-deps: all present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${filtered[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${filtered[@]}"
