"""What ``embeddings.usage_cap`` changes in the contextual variants' perplexity: two kept runs of
one design, without and with the cap, compared seed by seed.

    .venv/bin/python -m benchmarks.usage_cap_ppl --off benchmarks/results/usage_cap_ppl/off \
        --cap benchmarks/results/usage_cap_ppl/cap-8 [--variants context2 context2-static] \
        [--out benchmarks/results/usage_cap_ppl.md]

The runs are ``make profile-report`` of ``profiles/usage-cap-off.yaml`` and
``profiles/usage-cap-8.yaml``: shared-base training, so seed s of both runs trains its modules
on the same Baseline (checked here: the Baselines' scores must be the same bytes) and the
capped and uncapped model of one seed differ only by the features. Their per-abstract NLL is
read back from the DVC cache by each run's ``dvc.lock`` (:mod:`benchmarks.kept_runs`). Each
variant's test-period PPL with the cap against without is tested by the verdict engine's rate
test paired by seed (:func:`pipeline.stats.comparisons.compare_rates`; Holm over the variants),
with its interval and its smallest detectable effect; dev and test PPL per seed are shown too.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

from benchmarks._results import publish
from benchmarks.kept_runs import CACHE, materialize, output_md5
from pipeline.infra.errors import UserError
from pipeline.infra.runs import run_name
from pipeline.models.registry import BASELINE, display_name
from pipeline.reports.model_verdicts import nll_matrix
from pipeline.reports.scored_runs import Run, load_run
from pipeline.stats.comparisons import Side, compare_rates
from pipeline.stats.verdict import Verdict, claim_of, judge


def _params(kept: Path) -> dict:
    return yaml.safe_load((kept / "params.yaml").read_text(encoding="utf-8"))


def _runs(kept: Path, variants: Sequence[str], seeds: Sequence[int], into: Path,
          cache: Path) -> dict[tuple[str, int], Run]:
    runs = {}
    for v in variants:
        for s in seeds:
            materialize(kept, f"data/scores/{run_name(v, s)}", into, cache)
            runs[(v, s)] = load_run(into / "data" / "scores", v, s)
    return runs


def compare(off: Path, cap: Path, variants: Sequence[str], cache: Path = CACHE
            ) -> tuple[list[Verdict], list[str]]:
    """The verdicts (cap against none, test period, one per variant) and the report's lines."""
    p_off, p_cap = _params(off), _params(cap)
    cap_value = p_cap["embeddings"]["usage_cap"]
    if p_off["embeddings"].get("usage_cap") is not None or cap_value is None:
        raise UserError("--off must be a run without a usage cap and --cap one with it",
                        path=off / "params.yaml", fix="swap --off and --cap")
    if p_off["train"]["base"] != "shared" or p_cap["train"]["base"] != "shared":
        raise UserError("both runs need shared-base training (train.base: shared) for the "
                        "seeds to pair", path=cap / "params.yaml",
                        fix="run profiles/usage-cap-off.yaml and usage-cap-8.yaml")
    seeds = [s for s in p_off["experiment"]["seeds"] if s in p_cap["experiment"]["seeds"]]
    same = [s for s in seeds if output_md5(off, f"data/scores/{run_name(BASELINE, s)}")
            == output_md5(cap, f"data/scores/{run_name(BASELINE, s)}")]
    if same != seeds:
        raise UserError(f"the Baselines of seeds {sorted(set(seeds) - set(same))} differ between "
                        "the runs: the seeds do not pair", path=cap / "dvc.lock",
                        fix="run both profiles with the same code and params but the cap")
    with tempfile.TemporaryDirectory() as tmp:
        runs_off = _runs(off, [BASELINE, *variants], seeds, Path(tmp) / "off", cache)
        runs_cap = _runs(cap, variants, seeds, Path(tmp) / "cap", cache)
    first = runs_off[(BASELINE, seeds[0])]
    test, dev = first.split_period("test"), first.split_period("dev")
    claims = []
    for v in variants:
        keys_c, nll_c, tok_c = nll_matrix(runs_cap, v, seeds, test, "PPL")
        keys_o, nll_o, tok_o = nll_matrix(runs_off, v, seeds, test, "PPL")
        if not (np.array_equal(keys_c, keys_o) and np.array_equal(tok_c, tok_o)):
            raise UserError(f"the two runs of {v} scored different abstracts of {test}",
                            path=cap, fix="run both profiles on the same corpus and split")
        result = compare_rates(Side(nll_c, True, tuple(seeds)), Side(nll_o, True, tuple(seeds)),
                               tok_c, names=(f"{v} cap {cap_value}", f"{v} no cap"))
        claims.append(claim_of(result, report="usage-cap", family="variant", scope=test,
                               a=f"{display_name(v)}, cap {cap_value}",
                               b=f"{display_name(v)}, no cap", metric="PPL", scale="relative",
                               effect_unit="% PPL"))
    verdicts = judge(claims)
    lines = [f"Kept runs: `{off}` (no cap) and `{cap}` (`embeddings.usage_cap: {cap_value}`); "
             f"seeds {', '.join(map(str, seeds))}; the Baselines of both are the same bytes.", "",
             f"| model | seed | dev {dev} PPL, no cap | with cap | test {test} PPL, no cap "
             "| with cap | change |", "|---|---:|---:|---:|---:|---:|---:|"]
    for v in [BASELINE, *variants]:
        for s in seeds:
            o = runs_off[(v, s)].metrics["periods"]
            c = (runs_cap if v != BASELINE else runs_off)[(v, s)].metrics["periods"]
            change = 100 * (c[test]["ppl"] / o[test]["ppl"] - 1)
            lines.append(f"| {display_name(v)} | {s} | {o[dev]['ppl']:.2f} | {c[dev]['ppl']:.2f} "
                         f"| {o[test]['ppl']:.2f} | {c[test]['ppl']:.2f} | {change:+.3f} % |")
    lines += ["", f"Test {test}, the cap against none (the engine's rate test paired by seed, "
              f"Holm over the {len(variants)} variants):", ""]
    for r in verdicts:
        mde = "" if math.isnan(r.mde) else f"; smallest detectable ±{r.mde:.3g} %"
        lines.append(f"- {r.a} vs {r.b}: {r.effect:+.3f} % PPL [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}], "
                     f"Holm-adjusted p {r.p_adjusted:.3g}: **{r.verdict}**{mde} ({r.test}, "
                     f"{r.n} {r.unit})")
    return verdicts, lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--off", type=Path, required=True, help="the kept run without a cap")
    p.add_argument("--cap", type=Path, required=True, help="the kept run with the cap")
    p.add_argument("--variants", nargs="+", default=["context2", "context2-static"],
                   help="the variants reading contextual features, run in both")
    p.add_argument("--cache", type=Path, default=CACHE, help="the DVC cache the runs used")
    p.add_argument("--out", help="write the Markdown here too")
    args = p.parse_args(argv)
    _, lines = compare(args.off, args.cap, args.variants, args.cache)
    publish("\n".join(lines), args.out, end="\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
