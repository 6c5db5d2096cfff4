"""Stage `graph`: check that dvc.yaml is the graph params.yaml gives (``make graph`` writes it).
Its params are the structural ones (``pipeline.graph.plan.STRUCTURE``), which it reads itself;
its deps, the source folders every stage's code deps are computed from."""

from __future__ import annotations

from pipeline.infra.interface import Output, StageInterface, Switch, Value

INTERFACE = StageInterface("graph", (
    Value("--params", "parameter file (default params.yaml)", default="params.yaml", graph=False),
    Value("--out", "the stage graph to write or check", default="dvc.yaml", graph=False),
    Switch("--check", "do not write: exit 2 with the stale stages if --out differs"),
    Output("--stamp", "with --check: write this file (fixed content) when the graph is current, "
           "the output of the `graph` stage that every other stage is downstream of",
           required=False),
    Value("--dag", "only draw --out as a mermaid graph of stage families (`make dag`): write it "
          "to FILE as Markdown and print it; `-` prints only", default=None, metavar="FILE",
          graph=False),
))
