"""Training-step time of every future-LM variant against Baseline, on identical batches.

One training step = forward (bias computed once for the batch's year) + backward + gradient
clipping + AdamW update, exactly as :func:`pipeline.training.loop.train` does it. All variants start
from the same base-LM weights and see the same token batch and the same history tensors. Steps are
interleaved round-robin across variants so that load from other jobs hits them all alike; the
median per variant is reported with its ratio to Baseline. Peak memory is measured per variant in
a fresh subprocess (CPU: peak RSS growth over the idle process; CUDA: peak allocated bytes).

Size presets:

* ``default`` — the offline default profile (params.yaml): GPT-2 2 layers x 128, |V| 4,096,
  all-MiniLM features (d_enc 384), LSTM hidden 32, batch 16 x 128 tokens.
* ``reference`` — the reference implementation's shapes: GPT-2 small (12 x 768, random init),
  |V| 50,257, roberta-large features (d_enc 1,024), LSTM hidden 768, batch 2 x 256 tokens.

``--observed`` is the fraction of the vocabulary occurring in the history years (the rest share
one LSTM run, see pipeline.features.history.PeriodHistory.observed). Defaults: 1.0 for ``default`` (a BPE
trained on the sample uses nearly all its tokens) and 0.41 for ``reference``: GPT-2's BPE on the
2018+2019 ACL abstracts (the dev year's history) uses 20,820 of its 50,257 tokens (measured on
../shared/data/anthology+abstracts.bib.gz; 0.10 for 2001+2002, 0.22 for 2010+2011).

A name ``<variant>:shared`` is that variant under shared-base training (``train.base: shared``):
the LM is frozen and in eval mode, only the bias module is trained (:mod:`pipeline.training.loop`).
``--shared`` adds the shared form of every temporal variant; ratios stay relative to the first
(joint) variant, Baseline, so a shared step's ratio is its cost against a joint step.

    .venv/bin/python -m benchmarks.step_time --sizes default
    .venv/bin/python -m benchmarks.step_time --sizes default --shared
    .venv/bin/python -m benchmarks.step_time --sizes reference --rounds 2
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from benchmarks._variants import sized
from pipeline.models.future_lm import FutureLM, make_future_lm, scratch_gpt2
from pipeline.features.history import PeriodHistory
from pipeline.infra.schema.config import TrainConfig
from pipeline.training.loop import set_train_mode
from pipeline.training.optim import build_optimizer

VARIANTS = ("baseline", "frequency-nolstm", "frequency", "context", "context2")


@dataclass(frozen=True)
class Sizes:
    n_layer: int
    n_embd: int
    n_head: int
    vocab: int
    feature_dim: int
    lstm_hidden: int
    batch: int
    length: int
    window: int = 2


PRESETS = {
    # Mirrors params.yaml (lm, tokenizer.vocab_size, train.batch_size / max_length,
    # variants.<name>.lstm_hidden).
    "default": Sizes(n_layer=2, n_embd=128, n_head=4, vocab=4096, feature_dim=384, lstm_hidden=32,
                     batch=4, length=128),
    "reference": Sizes(n_layer=12, n_embd=768, n_head=12, vocab=50257, feature_dim=1024,
                       lstm_hidden=768, batch=2, length=256),
}


def make_history(s: Sizes, observed_fraction: float, device: torch.device) -> PeriodHistory:
    g = torch.Generator().manual_seed(0)
    observed = torch.rand(s.vocab, generator=g) < observed_fraction
    log_freq = -8 - 4 * torch.rand(s.vocab, s.window, generator=g)
    log_freq[~observed] = -15.0
    emb = torch.randn(s.vocab, s.window, s.feature_dim, generator=g)
    seen = (torch.rand(s.vocab, s.window, generator=g) < 0.8) & observed.unsqueeze(1)
    emb[~observed] = 0.0
    return PeriodHistory("2020", tuple(str(y) for y in range(2020 - s.window, 2020)), log_freq, emb, seen,
                       observed=observed).to(device)


def parse_name(name: str) -> tuple[str, bool]:
    """``"frequency:shared"`` -> ("frequency", True): the variant and whether its LM is frozen."""
    variant, _, design = name.partition(":")
    if design not in ("", "joint", "shared"):
        raise SystemExit(f"unknown training design {design!r} in {name!r}: use <variant>:shared")
    return variant, design == "shared"


def make_models(s: Sizes, names: tuple[str, ...], device: torch.device) -> dict[str, FutureLM]:
    torch.manual_seed(0)
    base = scratch_gpt2(s.vocab, 0, n_layer=s.n_layer, n_head=s.n_head, n_embd=s.n_embd,
                        n_positions=max(256, s.length), dropout=0.1)
    return {name: make_future_lm(copy.deepcopy(base), parse_name(name)[0], s.window,
                                 settings=sized(parse_name(name)[0], s.lstm_hidden),
                                 feature_dim=s.feature_dim,
                                 dropout=0.1).to(device)
            for name in names}


def make_step(model: FutureLM, history: PeriodHistory, ids: torch.Tensor, freeze_lm: bool = False):
    """One optimizer step as pipeline.training.loop takes it (frozen LM: eval mode, bias-only AdamW)."""
    config = TrainConfig(lr_lm=1e-5, lr_new=1e-5, freeze_lm=freeze_lm)
    optimizer = build_optimizer(model, config)
    set_train_mode(model, config)
    params = [p for p in model.parameters() if p.requires_grad]
    mask = torch.ones_like(ids)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        model(ids, mask, history, labels=ids).loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
    return step


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_steps(s: Sizes, variants: tuple[str, ...], rounds: int, warmup: int,
               observed: float, device: torch.device) -> dict[str, list[float]]:
    history = make_history(s, observed, device)
    ids = torch.randint(1, s.vocab, (s.batch, s.length), generator=torch.Generator().manual_seed(1)).to(device)
    steps = {v: make_step(m, history, ids, parse_name(v)[1])
             for v, m in make_models(s, variants, device).items()}
    times: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(warmup + rounds):
        for v in variants:
            sync(device)
            start = time.perf_counter()
            steps[v]()
            sync(device)
            if r >= warmup:
                times[v].append(time.perf_counter() - start)
    return times


def peak_memory(s: Sizes, variant: str, observed: float, device: torch.device) -> int:
    """Bytes: peak RSS growth (CPU) or peak CUDA allocation of building + 2 steps of ``variant``."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    Path("/proc/self/clear_refs").write_text("5")   # reset the RSS high-water mark (Linux)
    before = _status_bytes("VmRSS")
    history = make_history(s, observed, device)
    ids = torch.randint(1, s.vocab, (s.batch, s.length)).to(device)
    step = make_step(make_models(s, (variant,), device)[variant], history, ids,
                     parse_name(variant)[1])
    for _ in range(2):
        step()
    sync(device)
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device)
    return _status_bytes("VmHWM") - before


def _status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status (peak CPU memory needs Linux)")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.step_time", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", choices=sorted(PRESETS), default="default", help="size preset")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS),
                   help="variants (baseline first); <variant>:shared = with the LM frozen")
    p.add_argument("--shared", action="store_true",
                   help="also time each temporal variant's shared-base step (<variant>:shared)")
    p.add_argument("--rounds", type=int, default=10, help="timed steps per variant")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per variant first")
    p.add_argument("--observed", type=float, default=None,
                   help="fraction of |V| seen in the history years (default: 1.0 default, 0.41 reference)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch default)")
    p.add_argument("--batch", type=int, default=None, help="override the preset's batch size")
    p.add_argument("--length", type=int, default=None, help="override the preset's tokens per sequence")
    p.add_argument("--lstm-hidden", type=int, default=None, help="override the preset's LSTM hidden size")
    p.add_argument("--no-memory", action="store_true", help="skip the per-variant memory runs")
    p.add_argument("--memory-of", default=None, help=argparse.SUPPRESS)  # subprocess mode
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    s, device = PRESETS[args.sizes], torch.device(args.device)
    overrides = {"batch": args.batch, "length": args.length, "lstm_hidden": args.lstm_hidden}
    s = replace(s, **{k: v for k, v in overrides.items() if v is not None})
    observed = args.observed if args.observed is not None else (1.0 if args.sizes == "default" else 0.41)
    if args.memory_of:
        print(json.dumps({"bytes": peak_memory(s, args.memory_of, observed, device)}))
        return
    variants = tuple(args.variants)
    if args.shared:
        variants += tuple(f"{v}:shared" for v in variants
                          if not parse_name(v)[0].startswith("baseline") and not parse_name(v)[1])
    times = time_steps(s, variants, args.rounds, args.warmup, observed, device)
    memory: dict[str, int] = {}
    if not args.no_memory:
        for v in variants:
            cmd = [sys.executable, "-m", "benchmarks.step_time", "--sizes", args.sizes,
                   "--batch", str(s.batch), "--length", str(s.length), "--lstm-hidden", str(s.lstm_hidden),
                   "--device", args.device, "--observed", str(observed), "--memory-of", v,
                   "--threads", str(args.threads)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            memory[v] = json.loads(out.strip().splitlines()[-1])["bytes"]
    base, base_min = statistics.median(times[variants[0]]), min(times[variants[0]])
    print(f"sizes={args.sizes} {s} observed={observed} device={args.device} "
          f"threads={torch.get_num_threads()} rounds={args.rounds} "
          f"machine={platform.machine()} torch={torch.__version__}\n")
    # With other jobs on the machine the minimum is the steadier estimate of a step's own cost.
    print("| variant | median step (ms) | min (ms) | ratio to baseline (median) | ratio (min) "
          "| peak memory (MiB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for v in variants:
        med, low = statistics.median(times[v]), min(times[v])
        mem = f"{memory[v] / 2**20:,.0f}" if v in memory else "-"
        print(f"| {v} | {med * 1e3:,.1f} | {low * 1e3:,.1f} | {med / base:.2f}x | "
              f"{low / base_min:.2f}x | {mem} |")


if __name__ == "__main__":
    main()
