#!/usr/bin/env bash
# Building keel on the GPU machine, which has CMake, Ninja and the CUDA toolkit but no Debian packages and no
# registry. Two steps:
#   here (Debian 12, registry reachable):  scripts/gpu-deps.sh download   -> .deps/debs/*.deb (ignored by git)
#   there (carry .deps):                    scripts/gpu-deps.sh unpack     -> .deps/prefix, prints the cmake flags
# The packages are unpacked with dpkg -x into a prefix, never into /, and found through CMAKE_PREFIX_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libspdlog-dev libspdlog1.10
      libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2 libboost1.74-dev
      libgtest-dev googletest libbenchmark-dev libbenchmark1debian)
case "${1:-}" in
  download)
    mkdir -p .deps/debs
    (cd .deps/debs && apt-get download "${PKGS[@]}")
    ls .deps/debs
    ;;
  unpack)
    mkdir -p .deps/prefix
    for f in .deps/debs/*.deb; do dpkg -x "$f" .deps/prefix; done
    P=$PWD/.deps/prefix/usr
    # pkg-config files and CMake configs carry /usr paths: point them at the prefix.
    grep -rl 'prefix=/usr' "$P/lib/x86_64-linux-gnu/pkgconfig" 2>/dev/null | xargs -r sed -i "s|prefix=/usr|prefix=$P|"
    echo "-DCMAKE_PREFIX_PATH=$P -DCMAKE_LIBRARY_PATH=$P/lib/x86_64-linux-gnu -DCMAKE_INCLUDE_PATH=$P/include" \
         "-DCMAKE_BUILD_RPATH=$P/lib/x86_64-linux-gnu"
    ;;
  *)
    echo "usage: $0 download|unpack" >&2
    exit 2
    ;;
esac
