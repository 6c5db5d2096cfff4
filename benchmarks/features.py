"""Temporal features: frequency counting speed, pooling overhead, encoder throughput, memory/disk.

1. Frequencies on the full export: every abstract of ``anthology+abstracts.bib.gz`` (parsed with
   pipeline.corpus.anthology) counted per year with the GPT-2 BPE (the paper's LM vocabulary), timed
   without parsing. Target: <= 60 s for ~12 M LM tokens on 2 cores.
2. Pooling overhead, on the SAME batches of one sample year: forward alone vs forward + pooling
   (index_add), interleaved repeats, plus the CPU-side alignment/windowing (plan_period minus the
   encoder tokenization any forward-only pipeline needs). Target: overhead <= 10 % of forward.
   Also: encoder tokens/s with all-MiniLM-L6-v2.
3. The embeddings stage per year (a subprocess, as DVC runs it): wall time, peak RSS, bytes on
   disk; for the scratch vocabulary and for GPT-2's 50,257 tokens. Plus the on-disk size per year
   implied by the full export's distinct GPT-2 tokens at d = 384 and the paper's d = 1024, against
   the reference's dense [|V| x 1024] fp32 slice per year.

Run: .venv/bin/python -m benchmarks.features [--bib ../shared/data/anthology+abstracts.bib.gz]
     [--repeats 3] [--out benchmarks/results/features.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # as `make repro` runs the stages

from pipeline.corpus.anthology import parse_file  # noqa: E402
from pipeline.features.alignment import plan_period
from pipeline.features.embeddings import encoder_states, pick_dtype, pool_batch
from pipeline.features.frequencies import count_tokens
from pipeline.infra.io import write_parquet
from pipeline.models.hub import MINILM, load_encoder, load_tokenizer_for
from pipeline.features.tokenizer import plain_backend, train_scratch_tokenizer
from benchmarks._results import publish

REPO = Path(__file__).resolve().parents[1]
FULL_EXPORT = REPO.parent / "shared" / "data" / "anthology+abstracts.bib.gz"
SAMPLE = REPO / "data" / "sample" / "anthology-sample.bib.gz"


def bench_frequencies(bib: Path) -> tuple[list[str], dict[int, int]]:
    t0 = time.perf_counter()
    papers = parse_file(bib, workers=2).papers
    parse_s = time.perf_counter() - t0
    gpt2 = load_tokenizer_for("gpt2")
    by_year = {int(y): g["abstract"].tolist() for y, g in papers.groupby("year")}
    distinct, total = {}, 0
    t0, cpu0 = time.perf_counter(), time.process_time()
    for year, texts in by_year.items():
        counts = count_tokens(gpt2, texts)
        distinct[year] = int((counts > 0).sum())
        total += int(counts.sum())
    count_s, cpu_s = time.perf_counter() - t0, time.process_time() - cpu0
    lines = [
        "## Frequencies on the full export (GPT-2 BPE, all years)",
        "",
        "| abstracts | years | LM tokens | parse (s, not counted) | count, all years: wall (s) "
        "| CPU time (s) | tokens per CPU second |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(papers):,} | {len(by_year)} | {total:,} | {parse_s:.1f} | {count_s:.1f} "
        f"| {cpu_s:.1f} | {total / cpu_s:,.0f} |",
        "",
        "Single-threaded (TOKENIZERS_PARALLELISM=false, as `make repro` runs the stage); the CPU "
        "time is what an otherwise idle core needs.",
        "",
    ]
    return lines, distinct


def bench_pooling(bib: Path, year: int, repeats: int) -> list[str]:
    papers = parse_file(bib).papers
    texts = papers.loc[papers["year"] == year, "abstract"].tolist()
    lm_tok = train_scratch_tokenizer(papers["abstract"].tolist(), 4096)
    enc_tok = load_tokenizer_for(MINILM)
    model = load_encoder(MINILM).eval()
    device = torch.device("cpu")

    t0 = time.perf_counter()
    plain_backend(enc_tok).encode_batch(texts, add_special_tokens=False)
    tokenize_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    plan = plan_period(texts, lm_tok, enc_tok, max_length=256, stride=32, batch_size=32)
    plan_s = time.perf_counter() - t0
    n_tokens = int(sum(int(b.attention_mask.sum()) for b in plan.batches))

    # Per batch: the best of `repeats` forwards, then the best of `repeats` poolings of that
    # batch's states. Minima of interleaved runs are robust to other jobs on a shared CPU.
    fwd_s, pool_s = 0.0, 0.0
    sums = torch.zeros(len(lm_tok), model.config.hidden_size, dtype=torch.int64)  # fixed point
    with torch.inference_mode():
        encoder_states(model, plan.batches[0], -1, device)  # warm-up
        for batch in plan.batches:
            best_fwd, best_pool = float("inf"), float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                states = encoder_states(model, batch, -1, device)
                best_fwd = min(best_fwd, time.perf_counter() - t0)
                t0 = time.perf_counter()
                pool_batch(sums, states, batch)
                best_pool = min(best_pool, time.perf_counter() - t0)
            fwd_s += best_fwd
            pool_s += best_pool
    align_s = max(plan_s - tokenize_s, 0.0)
    return [
        f"## Pooling overhead (all-MiniLM-L6-v2, CPU, {len(texts)} abstracts of {year}, "
        f"{len(plan.batches)} batches of <= 32 windows <= 256 tokens; best of {repeats} per batch)",
        "",
        "| encoder tokens | forward (s) | pooling, index_add (s) | pooling overhead | "
        "alignment + windows, CPU, once (s) | total overhead | tokens/s (forward + pooling) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {n_tokens:,} | {fwd_s:.2f} | {pool_s:.3f} | {100 * pool_s / fwd_s:.1f} % | {align_s:.2f} | "
        f"{100 * (pool_s + align_s) / fwd_s:.1f} % | {n_tokens / (fwd_s + pool_s):,.0f} |",
        "",
        f"Alignment = plan_period ({plan_s:.2f} s: both tokenizations, offsets alignment, windows, "
        f"padded batches) minus the encoder tokenization a forward-only pipeline needs anyway "
        f"({tokenize_s:.2f} s).",
        "",
    ]


def bench_random_encoders(bib: Path, year: int, device: torch.device,
                          sizes: tuple[str, ...] = ("roberta-base", "roberta-large")) -> list[str]:
    """Tokens/s of randomly initialised RoBERTa encoders (timing only; RoBERTa and GPT-2 share a
    BPE, so GPT-2's tokenizer stands in for both sides: the identity alignment)."""
    from transformers import RobertaConfig, RobertaModel

    shapes = {"roberta-base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                   intermediate_size=3072),
              "roberta-large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                    intermediate_size=4096),
              "roberta-tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=128)}
    texts = parse_file(bib).papers.query("year == @year")["abstract"].tolist()
    gpt2 = load_tokenizer_for("gpt2")
    plan = plan_period(texts, gpt2, gpt2, max_length=512, stride=64, batch_size=64)
    n_tokens = int(sum(int(b.attention_mask.sum()) for b in plan.batches))
    dtype = pick_dtype("auto", device)
    rows = []
    for name in sizes:
        torch.manual_seed(0)
        config = RobertaConfig(vocab_size=len(gpt2) + 8, max_position_embeddings=514,
                               pad_token_id=1, **shapes[name])  # RoBERTa's padding index
        model = RobertaModel(config).to(device=device, dtype=dtype).eval()
        sums = torch.zeros(len(gpt2), config.hidden_size, dtype=torch.int64, device=device)
        with torch.inference_mode():
            pool_batch(sums, encoder_states(model, plan.batches[0], -1, device), plan.batches[0])
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            for batch in plan.batches:
                pool_batch(sums, encoder_states(model, batch, -1, device), batch)
            if device.type == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - t0
        rows.append(f"| {name} (random init, {dtype}) | {n_tokens:,} | {elapsed:.2f} | "
                    f"{n_tokens / elapsed:,.0f} |")
        del model, sums
    return [f"## Random-init RoBERTa on {device} ({len(texts)} abstracts of {year}, windows <= 512, "
            f"batches of 64, forward + pooling)", "",
            "| encoder | tokens | seconds | tokens/s |", "|---|---:|---:|---:|", *rows, ""]


def bench_stage(bib: Path, year: int, distinct: dict[int, int]) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="bench-features-"))
    papers = parse_file(bib).papers
    write_parquet(papers, work / "abstracts.parquet")
    scratch = train_scratch_tokenizer(papers["abstract"].tolist(), 4096)
    scratch.save_pretrained(work / "tok-scratch")
    load_tokenizer_for("gpt2").save_pretrained(work / "tok-gpt2")
    rows = []
    for name in ("scratch", "gpt2"):
        out = work / f"{name}.safetensors"
        cmd = [sys.executable, "-m", "stages.embeddings", "--period", str(year), "--abstracts",
               str(work / "abstracts.parquet"), "--tokenizer", str(work / f"tok-{name}"),
               "--encoder", MINILM, "--out", str(out)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, check=True, cwd=REPO, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        # the stage reports its own peak RSS (getrusage of its process)
        peak = re.search(r"peak RSS (\d+) MB", done.stdout).group(1)
        inner = re.search(r"([\d.]+) s on", done.stdout).group(1)
        n_vocab = len(scratch) if name == "scratch" else 50257
        rows.append(f"| {name} ({n_vocab:,}) | {wall:.1f} | {inner} | {peak} | "
                    f"{out.stat().st_size / 1e6:.2f} |")
    lines = [
        f"## Embeddings stage per year (subprocess as DVC runs it; {year} of the sample, "
        f"all-MiniLM-L6-v2, defaults)",
        "",
        "| LM vocabulary | process wall (s) | stage's own timer (s) | peak RSS (MB) | on disk (MB) |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    if distinct:
        big = max(distinct, key=distinct.get)
        n = distinct[big]
        lines += [
            f"On-disk size of one full year (GPT-2 vocabulary; {big}, the year with most distinct "
            f"tokens: {n:,} seen): {n * (16 + 2 * 384) / 1e6:.1f} MB at d = 384, "
            f"{n * (16 + 2 * 1024) / 1e6:.1f} MB at d = 1024 (roberta-large), against "
            f"{50257 * 1024 * 4 / 1e6:.0f} MB for the reference's dense fp32 slice of that year "
            f"({22 * 50257 * 1024 * 4 / 1e9:.1f} GB for 22 years). The stage's own peak memory "
            f"for a year holds one fp32 [|V|, d] sum ({50257 * 1024 * 4 / 1e6:.0f} MB at GPT-2 x "
            f"roberta-large), never the [years x |V| x d] table.",
            "",
        ]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.features", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bib", type=Path, default=FULL_EXPORT,
                        help="full export for the frequencies timing")
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="sample export for the encoder timings")
    parser.add_argument("--year", type=int, default=2019, help="sample year used for the encoder timings")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats of the pooling timing")
    parser.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    args = parser.parse_args(argv)

    lines = [
        "# Temporal features benchmark",
        "",
        f"Machine: {platform.machine()} CPU, {os.cpu_count()} cores, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), Python {platform.python_version()}. "
        f"Load average at start: {', '.join(f'{x:.1f}' for x in os.getloadavg())}.",
        "",
    ]
    distinct: dict[int, int] = {}
    if args.bib.exists():
        freq_lines, distinct = bench_frequencies(args.bib)
        lines += freq_lines
    else:
        lines += [f"(frequencies skipped: {args.bib} not found)", ""]
    lines += bench_pooling(args.sample, args.year, args.repeats)
    if torch.cuda.is_available():
        lines += bench_random_encoders(args.sample, args.year, torch.device("cuda"))
    else:
        lines += ["(GPU section skipped: no CUDA device on this machine; on a CUDA host this "
                  "script also times random-init roberta-base and roberta-large.)", ""]
    lines += bench_stage(args.sample, args.year, distinct)
    text = "\n".join(lines)
    publish(text, args.out, end="\n")


if __name__ == "__main__":
    main()
