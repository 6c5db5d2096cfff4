"""The end-to-end tests' warm interpreter: `make repro`'s preload server, warmer.

``python -m tests.warm_server SOCKET --ready-fd FD`` is ``python -m stages._lib.preload serve``
(pipeline/infra/preload.py: torch, transformers and WordNet imported once, every stage forked) that
also imports every stage module of this checkout before it listens, and with them the pipeline
modules and the third-party ones they pull in (dvclive, matplotlib, nltk, scipy, ...). A forked
stage then only does its work (what that saves: docs/testing.md, "How long the tests take").

`make repro` keeps the leaner server: the same change there is a change to pipeline/infra, on which
every stage depends (a full rerun of the committed outputs), for about a second of each stage's
imports in a repro of half an hour or more. Here the projects copy this checkout's code unedited
(tests that edit a project's code start a server in that project, ``run_dvc(..., preload="own")``),
so the modules imported here are the very ones a stage would import. Same bytes as a plain run:
tests/test_preload.py trains under this server, under `make repro`'s and in a process of its own,
and compares the files. The stage modules are imported in the server's import step
(``_import_heavy``, replaced here), after the server has read the import-time environment, as its
own imports are.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import stages   # pins the CPU kernels first, as every stage does
from pipeline.infra import preload
from stages._lib.preload import main


def import_stage_modules() -> None:
    """Import each ``stages.<name>`` (its ``main`` does not run: not ``__main__``)."""
    for module in pkgutil.iter_modules(stages.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"stages.{module.name}")


def _import_heavy_and_stages(heavy=preload._import_heavy) -> None:
    heavy()
    import_stage_modules()


if __name__ == "__main__":
    preload._import_heavy = _import_heavy_and_stages
    main(["serve", *sys.argv[1:]])
