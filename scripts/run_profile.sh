#!/usr/bin/env bash
# Run one profile end to end in a throwaway worktree of HEAD and keep its report:
#
#   bash scripts/run_profile.sh anthology reports/anthology/test-2021
#   COLD=1 bash scripts/run_profile.sh anthology reports/anthology/test-2021
#   TARGETS=semantic_benchmark bash scripts/run_profile.sh semantic-export reports/anthology/semantic-2022
#
# TARGETS (stage names) runs only those stages and what they need (`dvc repro TARGETS`), and
# keeps only their outputs and their verdict records (DEST/verdicts.json).
# COLD=1 runs every stage (`dvc repro --no-run-cache`) instead of restoring the ones whose inputs
# an earlier run had from the DVC run-cache, so that the log times the whole run. A run stopped
# half-way (interrupted, or failed) keeps its log as DEST/repro.stopped-<UTC time>.log: a later
# run resumes from the run-cache (without COLD), and `scripts/stage_times.py --table` sums the
# parts, each stage counted once.
#
# The checkout's own params.yaml, dvc.yaml, dvc.lock and data/ stay as they are (the default
# run's); the worktree shares their virtual environment and DVC cache (scripts/worktree.sh). Kept
# under DEST: the report files, metrics, plots, the run's params.yaml and dvc.lock, the
# timestamped log and the per-stage wall times (scripts/stage_times.py).
set -euo pipefail

profile=${1:?usage: scripts/run_profile.sh PROFILE DEST}
dest=${2:?usage: scripts/run_profile.sh PROFILE DEST}
source "$(dirname "$0")/worktree.sh"
finished=
on_worktree_exit() {
  if [ -z "$finished" ] && [ -s repro.log ]; then
    local kept="$dest/repro.stopped-$(date -u +%Y%m%dT%H%MZ).log"
    cp repro.log "$root/$kept"
    echo "make repro PROFILE=$profile stopped before the end; its log: $kept" >&2
  fi
}
open_worktree "run-$profile"
started=$(date -u +%FT%TZ)
mkdir -p "$root/$dest"
if [ -n "${FROM:-}" ]; then
  from="$root/$FROM"
  [ -s "$from/dvc.lock" ] || { echo "error: FROM=$FROM has no dvc.lock (a kept report folder?)" >&2; exit 2; }
  .venv/bin/python -m stages.params --profile "$profile" >/dev/null
  .venv/bin/python -m stages.graph >/dev/null
  cp "$from/dvc.lock" dvc.lock
  # a stage whose outputs are not all back simply runs again
  .venv/bin/dvc checkout --quiet 2>/dev/null || true
  for folder in metrics plots; do [ -d "$from/$folder" ] && cp -r "$from/$folder/." "$folder/"; done
  for file in "$from"/*.json; do cp "$file" reports/; done
fi
# -o: the shared environment is the checkout's, installed there; the worktree's fresh files are
# newer than its stamp only because they were just checked out.
flags=$([ "${COLD:-0}" = 1 ] && echo --no-run-cache || true)
if ! make -o .venv/.futurelm-installed repro PROFILE="$profile" REPRO_FLAGS="$flags ${TARGETS:-}" 2>&1 | .venv/bin/python scripts/stage_times.py --stamp > repro.log; then
  echo "error: make repro PROFILE=$profile failed" >&2
  exit 1
fi
finished=$(date -u +%FT%TZ)

if [ -n "${TARGETS:-}" ]; then
  # the named stages' outputs only: the worktree's dvc.lock also lists the default run's
  .venv/bin/python -c 'import sys; from dvc.repo import Repo
repo = Repo()
print("\n".join(o.def_path for t in sys.argv[1:] for s in repo.stage.collect(t) for o in s.outs))' \
    $TARGETS > kept-outputs.txt
  while read -r path; do
    case "$path" in
      reports/*) cp -r "$path" "$root/$dest/" ;;
      *) mkdir -p "$root/$dest/$(dirname "$path")"; cp -r "$path" "$root/$dest/$path" ;;
    esac
  done < kept-outputs.txt
  # their verdict records in one verdicts.json, collected as the verdicts stage collects the
  # default run's (the aggregated reports/anthology/verdicts.json reads it)
  inputs=$(for f in $(grep '\.json$' kept-outputs.txt); do
    .venv/bin/python -c 'import json, sys; sys.exit("verdicts" not in json.load(open(sys.argv[1])))' \
      "$f" && echo "$f"; done || true)
  if [ -n "$inputs" ]; then .venv/bin/python -m stages.verdicts --inputs $inputs --out "$root/$dest/verdicts.json"; fi
else
  # only the reports this run wrote (its dvc.lock's outputs), not files committed beside them
  for report in reports/*.md reports/*.json; do
    if grep -qx "    - path: $report" dvc.lock; then cp "$report" "$root/$dest/"; fi
  done
  for folder in metrics plots; do rm -rf "${root:?}/$dest/$folder"; cp -r "$folder" "$root/$dest/$folder"; done
fi
# the reports link ../plots/ from reports/; the kept copies sit beside their plots/
sed -i 's#](\.\./plots/#](plots/#g' "$root/$dest"/*.md
cp params.yaml dvc.lock repro.log "$root/$dest/"
{
  echo "Profile \`$profile\`${TARGETS:+, stages \`$TARGETS\` and what they need,} at commit $(git rev-parse --short HEAD): $started to $finished (UTC)."
  echo "Machine: $(.venv/bin/python -c 'from benchmarks._results import machine; print(machine())')."
  echo
  .venv/bin/python scripts/stage_times.py --table repro.log
} > "$root/$dest/stage_times.md"
echo "kept the report of profile $profile in $dest"
