"""Stage `train`: train one future-LM variant with one seed (data/models/<variant>-s<seed>/).

Variants: `baseline` (the base LM fine-tuned on every training period), `baseline-N` (on the N
latest training periods only; --latest-steps matched: for the Baseline's number of steps),
`continued-N` (`--init-from data/models/baseline-s<seed>`: that Baseline trained further, whole,
on the N latest periods for the Baseline's number of steps), or any variant of the registry (pipeline/models/registry.py and
pipeline/variants/<name>.py); its own settings (params variants.<name>.*) are options too:
`--variant NAME --help` lists them. Continuous variants read their targets from --targets-from.
An abstract of period i is scored with the bias predicted from periods i-window .. i-1, every
batch holding one period. train.base (docs/parameters.md): shared, `--init-from
data/models/baseline-s<seed> --freeze-lm` trains only the module on a trained Baseline's LM,
with `--cache data/cache/baseline-s<seed>` from its cached final states (one process, no resume);
frozen, `--freeze-lm` alone keeps the pretrained --base LM (`--cache data/cache/base`); adapted,
`--trunk data/cache/trunk --adapt-layers K` fine-tunes the Baseline's top K blocks from the trunk
cache (pipeline/training/adapted.py). pipeline/training/execution.py picks the path from these
options.

The output folder (written atomically) holds config.json + model.safetensors (load with
pipeline.models.future_lm.load_future_lm; config.json records the context length, which scoring
uses too) and train_metrics.json; the DVCLive curves go to --curves (DVC plots). An interrupted
run resumes from <checkpoint-dir>/<variant>-s<seed>/ when rerun with the same settings and inputs.
Several processes (DDP): `--processes N` / FUTURELM_NPROC=N or torchrun (docs/scaling.md):
--batch-size is the global batch; rank 0 writes; a resume with as many processes is bit-identical.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import torch

from pipeline.infra import distributed
from pipeline.infra.schema.config import LMConfig, ModelConfig, TrainConfig
from pipeline.infra.device import pick_device
from pipeline.infra.numerics import configure_torch
from pipeline.models.future_lm import write_future_lm
from pipeline.infra.interface import Params
from pipeline.interfaces.train import INTERFACE
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.errors import UserError
from pipeline.models.registry import lookup
from pipeline.training.execution import Execution
from pipeline.training.run import TrainInputs, prepare_run
from stages._lib.args import parser_for, runtime_from
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser(variant: str | None = None) -> argparse.ArgumentParser:
    """The stage's options; with ``variant``, also that variant's own settings."""
    settings = _settings_class(variant)
    chosen = None if settings is None else Params(
        settings, f"variants.{variant}", f"the {variant} variant's settings (params "
        f"variants.{variant}.*; {settings.__module__})")
    return parser_for(INTERFACE, __doc__, {"settings": chosen})


def _settings_class(variant: str | None) -> type | None:
    if variant is None:
        return None
    try:
        return lookup(variant).settings
    except UserError:
        return None   # argparse accepts any name; prepare_run names the valid ones


def _variant(argv: list[str] | None) -> str | None:
    """``--variant``'s value, read before the full parse (it decides the settings options)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--variant")
    return pre.parse_known_args(argv)[0].variant


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser(_variant(argv)).parse_args(argv)
    runtime = runtime_from(args)
    if runtime.nproc > 1 and not distributed.launched():   # its children see torchrun's env
        raise SystemExit(distributed.relaunch("stages.train",
                                              sys.argv[1:] if argv is None else argv, runtime.nproc))
    configure_torch(runtime.threads, args.kernels)
    with distributed.session(pick_device(runtime.device)) as (dist, device):
        train_one(args, dist, device)


def train_one(args: argparse.Namespace, dist: distributed.Dist, device: torch.device) -> None:
    inputs = TrainInputs(train=Path(args.train), dev=Path(args.dev), tokenizer=Path(args.tokenizer),
                         frequencies=Path(args.frequencies) if args.frequencies else None,
                         embeddings=Path(args.embeddings) if args.embeddings else None,
                         targets_from=Path(args.targets_from) if args.targets_from else None)
    execution = Execution.from_options(args.cache, args.trunk, args.adapt_layers)
    settings = _settings_class(args.variant)
    run = prepare_run(inputs, build(LMConfig, args), build(ModelConfig, args),
                      build(TrainConfig, args), None if settings is None else build(settings, args))
    result = execution.train(run, inputs.tokenizer, device=device,
                             checkpoint_root=args.checkpoint_dir, dist=dist)
    if not dist.is_main:
        return
    with atomic_path(args.curves) as tmp:
        shutil.copytree(result.curves, tmp)
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        write_future_lm(run.model.cpu(), tmp)
        write_json(result.metrics, tmp / "train_metrics.json")
    result.checkpoints.clear()
    procs = f" x {dist.world_size} processes" if dist.enabled else ""
    print(f"{run.name}{execution.source}: best dev ppl {result.state.best_ppl:.2f} (epoch "
          f"{result.state.best_epoch + 1} of {len(result.state.dev_ppl)}) on {device}{procs} "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
