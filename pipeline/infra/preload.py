"""A warm interpreter for `make repro`: torch and transformers imported once, each stage forked.

Every torch stage spent ~7 s of its life importing torch (~2.6 s) and transformers (~4.5 s) on
the 2-core machine, 25 such stages per default run, and each score stage another ~6 s reading
WordNet's index for METEOR (benchmarks/results/repro_times.md). So ``make repro`` runs
``python -m stages._lib.preload run -- dvc repro`` (the CLI; the logic is here):

* the **server** pins the CPU kernels (``stages/__init__``), imports the third-party libraries
  the stages use, reads WordNet's index, runs what its caller adds (``stages/_lib/preload.py``:
  every stage module) and runs no torch op (no thread pool, no CUDA context: forking it is
  safe), then listens on a Unix socket. A server lives for one ``dvc repro``, so every run sees
  the code on disk;
* each stage command stays ``python -m stages.<name> ...``. When ``FUTURELM_PRELOAD`` names a
  live server, ``stages/__init__`` hands the command over (:func:`delegate`): argv, working
  folder, environment and the three standard streams (as file descriptors). The server forks;
  the child becomes the stage (its ``sys.argv``, ``os.environ``, streams, folder) and runs it as
  ``python -m`` would. Its exit status (or signal) goes back to the waiting command, which exits
  with it; Ctrl-C is forwarded.

Same bytes as a plain run: the CPU kernels are pinned before the server imports torch, with the
very environment the stages would set, and a command whose import-time environment differs
(``HF_*``, ``MKL_*``, ``OMP_*``, ... :data:`IMPORT_TIME_ENV`) or interpreter differs is refused
and runs in its own process, as does any command when no server answers. Tested in
``tests/test_preload.py`` (outputs byte-identical to a plain run, exit codes, errors, streams).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SOCKET_ENV = "FUTURELM_PRELOAD"
CHILD_ENV = "FUTURELM_PRELOADED"     # set inside a forked stage: it never delegates again
IMPORT_TIME_ENV = ("HF_", "TRANSFORMERS_", "TORCH", "PYTORCH_", "ATEN_", "MKL_", "OMP_", "KMP_",
                   "ONEDNN_", "DNNL_", "CUDA", "CUBLAS_", "FUTURELM_NO_PIN", "PYTHON",
                   "TOKENIZERS_", "LD_", "NLTK_", "OPENBLAS_", "NPY_", "ARROW_")
PRELOADED = ("numpy", "pandas", "pyarrow.parquet", "torch", "safetensors.torch", "tokenizers",
             "transformers", "tqdm.auto", "yaml")
MAX_MESSAGE = 1 << 20


def _import_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_ENV)}


def import_heavy() -> None:
    """The server's imports: the third-party libraries the stages use, and WordNet's index."""
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    # the classes the stages use: transformers' lazy modules load on attribute access
    from transformers import (AutoModel, AutoModelForCausalLM, AutoTokenizer,  # noqa: F401
                              GPT2LMHeadModel, PreTrainedTokenizerFast)
    # WordNet's index (METEOR's synonyms): ~2 s to read (pipeline/infra/wordnet.py), once per
    # score stage otherwise
    try:
        from pipeline.infra.wordnet import english_wordnet

        english_wordnet()
    except (ImportError, LookupError):   # not installed: the score stage reports it itself
        pass


# ---- server ---------------------------------------------------------------------------------

def serve(path: str, ready: int | None = None, imports: Callable[[], None] | None = None
          ) -> None:
    """Import, listen on ``path``, fork a stage per connection until SIGTERM. ``ready``: a pipe
    fd written once listening. ``imports``: what to import before listening (default: torch,
    transformers and WordNet; a caller that knows its stages may import more)."""
    env = _import_env(dict(os.environ))   # before the imports, some of which set variables
    (imports or import_heavy)()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # supervisors are reaped automatically
    if ready is not None:
        os.write(ready, b"ready")
        os.close(ready)
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:   # the supervisor of one stage
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _supervise(conn, env)
            finally:
                os._exit(0)
        conn.close()


def _supervise(conn: socket.socket, server_env: dict[str, str]) -> None:
    data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 3)
    request = json.loads(data)
    if (request["executable"] != sys.executable or _import_env(request["env"]) != server_env
            or len(fds) != 3):
        for fd in fds:
            os.close(fd)
        conn.sendall(json.dumps({"refused": True}).encode() + b"\n")
        return
    pid = os.fork()
    if pid == 0:
        conn.close()
        _become_stage(request, fds)   # never returns
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    conn.sendall(json.dumps({"exit": code}).encode() + b"\n")


def _become_stage(request: dict, fds: list[int]) -> None:
    """In the forked child: the stage's streams, folder, environment and argv; run it as ``-m``."""
    import io
    import runpy
    import traceback

    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=os.isatty(1),
                                      write_through=not os.isatty(1))
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True,
                                      write_through=True)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[CHILD_ENV] = "1"
        sys.path[0] = request["cwd"]
        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if not isinstance(exit_.code, (int, type(None))):
            print(exit_.code, file=sys.stderr)
    except BaseException:   # as an uncaught exception in `python -m`: traceback, status 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


# ---- client ---------------------------------------------------------------------------------

def delegate(orig_argv: list[str]) -> None:
    """Run ``python -m stages.X args`` (``orig_argv``) in the server named by ``FUTURELM_PRELOAD``
    and exit with its status. Returns (the caller runs the stage itself) when there is no server,
    this process is already a forked stage, the command is not ``-m stages.*``, or the server
    refuses (another interpreter or import-time environment)."""
    path = os.environ.get(SOCKET_ENV)
    if not path or os.environ.get(CHILD_ENV) or not os.path.exists(path):
        return
    try:
        at = orig_argv.index("-m")
    except ValueError:
        return
    module, args = orig_argv[at + 1], orig_argv[at + 2:]
    if not module.startswith("stages.") or module.startswith("stages._"):
        return
    request = {"module": module, "args": args, "cwd": os.getcwd(), "env": dict(os.environ),
               "executable": sys.executable}
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        reader = conn.makefile("r")
        reply = json.loads(reader.readline() or '{"refused": true}')
    except OSError:
        return
    if reply.get("refused"):
        return
    pid = reply["pid"]

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    line = reader.readline()
    code = json.loads(line)["exit"] if line else 1
    sys.stdout.flush()
    os._exit(code if code >= 0 else 128 - code)


# ---- run a command with a server ------------------------------------------------------------

def run(command: list[str]) -> int:
    """Start a server, run ``command`` with ``FUTURELM_PRELOAD`` pointing at it, stop the server;
    the command's exit status."""
    folder = tempfile.mkdtemp(prefix="futurelm-preload-")
    path = str(Path(folder) / "socket")
    read, write = os.pipe()
    server = subprocess.Popen([sys.executable, "-m", "stages._lib.preload", "serve", path,
                               "--ready-fd", str(write)], pass_fds=(write,))
    os.close(write)
    start = time.perf_counter()
    ready = os.read(read, 16)
    os.close(read)
    env = dict(os.environ)
    if ready == b"ready":
        env[SOCKET_ENV] = path
        print(f"preload: torch and transformers imported once in {time.perf_counter() - start:.1f} s; "
              "stages fork from it (stages/_lib/preload.py)", file=sys.stderr)
    else:
        print("preload: the server did not start; stages run in their own processes", file=sys.stderr)
    try:
        return subprocess.call(command, env=env)
    finally:
        server.terminate()
        server.wait()
        for leftover in (path, folder):
            try:
                os.unlink(leftover) if leftover == path else os.rmdir(leftover)
            except OSError:
                pass
