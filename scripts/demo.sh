#!/usr/bin/env bash
# What `make run` does. Until the engine lands, the simulator shows the
# scheduler on the seed's own scenario.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
"$build/braid" sim --scenario scenarios/seed-5ghz.scn
