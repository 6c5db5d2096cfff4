"""Training-step time of temporal attention (paper 003) against plain attention.

One step = GPT-2 forward with next-token labels, backward, AdamW; by default on the default
profile's ``lm:`` shape (GPT-2 2 layers x 128 dims, 4 heads, |V| 4,096, batch 4 x 128 tokens).
Models, all from the same weights and seeing the same batch:

* ``plain (sdpa)`` — GPT-2 with PyTorch's scaled-dot-product attention (the stages' setting);
* ``temporal (visible)`` — :func:`pipeline.models.temporal_attention.add_temporal_attention`
  (eq. 2: ``q'_i = q_i T_iᵀ T_i / ‖T_i‖``, then the same sdpa call), one period per sequence
  given through ``temporal_times``, ``T_i`` = the causal prefix's time rows (the default scope);
* ``temporal (sequence)`` — the same with ``scope="sequence"`` (every query sees all rows).

Steps are interleaved round-robin (``benchmarks._results.interleaved_medians``) and the median per
model is reported with its ratio to ``plain (sdpa)``. The goal: temporal <= 1.15x.
``--width 768 --heads 12`` measures a GPT-2-small-wide layer (``--layers`` as given).

    .venv/bin/python -m benchmarks.temporal_attention_step [--width 128 --heads 4 --layers 2]
        [--rounds 30] [--out FILE]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys

from pipeline.infra.numerics import THREADS, configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from benchmarks._results import cpu_model, interleaved_medians, publish, ratio_rows  # noqa: E402
from pipeline.models.temporal_attention import add_temporal_attention, temporal_times  # noqa: E402

VOCAB, BATCH, LENGTH, PERIODS = 4096, 4, 128, 7


def build(layers: int, width: int, heads: int) -> dict[str, tuple]:
    """Name -> (model, time ids or None, optimiser); same initial weights everywhere."""
    config = GPT2Config(vocab_size=VOCAB, n_layer=layers, n_embd=width, n_head=heads,
                        n_positions=256, bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    base = GPT2LMHeadModel(config)
    periods = torch.arange(BATCH) % PERIODS
    runs: dict[str, tuple] = {}
    for name, scope in (("plain (sdpa)", None), ("temporal (visible)", "visible"),
                        ("temporal (sequence)", "sequence")):
        lm = copy.deepcopy(base).train()
        times = None
        if scope is not None:
            torch.manual_seed(1)
            emb = add_temporal_attention(lm, PERIODS, scope=scope)
            times = emb.ids(periods, input_ids=torch.zeros(BATCH, LENGTH, dtype=torch.long))
        runs[name] = (lm, times, torch.optim.AdamW(lm.parameters(), lr=1e-4))
    return runs


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.temporal_attention_step", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=2, help="transformer blocks (params lm.n_layer)")
    p.add_argument("--width", type=int, default=128, help="hidden size (params lm.n_embd)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (params lm.n_head)")
    p.add_argument("--threads", type=int, default=THREADS, help="torch intra-op threads")
    p.add_argument("--rounds", type=int, default=30, help="timed steps per model (round-robin)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per model first")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv

    configure_torch(args.threads)
    runs = build(args.layers, args.width, args.heads)
    batch = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=torch.Generator().manual_seed(0))

    def step(lm: GPT2LMHeadModel, times: torch.Tensor | None, opt: torch.optim.Optimizer) -> None:
        if times is None:
            loss = lm(input_ids=batch, labels=batch).loss
        else:
            with temporal_times(lm, times):
                loss = lm(input_ids=batch, labels=batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    medians = interleaved_medians(runs, step, args.warmup, args.rounds)
    text = "\n".join([
        "# Benchmark: step time of temporal attention",
        "",
        f"Command: `.venv/bin/python -m benchmarks.temporal_attention_step {' '.join(given)}`"
        f": GPT-2 {args.layers} x {args.width}, {args.heads} heads, |V| {VOCAB:,}, batch {BATCH} x "
        f"{LENGTH} tokens, one of {PERIODS} periods per sequence, {args.threads} thread(s), pinned "
        f"kernels, median of {args.rounds} interleaved steps (forward, backward, AdamW).",
        f"Machine: {cpu_model()} ({platform.machine()}, {os.cpu_count()} CPUs), 1-minute load "
        f"average {os.getloadavg()[0]:.1f} at the end; torch {torch.__version__}.",
        "",
        "| model | ms/step | vs plain |",
        "|---|---:|---:|",
        *ratio_rows(medians, "plain (sdpa)"),
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
