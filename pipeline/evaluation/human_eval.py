"""Blind human evaluation kit (§4.7, Table 4).

:func:`export_sheet` shuffles the generated abstracts of all models into one annotation sheet
that carries no model name (``item`` numbers only) and a separate key mapping items back to
models. Annotators fill each question column with 1 (yes) or 0 (no):

- **Topic** / **Topic New**: the abstract has a coherent research topic / the topic is new;
- **Problem** / **Problem New**: it states a research problem / the problem is new;
- **Method** / **Method New**: it proposes a method / the method is new.

:func:`tabulate` joins the filled sheet with the key and gives, per model, the percentage of
abstracts judged 1 on each question: the paper's Table 4.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.models.registry import BASELINE

QUESTIONS = ("Topic", "Topic New", "Problem", "Problem New", "Method", "Method New")
KEY_COLUMNS = ("item", "variant", "seed", "split", "index")


def export_sheet(generations: pd.DataFrame, shuffle_seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(sheet, key) for ``generations`` with columns ``variant, seed, split, index, text``.

    The sheet has ``item, text`` and one empty column per question; items are numbered 1..n in a
    random order fixed by ``shuffle_seed`` so that neither the order nor the numbers reveal the
    model. The key has ``item`` plus where each abstract came from.
    """
    missing = set(KEY_COLUMNS[1:]) | {"text"}
    missing -= set(generations.columns)
    if missing:
        raise ValueError(f"generations lack columns {sorted(missing)}")
    if generations.empty:
        raise ValueError("no generated abstracts to export")
    rng = np.random.default_rng(shuffle_seed)
    shuffled = generations.iloc[rng.permutation(len(generations))].reset_index(drop=True)
    shuffled.insert(0, "item", np.arange(1, len(shuffled) + 1))
    sheet = shuffled[["item", "text"]].copy()
    for q in QUESTIONS:
        sheet[q] = ""
    return sheet, shuffled[list(KEY_COLUMNS)].copy()


def _answers(sheet: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("item", *QUESTIONS) if c not in sheet.columns]
    if missing:
        raise ValueError(f"the filled sheet lacks columns {missing}; keep the exported header")
    answers = sheet[["item", *QUESTIONS]].copy()
    answers["item"] = _item_numbers(answers["item"], "sheet")
    bad = []
    for q in QUESTIONS:
        values = answers[q].astype(str).str.strip().str.replace(r"\.0$", "", regex=True)
        for item, value in zip(answers["item"], values):
            if value not in ("0", "1"):
                bad.append(f"item {item} {q}={value!r}")
        answers[q] = pd.to_numeric(values, errors="coerce")
    if bad:
        raise ValueError(f"{len(bad)} answers are not 0 or 1 (fill every question with 0 or 1): "
                         + "; ".join(bad[:10]) + (" ..." if len(bad) > 10 else ""))
    return answers


def _item_numbers(items: pd.Series, where: str) -> pd.Series:
    numbers = pd.to_numeric(items, errors="coerce")
    if numbers.isna().any() or (numbers % 1 != 0).any():
        raise ValueError(f"the {where} has item ids that are not whole numbers: "
                         f"{items[numbers.isna() | (numbers % 1 != 0)].tolist()[:5]}")
    return numbers.astype("int64")


def tabulate(sheet: pd.DataFrame, key: pd.DataFrame) -> pd.DataFrame:
    """Table 4: per variant (baselines first), ``n`` abstracts and the % judged 1 per question."""
    answers = _answers(sheet)
    if answers["item"].duplicated().any():
        raise ValueError("the filled sheet lists some items twice")
    key = key.assign(item=_item_numbers(key["item"], "key"))
    merged = key.merge(answers, on="item", how="outer", indicator=True)
    unmatched = merged[merged["_merge"] != "both"]
    if not unmatched.empty:
        raise ValueError(f"sheet and key do not match on items {sorted(unmatched['item'])[:10]}: "
                         "use the key exported together with this sheet")
    table = merged.groupby("variant")[list(QUESTIONS)].mean() * 100
    table.insert(0, "n", merged.groupby("variant").size())
    # Baselines first, then the others by name (the key's own order is shuffled).
    order = sorted(table.index, key=lambda v: (not str(v).startswith(BASELINE), str(v)))
    return table.loc[order].reset_index()
