#!/usr/bin/env bash
# Runs dsec's benchmarks and writes benchmarks/results/NAME.json for each. Run as root.
#   bash benchmarks/run.sh                      # all: exec-roundtrip create-latency idle-memory
#   bash benchmarks/run.sh create-latency --quick
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup-host podman
mvn -q -B -ntp -DskipTests -DskipITs install -pl benchmarks -am
exec java -cp "benchmarks/target/classes:$(cat benchmarks/target/classpath.txt)" io.dsec.benchmarks.Main "$@"
