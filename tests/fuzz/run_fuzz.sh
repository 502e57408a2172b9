#!/usr/bin/env bash
# Bounded libFuzzer run of the protocol parser: run_fuzz.sh FUZZER CORPUS_DIR SECONDS.
# Seeds the corpus with one valid request of each numbering. Exit 77 (CTest skip) when the
# fuzzer was not built because clang++ is missing.
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3
if [[ ! -x "$fuzzer" ]]; then
  echo "SKIP: $fuzzer not built: it needs clang++ with libFuzzer (apt-get install clang libclang-rt-14-dev) and the protocol_fuzz target"
  exit 77
fi
mkdir -p "$corpus"
# 1.13 SET "/k"="v" then GETNUMKEYS; modern VALIDATE, ADD "c" += 1, WAIT ["c"].
printf '\x00\x02\x00\x00\x00\x00\x00\x00\x00/k\x01\x00\x00\x00\x00\x00\x00\x00v\x06' > "$corpus/seed_legacy"
printf '\x00\xce\xf7\x85\x3c\x04\x01\x00\x00\x00\x00\x00\x00\x00c\x01\x00\x00\x00\x00\x00\x00\x00\x06\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00c' > "$corpus/seed_modern"
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=512 -max_len=8192 -print_final_stats=1 "$corpus"
