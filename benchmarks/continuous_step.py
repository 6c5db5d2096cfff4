"""Training-step time of the continuous output layer against a plain softmax head.

One step = GPT-2 body forward, the output head and its loss, backward, AdamW; on the default
profile's shapes (GPT-2 2 x 128, batch 4 x 128 tokens = ``train.batch_size`` x ``train.max_length``,
|V| 4,096) and 1 thread by default. Heads:

* ``softmax`` — the Baseline: the tied ``lm_head`` to |V| logits, next-token cross-entropy;
* ``continuous (vMF)`` — :class:`pipeline.models.continuous.ContinuousHead` (128 -> E = 128, the
  body's own input embeddings frozen as targets) with K&T's approximate NLLvMF;
* ``continuous (cosine)``, ``continuous (max-margin)`` — the same head with the other two losses
  (max-margin needs one ``[N, |V|]`` cosine product per step, as the softmax does).

All heads start from the same LM weights and see the same batch; steps are interleaved
round-robin and the median per head is reported with its ratio to ``softmax``. The goal:
continuous <= 1.0x Baseline's step. This is the head's own cost (``benchmarks.variant_step``
times the variant's whole training step).

    .venv/bin/python -m benchmarks.continuous_step [--rounds 30] [--threads 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys

from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

from benchmarks._results import cpu_model, interleaved_medians, publish, ratio_rows  # noqa: E402
from pipeline.models.continuous import ContinuousHead, frozen_input_embeddings  # noqa: E402

LAYERS, WIDTH, HEADS, BATCH, LENGTH = 2, 128, 4, 4, 128
HEAD_LOSSES = {"softmax": None, "continuous (vMF)": "vmf", "continuous (cosine)": "cosine",
               "continuous (max-margin)": "max_margin"}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.continuous_step", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vocab", type=int, default=4096, help="|V| of the softmax and the targets")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    p.add_argument("--rounds", type=int, default=30, help="timed steps per head (round-robin)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per head first")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)
    given = sys.argv[1:] if argv is None else argv

    configure_torch(args.threads)
    torch.manual_seed(0)
    vocab = args.vocab
    base = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_layer=LAYERS, n_embd=WIDTH,
                                      n_head=HEADS, n_positions=256, bos_token_id=vocab - 1,
                                      eos_token_id=vocab - 1))
    batch = torch.randint(0, vocab, (BATCH, LENGTH))
    targets = batch[:, 1:]
    runs = {}
    for name, kind in HEAD_LOSSES.items():
        lm = copy.deepcopy(base).train()
        head = None if kind is None else ContinuousHead(WIDTH, frozen_input_embeddings(base))
        params = list(lm.parameters()) + (list(head.parameters()) if head is not None else [])
        runs[name] = (lm, head, kind, torch.optim.AdamW(params, lr=1e-4))

    def step(lm: GPT2LMHeadModel, head: ContinuousHead | None, kind: str | None,
             opt: torch.optim.Optimizer) -> None:
        hidden = lm.transformer(input_ids=batch).last_hidden_state[:, :-1]
        if head is None:
            loss = F.cross_entropy(lm.lm_head(hidden).reshape(-1, vocab), targets.reshape(-1))
        else:
            loss = head.loss(hidden, targets, kind)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    rows = ratio_rows(interleaved_medians(runs, step, args.warmup, args.rounds), "softmax")
    text = "\n".join([
        "# Benchmark: step time of the continuous output layer",
        "",
        f"Command: `.venv/bin/python -m benchmarks.continuous_step {' '.join(given)}`"
        f": GPT-2 {LAYERS} x {WIDTH}, |V| {vocab:,}, batch {BATCH} x {LENGTH} tokens, targets "
        f"E = {WIDTH} (frozen input embeddings), {args.threads} thread(s), pinned kernels, median "
        f"of {args.rounds} interleaved steps.",
        f"Machine: {cpu_model()} ({platform.machine()}, {os.cpu_count()} CPUs), 1-minute load "
        f"average {os.getloadavg()[0]:.1f} at the end; torch {torch.__version__}.",
        "",
        "| head | ms/step | vs softmax |",
        "|---|---:|---:|",
        *rows,
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
