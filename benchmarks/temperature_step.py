"""Training-step time of the contextual-temperature heads against a plain softmax.

One step = GPT-2 forward, the output head, next-token cross-entropy (eq. 7's loss scaling for the
temperature heads, ``mode='mean'``), backward, AdamW; on the default profile's shapes (GPT-2 2 x 128,
|V| 4,096, batch 4 x 128 tokens, the recorded threads and pinned kernels). Heads
(:mod:`pipeline.models.temperature`):

* ``baseline`` — logits ``z`` as they are;
* ``temperature`` — ``z / τ``, τ of eq. 5 (rank ``--rank``), σ = softmax (the paper) or sigmoid;
* ``temporal-temperature`` — eq. 5 plus ``u_k`` from the bias LSTM over two periods of log
  frequencies (computed once per step, as the Frequency bias is).

All heads start from the same LM weights and see the same batch; steps are interleaved
round-robin and the median per head is reported with its ratio to ``baseline``. The goal:
temperature <= 1.3x Baseline's step. This is the heads' own cost (``benchmarks.variant_step``
times the variants' whole training step).

    .venv/bin/python -m benchmarks.temperature_step [--rounds 30] [--out FILE]
"""

from __future__ import annotations

import argparse
import copy
import os

from pipeline.infra.numerics import THREADS, configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from benchmarks._results import interleaved_medians, machine, publish, ratio_rows  # noqa: E402
from pipeline.features.history import PeriodHistory  # noqa: E402
from pipeline.models.temperature import (ContextualTemperature, TemporalTemperature,  # noqa: E402
                                         scaled_nll)

VOCAB, LAYERS, WIDTH, HEADS, BATCH, LENGTH = 4096, 2, 128, 4, 4, 128


def make_heads(rank: int) -> dict[str, torch.nn.Module | None]:
    return {"baseline": None,
            "temperature (softmax)": ContextualTemperature(WIDTH, VOCAB, rank),
            "temperature (sigmoid)": ContextualTemperature(WIDTH, VOCAB, rank, norm="sigmoid"),
            "temporal-temperature": TemporalTemperature(WIDTH, VOCAB, rank, lstm_hidden=32)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.temperature_step", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rank", type=int, default=64, help="rank Q of W_τ1 W_τ2 (eq. 5)")
    p.add_argument("--rounds", type=int, default=30, help="timed steps per head (round-robin)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per head first")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)

    configure_torch(THREADS)
    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_layer=LAYERS, n_embd=WIDTH,
                                      n_head=HEADS, n_positions=256))
    batch = torch.randint(0, VOCAB, (BATCH, LENGTH))
    history = PeriodHistory(period="2021", periods=("2019", "2020"),
                            log_freq=torch.randn(VOCAB, 2) - 8.0)
    runs = {}
    for name, head in make_heads(args.rank).items():
        lm = copy.deepcopy(base).train()
        params = list(lm.parameters()) + (list(head.parameters()) if head is not None else [])
        runs[name] = (lm, head, torch.optim.AdamW(params, lr=1e-4))

    def step(lm: GPT2LMHeadModel, head: torch.nn.Module | None, opt: torch.optim.Optimizer) -> None:
        hidden = lm.transformer(input_ids=batch).last_hidden_state[:, :-1]
        logits, targets = lm.lm_head(hidden), batch[:, 1:]
        if head is None:
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        else:
            tau = head(hidden, head.word_terms(history)) if isinstance(head, TemporalTemperature) \
                else head(hidden)
            loss = scaled_nll((logits / tau).log_softmax(-1), targets, tau)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    rows = ratio_rows(interleaved_medians(runs, step, args.warmup, args.rounds), "baseline")
    text = "\n".join([
        "# Benchmark: step time of the contextual-temperature heads",
        "",
        f"Command: `.venv/bin/python -m benchmarks.temperature_step {' '.join(argv or [])}`"
        f": GPT-2 {LAYERS} x {WIDTH}, |V| {VOCAB:,}, batch {BATCH} x {LENGTH} tokens, rank "
        f"{args.rank}, {THREADS} pinned threads, median of {args.rounds} interleaved steps.",
        f"Machine: {machine()}, 1-minute load average "
        f"{os.getloadavg()[0]:.1f} at the end; torch {torch.__version__}.",
        "",
        "| head | ms/step | vs baseline |",
        "|---|---:|---:|",
        *rows,
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
