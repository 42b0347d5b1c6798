"""The local-LLM runtime (issue 45): built for a stated portable instruction set, shown to run before it is
installed or loaded, and a crash of the model process is a named error, never a silent exit.

The broken-build test installs a hand-made wheel whose ``llama_cpp`` dies with SIGILL when imported (what a
``-march=native`` build did on a CPU that lists AMX): ``install`` must refuse it by name and leave the venv as
it was. The tests marked ``llm_runtime`` check the runtime ``make llm-runtime`` installed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rag_lib.generation import llm_runtime
from rag_lib.generation.llm_runtime import CMAKE_ARGS, LLMRuntimeError, check_cpu, explain_exit, probe

SIGILL_ON_IMPORT = "import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n"


def test_a_probe_that_dies_by_sigill_is_a_named_error_with_the_fix(tmp_path: Path) -> None:
    crash = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"]
    with pytest.raises(LLMRuntimeError) as caught:
        probe(tmp_path / "model.gguf", command=crash)
    message = str(caught.value)
    assert "crashed with SIGILL (illegal instruction: the build uses an instruction this CPU does not run)" in message
    assert "make llm-runtime" in message and "model.gguf" in message


def test_a_probe_that_fails_names_its_last_lines(tmp_path: Path) -> None:
    failing = [sys.executable, "-c", "import sys; sys.stderr.write('first\\nllama_model_load: bad magic\\n'); "
                                     "sys.exit(3)"]
    with pytest.raises(LLMRuntimeError, match="failed \\(exit 3\\): first \\| llama_model_load: bad magic"):
        probe(tmp_path / "model.gguf", command=failing)
    assert explain_exit(-int(signal.SIGSEGV), "", "it").startswith("it crashed with SIGSEGV (segmentation fault")


def test_a_cpu_without_the_portable_set_is_named() -> None:
    with pytest.raises(LLMRuntimeError, match="this CPU lacks avx2, f16c, bmi2"):
        check_cpu({"avx", "fma", "sse4_2"})
    check_cpu(set(llm_runtime.PORTABLE_ISA))  # enough
    check_cpu(None if llm_runtime.cpu_flags() is None else set(llm_runtime.PORTABLE_ISA))


def test_the_portable_flags_never_ask_for_the_build_machines_cpu() -> None:
    assert "-DGGML_NATIVE=OFF" in CMAKE_ARGS and "-DGGML_NATIVE=ON" not in CMAKE_ARGS
    assert {"-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"} <= set(CMAKE_ARGS)
    assert {"-DGGML_AVX512=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF"} <= set(CMAKE_ARGS)
    assert not any("march=native" in arg for arg in CMAKE_ARGS)


def test_wheels_built_with_other_flags_never_share_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(llm_runtime.WHEEL_CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(llm_runtime, "compiler", lambda: "c++ 12")
    portable = llm_runtime.wheel_dir("0.3.36", CMAKE_ARGS)
    assert portable == llm_runtime.wheel_dir("0.3.36", CMAKE_ARGS) and portable.parent == tmp_path
    assert portable != llm_runtime.wheel_dir("0.3.36", ("-DGGML_NATIVE=ON",))
    assert portable != llm_runtime.wheel_dir("0.3.37", CMAKE_ARGS)


def test_the_pinned_version_is_read_and_a_missing_pin_is_named(tmp_path: Path) -> None:
    assert llm_runtime.pinned_version(Path(__file__).resolve().parents[1] / "requirements-llm.txt") == "0.3.36"
    empty = tmp_path / "requirements-llm.txt"
    empty.write_text("fastapi==1\n", encoding="utf-8")
    with pytest.raises(LLMRuntimeError, match="pins no llama_cpp_python"):
        llm_runtime.pinned_version(empty)


def _wheel(folder: Path, init_py: str) -> Path:
    """A minimal, valid wheel of a ``llama_cpp`` package whose ``__init__`` is ``init_py``."""
    folder.mkdir(parents=True)
    path = folder / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    info = "llama_cpp_python-0.3.36.dist-info"
    files = {"llama_cpp/__init__.py": init_py,
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.36\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                              "Tag: py3-none-linux_x86_64\n"}
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def test_a_build_that_crashes_on_this_cpu_fails_the_install_by_name_and_installs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = _wheel(tmp_path / "wheels" / "llama_cpp_python-0.3.36-py311-broken", SIGILL_ON_IMPORT)
    requirements = tmp_path / "requirements-llm.txt"
    requirements.write_text("llama_cpp_python==0.3.36\n", encoding="utf-8")
    build_file = tmp_path / "llm-runtime.json"
    monkeypatch.setattr(llm_runtime, "BUILD_FILE", build_file)
    monkeypatch.setattr(llm_runtime, "build_wheel", lambda version, args, log: broken)
    monkeypatch.setattr(llm_runtime, "check_cpu", lambda: None)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # the install log goes here, not into the venv
    installed: list[tuple[str, ...]] = []
    real_pip = llm_runtime._pip

    def pip(*args: str, **kwargs: object) -> None:
        if "--target" not in args:  # anything but the scratch install would change the venv
            installed.append(args)
            return
        real_pip(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(llm_runtime, "_pip", pip)
    with pytest.raises(LLMRuntimeError) as caught:
        llm_runtime.install(requirements)
    message = str(caught.value)
    assert message.startswith("the llama.cpp build does not run on this CPU, so it was not installed")
    assert "crashed with SIGILL (illegal instruction" in message and "make llm-runtime" in message
    assert installed == [] and not build_file.exists()
    assert not broken.parent.exists() and (broken.parent.with_name(broken.parent.name + ".rejected")).is_dir()


def test_make_llm_runtime_runs_the_installer_and_its_flags() -> None:
    made = subprocess.run(["make", "-n", "-B", "llm-runtime", "LLM_REBUILD=1", "LLM_CMAKE_ARGS=-DX=1"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert made.returncode == 0, made.stderr
    assert "-m rag_lib.generation.llm_runtime install --requirements requirements-llm.txt" in made.stdout
    assert '--rebuild --cmake-args "-DX=1"' in made.stdout
    assert "pip install -v -r requirements-llm.txt" not in made.stdout  # pip's own build: native by default


# -- the runtime `make llm-runtime` installed (CI installs it first) ------------------------------------

@pytest.mark.llm_runtime
def test_the_installed_runtime_holds_no_avx512_or_amx_instruction() -> None:
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    lib = llm_runtime.runtime_lib()
    assert lib is not None
    cpu = sorted(lib.glob("libggml-cpu.so*"))
    assert cpu, f"no libggml-cpu.so in {lib}"
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(cpu[0])], capture_output=True, text=True,
                          check=True).stdout
    assert "%ymm" in text  # AVX2 code is there
    assert "%zmm" not in text and "%tmm" not in text  # AVX-512 and AMX are not


@pytest.mark.slow
@pytest.mark.llm_runtime
def test_a_live_local_call_records_the_runtime_build_and_is_guarded_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rag_lib.core.documents import Chunk
    from rag_lib.generation.llama_cpp_backend import LlamaCppGenerator
    from rag_lib.generation.llm_calls import CallRecorder

    monkeypatch.setattr(llm_runtime, "PROBES_DIR", tmp_path / "probes")
    generator = LlamaCppGenerator("smollm2-135m", recorder=CallRecorder(tmp_path / "calls"), max_tokens=16)
    chunk = Chunk(id="kv-limits-001-aaaaaaaa", page="kv/platform/limits", ordinal=1, title="Limits",
                  heading_path=("Limits",), text="KV is available on the Workers Free plan with 1 GB of storage.",
                  start=0, end=62, url="https://developers.cloudflare.com/kv/platform/limits/", embeddable=True,
                  oversized=False)
    generator.generate("How much KV storage is free?", [chunk])
    probes = list((tmp_path / "probes").glob("*.json"))
    assert len(probes) == 1 and json.loads(probes[0].read_text())["model"].startswith("SmolLM2")
    record = json.loads(next((tmp_path / "calls").glob("*.json")).read_text())
    runtime = record["response"]["runtime"]
    assert runtime["llama_cpp_python"] == "0.3.36" and "AVX2 = 1" in runtime["system_info"]
    assert runtime["cmake_args"] == list(CMAKE_ARGS) or runtime["cmake_args"].startswith("unknown")

    def no_second_probe(path: Path) -> dict[str, str]:
        raise AssertionError("probed again for the same build, model and CPU")

    monkeypatch.setattr(llm_runtime, "probe", no_second_probe)
    llm_runtime.guard(generator.model_path)
