"""The local-LLM runtime: llama-cpp-python compiled for a stated, portable x86-64 instruction set, and shown to run.

``make llm-runtime`` runs ``python -m rag_lib.generation.llm_runtime install``:

1. **check** that this CPU has the portable set the build targets (:data:`PORTABLE_ISA`: x86-64-v3, i.e.
   AVX, AVX2, FMA, F16C, BMI2), naming what is missing;
2. **compile** llama-cpp-python's wheel with llama.cpp's ``GGML_NATIVE`` off and that set stated
   (:data:`CMAKE_ARGS`), never ``-march=native``. A build for the CPU it is compiled on can hold
   instructions that the next host, or this one, traps on: llama.cpp built natively on a CPU that lists
   AMX in /proc/cpuinfo died with SIGILL in ``libggml-cpu.so`` on the first call. Wider sets (AVX-512,
   AMX) are not built, so one wheel serves every x86-64-v3 host. The wheel is kept in a folder keyed by
   version, flags, compiler and Python (:func:`wheel_dir`), not in pip's cache, which would hand back a
   wheel built with other flags for the same source;
3. **smoke**: install the wheel into a scratch folder and generate one token with the smallest model
   (SmolLM2-135M, a base package) in a child process. A crash (SIGILL, SIGSEGV …) or any failure is a
   named error (:class:`LLMRuntimeError`); the wheel is moved aside and the venv is left as it was;
4. **install** the wheel and the server's packages (``requirements-llm.txt``) into the venv and write what
   was built (:data:`BUILD_FILE`), which every local call's record carries (:func:`runtime_description`).

The backend checks the same way before it loads a model in-process (:func:`guard`): a model that crashes
the runtime is a named error in the child, never a silent exit of the user's process.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.core.errors import ModelUnavailableError, cli_errors
from rag_lib.core.io import cpu_flags

PACKAGE = "llama_cpp_python"
PORTABLE_ISA = ("avx", "avx2", "fma", "f16c", "bmi2")  # /proc/cpuinfo names; x86-64-v3 (Haswell, Zen 1 on)
CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF",  # never -march=native: the build must not depend on the CPU it is compiled on
    "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_BMI2=ON",
    "-DGGML_AVX512=OFF", "-DGGML_AVX_VNNI=OFF",
    "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF",
    "-DGGML_CCACHE=OFF",
    "-DLLAVA_BUILD=OFF",  # the multimodal library: unused here, and a third of the compile
)
BUILD_FILE = Path(sys.prefix) / "llm-runtime.json"  # what `install` built and checked, beside the venv's packages
PROBES_DIR = Path(sys.prefix) / "llm-runtime-probes"  # one file per (build, model, CPU) shown to run
WHEEL_CACHE_ENV = "RAG_LLM_WHEEL_CACHE"
SMOKE_MODEL = "smollm2-135m"
PROBE_TIMEOUT_S = 600  # loading a 1.5B model from a cold disk and one token: well under a minute here
SIGNAL_MEANING = {
    signal.SIGILL: "illegal instruction: the build uses an instruction this CPU does not run",
    signal.SIGSEGV: "segmentation fault: the runtime read memory it does not own",
    signal.SIGBUS: "bus error: the model file was cut or changed while mapped",
    signal.SIGABRT: "aborted by llama.cpp itself (an internal check failed)",
    signal.SIGFPE: "arithmetic fault",
    signal.SIGKILL: "killed (out of memory, or by hand)",
}


class LLMRuntimeError(ModelUnavailableError):
    """The local-LLM runtime cannot be built, or does not run on this CPU; the message names the fix."""


def check_cpu(flags: set[str] | None = None) -> None:
    """Refuse, by name, a CPU without the portable set (nothing to check where /proc/cpuinfo is absent)."""
    flags = cpu_flags() if flags is None else flags
    missing = [name for name in PORTABLE_ISA if flags is not None and name not in flags]
    if missing:
        raise LLMRuntimeError(
            f"this CPU lacks {', '.join(missing)}, which the local-LLM runtime is built for (x86-64-v3: "
            f"{', '.join(PORTABLE_ISA)}). Use an OpenAI-compatible server instead (`make llm-runs "
            "LLM_SERVER=URL`, or `ask --generator openai`), or replay the recorded calls (`make reproduce`).")


def pinned_version(requirements: Path) -> str:
    """The llama-cpp-python version pinned in ``requirements``."""
    for line in requirements.read_text(encoding="utf-8").splitlines():
        name, _, version = line.split("#", 1)[0].strip().partition("==")
        if name.strip().lower().replace("-", "_") == PACKAGE:
            return version.strip()
    raise LLMRuntimeError(f"{requirements} pins no {PACKAGE}; restore the file (`git checkout {requirements}`).")


@cache
def compiler() -> str:
    """The C++ compiler's first version line (it is part of the wheel's key)."""
    cxx = os.environ.get("CXX") or "c++"
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise LLMRuntimeError(f"no C++ compiler ({cxx}) here: llama-cpp-python has no Linux wheel on PyPI and is "
                              "compiled on its first install. Install one (Debian: `apt-get install g++ cmake`) and "
                              "run `make llm-runtime` again.") from None
    return out.splitlines()[0].strip() if out else cxx


def wheel_dir(version: str, cmake_args: Sequence[str]) -> Path:
    """Where the wheel of this version, these flags, this compiler and this Python is kept.

    Outside the clone, so a new clone or venv on the same machine reuses it (``RAG_LLM_WHEEL_CACHE``
    moves it); keyed by everything the compiled code depends on, so flags never mix.
    """
    root = os.environ.get(WHEEL_CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
        / "ragbench-workbook" / "llama-cpp"
    key = hashlib.sha256(json.dumps([version, list(cmake_args), compiler(), sys.version.split()[0]])
                         .encode()).hexdigest()[:16]
    return Path(root) / f"{PACKAGE}-{version}-py{sys.version_info[0]}{sys.version_info[1]}-{key}"


def _pip(*args: str, env: Mapping[str, str] | None = None, log: Path | None = None,
         progress: bool = False) -> None:
    """Run pip in this Python; with ``log``, its output goes there, with compile progress shown every 10%."""
    command = [sys.executable, "-m", "pip", *args]
    if log is None:
        subprocess.run(command, check=True, env=env)
        return
    last = -10
    with open(log, "a", encoding="utf-8") as out, \
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        for line in proc.stdout or ():
            out.write(line)
            step = re.match(r"\s*\[(\d+)/(\d+)\] ", line)
            if progress and step:
                done, total = int(step[1]), int(step[2])
                if 100 * done // total >= last + 10 or done == total:
                    last = 100 * done // total
                    print(f"[llm-runtime] compiling llama.cpp: {done} of {total} files ({last}%)", flush=True)
    if proc.returncode:
        tail = "".join(log.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)[-30:])
        raise LLMRuntimeError(f"pip {args[0]} failed (exit {proc.returncode}); the last lines of {log}:\n{tail}")


def build_wheel(version: str, cmake_args: Sequence[str], log: Path) -> Path:
    """The wheel for these flags: the kept one, or compiled now into :func:`wheel_dir` (written whole)."""
    target = wheel_dir(version, cmake_args)
    kept = sorted(target.glob("*.whl"))
    if kept:
        print(f"[llm-runtime] the wheel built earlier with these flags: {kept[0]}", flush=True)
        return kept[0]
    target_set = "for x86-64-v3" if tuple(cmake_args) == CMAKE_ARGS else "with flags given in place of the portable set"
    print(f"[llm-runtime] compiling {PACKAGE} {version} {target_set} ({' '.join(cmake_args)}); "
          f"about 4 minutes on 2 quiet cores, the full log in {log}", flush=True)
    env = {**os.environ, "CMAKE_ARGS": " ".join(cmake_args), "FORCE_CMAKE": "1"}
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".building-") as scratch:
        started = time.perf_counter()
        _pip("wheel", "-v", "--no-deps", "--no-cache-dir", "--no-binary", PACKAGE, "-w", scratch,
             f"{PACKAGE}=={version}", env=env, log=log, progress=True)
        built = sorted(Path(scratch).glob("*.whl"))
        if not built:
            raise LLMRuntimeError(f"pip wheel wrote no wheel into {scratch}; see {log}.")
        (Path(scratch) / "build.json").write_text(json.dumps(
            {"compile_s": round(time.perf_counter() - started, 1), "compiler": compiler(),
             "cmake_args": list(cmake_args)}, indent=1), encoding="utf-8")
        os.replace(scratch, target)  # the folder appears complete or not at all
        os.mkdir(scratch)  # for TemporaryDirectory's cleanup
    return target / built[0].name


def explain_exit(returncode: int, stderr: str, what: str) -> str:
    """One sentence for a child that failed: the signal that ended it and what that means, or its last lines."""
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            cause = f"{sig.name} ({SIGNAL_MEANING.get(sig, 'ended by a signal')})"
        except ValueError:
            cause = f"signal {-returncode}"
        return f"{what} crashed with {cause}"
    lines = [line for line in stderr.strip().splitlines() if line.strip()][-5:]
    return f"{what} failed (exit {returncode}): " + (" | ".join(lines) or "no message")


def probe(model_path: Path, *, pythonpath: str | None = None, timeout_s: float = PROBE_TIMEOUT_S,
          command: Sequence[str] | None = None) -> dict[str, Any]:
    """Load ``model_path`` and generate one token in a child process; what the runtime reports of itself.

    Raises
    ------
    LLMRuntimeError
        When the child crashes (by signal), fails or hangs: the message names the signal and the fix.
    """
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    argv = list(command) if command else [sys.executable, "-m", "rag_lib.generation.llm_runtime", "probe",
                                          str(model_path)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise LLMRuntimeError(f"llama.cpp did not load {model_path.name} and generate one token within "
                              f"{timeout_s:.0f} s; the machine may be out of memory or busy.") from None
    if done.returncode != 0:
        raise LLMRuntimeError(
            explain_exit(done.returncode, done.stderr, f"llama.cpp, loading {model_path.name} and generating one "
                         "token in a child process,") + ". " + REBUILD_HINT)
    try:
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        raise LLMRuntimeError(f"the runtime probe printed no report ({done.stdout[-200:]!r}). "
                              + REBUILD_HINT) from None


REBUILD_HINT = ("Rebuild the runtime for a portable instruction set: `rm -f .venv/.llm-runtime && make llm-runtime` "
                "(a llama-cpp-python compiled elsewhere, e.g. with -march=native, is replaced).")


def _probe_child(model_path: str) -> int:
    """The child of :func:`probe`: load, one token, print a JSON line. A crash here ends only this process."""
    import faulthandler

    faulthandler.enable()  # a SIGILL or SIGSEGV prints where it happened on stderr before the process ends
    import llama_cpp

    llm = llama_cpp.Llama(model_path=model_path, n_ctx=256, n_threads=min(2, os.cpu_count() or 1), seed=0,
                          verbose=False)
    out = llm.create_completion("The capital of France is", max_tokens=1, temperature=0.0)
    print(json.dumps({"llama_cpp_python": llama_cpp.__version__, "token": out["choices"][0]["text"],
                      "system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()}))
    return 0


def runtime_lib() -> Path | None:
    """The installed ``llama_cpp/lib`` folder (the compiled code), or None without the runtime."""
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent / "lib"


def _identity(lib: Path, model_path: Path) -> str:
    """What a probe's verdict depends on: the compiled libraries, the model file and this CPU."""
    parts = [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(lib.glob("*.so*"))]
    stat = model_path.stat()
    return hashlib.sha256(json.dumps([parts, str(model_path.resolve()), stat.st_size, stat.st_mtime_ns,
                                      sorted(cpu_flags() or [])]).encode()).hexdigest()[:24]


def guard(model_path: Path) -> None:
    """Before a model is loaded in this process: show, once per build, model and CPU, that it runs in a child.

    A runtime that crashes on this CPU (SIGILL from a native build, say) would otherwise end the user's
    process without a word; here it is an :class:`LLMRuntimeError` naming the signal and the fix.
    """
    lib = runtime_lib()
    if lib is None or not lib.is_dir():
        return  # no runtime: the caller's import names it
    marker = PROBES_DIR / f"{_identity(lib, model_path)}.json"
    if marker.is_file():
        return
    report = probe(model_path)
    try:
        PROBES_DIR.mkdir(exist_ok=True)
        marker.write_text(json.dumps({**report, "model": model_path.name}), encoding="utf-8")
    except OSError:
        pass  # a read-only venv: the probe simply runs again next time


@cache
def runtime_description() -> dict[str, Any]:
    """The runtime that answers local calls, for each call's record: version, build flags, what llama.cpp reports."""
    import llama_cpp

    build = json.loads(BUILD_FILE.read_text(encoding="utf-8")) if BUILD_FILE.is_file() else {}
    return {"llama_cpp_python": llama_cpp.__version__,
            "cmake_args": build.get("cmake_args", "unknown: not installed by `make llm-runtime`"),
            "system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()}


def install(requirements: Path, *, cmake_args: Sequence[str] = CMAKE_ARGS, rebuild: bool = False) -> dict[str, Any]:
    """Build (or reuse), smoke-test and install the runtime; return what :data:`BUILD_FILE` records."""
    from rag_lib.generation.local_models import model_file

    started = time.perf_counter()
    check_cpu()
    version = pinned_version(requirements)
    log = Path(sys.prefix) / "llm-runtime.log"
    log.write_text("", encoding="utf-8")
    if rebuild:
        shutil.rmtree(wheel_dir(version, cmake_args), ignore_errors=True)
    others = [line for line in requirements.read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.lstrip().startswith("#")
              and line.split("==")[0].strip().lower().replace("-", "_") != PACKAGE]
    if others:
        print(f"[llm-runtime] the server's packages ({requirements.name}, wheels)", flush=True)
        _pip("install", "--quiet", "--only-binary", ":all:", *others, log=log)
    wheel = build_wheel(version, cmake_args, log)
    print(f"[llm-runtime] smoke test: one token from {SMOKE_MODEL} in a child process", flush=True)
    with tempfile.TemporaryDirectory(prefix="llm-runtime-smoke-") as scratch:
        _pip("install", "--quiet", "--no-deps", "--target", scratch, str(wheel), log=log)
        try:
            report = probe(model_file(SMOKE_MODEL), pythonpath=scratch)
        except LLMRuntimeError as exc:
            rejected = wheel.parent.with_name(wheel.parent.name + ".rejected")
            shutil.rmtree(rejected, ignore_errors=True)
            wheel.parent.rename(rejected)
            raise LLMRuntimeError(f"the llama.cpp build does not run on this CPU, so it was not installed "
                                  f"(moved aside to {rejected}): {exc}") from None
    _pip("install", "--quiet", "--no-deps", "--force-reinstall", str(wheel), log=log)
    build_info = wheel.parent / "build.json"
    record = {"llama_cpp_python": version, "cmake_args": list(cmake_args), "compiler": compiler(),
              "wheel": wheel.name, "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
              "smoke": report, "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "install_s": round(time.perf_counter() - started, 1),
              **({"compile_s": json.loads(build_info.read_text())["compile_s"]} if build_info.is_file() else {})}
    BUILD_FILE.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(PROBES_DIR, ignore_errors=True)  # verdicts about the previous build
    print(f"[llm-runtime] llama-cpp-python {version} installed and checked (one token: {report['token']!r}; "
          f"{report['system_info']}) in {record['install_s']:.0f} s", flush=True)
    return record


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.generation.llm_runtime", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("install", help="build (or reuse), smoke-test and install the runtime")
    setup.add_argument("--requirements", type=Path, default=Path("requirements-llm.txt"))
    setup.add_argument("--rebuild", action="store_true", help="compile again even if a wheel with these flags is kept")
    setup.add_argument("--cmake-args", default=None,
                       help="replace the portable flags (for a test of a broken build; recorded with every call)")
    child = sub.add_parser("probe", help="(internal) load a model and generate one token; print a JSON line")
    child.add_argument("model_path")
    args = parser.parse_args(argv)
    if args.command == "probe":
        return _probe_child(args.model_path)
    with cli_errors("llm-runtime"):
        install(args.requirements, rebuild=args.rebuild,
                cmake_args=tuple(args.cmake_args.split()) if args.cmake_args else CMAKE_ARGS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
