"""Reliability bins and the expected calibration error on hand-made rows with exact answers."""

from __future__ import annotations

import pytest

from rag_lib.evaluation.reliability import expected_calibration_error, reliability_bins


def test_bins_hold_their_rows_and_the_error_weights_each_gap_by_its_share() -> None:
    rows = [{"proba": 0.1, "y": 0}, {"proba": 0.3, "y": 1}, {"proba": 0.9, "y": 1}, {"proba": 1.0, "y": 0},
            {"proba": 0.5, "y": 1}]
    bins = reliability_bins(rows, bins=2)
    assert [(b["lo"], b["hi"], b["n"]) for b in bins] == [(0.0, 0.5, 2), (0.5, 1.0, 3)]  # 1.0 in the last bin
    assert bins[0]["mean_proba"] == pytest.approx(0.2) and bins[0]["observed"] == 0.5
    assert bins[1]["mean_proba"] == pytest.approx(0.8) and bins[1]["observed"] == pytest.approx(2 / 3)
    assert expected_calibration_error(bins) == pytest.approx(2 / 5 * 0.3 + 3 / 5 * abs(2 / 3 - 0.8))
    assert [b["lo"] for b in reliability_bins(rows, bins=5)] == [0.0, 0.2, 0.4, 0.8]  # empty bins are left out


def test_a_perfectly_calibrated_set_has_no_error_and_bad_rows_are_refused() -> None:
    rows = [{"proba": 0.25, "y": y} for y in (1, 0, 0, 0)] + [{"proba": 0.75, "y": y} for y in (1, 1, 1, 0)]
    assert expected_calibration_error(reliability_bins(rows, bins=2)) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="proba"):
        reliability_bins([{"proba": 1.2, "y": 1}])
    with pytest.raises(ValueError, match="undefined"):
        expected_calibration_error([])
