#!/usr/bin/env bash
# Builds the static sandbox agent. Called by the Maven build (generate-resources).
set -euo pipefail
src=$1 out=$2
if ! command -v gcc >/dev/null 2>&1; then
  echo "dsec: gcc is needed to build the sandbox agent: apt-get install gcc libc6-dev" >&2
  exit 1
fi
mkdir -p "$out"
# Rebuild only when a source is newer than the binary.
if [ -f "$out/dsec-agent" ] && [ -z "$(find "$src" -name '*.[ch]' -newer "$out/dsec-agent")" ]; then
  exit 0
fi
gcc -static -O2 -Wall -Wextra -Werror -std=gnu11 -o "$out/dsec-agent.tmp" "$src"/agent/*.c
strip "$out/dsec-agent.tmp"
mv "$out/dsec-agent.tmp" "$out/dsec-agent"
