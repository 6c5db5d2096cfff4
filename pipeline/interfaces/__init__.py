"""Interfaces: one declaration per stage (``<stage>.py``, a
:class:`pipeline.infra.interface.StageInterface` named ``INTERFACE``), read by both the stage's
command line (``stages/<stage>.py``, through ``stages/_args.parser_for``) and the stage graph
(:mod:`pipeline.graph`), which renders its ``dvc.yaml`` entry.

A stage's code deps are the import closure of its module, this declaration included, so a
declaration imports nothing but :mod:`pipeline.infra` (the mechanism and the settings classes)
and :mod:`pipeline.interfaces.shared`: editing one stage's declaration reruns that stage only.

May import: ``pipeline.infra``, nothing else of ``pipeline`` (the graph imports these modules).
"""
