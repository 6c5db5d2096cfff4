"""Stage `base_cache` / `base_cache-s<seed>`: a frozen LM's final hidden states, computed once
(data/cache/base or data/cache/baseline-s<seed>; params train.cache).

train.base: shared (--model): every temporal variant of a seed starts from the trained Baseline's
LM (data/models/baseline-s<seed>) and keeps it frozen, so one cache per seed of its train and dev
abstracts. train.base: frozen (--base): the pretrained lm.base is never trained, so one cache for
every variant and seed, of the train, dev and test abstracts (--test): training, PPL/CPL scoring
and the forecast's reference passes read it. The abstracts are encoded exactly as training and
scoring encode them (eos + abstract + eos cut at --max-length), in the batches of the dev
evaluation (--batch-size). Variants whose module changes the hidden states (temporal-attention)
do not read it.

train.base: adapted (--adapt-layers K): `--base --trunk-only` caches, once, the states entering
the pretrained LM's top K blocks (data/cache/trunk); then `--trunk data/cache/trunk` with --model
(a seed's adapted Baseline) or --base (the LM as it is, the unadapted baseline-0) computes the
final states of every abstract the trunk holds from them, through the top K blocks alone
(pipeline/training/trunk.py).

Output folder (written atomically; pipeline/features/base_cache.py): identity.json (sha256 of the
LM's loaded weights and of the tokenizer folder, the context length) and one
<period>.safetensors per cached period (hidden states, token ids, offsets). A stage refuses a
cache whose identity differs from its LM, tokenizer and context length, or (training) whose
abstracts differ from its splits, and names this stage to rerun.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pipeline.infra.config import LMConfig, TrainConfig
from pipeline.infra.device import pick_device
from pipeline.infra.errors import UserError
from pipeline.infra.numerics import configure_torch
from pipeline.infra.params import TrainDesign, default
from pipeline.training.run import frozen_lm, write_base_cache
from pipeline.training.trunk import write_cache_from_trunk, write_trunk_cache
from stages._args import add_runtime_options, new_parser, runtime_from
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    p = new_parser("python -m stages.base_cache", __doc__)
    io = p.add_argument_group("inputs and outputs")
    lm = io.add_mutually_exclusive_group(required=True)
    lm.add_argument("--model",
                    help="train.base: shared: the trained Baseline model folder whose LM the "
                         "variants freeze (data/models/baseline-s<seed>)")
    lm.add_argument("--base",
                    help="train.base: frozen: the pretrained LM (param lm.base: a Hugging Face id, "
                         "packaged name or local folder) every variant keeps frozen")
    io.add_argument("--train", help="training split Parquet (period, abstract): every period "
                                    "is cached (required unless --trunk)")
    io.add_argument("--dev", help="dev split Parquet: its period is cached too (unless --trunk)")
    io.add_argument("--test", default=None,
                    help="test split Parquet, cached too when given (train.base: frozen: the "
                         "score and forecast stages read the same states)")
    io.add_argument("--trunk", help="train.base: adapted: the trunk cache whose abstracts' final "
                                    "states are computed by the top --adapt-layers blocks")
    io.add_argument("--trunk-only", action="store_true",
                    help="with --base: cache the states entering the top --adapt-layers blocks")
    io.add_argument("--adapt-layers", type=int,
                    help="K, the top blocks an adapted Baseline tunes (param train.adapt_layers)")
    io.add_argument("--tokenizer", required=True, help="tokenizer folder of the tokenizer stage")
    io.add_argument("--out", required=True,
                    help="cache folder to write, atomically (data/cache/baseline-s<seed>)")
    opts = p.add_argument_group("cache (params train.*)")
    opts.add_argument("--max-length", type=int, default=default(TrainConfig, "max_length"),
                      help="context length in LM tokens the abstracts are cut at: the variants' "
                           "train.max_length (default: %(default)s)")
    opts.add_argument("--precision", default=default(TrainConfig, "precision"),
                      choices=["fp32", "tf32", "bf16"],
                      help="compute precision of the LM's forward pass: the variants' "
                           "train.precision (default: %(default)s)")
    opts.add_argument("--cache-storage", default=default(TrainDesign, "cache_storage"),
                      choices=["fp32", "bf16"],
                      help="dtype of the stored states: fp32 (exact) or bf16 (half the disk; "
                           "perplexity within 0.1 %%) (param train.cache_storage; default: "
                           "%(default)s)")
    opts.add_argument("--batch-size", type=int, default=default(TrainConfig, "eval_batch_size"),
                      help="abstracts per forward pass, longest first: keep the train stage's dev "
                           "batch size so cached dev perplexity equals uncached bit for bit "
                           "(default: %(default)s)")
    add_runtime_options(p)
    return p


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    runtime = runtime_from(args)
    configure_torch(runtime.threads, args.kernels)
    device = pick_device(runtime.device)
    if args.batch_size < 1 or args.max_length < 2:
        raise UserError("--batch-size must be >= 1 and --max-length >= 2",
                        fix="check train.max_length in params.yaml")
    start = time.perf_counter()
    lm = frozen_lm(LMConfig(base=args.base) if args.base else LMConfig(init_from=args.model),
                   Path(args.tokenizer), args.max_length)
    splits = [Path(p) for p in (args.train, args.dev, args.test) if p]
    if (args.trunk or args.trunk_only) and args.adapt_layers is None:
        raise UserError("--trunk and --trunk-only need --adapt-layers K",
                        fix="pass train.adapt_layers")
    if not args.trunk and not (args.train and args.dev):
        raise UserError("--train and --dev are required (unless --trunk)", fix="pass the splits")
    options = dict(batch_size=args.batch_size, device=device, precision=args.precision,
                   storage=args.cache_storage)
    if args.trunk:
        counts = write_cache_from_trunk(lm, Path(args.tokenizer), Path(args.trunk), Path(args.out),
                                        args.max_length, args.adapt_layers, **options)
    elif args.trunk_only:
        counts = write_trunk_cache(lm, Path(args.tokenizer), splits, Path(args.out),
                                   args.max_length, args.adapt_layers, **options)
    else:
        counts = write_base_cache(lm, Path(args.tokenizer), splits, Path(args.out),
                                  args.max_length, **options)
    what = "trunk states" if args.trunk_only else "hidden states"
    print(f"cached the {what} of {args.base or args.model}'s LM for "
          f"{sum(counts.values())} abstracts of {', '.join(counts)} ({args.cache_storage}) in "
          f"{time.perf_counter() - start:.0f} s on {device} -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
