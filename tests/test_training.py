"""Training loop on a tiny random-init GPT-2: batching, optimiser, overfitting, resume, early stopping."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.training import loop as training
from pipeline.models.future_lm import make_future_lm, scratch_gpt2
from pipeline.features.history import PeriodHistory
from pipeline.corpus.periods import shift
from pipeline.infra.schema.config import TrainConfig
from pipeline.models.perplexity import Perplexity
from pipeline.training.batches import (epoch_steps, latest_periods, period_batches,
                                       period_steps, steps_per_pass)
from pipeline.training.run import read_sequences
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.infra.io import write_parquet
from pipeline.training.checkpoints import Checkpoints
from pipeline.training.loop import train
from pipeline.training.optim import build_optimizer, linear_schedule
from tests.variant_settings import sized

V, PAD = 48, 0
YEARS = ("2017", "2018", "2019")


def corpus(n_per_year: int = 6, length: int = 12, seed: int = 0) -> dict[str, list[list[int]]]:
    g = torch.Generator().manual_seed(seed)
    return {y: [[PAD] + torch.randint(1, V, (length - k % 3,), generator=g).tolist() + [PAD]
                for k in range(n_per_year)] for y in YEARS}


def histories(years=(*YEARS, "2020")) -> dict[str, PeriodHistory]:
    g = torch.Generator().manual_seed(1)
    return {y: PeriodHistory(y, (shift(y, -2), shift(y, -1)), -6 - 2 * torch.rand(V, 2, generator=g),
                           torch.randn(V, 2, 4, generator=g), torch.rand(V, 2, generator=g) > 0.2)
            for y in years}


def model(variant: str = "context2", seed: int = 0, dropout: float = 0.1):
    torch.manual_seed(seed)
    lm = scratch_gpt2(V, PAD, n_layer=1, n_head=2, n_embd=16, n_positions=32, dropout=dropout)
    return make_future_lm(lm, variant, 2, settings=sized(variant, 8), feature_dim=4,
                          dropout=dropout)


def test_period_batches_are_single_period_shuffled_and_complete() -> None:
    sizes = {"2017": 10, "2018": 7, "2019": 3}
    batches = period_batches(sizes, 4, seed=0, epoch=0)
    seen = {y: sorted(i for year, idx in batches if year == y for i in idx) for y in sizes}
    assert seen == {y: list(range(n)) for y, n in sizes.items()}   # every example exactly once
    assert all(len(idx) <= 4 for _, idx in batches)
    assert [y for y, _ in batches] != sorted(y for y, _ in batches)  # years interleaved
    assert batches == period_batches(sizes, 4, seed=0, epoch=0)
    assert batches != period_batches(sizes, 4, seed=0, epoch=1)
    assert batches != period_batches(sizes, 4, seed=1, epoch=0)


def test_year_labels_draw_the_order_int_years_drew() -> None:
    """The default run's numbers: with year labels the RNG visits the years as it did for ints."""
    rng = np.random.default_rng([3, 1])
    sizes = {2017: 10, 2018: 7, 2019: 3}
    groups = [(y, rng.permutation(sizes[y]).tolist()) for y in sorted(sizes)]
    order = rng.permutation(len(groups))
    expected = [(str(groups[i][0]), groups[i][1]) for i in order]
    labels = {str(y): n for y, n in reversed(list(sizes.items()))}   # insertion order irrelevant
    assert period_batches(labels, 100, seed=3, epoch=1) == expected


def test_a_training_batch_holds_one_half_year(tmp_path) -> None:
    """Half-year periods from a real split file: steps group by label, in time order, across
    a year boundary (2019H2 -> 2020H1), never by the labels' text."""
    periods = ["2019H2", "2020H1", "2019H1", "2020H1", "2019H2", "2020H2", "2019H2", "2020H1"]
    texts = [f"abstract {i} of period {p} about language models" for i, p in enumerate(periods)]
    tok = train_scratch_tokenizer(texts, 300)
    split = tmp_path / "train.parquet"
    write_parquet(pd.DataFrame({"key": [f"k{i}" for i in range(len(periods))], "period": periods,
                                "title": "t", "abstract": texts}), split)
    data = read_sequences(split, tok, 32)
    assert list(data) == ["2019H2", "2020H1", "2019H1", "2020H2"]          # file order
    assert {p: len(s) for p, s in data.items()} == {"2019H2": 3, "2020H1": 3, "2019H1": 1,
                                                    "2020H2": 1}
    steps = period_steps({p: len(s) for p, s in data.items()}, 2, 1, seed=0, epoch=0)
    for period, micro in steps:
        decoded = [tok.decode(data[period][i]) for batch in micro for i in batch]
        assert decoded and all(f"period {period} " in text for text in decoded), decoded
    assert sum(len(b) for _, micro in steps for b in micro) == len(periods)
    assert list(latest_periods(data, 2)) == ["2020H1", "2020H2"]
    assert list(latest_periods(data, None)) == ["2019H1", "2019H2", "2020H1", "2020H2"]


def test_a_matched_epoch_cycles_over_fewer_abstracts_for_the_given_steps() -> None:
    """epoch_steps: one period_steps pass without ``steps`` (every existing run's order), and
    with ``steps`` exactly that many single-period steps, drawn pass after pass (each a fresh
    shuffle, each abstract once per pass), deterministic in (seed, epoch)."""
    every = {"2017": 7, "2018": 5, "2019": 6}
    assert steps_per_pass(every, 2, 2) == 2 + 2 + 2 and steps_per_pass({"2019": 6}, 2, 2) == 2
    for epoch in (0, 3):
        assert epoch_steps(every, 2, 2, 0, epoch) == period_steps(every, 2, 2, 0, epoch)
        # one pass's steps: the plain epoch
        assert epoch_steps(every, 2, 2, 0, epoch, 6) == period_steps(every, 2, 2, 0, epoch)
    latest = {"2019": 6}
    plan = epoch_steps(latest, 2, 2, seed=0, epoch=1, steps=5)   # 3 passes of 2 steps, cut at 5
    assert len(plan) == 5 and {period for period, _ in plan} == {"2019"}
    assert plan == period_steps(latest, 2, 2, 0, 3) + period_steps(latest, 2, 2, 0, 4) \
        + period_steps(latest, 2, 2, 0, 5)[:1]
    seen = [i for _, micro in plan[:4] for batch in micro for i in batch]
    assert sorted(seen) == sorted(2 * list(range(6)))   # two whole passes, then part of a third
    assert plan == epoch_steps(latest, 2, 2, seed=0, epoch=1, steps=5)
    assert plan != epoch_steps(latest, 2, 2, seed=0, epoch=0, steps=5)
    with pytest.raises(ValueError, match="an epoch of 0 steps"):
        epoch_steps(latest, 2, 2, 0, 0, 0)


def test_latest_periods_for_baseline_n() -> None:
    data = corpus()
    assert list(latest_periods(data, 2)) == ["2018", "2019"]
    assert list(latest_periods(data, None)) == list(YEARS)
    months = {"2020-10": [], "2020-09": [], "2019-12": []}
    assert list(latest_periods(months, 2)) == ["2020-09", "2020-10"]
    assert latest_periods(data, 0) == {}   # baseline-0: the pretrained LM, trained on none
    with pytest.raises(ValueError, match="N >= 0"):
        latest_periods(data, -1)


def test_two_learning_rates_and_linear_schedule() -> None:
    m = model("frequency")
    opt = build_optimizer(m, TrainConfig(lr_lm=5e-5, lr_new=1e-3, weight_decay=0.01))
    lrs = {g["name"]: g["lr"] for g in opt.param_groups}
    assert lrs == {"lm": 5e-5, "lm-no-decay": 5e-5, "new": 1e-3, "new-no-decay": 1e-3}
    n_opt = sum(p.numel() for g in opt.param_groups for p in g["params"])
    assert n_opt == sum(p.numel() for p in m.parameters())   # every parameter exactly once
    sched = linear_schedule(opt, warmup=4, total=10)
    factors = []
    for _ in range(10):
        factors.append(opt.param_groups[0]["lr"] / 5e-5)
        opt.step()
        sched.step()
    assert factors[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert factors[4:] == pytest.approx([1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])
    frozen = build_optimizer(model("frequency"), TrainConfig(freeze_lm=True))
    assert {g["name"] for g in frozen.param_groups} == {"new", "new-no-decay"}


def run(m, tmp_path, config: TrainConfig, on_step=None, data=None, name="ckpt"):
    data = data or corpus()
    return train(m, data, {"2020": data["2019"][:3]}, histories(), config, pad_id=PAD, device="cpu",
                 checkpoints=Checkpoints(tmp_path / name, key="k"), live_dir=tmp_path / name / "live",
                 on_step=on_step)


@pytest.mark.slow
def test_twenty_steps_overfit_a_small_set(tmp_path) -> None:
    losses: list[float] = []
    small = {"2019": corpus(4)["2019"]}
    config = TrainConfig(epochs=20, batch_size=4, lr_lm=1e-2, lr_new=1e-2, warmup_steps=0, patience=0)
    state = run(model("context2", dropout=0.0), tmp_path, config, lambda s, loss: losses.append(loss),
                data=small)
    assert state.step == len(losses) == 20   # one batch per epoch
    assert losses[-1] < losses[0] - 1.0, losses
    assert len(state.dev_ppl) == 20 and all(p > 1 for p in state.dev_ppl)


@pytest.mark.slow
@pytest.mark.parametrize("grad_accum", [1, 2])
def test_resume_after_interruption_continues_exactly(tmp_path, capsys, grad_accum: int) -> None:
    config = TrainConfig(epochs=2, batch_size=2, grad_accum=grad_accum, lr_lm=1e-3, lr_new=1e-3,
                         warmup_steps=2, checkpoint_every=1, patience=0)
    full: list[float] = []
    reference = run(model(), tmp_path, config, lambda s, loss: full.append(loss), name="full")

    class Interrupted(Exception):
        pass

    def stop_at_3(state, loss):
        if state.step == 3:
            raise Interrupted

    with pytest.raises(Interrupted):
        run(model(), tmp_path, config, stop_at_3, name="cut")
    resumed: list[float] = []
    capsys.readouterr()
    state = run(model(), tmp_path, config, lambda s, loss: resumed.append(loss), name="cut")
    total = len(full)
    assert (f"resuming from step 3 of {total}, checkpoint {tmp_path / 'cut' / 'checkpoint.pt'}"
            in capsys.readouterr().err)
    # The next step after the checkpoint has the same loss as in the uninterrupted run, and so on.
    assert resumed[0] == full[3]
    assert resumed == full[3:]
    assert state.dev_ppl == reference.dev_ppl
    # The curve holds every step once, like the uninterrupted run's.
    with open(tmp_path / "cut" / "live" / "plots" / "metrics" / "train" / "loss.tsv") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [int(r["step"]) for r in rows] == list(range(1, len(full) + 1))


def test_checkpoint_of_another_configuration_is_not_resumed(tmp_path) -> None:
    config = TrainConfig(epochs=1, batch_size=2, checkpoint_every=1, patience=0)
    m = model()
    run(m, tmp_path, config)
    other = Checkpoints(tmp_path / "ckpt", key="other")
    opt = build_optimizer(m, config)
    assert other.load(m, opt, linear_schedule(opt, 0, 1)) is None
    assert not (tmp_path / "ckpt").exists()


def test_early_stopping_keeps_the_best_epoch(tmp_path, monkeypatch) -> None:
    scripted = iter([30.0, 20.0, 25.0, 26.0, 1.0])
    snapshots: list[dict[str, torch.Tensor]] = []
    real_evaluate = training.evaluate

    def evaluate(m, *args, **kwargs):
        real_evaluate(m, *args, **kwargs)
        snapshots.append({k: v.clone() for k, v in m.state_dict().items()})
        return Perplexity(nll_sum=float(torch.log(torch.tensor(next(scripted)))), n_tokens=1)

    monkeypatch.setattr(training, "evaluate", evaluate)
    m = model()
    state = run(m, tmp_path, TrainConfig(epochs=5, batch_size=4, patience=2))
    assert state.stopped_early and len(state.dev_ppl) == 4
    assert state.best_epoch == 1 and state.best_ppl == pytest.approx(20.0)
    for name, value in m.state_dict().items():   # the model ends with epoch 2's weights
        assert torch.equal(value, snapshots[1][name]), name


def test_frozen_lm_gets_no_gradient_runs_without_dropout_and_keeps_its_weights(tmp_path) -> None:
    m = model("context2", dropout=0.5)
    lm_before = {k: v.clone() for k, v in m.lm.state_dict().items()}
    bias_before = {k: v.clone() for k, v in m.bias.state_dict().items()}
    modes: list[tuple[bool, bool]] = []

    def check(state, loss):
        modes.append((m.lm.training, m.bias.training))
        assert all(p.grad is None for p in m.lm.parameters())   # no LM backward at all

    config = TrainConfig(epochs=2, batch_size=4, lr_new=1e-2, freeze_lm=True, patience=0)
    run(m, tmp_path, config, check)
    assert modes and set(modes) == {(False, True)}   # LM as when scored; bias module trains
    for name, value in m.lm.state_dict().items():
        assert torch.equal(value, lm_before[name]), name
    assert any(not torch.equal(v, bias_before[k]) for k, v in m.bias.state_dict().items())


def test_dev_perplexity_is_the_scoring_computation(tmp_path) -> None:
    from pipeline.models.perplexity import perplexities
    from pipeline.models.scoring import score_abstracts

    m = model("frequency", dropout=0.0)
    data = corpus()
    dev = {"2020": data["2019"][:3]}
    ppl = training.evaluate(m, dev, histories(), batch_size=2, pad_id=PAD)
    scored = score_abstracts(m, dev["2020"], np.ones(V, dtype=bool), histories()["2020"], batch_size=3,
                             pad_id=PAD).tokens
    assert ppl.ppl == pytest.approx(perplexities(scored)[0].ppl, rel=1e-6)
