"""The kinds of history a variant can read (its spec's ``reads``), one record each: the one list
the variant specs, the history loader and the stage graph take them from.

A kind's files are one per period, ``data/features/<name>/<period><suffix>``. Two things tell the
kinds apart where the code must:

* ``of_target``: the file of a period is a forecast *of* that period, fitted on the periods
  before it (the ``forecast_features`` stage), rather than a summary of the period's own
  documents. A run reads it for the periods it predicts, not for their histories.
* ``own_folder_option``: the stages take the kind's folder as an option of its own
  (``--frequencies``, ``--embeddings``); a kind without one is read from beside the frequency
  folder (``data/features/forecasts`` next to ``data/features/frequencies``).
"""

from __future__ import annotations

from dataclasses import dataclass

FEATURES_DIR = "data/features"


@dataclass(frozen=True)
class HistoryKind:
    name: str
    suffix: str
    of_target: bool = False
    own_folder_option: bool = True

    def folder(self, root: str = FEATURES_DIR) -> str:
        return f"{root}/{self.name}"

    def file(self, period: str, root: str = FEATURES_DIR) -> str:
        return f"{self.folder(root)}/{period}{self.suffix}"


FREQUENCIES = HistoryKind("frequencies", ".parquet")
EMBEDDINGS = HistoryKind("embeddings", ".safetensors")
FORECASTS = HistoryKind("forecasts", ".parquet", of_target=True, own_folder_option=False)

# By name, in the order stages list them.
KINDS: dict[str, HistoryKind] = {k.name: k for k in (FREQUENCIES, EMBEDDINGS, FORECASTS)}


def kind(name: str) -> HistoryKind:
    """The kind named ``name``, or a ValueError listing the known ones."""
    if name not in KINDS:
        raise ValueError(f"unknown history kind {name!r}; expected one of {sorted(KINDS)}")
    return KINDS[name]
