"""What the trained output-layer heads learned: temperatures and continuous-output norms.

    .venv/bin/python scripts/inspect_heads.py [--seed 0] [--abstracts 16]

Reads data/models/<variant>-s<seed> of the default run, data/splits/dev.parquet and the dev
period's history, runs the first ``--abstracts`` dev abstracts through each head and prints:
for temperature / temporal-temperature the distribution of τ (eq. 5) over every position and
word, the logits' spread (a model whose τ is ~2 everywhere must double its logits to match the
plain LM's distribution) and, for the temporal head, the spread of its history term u; for
continuous-* the norm ‖ê‖ (the vMF concentration κ). docs/output-layers.md ("Other output layers") quotes
this script's output.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from pipeline.features.history import load_history
from pipeline.features.tokenizer import load_tokenizer
from pipeline.infra.io import read_parquet
from pipeline.models.future_lm import load_future_lm
from pipeline.models.nll import collate
from pipeline.training.run import read_sequences


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--abstracts", type=int, default=16, help="dev abstracts to run")
    args = p.parse_args()
    tok = load_tokenizer("data/tokenizer")
    dev = read_sequences(Path("data/splits/dev.parquet"), tok, 128)
    period = read_parquet("data/splits/dev.parquet", columns=["period"])["period"].iloc[0]
    batch = collate(dev[period][:args.abstracts], tok.eos_token_id)
    keep = batch["attention_mask"].bool()
    for variant in ("baseline", "temperature", "temporal-temperature", "continuous-vmf",
                    "continuous-cosine", "continuous-max-margin"):
        folder = Path(f"data/models/{variant}-s{args.seed}")
        if not folder.exists():
            continue
        model = load_future_lm(folder)
        history = (load_history(period, model.window, "data/features/frequencies", None,
                                kinds=model.history_kinds) if model.history_kinds else None)
        with torch.no_grad():
            hidden = model.lm.base_model(input_ids=batch["input_ids"],
                                         attention_mask=batch["attention_mask"]).last_hidden_state
            logits = model.lm.lm_head(hidden)[keep]
            if variant == "baseline":
                print(f"{variant}: logit std {logits.std():.2f}")
            elif "temperature" in variant:
                terms = model.word_terms(history)
                tau = model.bias.temperature(terms, hidden)[keep]
                print(f"{variant}: tau mean {tau.mean():.4f}, min {tau.min():.4f}, max "
                      f"{tau.max():.4f}, share of (position, word) with tau > 2.01 "
                      f"{(tau > 2.01).float().mean():.5f}; logit std {logits.std():.2f}"
                      + (f"; u std {terms.std():.4f} (range {terms.min():.3f} .. "
                         f"{terms.max():.3f})" if model.history_kinds else ""))
            else:
                kappa = model.bias.head(hidden)[keep].norm(dim=-1)
                print(f"{variant}: |e_hat| (kappa) mean {kappa.mean():.1f}, median "
                      f"{kappa.median():.1f}")


if __name__ == "__main__":
    main()
