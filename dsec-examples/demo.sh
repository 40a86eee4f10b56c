#!/usr/bin/env bash
# The demo: installs what it needs, builds dsec, and runs a 16-sandbox rollout on the embedded default host
# (state in /var/lib/dsec, Debian base cached in /var/cache/dsec). Run as root. Extra arguments go to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup-host
mvn -q -B -ntp -DskipTests -DskipITs install -pl dsec-examples -am
exec java -cp "dsec-examples/target/classes:$(cat dsec-examples/target/classpath.txt)" io.dsec.examples.RolloutDemo "$@"
