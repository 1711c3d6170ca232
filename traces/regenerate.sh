#!/bin/sh
# Rebuilds the shipped sample traces; the output is byte-identical (tests/test_samples.py checks it).
set -e
cd "$(dirname "$0")"
ctxsim synth --profile coding --turns 60 --seed 0 --record-usage -o billing-session.jsonl
ctxsim synth --profile coding --turns 300 --seed 7 -o long-session.jsonl
