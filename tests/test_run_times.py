"""Cold and warm run times: recorded per state from a full run, shown per notebook in the results index."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_lib.results.run_times import cache_state, load_run_times, record_run_times, run_time_text, totals_text


def test_each_state_keeps_its_own_block_and_the_text_reads_both(tmp_path: Path) -> None:
    assert load_run_times(tmp_path) == {} and totals_text({}) == "No full run has been timed yet."
    record_run_times(tmp_path, "cold", {"00_corpus": 95.4, "01_bakeoff": 1300.0}, 1800.0, 240.0, 1.52)
    record_run_times(tmp_path, "warm", {"00_corpus": 9.2}, 400.0, 1.0, 0.3)
    times = load_run_times(tmp_path)
    assert times["cold"]["runs"] == {"00_corpus": 95, "01_bakeoff": 1300} and times["cold"]["load_at_start"] == 1.5
    assert run_time_text(times, "00_corpus") == "cold 95 s, warm 9 s"
    assert run_time_text(times, "01_bakeoff") == "cold 22 min, warm not measured"
    assert "cold: 30 min in all (the corpus embedding before the notebooks 4 min" in totals_text(times)
    assert "warm: 400 s" not in totals_text(times) and "warm: 7 min in all" in totals_text(times)
    with pytest.raises(ValueError, match="tepid"):
        record_run_times(tmp_path, "tepid", {}, 1.0, 0.0, 0.0)


def test_the_cache_is_cold_until_it_holds_a_vector_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path))
    assert cache_state() == "cold"
    (tmp_path / "embeddings" / "e5").mkdir(parents=True)
    assert cache_state() == "cold"  # an empty folder holds no vectors
    (tmp_path / "embeddings" / "e5" / "x.npz").write_bytes(b"")
    assert cache_state() == "warm"


def test_a_run_that_did_not_finish_is_named_and_left_out_of_the_total(tmp_path: Path) -> None:
    record_run_times(tmp_path, "cold", {"00_corpus": 95.0}, 2000.0, 300.0, 4.0,
                     failed={"11_chunking": "cell timeout after 1800 s"})
    times = load_run_times(tmp_path)
    assert run_time_text(times, "11_chunking") == "cold failed (cell timeout after 1800 s), warm not measured"
    assert "11_chunking did not finish and is not in the total" in totals_text(times)
