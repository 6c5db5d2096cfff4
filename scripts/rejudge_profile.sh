#!/usr/bin/env bash
# Judge a kept profile report again with the verdict engine at HEAD, from the run's own outputs:
#
#   bash scripts/rejudge_profile.sh anthology reports/anthology/test-2021
#
# Nothing is trained or scored again. In a throwaway worktree of HEAD, params.yaml and dvc.yaml
# are rendered for PROFILE, the kept run's dvc.lock puts its outputs back from the shared DVC
# cache (`dvc checkout`; the uncached reports are the kept copies under DEST), and only the
# stages that judge (report, forecast_report, verdicts) run, with HEAD's code. The reports, metrics and plots
# replace the kept ones under DEST, as does dvc.lock (it then records the judging stages' code at
# HEAD beside the run's own stages); DEST/rejudged.md says when, at which commit, and which params
# of HEAD's rendering differ from the run's. Stops if a param the judging stages read differs
# from the run's, or if an output of the run is no longer in the cache.
set -euo pipefail

profile=${1:?usage: scripts/rejudge_profile.sh PROFILE DEST}
dest=${2:?usage: scripts/rejudge_profile.sh PROFILE DEST}
source "$(dirname "$0")/worktree.sh"
dest_lock="$(git rev-parse --show-toplevel)/$dest/dvc.lock"
[ -f "$dest_lock" ] || { echo "error: $dest/dvc.lock not found: DEST must be a kept run (scripts/run_profile.sh)" >&2; exit 2; }
open_worktree "rejudge-$profile"
.venv/bin/python -m stages.params --profile "$profile" >/dev/null
.venv/bin/python -m stages.graph >/dev/null
# The params the judging stages read must be the run's (a key the run's params.yaml lacks is new:
# the run's code could not read it); the others may differ and are listed in rejudged.md.
judging="report forecast_report verdicts"     # the stages that judge: nothing else reruns
changed=$(.venv/bin/python scripts/rejudge_support.py params "$root/$dest/params.yaml" params.yaml \
          --stages $judging)
# the run's lock, its per-seed entries under today's stage names (train-x-s0 -> train-x@s0)
.venv/bin/python scripts/rejudge_support.py lock "$root/$dest/dvc.lock" > dvc.lock
.venv/bin/dvc checkout --quiet
cp "$root/$dest"/*.json reports/          # reports are not cached (cache: false): the kept ones
for stage in $judging; do
  .venv/bin/dvc repro --single-item --force "$stage"
done

# what the judging stages wrote, where run_profile.sh kept it: reports/x -> DEST/x, else DEST/path
for out in $(.venv/bin/python scripts/rejudge_support.py outs $judging); do
  case "$out" in
    reports/*) target="$root/$dest/${out#reports/}" ;;
    *) target="$root/$dest/$out" ;;
  esac
  rm -rf "$target"; mkdir -p "$(dirname "$target")"; cp -r "$out" "$target"
  case "$target" in *.md) sed -i 's#](\.\./plots/#](plots/#g' "$target" ;; esac
done
cp dvc.lock "$root/$dest/"
{
  echo "Judged again on $(date -u +%FT%TZ) at commit $(git rev-parse --short HEAD) from the run's"
  echo "outputs in the DVC cache (\`scripts/rejudge_profile.sh $profile $dest\`): stages report,"
  echo "forecast_report and verdicts only; every other output is the run's (stage_times.md, repro.log)."
  echo
  if [ -n "$changed" ]; then
    echo "Params of HEAD's rendering of \`profiles/$profile.yaml\` that differ from the run's"
    echo "params.yaml (the judging stages read none of them that the run had):"
    echo
    echo "$changed"
  else
    echo "HEAD renders \`profiles/$profile.yaml\` to the run's params.yaml."
  fi
} > "$root/$dest/rejudged.md"
echo "judged $dest again at $(git rev-parse --short HEAD)"
