#!/bin/sh
# Regenerate sample_data/llm/helm/simple_mcqa: a real HELM run, offline. HELM's simple_mcqa scenario (even or odd,
# two choices) with its simple/model1 client (no network: it answers with the prompt's words, logprob 0), so every
# confidence is 1 and every answer is wrong: a degenerate but genuine run directory, one tie block.
# Runs in a separate environment: pip install crfm-helm. Usage: sh scripts/llm/make_helm_run.sh [OUT_DIR]
set -e
out="${1:-sample_data/llm/helm/simple_mcqa}"
work="$(mktemp -d)"
(cd "$work" && helm-run --run-entries "simple_mcqa:model=simple/model1" --suite calibcli --max-eval-instances 24)
mkdir -p "$out"
cp "$work/benchmark_output/runs/calibcli/simple_mcqa:model=simple_model1/"*.json "$out/"
rm -rf "$work"
