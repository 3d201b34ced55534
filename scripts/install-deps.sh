#!/usr/bin/env bash
# Installs every Debian 12 package braid builds, tests or benchmarks with.
# Idempotent and quiet when everything is already there, so `make` can call it every time.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libssl-dev libxxhash-dev libgtest-dev libgmock-dev
      libbenchmark-dev nlohmann-json3-dev libcli11-dev libfmt-dev
      iproute2 iperf3 iputils-ping mptcpd mptcpize openssh-server openssh-client gnuplot-nox
      time linux-perf  # /usr/bin/time for the benches' CPU per GiB; perf for docs/benchmarks.md's profile
      rsync  # the reference for bench/sync/run
      attr acl  # getfattr/setfattr, getfacl/setfacl: tests/integration/metadata.sh checks -X and -A with them
      libzstd-dev  # per-piece compression (docs/engine.md, "Compression"): Debian's zstd, no download at build time
      python3 python3-zeroconf  # an independent DNS-SD browser for tests/integration/discovery.sh
      libtomlplusplus-dev libcpp-httplib-dev libqrencode-dev libjs-chart.js curl  # braid serve (docs/serve.md)
      chromium chromium-driver python3-selenium zbar-tools  # the dashboard in a real browser: tests/integration/serve_browser.py
      openssl  # the share over HTTPS: tests/integration/serve.sh share-https makes a self-signed certificate
      clang libclang-rt-14-dev)  # clang and libFuzzer's runtime: make fuzz
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]} (run as root, or install them with apt-get)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
apt-get install -y -qq --no-install-recommends "${missing[@]}"
