#!/usr/bin/env bash
# Run one profile end to end in a throwaway worktree of HEAD and keep its report:
#
#   bash scripts/run_profile.sh anthology reports/anthology/test-2021
#
# The checkout's own params.yaml, dvc.yaml, dvc.lock and data/ stay as they are (the default
# run's). The worktree is a sibling of the checkout, so `../shared` means the same folder there;
# it shares the checkout's virtual environment and DVC cache (outputs are reused, not recomputed,
# when a later run asks for the same stage with the same inputs). Kept under DEST: the report
# files, metrics, plots, the run's params.yaml and dvc.lock, the timestamped log and the
# per-stage wall times (scripts/stage_times.py). The worktree is removed at the end unless
# KEEP=1.
set -euo pipefail

profile=${1:?usage: scripts/run_profile.sh PROFILE DEST}
dest=${2:?usage: scripts/run_profile.sh PROFILE DEST}
root=$(git rev-parse --show-toplevel)
work="$(dirname "$root")/.futurelm-run-$profile"
[ -e "$work" ] && { echo "error: $work exists (a run in progress, or left by KEEP=1): remove it with 'git worktree remove --force $work'" >&2; exit 2; }

git -C "$root" worktree add --detach "$work" HEAD >/dev/null
ln -s "$root/.venv" "$work/.venv"
cleanup() { [ "${KEEP:-0}" = 1 ] || git -C "$root" worktree remove --force "$work"; }
trap cleanup EXIT

cd "$work"
.venv/bin/dvc cache dir --local "$root/.dvc/cache" >/dev/null
started=$(date -u +%FT%TZ)
mkdir -p "$root/$dest"
# -o: the shared environment is the checkout's, installed there; the worktree's fresh files are
# newer than its stamp only because they were just checked out.
if ! make -o .venv/.futurelm-installed repro PROFILE="$profile" 2>&1 | .venv/bin/python scripts/stage_times.py --stamp > repro.log; then
  cp repro.log "$root/$dest/repro.failed.log"
  echo "error: make repro PROFILE=$profile failed; its log: $dest/repro.failed.log" >&2
  exit 1
fi
finished=$(date -u +%FT%TZ)

# only the reports this run wrote (its dvc.lock's outputs), not files committed beside them
for report in reports/*.md reports/*.json; do
  if grep -qx "    - path: $report" dvc.lock; then cp "$report" "$root/$dest/"; fi
done
for folder in metrics plots; do rm -rf "${root:?}/$dest/$folder"; cp -r "$folder" "$root/$dest/$folder"; done
# the reports link ../plots/ from reports/; the kept copies sit beside their plots/
sed -i 's#](\.\./plots/#](plots/#g' "$root/$dest"/*.md
cp params.yaml dvc.lock repro.log "$root/$dest/"
{
  echo "Profile \`$profile\` at commit $(git rev-parse --short HEAD): $started to $finished (UTC)."
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB."
  echo
  .venv/bin/python scripts/stage_times.py --table repro.log
} > "$root/$dest/stage_times.md"
echo "kept the report of profile $profile in $dest"
