"""Graph: the DVC stage graph (``dvc.yaml``) as a pure function of the structural params.

DVC templating cannot turn a list into several deps, yet each stage must depend on exactly the
files it reads, so ``dvc.yaml`` is generated (``python -m stages.graph``, ``make graph``):
``plan`` validates the params that shape the graph and derives the feature periods they imply,
``regimes`` holds one class per training regime (``train.base``: its checks, what each run
starts from, the caches it reads and adds), ``code_deps`` computes each stage's code deps (the
import closure of its module, read from source, listed by package), ``files`` names the files
stages pass along, ``data_stages`` / ``model_stages`` / ``build`` make the stage dicts, ``fold``
writes the stages that differ only by seed as one ``foreach``, ``render`` writes and checks the
YAML, ``lock`` prunes ``dvc.lock`` entries of stages the graph no longer has.

May import: every layer below it (in practice ``pipeline.models.registry``,
``pipeline.features.windows``, ``pipeline.corpus.periods`` and ``.splits``, ``pipeline.infra``),
never ``torch`` or ``transformers``, directly or through another module: the graph is built on
every ``make graph`` and as the first stage of ``dvc repro``, and must stay quick and runnable
without the ML stack. Never ``stages``.
"""
