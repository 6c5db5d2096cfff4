"""Training-step time and autograd memory of registry variants.

Unlike ``benchmarks.temperature_step`` / ``benchmarks.continuous_step`` (the heads alone), this
times the real training step of each registry variant: :class:`pipeline.models.future_lm.FutureLM`
built by ``make_future_lm``, one optimizer step of ``pipeline.training.loop._forward_backward``
(the variant's own objective where it has one) plus AdamW, on the default profile's shapes
(scratch GPT-2 2 x 128, |V| 4,096, batch 4 x 128 tokens, dropout 0.1, the pinned kernels and
threads). Steps are interleaved round-robin; the median per variant is reported with its ratio to
Baseline. Memory: the bytes of the tensors autograd saves for backward in one step (unique
storages, ``torch.autograd.graph.saved_tensors_hooks``), the part of a step's memory a variant
changes. Goals: temperature <= 1.3x Baseline's step, continuous <= 1.0x,
temporal attention <= 1.15x plain attention (``--variants baseline temporal-attention``).
``--before`` also times each temperature or LSTM variant as it was before its fast path (the
op-by-op temperature objective, the indexed LSTM recurrence; the same floats), as
``<variant> (before)``, interleaved with the rest.

    .venv/bin/python -m benchmarks.variant_step [--variants ...] [--rounds 30] [--before] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import types

from pipeline.infra.numerics import THREADS, configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import torch  # noqa: E402

from benchmarks._results import cpu_model, interleaved_medians, publish, ratio_rows  # noqa: E402
from benchmarks._variants import sized  # noqa: E402
from pipeline.features.history import PeriodHistory  # noqa: E402
from pipeline.infra.schema.config import TrainConfig  # noqa: E402
from pipeline.infra.distributed import SINGLE  # noqa: E402
from pipeline.models.future_lm import FutureLM, make_future_lm, scratch_gpt2  # noqa: E402
from pipeline.models.heads import TemperatureHead  # noqa: E402
from pipeline.models.registry import lookup  # noqa: E402
from pipeline.models.temperature import bounded_temperature, scaled_nll  # noqa: E402
from pipeline.models.temporal import PeriodLSTM  # noqa: E402
from pipeline.training.loop import _forward_backward  # noqa: E402
from pipeline.training.optim import build_optimizer  # noqa: E402

VOCAB, LAYERS, WIDTH, HEADS, BATCH, LENGTH = 4096, 2, 128, 4, 4, 128
VARIANTS = ("baseline", "frequency", "temperature", "temporal-temperature", "continuous-vmf",
            "continuous-cosine")


def build(variant: str) -> FutureLM:
    torch.manual_seed(0)
    lm = scratch_gpt2(VOCAB, 0, n_layer=LAYERS, n_head=HEADS, n_embd=WIDTH, n_positions=256,
                      dropout=0.1)
    targets = torch.randn(VOCAB, WIDTH) if variant.startswith("continuous") else None
    return make_future_lm(lm, variant, 2, settings=sized(variant, 32), dropout=0.1,
                          target_vectors=targets).train()


def reference_objective(head: TemperatureHead, terms: torch.Tensor, hidden: torch.Tensor,
                        output_layer: torch.nn.Module, targets: torch.Tensor) -> torch.Tensor:
    """The temperature heads' objective as it was before the fast path: τ,
    ``log_softmax(z / τ)`` and scaled_nll, op by op under autograd (the same floats)."""
    s = head.config.settings
    mu = head.tau.pre_activation(hidden) + terms.to(hidden.dtype)
    tau = bounded_temperature(mu, s.alpha, s.beta, s.norm).float()
    log_probs = (output_layer(hidden).float() / tau).log_softmax(-1)
    return scaled_nll(log_probs, targets, tau, s.loss_scale) * (targets != -100).sum()


def indexed_last_hidden(lstm: PeriodLSTM, sequences: torch.Tensor) -> torch.Tensor:
    """PeriodLSTM's recurrence before its fast path (``unbind``): each period indexed out of
    ``gates_x``."""
    cell = lstm.lstm
    gates_x = torch.nn.functional.linear(sequences, cell.weight_ih_l0,
                                         cell.bias_ih_l0 + cell.bias_hh_l0)
    h = c = None
    for t in range(sequences.shape[1]):
        gates = gates_x[:, t] if h is None else gates_x[:, t] + h @ cell.weight_hh_l0.t()
        i, f, g, o = gates.chunk(4, dim=1)
        i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
        c = i * g if c is None else f * c + i * g
        h = o * c.tanh()
    return h


def as_before(model: FutureLM) -> bool:
    """Switch ``model`` to its code paths from before the fast paths; False when it has none."""
    changed = False
    if isinstance(model.bias, TemperatureHead):
        model.bias.objective = types.MethodType(reference_objective, model.bias)  # type: ignore[method-assign]
        changed = True
    for module in model.modules():
        if isinstance(module, PeriodLSTM):
            module._last_hidden = types.MethodType(indexed_last_hidden, module)  # type: ignore[method-assign]
            changed = True
    return changed


def lookup_name(name: str) -> str:
    """A registry variant's name (argparse type: an unknown name is an error naming the valid)."""
    try:
        return lookup(name).name
    except Exception as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def saved_bytes(step) -> int:
    """Bytes of the unique storages autograd saves during ``step()``."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        step()
    return sum(seen.values())


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.variant_step", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), type=lookup_name,
                   help="registry variants to time, the first is the reference (default: "
                        f"{' '.join(VARIANTS)})")
    p.add_argument("--rounds", type=int, default=30, help="timed steps per variant (round-robin)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per variant first")
    p.add_argument("--threads", type=int, default=THREADS,
                   help=f"intra-op threads (default: the recorded {THREADS}; 1 is steadier on a "
                        "loaded 2-core machine, where two threads wait on each other)")
    p.add_argument("--before", action="store_true",
                   help="also time each temperature / LSTM variant's code path before its "
                        "fast path")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)

    configure_torch(args.threads)
    g = torch.Generator().manual_seed(0)
    batch = [torch.randint(1, VOCAB, (LENGTH,), generator=g).tolist() for _ in range(BATCH)]
    history = PeriodHistory("2021", ("2019", "2020"), torch.randn(VOCAB, 2, generator=g) - 8.0,
                            None, torch.ones(VOCAB, 2, dtype=torch.bool))
    config = TrainConfig(batch_size=BATCH, grad_accum=1, lr_lm=1e-4, lr_new=1e-3)
    runs = {}
    for variant in args.variants:
        model = build(variant)
        runs[variant] = (model, build_optimizer(model, config),
                         history if model.history_kinds else None)
        if args.before:
            model = build(variant)
            if as_before(model):
                runs[f"{variant} (before)"] = (model, build_optimizer(model, config),
                                                  history if model.history_kinds else None)
    variants = tuple(runs)

    def step(model: FutureLM, opt: torch.optim.Optimizer, h: PeriodHistory | None) -> None:
        _forward_backward(model, model, [batch], h, config, 0, torch.device("cpu"), SINGLE)
        opt.step()
        opt.zero_grad(set_to_none=True)

    load_start = os.getloadavg()[0]
    reference = variants[0]
    memory = {v: saved_bytes(lambda r=runs[v]: step(*r)) for v in variants}
    medians = interleaved_medians(runs, step, args.warmup, args.rounds)
    rows = [f"{row} {memory[v] / 2**20:.1f} | {memory[v] / memory[reference]:.2f}x |"
            for v, row in zip(variants, ratio_rows(medians, reference))]
    text = "\n".join([
        f"# Benchmark: training step of {', '.join(variants)}",
        "",
        f"Command: `.venv/bin/python -m benchmarks.variant_step {' '.join(sys.argv[1:] if argv is None else argv)}`: the real "
        f"step (`loop._forward_backward` + AdamW) of each registry variant, scratch GPT-2 "
        f"{LAYERS} x {WIDTH}, |V| {VOCAB:,}, batch {BATCH} x {LENGTH} tokens, dropout 0.1, "
        f"{args.threads} pinned threads, median of {args.rounds} interleaved steps. Memory: bytes "
        "autograd saves for backward in one step.",
        f"Machine: {cpu_model()}, {os.cpu_count()} CPUs, 1-minute load average "
        f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; torch {torch.__version__}.",
        "",
        f"| variant | ms/step | vs {reference} | saved for backward (MiB) | vs {reference} |",
        "|---|---:|---:|---:|---:|",
        *rows,
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
