"""One declaration per stage (``<stage>.py``, a :class:`pipeline.infra.interface.StageInterface`
named ``INTERFACE``), read by both the stage's command line (``stages/<stage>.py``, through
``stages/_lib/args.parser_for``) and the stage graph (:mod:`pipeline.graph`), which renders its
``dvc.yaml`` entry. A declaration says everything about its stage that is not the plan's: its
options, whether it runs torch, and, for a stage whose paths the plan does not shape, its paths
and its place in ``dvc.yaml`` (``paths``, ``after``): such a stage is two files, its main and
this declaration (:mod:`pipeline.graph.declared` finds it).

A declaration imports only the mechanism (:mod:`pipeline.infra.interface`), the settings classes
(:mod:`pipeline.infra.schema.params`) and the options several declarations share
(:mod:`pipeline.infra.shared_options`). Like a
variant module, each declaration is a code dep of its own (not its package's folder,
:func:`pipeline.graph.code_deps.package_units`): editing or adding one reruns its stage only.
"""
