#!/bin/bash
# GNU parallel on one workstation (docs/CLUSTER.md): 8 shards, 2 at a time, one GPU per job slot.
# {%} is the job slot (1..2), so each running job has a GPU of its own; PARALLEL_SEQ (1..8) is the shard, so
# re-run one shard as `pc-sample ... --shard 3/8` (a new parallel run would number its one job 1). $$, the job
# shell's PID, makes one report per attempt.
set -euo pipefail
mkdir -p out reports
parallel -j2 --halt never \
  'CUDA_VISIBLE_DEVICES=$(({%} - 1)) pc-sample fps -n 4096 --input-list clouds.txt --output-dir out \
     --shard auto --shard-count 8 --skip-existing --json --report reports/{}-$$.jsonl > /dev/null' ::: 0 1 2 3 4 5 6 7
pc-sample report reports/*.jsonl -o merged.jsonl
