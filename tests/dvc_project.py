"""Build a real, throw-away copy of this DVC project for end-to-end tests.

`make_project(tmp_path, params)` copies the pipeline code, the stage graph and the embedded data
into ``tmp_path / "proj"``, deep-merges ``params`` into params.yaml, regenerates dvc.yaml for those
params (``stages.graph``, as ``make graph`` does), and makes it a committed git + DVC repo (keeping
our `.dvc/config`, whose ``parsing.bool``/``parsing.list`` settings the stage ``cmd`` lines need,
beside what ``dvc init`` writes). `run_dvc` runs the dvc CLI there with the venv's ``python`` first
on PATH (stage commands call plain ``python``), analytics off and the Hugging Face hub offline.
`dvc_repo` opens ``dvc.repo.Repo`` for ``status()`` / ``reproduce(dry=True)`` assertions.

Generic on purpose: feature, train and score end-to-end tests use it too (pass ``extra`` paths
for anything else a stage needs).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from pipeline.infra.preload import IMPORT_TIME_ENV, SOCKET_ENV

REPO = Path(__file__).resolve().parents[1]

# What a copied project needs to run its stages: code, graph, params, embedded data, DVC config.
PROJECT_PATHS: tuple[str, ...] = (
    "dvc.yaml",
    "params.yaml",
    "runtime.yaml",
    "pipeline",
    "stages",
    "data/sample",
    "data/reference",
    ".dvc/config",
    ".dvc/plots",
    ".dvcignore",
    ".gitignore",
)

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def dvc_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for dvc subprocesses: the venv first on PATH, offline, no analytics."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update({
        "DVC_NO_ANALYTICS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        # Commits in the temp repo need an identity; never touch the user's git config.
        "GIT_AUTHOR_NAME": "futurelm-tests",
        "GIT_AUTHOR_EMAIL": "tests@futurelm.invalid",
        "GIT_COMMITTER_NAME": "futurelm-tests",
        "GIT_COMMITTER_EMAIL": "tests@futurelm.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    })
    env.pop("VIRTUAL_ENV", None)
    if extra:
        env.update(extra)
    return env


def deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``override`` merged in; nested dicts merge, anything else replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _run(args: list[str], cwd: Path, check: bool = True,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=dvc_env(env), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed in {cwd} (exit {proc.returncode}):\n"
                           f"{proc.stdout}\n{proc.stderr}")
    return proc


def git(proj: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run git in the temp project (identity from :func:`dvc_env`)."""
    return _run(["git", *args], proj, check=check)


def write_params(proj: Path, params: Mapping[str, Any], graph: bool = False) -> None:
    """Deep-merge ``params`` into ``proj/params.yaml`` (no commit).

    ``graph=True`` also regenerates ``proj/dvc.yaml`` for the new params (``make graph``); needed
    when a structural param changes (split periods, window, variants, seeds, train.base,
    score.periods).
    """
    path = proj / "params.yaml"
    current = yaml.safe_load(path.read_text()) or {}
    path.write_text(yaml.safe_dump(deep_merge(current, params), sort_keys=False))
    if graph:
        write_graph(proj)


def write_graph(proj: Path, same_code: bool = False) -> None:
    """Regenerate ``proj/dvc.yaml`` from ``proj/params.yaml`` with the project's generator
    (``python -m stages.graph`` there: the project's own registry and code, even edited).

    ``same_code=True``: the project's ``stages`` and ``pipeline`` are this checkout's, unedited,
    so this checkout's generator, in this process, writes the same file (~1.5 s less: no
    interpreter start, and the source files' parses are cached per process)."""
    if same_code:
        from stages.graph import main

        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                main(["--params", str(proj / "params.yaml"), "--out", str(proj / "dvc.yaml")])
        except SystemExit:
            raise RuntimeError(f"stages.graph failed for {proj}:\n{err.getvalue()}") from None
        return
    proc = subprocess.run([sys.executable, "-m", "stages.graph"], cwd=proj, env=dvc_env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"stages.graph failed in {proj}:\n{proc.stderr}")


def keep_stages(proj: Path, names: Iterable[str]) -> None:
    """Reduce ``proj/dvc.yaml`` to the named stages (no commit).

    Lets a test exercise one part of the graph on inputs committed as plain files. The trimmed
    file is no longer what ``stages.graph`` generates, so unless ``graph`` is kept (it would
    refuse the trimmed file), the kept stages lose their dep on its check stamp.
    """
    from stages.graph import STAMP

    path = proj / "dvc.yaml"
    graph = yaml.safe_load(path.read_text())
    wanted = list(names)
    missing = [n for n in wanted if n not in graph["stages"]]
    if missing:
        raise KeyError(f"no stage(s) {missing} in dvc.yaml")
    graph["stages"] = {n: graph["stages"][n] for n in wanted}
    if "graph" not in wanted:
        for stage in graph["stages"].values():
            body = stage.get("do", stage)
            body["deps"] = [d for d in body.get("deps", []) if d != STAMP]
    path.write_text(yaml.safe_dump(graph, sort_keys=False))


def make_project(tmp_path: Path, params: Mapping[str, Any] | None = None,
                 extra: Iterable[str] = (), name: str = "proj",
                 stages: Iterable[str] | None = None) -> Path:
    """Copy this project into ``tmp_path/name`` as a fresh, committed git + DVC repo; return it.

    ``params`` is deep-merged into params.yaml before the commit; ``extra`` names more
    repo-relative paths to copy (files or folders), e.g. a prebuilt ``data/tokenizer``;
    ``stages`` (optional) keeps only those stages of dvc.yaml (see :func:`keep_stages`).
    """
    proj = tmp_path / name
    proj.mkdir(parents=True)
    for rel in (*PROJECT_PATHS, *extra):
        src = REPO / rel
        if not src.exists():
            continue  # e.g. .dvcignore is optional
        dst = proj / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=_IGNORE)
        else:
            shutil.copy2(src, dst)
    write_params(proj, params or {})
    write_graph(proj, same_code=True)   # the code was just copied from this checkout
    if stages is not None:
        keep_stages(proj, stages)

    git(proj, "init", "-q", "-b", "main")
    # what `dvc init` adds to ours (config, plot templates): its .dvc/.gitignore
    shutil.copytree(dvc_init_template(), proj / ".dvc", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("config", "tmp"))
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "test project")
    return proj


@functools.lru_cache(maxsize=1)
def dvc_init_template() -> Path:
    """The ``.dvc`` folder a real ``dvc init`` writes, made once per test process in a throw-away
    git repo (~0.5 s of CPU an init; the projects of one process copy it)."""
    root = Path(tempfile.mkdtemp(prefix="futurelm-dvc-init-"))
    atexit.register(shutil.rmtree, root, True)
    git(root, "init", "-q")
    run_dvc(root, "init", "-q")
    return root / ".dvc"


def run_dvc(proj: Path, *args: str, check: bool = True,
            env: Mapping[str, str] | None = None,
            preload: bool | str = False) -> subprocess.CompletedProcess[str]:
    """Run ``dvc <args>`` in ``proj`` with the test environment (plus ``env``); raise with its
    output on failure.

    ``preload=True`` runs it as ``make repro`` does: each stage forks from a warm interpreter
    (torch and transformers imported, WordNet read: ~7-10 s less per torch stage; same bytes,
    tests/test_preload.py). The warm interpreter is this test process's :func:`warm_server`,
    shared by every such call with the same import-time environment; it has imported this
    checkout's ``stages`` and ``pipeline``: right for a project that copies them unchanged.
    ``preload="own"`` starts one in ``proj`` for this call (``python -m stages._lib.preload run --
    ...``, exactly ``make repro``), for a project whose code was edited (a variant added). Plain
    ``dvc`` (the default) stays covered by the others.
    """
    dvc = Path(sys.executable).parent / "dvc"
    cmd = [str(dvc)] if dvc.exists() else [sys.executable, "-m", "dvc"]
    if not preload:
        return _run([*cmd, *args], proj, check=check, env=env)
    if preload != "own":
        return run_warm([*cmd, *args], proj, check=check, env=env)
    proc = _run([sys.executable, "-m", "stages._lib.preload", "run", "--", *cmd, *args], proj,
                check=check, env=env)
    if "preload: torch and transformers imported once" not in proc.stderr:
        raise RuntimeError(f"the preload server did not start in {proj}:\n{proc.stderr}")
    return proc


def run_stage(proj: Path, cmd: str, env: Mapping[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    """Run one stage command (``python -m stages.<name> ...``, as a ``dvc.yaml`` ``cmd``) in
    ``proj`` outside DVC, forked from the :func:`warm_server` (as under ``make repro``); raise with
    its output on failure."""
    return run_warm(shlex.split(cmd), proj, env=env)


def run_warm(args: list[str], proj: Path, check: bool = True,
              env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """:func:`_run` with ``FUTURELM_PRELOAD`` naming the :func:`warm_server` for ``env``; fails
    when the server died meanwhile (its stages would have run in their own processes)."""
    server, socket = warm_server(dvc_env(env))
    proc = _run(args, proj, check=check, env={**(env or {}), SOCKET_ENV: socket})
    if server.poll() is not None:
        raise RuntimeError(f"the warm server died running {' '.join(args)} in {proj} "
                           f"(exit {server.returncode}): the stages ran in their own processes")
    return proc


# The warm servers of this test process, by import-time environment (see run_dvc).
_WARM: dict[tuple[tuple[str, str], ...], tuple[subprocess.Popen[bytes], str]] = {}


def warm_server(env: Mapping[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """(process, socket) of this test process's preload server (``make repro``'s) for
    ``env``'s import-time variables (pipeline/infra/preload.py: a stage whose variables differ is
    refused and runs in its own process), started in this checkout on first use and stopped when
    the process exits."""
    key = tuple(sorted((k, v) for k, v in env.items() if k.startswith(IMPORT_TIME_ENV)))
    if key in _WARM and _WARM[key][0].poll() is None:
        return _WARM[key]
    socket = str(Path(tempfile.mkdtemp(prefix="futurelm-test-preload-")) / "socket")
    read, write = os.pipe()
    server = subprocess.Popen([sys.executable, "-m", "stages._lib.preload", "serve", socket,
                               "--ready-fd", str(write)], cwd=REPO, env=dict(env),
                              pass_fds=(write,))
    os.close(write)
    ready = os.read(read, 16)
    os.close(read)
    if ready != b"ready":
        server.kill()
        raise RuntimeError(f"the warm server did not start (exit {server.wait()})")
    if not _WARM:
        atexit.register(_stop_warm_servers)
    _WARM[key] = (server, socket)
    return _WARM[key]


def _stop_warm_servers() -> None:
    for server, socket in _WARM.values():
        server.terminate()
        server.wait()
        shutil.rmtree(Path(socket).parent, ignore_errors=True)
    _WARM.clear()


def stages_run(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """Sorted names of the stages a ``dvc repro`` run actually ran (from its log)."""
    return sorted(re.findall(r"Running stage '([^']+)'", proc.stdout + proc.stderr))


@contextlib.contextmanager
def dvc_repo(proj: Path) -> Iterator[Any]:
    """Open ``dvc.repo.Repo(proj)`` for in-process assertions (status, dry reproduce); close it.

    The working directory is ``proj`` inside the block: DVC resolves stage paths against the
    current directory, so a Repo used from elsewhere reports every dependency as changed.
    """
    from dvc.repo import Repo

    with contextlib.chdir(proj):
        repo = Repo(str(proj))
        try:
            yield repo
        finally:
            repo.close()


def stages_that_would_run(proj: Path, *targets: str) -> list[str]:
    """Sorted names of the stages ``dvc repro <targets>`` finds changed now (nothing is run).

    What ``dvc repro --dry`` lists, read from ``Repo.status`` (targets with their upstream
    stages): dvc 3.67's dry run raises on a stage whose dep an earlier stage has yet to create.
    """
    with dvc_repo(proj) as repo:
        status = repo.status(targets=list(targets), with_deps=True) if targets else repo.status()
    return sorted(name.rpartition(":")[2] for name in status)


def expand_runs(stages: Mapping[str, Any]) -> dict[str, Any]:
    """``stages`` (a graph's) with each per-seed ``foreach`` family (``train-frequency``) as the
    stages DVC runs (``train-frequency@s0`` …), in place; the period ``foreach`` stages as they
    are."""
    from pipeline.graph.fold import expand

    out: dict[str, Any] = {}
    for name, stage in stages.items():
        items = stage.get("foreach")
        per_seed = isinstance(items, Mapping) and all(
            k == f"s{v}" for k, v in items.items())   # {s0: 0, s1: 1}, not a period's mapping
        out.update(expand({name: stage}) if per_seed else {name: stage})
    return out
