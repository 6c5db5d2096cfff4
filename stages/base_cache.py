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

from pipeline.infra.schema.config import LMConfig
from pipeline.infra.device import pick_device
from pipeline.infra.errors import UserError
from pipeline.infra.numerics import configure_torch
from pipeline.interfaces.base_cache import INTERFACE
from pipeline.training.run import frozen_lm, write_base_cache
from pipeline.training.trunk import write_cache_from_trunk, write_trunk_cache
from stages._lib.args import parser_for, runtime_from
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


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
