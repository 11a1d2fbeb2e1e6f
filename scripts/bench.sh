#!/usr/bin/env bash
# make bench: load and micro benchmarks of Social Data Router. Builds the
# benchmark program (bench/) and runs it against bin/caddy and
# bin/upstream-sim (make bench builds them first). It prints figures and
# ratios against references measured in the same run; it asserts nothing.
# Extra arguments go to the program (go run ./bench -h lists them), e.g.
#   bash scripts/bench.sh -phases e2e -round 5s
# PostgreSQL settles are measured too when SDR_TEST_POSTGRES_URL is set.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp="$(mktemp -d -t sdr-bench-bin-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/sdr-bench" ./bench
"$tmp/sdr-bench" -repo "$PWD" "$@"
