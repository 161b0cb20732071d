"""How many microbatches' residuals a stage keeps alive: the memory promise of each schedule.

``PipelineStage.peak_stored`` is the largest number of microbatches whose forward residuals
were alive at once during the last step. 1F1B bounds it by the number of stages from this one
to the end (stage i runs at most ``num_stages - i`` forwards ahead of its backwards); GPipe
runs every forward first, so every stage holds all ``n_microbatches``.
"""

from __future__ import annotations

import pytest

from tests.distributed.pipelining._harness import check_against_reference, run_step

PP, N_MB = 4, 8


@pytest.mark.parametrize("name", ["1F1B", "GPipe"])
def test_peak_stored_microbatches(name):
    results, x, t = run_step(name, PP, 1, N_MB)
    peaks = {s: p for r in results.values() for s, p in r["peak"].items()}
    assert sorted(peaks) == list(range(PP))
    if name == "1F1B":
        for s, peak in peaks.items():
            assert 1 <= peak <= PP - s, f"stage {s} kept {peak} microbatches alive"
        assert peaks[0] == PP  # the bound is reached: the pipeline really is full
    else:
        assert peaks == dict.fromkeys(range(PP), N_MB)
    # Memory savings must not cost correctness.
    check_against_reference(results, PP, N_MB, x, t)
