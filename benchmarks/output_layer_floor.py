"""What a head on a frozen pretrained LM's cache costs per token at the least.

On the adapted profile every head trains and scores from cached final states ``H``, so its work is
the output layer and the softmax over the vocabulary. Two parts, timed side by side here at
SmolLM2's sizes (d = 576, |V| = 49,152) on one batch of ``--tokens`` positions (4 abstracts of
280 tokens):

* ``GEMM``: the plain logits ``H W^T``: the same numbers for every head of a seed (they all read
  the same frozen Baseline's states), so a restructured run could compute them once per batch;
* ``head fwd+bwd``: what each head must do itself on those logits in training: add its bias, the
  NLL (:func:`pipeline.models.nll.token_nll`: log-sum-exp over the vocabulary) and its backward
  (the softmax again); ``head fwd``: the same without the backward (scoring, dev evaluation).

The per-token times bound any implementation that keeps every head's exact softmax from below:
multiplied by the profile's tokens, heads and seeds they give the floor of the whole run.

    .venv/bin/python -m benchmarks.output_layer_floor --kernels native
"""

from __future__ import annotations

import argparse

from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()

import torch  # noqa: E402

from benchmarks._results import interleaved_medians, machine, publish  # noqa: E402
from pipeline.models.nll import token_nll  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=1120, help="positions per batch (4 x 280)")
    p.add_argument("--width", type=int, default=576, help="d, the LM's hidden size")
    p.add_argument("--vocab", type=int, default=49152, help="|V|, the output layer's rows")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--kernels", default="native", choices=["portable", "native"])
    p.add_argument("--out", help="write the Markdown result here too")
    args = p.parse_args(argv)
    configure_torch(kernels=args.kernels)
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(args.tokens, args.width, generator=g)
    weight = torch.randn(args.vocab, args.width, generator=g) * 0.05
    targets = torch.randint(0, args.vocab, (args.tokens,), generator=g)
    logits = hidden @ weight.T
    bias = torch.zeros(args.vocab, requires_grad=True)

    def head_train() -> None:
        token_nll(logits + bias, targets).sum().backward()

    def head_score() -> None:
        with torch.no_grad():
            token_nll(logits + bias, targets)

    times = interleaved_medians({"GEMM (shareable)": (lambda: hidden @ weight.T,),
                                 "head fwd+bwd (training)": (head_train,),
                                 "head fwd (scoring)": (head_score,)},
                                lambda part: part(), warmup=1, rounds=args.rounds)
    rows = [f"| {name} | {ms:.0f} | {1000 * ms / args.tokens:.3f} |" for name, ms in times.items()]
    text = (f"{machine()}; torch {torch.__version__}, {torch.get_num_threads()} threads, "
            f"{args.kernels} kernels; {args.tokens} tokens, d = {args.width}, |V| = {args.vocab}; "
            f"median of {args.rounds}, interleaved.\n\n"
            "| part | ms per batch | µs per token |\n|---|---:|---:|\n"
            + "\n".join(rows))
    publish(text, args.out, "\n")


if __name__ == "__main__":
    main()
