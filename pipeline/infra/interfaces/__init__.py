"""One declaration per stage (``<stage>.py``, a
:class:`pipeline.infra.interface.StageInterface` named ``INTERFACE``), read by both the stage's
command line (``stages/<stage>.py``, through ``stages/_lib/args.parser_for``) and the stage graph
(:mod:`pipeline.graph`), which renders its ``dvc.yaml`` entry.

They sit in ``infra``, the bottom layer, because both ends read them: the stages and the graph,
which may import no stage module. A stage's code deps are the import closure of its module, this
declaration included, so a declaration imports only the mechanism
(:mod:`pipeline.infra.interface`), the settings classes (:mod:`pipeline.infra.params`) and the
options several declarations share (:mod:`pipeline.infra.interfaces.shared`): editing one
stage's declaration reruns that stage only, and editing the planner reruns none.
"""
