"""The outputs of a kept profile run (``make profile-report``), read back from the DVC cache.

A kept run's folder holds its ``dvc.lock`` and ``params.yaml``, not its data: the lock names
each output's md5, and the checkout's DVC cache (shared by every profile run) holds the bytes.
:func:`materialize` copies one output (a file or a folder) out of the cache, so that the
library's readers (``pipeline.reports.scored_runs.load_run``) read it as the run's stages wrote it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from pipeline.infra.errors import UserError

CACHE = Path(".dvc/cache")


def output_md5(kept: Path, path: str) -> str:
    """The md5 (``<hash>`` or ``<hash>.dir``) the kept run's ``dvc.lock`` records for ``path``."""
    lock = yaml.safe_load((kept / "dvc.lock").read_text(encoding="utf-8"))
    for stage in lock.get("stages", {}).values():
        for out in stage.get("outs", []):
            if out["path"] == path:
                return str(out["md5"])
    raise UserError(f"{path} is not an output of the kept run", path=kept / "dvc.lock",
                    fix="name an output its dvc.lock lists (e.g. data/scores/<variant>-s<seed>)")


def _cached(cache: Path, md5: str) -> Path:
    blob = cache / "files" / "md5" / md5[:2] / md5[2:]
    if not blob.exists():
        raise UserError(f"the DVC cache holds no object {md5}", path=blob,
                        fix="run the profile again (`make profile-report`), or `dvc pull` it "
                            "from the remote the run was pushed to")
    return blob


def materialize(kept: Path, path: str, into: Path, cache: Path = CACHE) -> Path:
    """Copy the kept run's output ``path`` from ``cache`` to ``into / path``; that path."""
    md5, target = output_md5(kept, path), into / path
    if md5.endswith(".dir"):
        for entry in json.loads(_cached(cache, md5).read_text(encoding="utf-8")):
            dest = target / entry["relpath"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_cached(cache, entry["md5"]), dest)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_cached(cache, md5), target)
    return target
