#!/usr/bin/env bash
# Builds the static FUSE fd holder. Called by the Maven build (generate-resources).
set -euo pipefail
src=$1 out=$2
if ! command -v gcc >/dev/null 2>&1; then
  echo "dsec: gcc is needed to build the FUSE fd holder: apt-get install gcc libc6-dev" >&2
  exit 1
fi
mkdir -p "$out"
if [ -f "$out/dsec-fuse-holder" ] && [ -z "$(find "$src" -name '*.[ch]' -newer "$out/dsec-fuse-holder")" ]; then
  exit 0
fi
if ! ls "$src"/holder/*.c >/dev/null 2>&1; then
  exit 0
fi
gcc -static -O2 -Wall -Wextra -Werror -std=gnu11 -o "$out/dsec-fuse-holder.tmp" "$src"/holder/*.c
strip "$out/dsec-fuse-holder.tmp"
mv "$out/dsec-fuse-holder.tmp" "$out/dsec-fuse-holder"
