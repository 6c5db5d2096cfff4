"""Stage `verdicts`: every report's verdict records in one file."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface

INTERFACE = StageInterface("verdicts", (
    Input("--inputs", "the report stages' JSON outputs holding a 'verdicts' list "
          "(reports/results.json reports/forecast.json ...)", many=True),
    Output("--out", "the collected records (reports/verdicts.json)", dvc={"cache": False}),
))
