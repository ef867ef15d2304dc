#!/usr/bin/env bash
# Installs, from Debian's packages, everything PandaStack needs to build, make
# guest images, run and test (chromium: the dashboard's browser test).  Safe to
# run again.  Needs root.
set -euo pipefail
packages=(
  build-essential pkg-config clang
  qemu-system-x86 qemu-utils
  mmdebstrap e2fsprogs lz4 cpio kmod jq
  libmicrohttpd-dev libjansson-dev libsqlite3-dev sqlite3 libcurl4-openssl-dev
  libzmq3-dev libsodium-dev libssl-dev libbsd-dev libnorm-dev libpgm-dev
  libcmocka-dev libnftables-dev libc-ares-dev libhttp-parser-dev
  python3 python3-pytest python3-yaml python3-jsonschema
  python3-ipykernel python3-matplotlib python3-matplotlib-inline python3-pandas python3-numpy python3-plotly
  curl ca-certificates
  iproute2 openssl nftables
  etcd-server etcd-client
  chromium
)
missing=()
# Node.js 18+ and npm for the TypeScript SDK and the OpenAPI linter (tools/openapi-lint):
# Debian's unless one is already installed.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: ok"
