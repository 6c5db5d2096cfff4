"""Shared-base variant-epoch time with and without the frozen-base cache.

One *variant epoch* = every optimizer step of one epoch of a temporal variant on top of the frozen
LM (``train.base: shared``) + the dev perplexity, as a shared-base training run spends it:

* ``uncached (loop.train)`` — :func:`pipeline.training.loop.train` with ``freeze_lm`` and
  ``epochs=1``: the real path, including its end-of-epoch checkpoint and best-weights writes
  (``checkpoint_every`` is set past the epoch, so no mid-epoch checkpoints);
* ``uncached (compute)`` — the same steps without any file writes: the model's forward through the
  frozen LM + bias, NLL, bias backward, clipping, AdamW, then :func:`pipeline.training.loop.evaluate`;
* ``cached`` — :func:`pipeline.training.cached.train_cached` with ``epochs=1`` on states built
  once by :func:`pipeline.features.base_cache.build_cache` (its one-off time is reported apart).

The runs are interleaved round by round (:func:`benchmarks._results.interleaved_medians`), each
from the same model copy and seed. Data: synthetic token ids of the default run's size (the
sample's 2017-2019 train periods, ~253 abstracts each, and the 2020 dev period, ~250; lengths
drawn so ~70 % reach the 128-token cut, as ACL abstracts under a 4,096-token BPE do), unless
``--fraction`` scales the abstract counts down (for the large shape).

    .venv/bin/python -m benchmarks.base_cache --shape default --out benchmarks/results/base_cache.md
    .venv/bin/python -m benchmarks.base_cache --shape large --fraction 0.1 --rounds 2 --warmup 0
"""

from __future__ import annotations

import argparse
import copy
import platform
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from benchmarks._results import interleaved_medians, publish, ratio_rows
from benchmarks._variants import sized
from pipeline.corpus.periods import shift
from pipeline.features.base_cache import build_cache, cache_identity, load_cache
from pipeline.features.history import PeriodHistory
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.distributed import SINGLE
from pipeline.models.future_lm import FutureLM, make_future_lm, scratch_gpt2
from pipeline.models.nll import collate, next_token_targets, token_nll
from pipeline.training.batches import period_steps
from pipeline.training.cached import train_cached
from pipeline.training.checkpoints import Checkpoints, seed_process
from pipeline.training.loop import evaluate, set_train_mode, train
from pipeline.training.optim import build_optimizer, linear_schedule

TRAIN, DEV, LENGTH = ("2017", "2018", "2019"), "2020", 128


@dataclass(frozen=True)
class Shape:
    n_layer: int
    n_embd: int
    n_head: int
    vocab: int = 4096


# smollm-head: SmolLM2-135M's output layer (|V| 49,152 x 576) on a one-layer body:
# its cached epoch is the cost a cached variant epoch has with that base (the cache skips the
# body); its uncached rows are NOT SmolLM2's (whose body has 30 layers).
SHAPES = {"default": Shape(2, 128, 4), "large": Shape(12, 768, 12),
          "smollm-head": Shape(1, 576, 9, 49152)}


def synthetic(fraction: float, vocab: int) -> dict[str, list[list[int]]]:
    g = torch.Generator().manual_seed(0)
    sizes = {"2017": 253, "2018": 253, "2019": 254, DEV: 250}
    return {p: [[0] + torch.randint(1, vocab, (min(LENGTH, int(torch.randint(60, 260, (), generator=g))) - 2,),
                                    generator=g).tolist() + [0]
                for _ in range(max(2, round(n * fraction)))] for p, n in sizes.items()}


def histories(vocab: int) -> dict[str, PeriodHistory]:
    g = torch.Generator().manual_seed(1)
    return {p: PeriodHistory(p, (shift(p, -2), shift(p, -1)), -8 - 4 * torch.rand(vocab, 2, generator=g))
            for p in (*TRAIN, DEV)}


def compute_epoch(model: FutureLM, data: dict, hist: dict, config: TrainConfig) -> None:
    """One uncached epoch without files: loop.train's frozen-case steps (grad_accum 1) + dev."""
    train_data = {p: data[p] for p in TRAIN}
    sizes = {p: len(s) for p, s in train_data.items()}
    plan = period_steps(sizes, config.batch_size, config.grad_accum, config.seed, 0)
    optimizer = build_optimizer(model, config)
    scheduler = linear_schedule(optimizer, config.warmup_steps, len(plan))
    seed_process(config.seed, SINGLE)
    set_train_mode(model, config)
    for period, micro in plan:
        optimizer.zero_grad(set_to_none=True)
        batch = collate([train_data[period][i] for i in micro[0]], 0)
        logits = model(batch["input_ids"], batch["attention_mask"], hist[period]).logits
        targets = next_token_targets(batch["input_ids"], batch["attention_mask"])
        (token_nll(logits, targets).sum() / (targets >= 0).sum()).backward()
        nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
    evaluate(model, {DEV: data[DEV]}, hist, config.eval_batch_size, 0)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.base_cache", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", choices=sorted(SHAPES), default="default", help="GPT-2 shape")
    p.add_argument("--fraction", type=float, default=1.0, help="share of the default's abstracts")
    p.add_argument("--rounds", type=int, default=3, help="timed epochs per run")
    p.add_argument("--warmup", type=int, default=1, help="untimed epochs per run first")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    p.add_argument("--storage", choices=("fp32", "bf16"), default="fp32", help="cache storage")
    p.add_argument("--out", default=None, help="also write the Markdown here")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    s = SHAPES[args.shape]
    data, hist = synthetic(args.fraction, s.vocab), histories(s.vocab)
    config = TrainConfig(epochs=1, batch_size=4, grad_accum=1, max_length=LENGTH, lr_new=2e-3,
                         warmup_steps=10, freeze_lm=True, patience=0, eval_batch_size=16,
                         checkpoint_every=10**9)
    torch.manual_seed(0)
    lm = scratch_gpt2(s.vocab, 0, n_layer=s.n_layer, n_head=s.n_head, n_embd=s.n_embd,
                      n_positions=256, dropout=0.1)
    model = make_future_lm(lm, "frequency", 2, settings=sized("frequency", 32), dropout=0.1,
                           context_length=LENGTH)
    work = Path(tempfile.mkdtemp(prefix="base_cache_bench."))
    try:
        lm.save_pretrained(work / "lm")
        (work / "tokenizer").mkdir()
        (work / "tokenizer" / "tokenizer.json").write_text("{}")   # stands in for the BPE files
        start = time.perf_counter()
        identity = cache_identity([work / "lm"], work / "tokenizer", LENGTH)
        hashed = time.perf_counter()
        build_cache(lm, {q: data[q] for q in TRAIN}, work / "train", identity,
                    batch_size=config.eval_batch_size, storage=args.storage)
        build_cache(lm, {DEV: data[DEV]}, work / "dev", identity,
                    batch_size=config.eval_batch_size, storage=args.storage)
        built = time.perf_counter()
        cache_train, cache_dev = load_cache(work / "train", identity), load_cache(work / "dev", identity)
        loaded = time.perf_counter()
        size = sum(f.stat().st_size for d in ("train", "dev") for f in (work / d).iterdir())

        def step(kind: str) -> None:
            m = copy.deepcopy(model)
            if kind == "loop":
                ckpt = Checkpoints(work / "ckpt", key="bench")
                ckpt.clear()
                train(m, {q: data[q] for q in TRAIN}, {DEV: data[DEV]}, hist, config, pad_id=0,
                      device="cpu", checkpoints=ckpt, live_dir=work / "live")
            elif kind == "compute":
                compute_epoch(m, data, hist, config)
            else:
                train_cached(m, cache_train, cache_dev, hist, config)

        runs = {"uncached (loop.train)": ("loop",), "uncached (compute)": ("compute",),
                "cached": ("cached",)}
        medians = interleaved_medians(runs, step, args.warmup, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n_train = sum(len(data[q]) for q in TRAIN)
    tokens = sum(len(x) for q in (*TRAIN, DEV) for x in data[q])
    lines = [f"### {args.shape}: GPT-2 {s.n_layer} x {s.n_embd}, |V| {s.vocab:,}, frequency variant, "
             f"frozen LM, {n_train} train + {len(data[DEV])} dev abstracts ({tokens:,} tokens), "
             f"batch 4 x <= {LENGTH}, {torch.get_num_threads()} thread(s)", "",
             f"`python -m benchmarks.base_cache {' '.join(argv) if argv is not None else ''}`".replace(" `", "`"),
             f"({platform.python_version()}, torch {torch.__version__}; warm-up {args.warmup}, "
             f"{args.rounds} timed rounds)", "",
             "| variant epoch | median (ms) | ratio |", "|---|---:|---:|",
             *ratio_rows(medians, "uncached (loop.train)"), "",
             f"One-off: identity hash {1000 * (hashed - start):.0f} ms, cache build (train + dev, "
             f"{args.storage}) {1000 * (built - hashed):.0f} ms, load {1000 * (loaded - built):.0f} ms, "
             f"{size / 2**20:.1f} MiB on disk."]
    publish("\n".join(lines), args.out, end="\n")


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
