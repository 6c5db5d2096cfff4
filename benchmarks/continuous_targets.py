"""Which target space for the continuous-output variants, measured: the trained Baseline's input
embeddings against the LM's own random initial embeddings.

Trains ``continuous-vmf`` twice with the default profile's settings (params.yaml ``lm``,
``train``, one seed) on the default run's splits, identical except for the fixed target vectors:

* ``baseline`` — the input embeddings of ``data/models/baseline-s<seed>`` (the variant's design,
  :mod:`pipeline.models.heads`): trained on the training periods, similar words close together;
* ``random`` — the scratch GPT-2's own input embeddings at initialisation (seeded as the run's
  LM is): a fixed random code with no notion of similar words.

Then scores the dev period and reports next-token top-1 / top-10 accuracy over every predicted
position and the distinct target tokens predicted right (T1, T10; paper 004's types, here over
all positions, not only whole words). Needs the default run's outputs (``make repro`` first).

    .venv/bin/python -m benchmarks.continuous_targets [--seed 0] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import yaml

from pipeline.infra.numerics import THREADS, configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import torch  # noqa: E402

from benchmarks._results import machine, publish  # noqa: E402
from pipeline.infra.schema.config import LMConfig, ModelConfig, TrainConfig  # noqa: E402
from pipeline.models.future_lm import scratch_gpt2  # noqa: E402
from pipeline.models.scoring import score_abstracts  # noqa: E402
from pipeline.training.run import TrainInputs, execute, prepare_run  # noqa: E402


def configs(seed: int) -> tuple[LMConfig, ModelConfig, TrainConfig]:
    params = yaml.safe_load(Path("params.yaml").read_text())
    lm, train = params["lm"], params["train"]
    return (LMConfig(base=lm["base"], n_layer=lm["n_layer"], n_head=lm["n_head"],
                     n_embd=lm["n_embd"], n_positions=lm["n_positions"]),
            ModelConfig(variant="continuous-vmf", window=params["features"]["window"],
                        dropout=train["dropout"]),
            TrainConfig(epochs=train["epochs"], batch_size=train["batch_size"],
                        grad_accum=train["grad_accum"], max_length=train["max_length"],
                        lr_lm=train["lr_lm"], lr_new=train["lr_new"],
                        weight_decay=train["weight_decay"], warmup_steps=train["warmup_steps"],
                        grad_clip=train["grad_clip"], patience=train["patience"], seed=seed))


def random_targets(lm: LMConfig, vocab: int, eos: int, seed: int) -> torch.Tensor:
    """The scratch LM's input embeddings at initialisation, drawn as the run draws its LM."""
    torch.manual_seed(seed)
    model = scratch_gpt2(vocab, eos, n_layer=lm.n_layer, n_head=lm.n_head, n_embd=lm.n_embd,
                         n_positions=lm.n_positions, dropout=0.0)
    return model.get_input_embeddings().weight.detach().clone()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.continuous_targets",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0, help="training seed (and Baseline's)")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)
    configure_torch(THREADS)
    lm, spec, train = configs(args.seed)
    inputs = TrainInputs(train=Path("data/splits/train.parquet"),
                         dev=Path("data/splits/dev.parquet"), tokenizer=Path("data/tokenizer"),
                         targets_from=Path(f"data/models/baseline-s{args.seed}"))
    rows = []
    for space in ("baseline", "random"):
        start = time.perf_counter()
        run = prepare_run(inputs, lm, spec, train)
        if space == "random":
            weight = run.model.lm.get_output_embeddings().weight
            run.model.bias.set_targets(random_targets(lm, weight.shape[0], run.pad_id, args.seed))
        with tempfile.TemporaryDirectory() as tmp:
            result = execute(run, device="cpu", checkpoint_root=tmp)
        seqs = [s for period in run.dev_data.values() for s in period]
        pos = score_abstracts(run.model, seqs, None, None, 16, pad_id=run.pad_id,
                              positions=True).positions
        hit1, hit10 = pos["top1"].astype(bool), pos["top10"].astype(bool)
        rows.append(f"| {space} | {result.state.best_ppl:.3g} | {100 * hit1.mean():.2f} | "
                    f"{100 * hit10.mean():.2f} | {pos.loc[hit1, 'target_id'].nunique()} | "
                    f"{pos.loc[hit10, 'target_id'].nunique()} | "
                    f"{time.perf_counter() - start:.0f} |")
    text = "\n".join([
        "# Benchmark: target space of the continuous-output variant",
        "",
        f"Command: `.venv/bin/python -m benchmarks.continuous_targets {' '.join(argv or [])}`"
        f" in a checkout with the default run's outputs: continuous-vmf, default profile, seed "
        f"{args.seed}, dev period scored at every predicted position ({len(pos):,}).",
        f"Machine: {machine()}, {THREADS} pinned threads, "
        f"1-minute load average {os.getloadavg()[0]:.1f} at the end; torch {torch.__version__}.",
        "",
        "| target vectors | dev vMF-normalised PPL | top-1 % | top-10 % | T1 | T10 | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
