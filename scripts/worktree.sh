# Sourced by scripts/run_profile.sh and scripts/rejudge_profile.sh: a throwaway worktree of HEAD
# beside the checkout, sharing its virtual environment and DVC cache.
#
#   source scripts/worktree.sh
#   open_worktree run-anthology     # sets $root and $work, cd's into $work
#
# The worktree is a sibling of the checkout, so `../shared` means the same folder there; a later
# run that asks for a stage with the same inputs reuses the cached outputs instead of recomputing
# them. It is removed when the calling script exits, unless KEEP=1; before that the caller's
# `on_worktree_exit` runs there, if it defines one (to keep a log of a run stopped half-way).

open_worktree() {
  local name=${1:?usage: open_worktree NAME}
  root=$(git rev-parse --show-toplevel)
  work="$(dirname "$root")/.futurelm-$name"
  if [ -e "$work" ]; then
    echo "error: $work exists (a run in progress, or left by KEEP=1): remove it with 'git worktree remove --force $work'" >&2
    exit 2
  fi
  git -C "$root" worktree add --detach "$work" HEAD >/dev/null
  ln -s "$root/.venv" "$work/.venv"
  trap 'cd "$work"; if declare -F on_worktree_exit >/dev/null; then on_worktree_exit; fi
        [ "${KEEP:-0}" = 1 ] || git -C "$root" worktree remove --force "$work"' EXIT
  # a stopped run (kill, Ctrl-C) exits through the EXIT trap too, instead of dying before it
  trap 'exit 130' INT
  trap 'exit 143' TERM
  cd "$work"
  export PATH="$work/.venv/bin:$PATH"      # the stages' `python`, as make puts it
  .venv/bin/dvc cache dir --local "$root/.dvc/cache" >/dev/null
}
