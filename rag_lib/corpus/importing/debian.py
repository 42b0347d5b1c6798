"""A documentation corpus from a Debian package: the ``.deb`` fetched, checked against its pinned sha256, and the
documentation folder extracted (in Python: a ``.deb`` is an ``ar`` archive holding ``data.tar.*``; no dpkg needed).
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import urllib.request
from pathlib import Path

from rag_lib.core.errors import SnapshotError


def fetch(url: str, sha256: str, target: Path) -> Path:
    """``target`` holding the file at ``url``, whose sha256 must be ``sha256`` (downloaded once, then reused)."""
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(target.suffix + ".part")
        try:
            with urllib.request.urlopen(url, timeout=120) as response, open(partial, "wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise SnapshotError(f"cannot download {url} ({exc}); Debian may have superseded this version: put the "
                                "package's current URL and sha256 in the workbook's workbook.yaml, or place the "
                                f".deb at {target}") from exc
        partial.rename(target)
    actual = hashlib.sha256(target.read_bytes()).hexdigest()
    if actual != sha256:
        raise SnapshotError(f"{target} has sha256 {actual}, not the pinned {sha256}; delete it to download again, "
                            "or pin the new version in workbook.yaml (its documents, questions and results change)")
    return target


def _data_tar(deb: Path) -> tarfile.TarFile:
    data = deb.read_bytes()
    if not data.startswith(b"!<arch>\n"):
        raise SnapshotError(f"{deb} is not a Debian package (no ar header)")
    offset = 8
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        body = data[offset + 60:offset + 60 + size]
        if name.startswith("data.tar"):
            return tarfile.open(fileobj=io.BytesIO(body), mode="r:*")
        offset += 60 + size + (size % 2)
    raise SnapshotError(f"{deb} holds no data.tar member")


def extract(deb: Path, folder: str, target: Path) -> Path:
    """The files of ``deb`` under ``folder`` (e.g. ``usr/share/doc/python3.11/html``), written under ``target``."""
    prefix = "./" + folder.strip("/") + "/"
    with _data_tar(deb) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.startswith(prefix)]
        if not members:
            raise SnapshotError(f"{deb} has no files under /{folder}")
        for member in members:
            out = target / member.name[len(prefix):]
            out.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is not None:
                out.write_bytes(source.read())
    return target
