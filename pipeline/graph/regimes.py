"""Training regimes (params ``train.base``): how the runs of one seed share an LM, one class each.

==========  =====================================================================================
joint       every variant fine-tunes the LM (no cache)
shared      the variants with a module start from the seed's trained Baseline with the LM frozen;
            with ``train.cache`` those whose module allows it train from the Baseline's cached
            final states (one cache per seed, ``base_cache-s<seed>``)
frozen      the pretrained ``lm.base`` is never trained (the Baseline is it as it is); one cache
            of it for every seed (``base_cache``), which scores and forecasts read too
adapted     each seed's Baseline is ``lm.base`` with its top ``train.adapt_layers`` blocks
            fine-tuned from one trunk cache (``trunk_cache``); the other variants start from it,
            frozen, as in shared; ``baseline-0`` is the LM as it is (``base_cache``)
==========  =====================================================================================

Under joint and shared, ``continued-N`` starts from the seed's trained Baseline and trains its
whole LM further on the N latest training periods; frozen and adapted refuse it (their Baseline
is the pretrained LM, not one trained whole on every training period).

A regime is what the graph would otherwise branch on, stated once:

- :meth:`Regime.check`: the params it refuses (beside the plan's general checks), each a
  :class:`UserError` naming the param;
- :meth:`Regime.train_from`: what a run's train stage starts from (:class:`TrainFrom`: the model
  whose LM it loads, whether that LM is frozen, the cached states it trains from);
- :meth:`Regime.cache_of`: the frozen LM's cache a run reads, if any; its score and forecast
  stages read it too when :attr:`Regime.scored_from_cache` (the cache then holds the test period);
- :meth:`Regime.caches`: the cache stages it adds (:class:`Cache`), derived from the caches its
  runs read (plus the trunk cache of adapted).

:data:`REGIMES` is the one table from a ``train.base`` value to its class (:func:`regime_for`).
Regimes hold no state: every method reads the :class:`~pipeline.graph.plan.Plan` it is given.
Like the rest of the graph, this module imports no torch.

Add a regime (a worked example): ``probe``, every variant trains its module on the pretrained
``lm.base``, frozen, with no cache. One class here::

    class Probe(Regime):
        name = "probe"
        summary = "every variant trains its module on the pretrained lm.base, frozen, uncached"

        def check(self, plan: Plan) -> None:
            super().check(plan)
            if plan.cache:
                raise refused("train.base: probe keeps no cache", "train.cache",
                              "set train.cache: false")

        def train_from(self, plan: Plan, variant: str, seed: int) -> TrainFrom:
            return TrainFrom(freeze_lm=True)

then ``Probe`` in :data:`REGIMES`, ``"probe"`` in the ``base`` field's ``Literal`` of
:class:`pipeline.infra.schema.params.TrainParams` (the params schema), a line in
``docs/parameters.md``, and its checks and stages in ``tests/test_regimes.py``. The stages need
no edit: they ask the regime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pipeline.graph.files import TRUNK_CACHE, UNADAPTED_CACHE, baseline_cache, model_dir
from pipeline.infra.errors import UserError
from pipeline.models.registry import BASELINE, UNADAPTED, lookup



class Plan(Protocol):
    """What a regime reads of the graph's plan (:class:`pipeline.graph.plan.Plan`, which holds
    its regime: the plan imports this module, never the other way round)."""

    variants: list[str]
    seeds: list[int]
    cache: Any            # train.cache
    adapt_layers: int     # train.adapt_layers
    lm_base: str          # lm.base

    @property
    def runs(self) -> list[tuple[str, int]]: ...

SCRATCH = "scratch"   # lm.base: a random LM (pipeline.training.run.build_base_lm)


def refused(what: str, key: str, fix: str) -> UserError:
    """A params.yaml value the graph refuses, naming the key."""
    return UserError(what, path=f"params.yaml: {key}", fix=fix)


@dataclass(frozen=True)
class TrainFrom:
    """What a run's train stage starts from: the trained model whose LM it loads
    (``init_from``, else ``lm.base``), whether that LM stays frozen, and the cached states it
    trains from instead of running the LM every step: a frozen LM's final states (``cache``) or
    the pretrained LM's trunk, whose top ``train.adapt_layers`` blocks it fine-tunes (``trunk``)."""

    init_from: str | None = None
    freeze_lm: bool = False
    cache: str | None = None
    trunk: str | None = None

    @property
    def values(self) -> dict[str, Any]:
        """Its train-stage options, by the train stage's declaration's names
        (:mod:`pipeline.interfaces.train`): the LM (``--init-from MODEL``, ``--freeze-lm``)
        and the states it trains from (``--trunk DIR --adapt-layers K`` or ``--cache DIR``)."""
        return {"init_from": self.init_from, "freeze_lm": self.freeze_lm, "trunk": self.trunk,
                "adapt_layers": self.trunk is not None, "cache": self.cache}


@dataclass(frozen=True)
class Cache:
    """A cache stage a regime adds: the final states of ``seed``'s Baseline
    (``base_cache-s<seed>``, right after that Baseline's train stage), of the pretrained
    ``lm.base`` (``seed`` None: ``base_cache``, one for every seed), or, with ``trunk``, the
    states entering the pretrained LM's top blocks (``trunk_cache``, one for every seed)."""

    seed: int | None = None
    trunk: bool = False

    @property
    def name(self) -> str:
        if self.trunk:
            return "trunk_cache"
        return "base_cache" if self.seed is None else f"base_cache-s{self.seed}"

    @property
    def out(self) -> str:
        if self.trunk:
            return TRUNK_CACHE
        return UNADAPTED_CACHE if self.seed is None else baseline_cache(self.seed)


class Regime:
    """A value of ``train.base``. The defaults are joint's: every run fine-tunes its own LM
    from ``lm.base`` and reads no cache."""

    name: ClassVar[str]
    summary: ClassVar[str]   # what it does, for the error naming the valid values
    # The Baseline's LM is every temporal variant's (the report's comparison says so).
    on_baseline: ClassVar[bool] = True
    # baseline-0, the pretrained LM as it is, is a run (the unadapted reference).
    unadapted: ClassVar[bool] = False
    # The caches hold the test period too, and score and forecast stages read them.
    scored_from_cache: ClassVar[bool] = False
    # Its final-state caches are computed from the trunk cache rather than from the splits.
    caches_from_trunk: ClassVar[bool] = False

    def check(self, plan: Plan) -> None:
        """Refuse the params this regime cannot run (a :class:`UserError` naming the key)."""
        if UNADAPTED in plan.variants and not self.unadapted:
            raise refused("baseline-0 is a pretrained LM as it is, the unadapted reference of "
                          "train.base: adapted", "experiment.variants",
                          "drop baseline-0, or use train.base: adapted (with frozen, baseline "
                          "is the LM as it is)")

    def train_from(self, plan: Plan, variant: str, seed: int) -> TrainFrom:
        """What the train stage of ``variant`` with ``seed`` starts from: continued-N from the
        seed's trained Baseline, its whole LM trained further; the rest from ``lm.base``."""
        if lookup(variant).continued:
            return TrainFrom(init_from=model_dir(BASELINE, seed))
        return TrainFrom()

    def cache_of(self, plan: Plan, variant: str, seed: int) -> str | None:
        """The frozen LM's cache (a folder) the run of ``variant`` with ``seed`` reads, if any."""
        return None

    def scoring_cache(self, plan: Plan, variant: str, seed: int) -> str | None:
        """The cache the run's score and forecast stages read (:attr:`scored_from_cache`)."""
        return self.cache_of(plan, variant, seed) if self.scored_from_cache else None

    def caches(self, plan: Plan) -> list[Cache]:
        """The cache stages it adds: each cache some run reads, the one for every seed first."""
        read = {self.cache_of(plan, v, s) for v, s in plan.runs}
        return [*([Cache()] if UNADAPTED_CACHE in read else []),
                *(Cache(seed) for seed in plan.seeds if baseline_cache(seed) in read)]


class Joint(Regime):
    name = "joint"
    summary = "every variant fine-tunes the LM"
    on_baseline = False

    def check(self, plan: Plan) -> None:
        super().check(plan)
        if plan.cache:
            raise refused("train.cache: true caches a frozen LM (train.base: shared or frozen), "
                          "but train.base is joint", "train.cache",
                          "set train.base: shared or frozen, or train.cache: false")


def _on_baseline(seed: int, cache: str | None) -> TrainFrom:
    """A variant with a module on the seed's trained Baseline, its LM frozen (shared, adapted)."""
    return TrainFrom(init_from=model_dir(BASELINE, seed), freeze_lm=True, cache=cache)


class Shared(Regime):
    name = "shared"
    summary = "temporal variants start from the trained Baseline with the LM frozen"

    def train_from(self, plan: Plan, variant: str, seed: int) -> TrainFrom:
        if not lookup(variant).has_module:   # the baselines fine-tune their LM
            return super().train_from(plan, variant, seed)
        return _on_baseline(seed, self.cache_of(plan, variant, seed))

    def cache_of(self, plan: Plan, variant: str, seed: int) -> str | None:
        """With ``train.cache``, the variants whose module allows it read the Baseline's."""
        return baseline_cache(seed) if plan.cache and lookup(variant).cacheable else None


class Pretrained(Regime):
    """A regime on a pretrained ``lm.base`` whose Baselines are scored from the cache."""

    scored_from_cache = True

    def check(self, plan: Plan) -> None:
        super().check(plan)
        if plan.lm_base == SCRATCH:
            raise refused(f"train.base: {self.name} starts from a pretrained lm.base, but "
                          "lm.base is scratch (a random LM)", "train.base",
                          "name a pretrained lm.base, or use train.base: joint or shared")
        if plan.cache is not True:
            raise refused(f"train.base: {self.name} needs train.cache: true (its Baselines are "
                          "scored from the cache)", "train.cache", "set train.cache: true")
        continued = [v for v in plan.variants if lookup(v).continued]
        if continued:
            raise refused(f"{', '.join(continued)} continue training a Baseline trained, whole, "
                          f"on every training period, which train.base: {self.name} does not "
                          "have (its Baseline is the pretrained LM, frozen or with its top "
                          "blocks adapted)", "experiment.variants",
                          "drop them, or use train.base: joint or shared")
        tuned = [v for v in plan.variants
                 if lookup(v).latest_periods is not None and v != UNADAPTED]
        if tuned:
            raise refused(f"{', '.join(tuned)} fine-tune the LM on the latest periods, which "
                          f"train.base: {self.name} does not support", "experiment.variants",
                          "drop them, or use train.base: shared")

    @staticmethod
    def reads_cache(variant: str) -> bool:
        """The Baselines (the cached LM itself) and the variants whose module allows it."""
        entry = lookup(variant)
        return entry.cacheable or not entry.has_module


class Frozen(Pretrained):
    name = "frozen"
    summary = "the pretrained lm.base is never trained"

    def train_from(self, plan: Plan, variant: str, seed: int) -> TrainFrom:
        return TrainFrom(freeze_lm=True, cache=self.cache_of(plan, variant, seed))

    def cache_of(self, plan: Plan, variant: str, seed: int) -> str | None:
        return UNADAPTED_CACHE if plan.cache and self.reads_cache(variant) else None


class Adapted(Pretrained):
    name = "adapted"
    summary = "its top blocks are fine-tuned as each seed's Baseline"
    unadapted = True
    caches_from_trunk = True

    def check(self, plan: Plan) -> None:
        super().check(plan)
        if plan.adapt_layers < 1:
            raise refused(f"train.adapt_layers must be >= 1, got {plan.adapt_layers}",
                          "train.adapt_layers", "the number of top blocks the Baseline fine-tunes")

    def train_from(self, plan: Plan, variant: str, seed: int) -> TrainFrom:
        if variant == BASELINE:   # adapts its top blocks from the trunk cache
            return TrainFrom(trunk=TRUNK_CACHE)
        cache = self.cache_of(plan, variant, seed)
        if lookup(variant).has_module:
            return _on_baseline(seed, cache)
        return TrainFrom(freeze_lm=True, cache=cache)   # baseline-0: the LM as it is

    def cache_of(self, plan: Plan, variant: str, seed: int) -> str | None:
        """The seed's adapted Baseline's; baseline-0 reads the pretrained LM's."""
        if not (plan.cache and self.reads_cache(variant)):
            return None
        return UNADAPTED_CACHE if variant == UNADAPTED else baseline_cache(seed)

    def caches(self, plan: Plan) -> list[Cache]:
        return [Cache(trunk=True), *super().caches(plan)]


# The one table from a train.base value to its regime, in the order the error lists them.
REGIMES: dict[str, type[Regime]] = {r.name: r for r in (Joint, Shared, Frozen, Adapted)}


def regime_for(base: str) -> Regime:
    """The regime of the ``train.base`` value ``base``; a :class:`UserError` naming the valid
    values and what each does otherwise."""
    if base not in REGIMES:
        names = list(REGIMES)
        raise refused(f"train.base must be {', '.join(names[:-1])} or {names[-1]}, got {base!r}",
                      "train.base", "; ".join(f"{n}: {r.summary}" for n, r in REGIMES.items()))
    return REGIMES[base]()

