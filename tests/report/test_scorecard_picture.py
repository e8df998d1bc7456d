"""The scorecard's PNG clips nothing at 1, 3 or 12 targets with 60-character names."""

from __future__ import annotations

import pytest

from harness.report.scorecard.picture import clipped_texts, render_png
from tests.report.scorecard_fixtures import LONG_NAME, scorecard_of

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("n_targets", [1, 3, 12])
def test_no_text_leaves_the_figure_or_its_cell(n_targets: int) -> None:
    assert clipped_texts(scorecard_of(n_targets)) == []


def test_the_picture_shows_whole_texts_and_the_wall_time() -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    from harness.report.scorecard import picture

    fig = picture._figure(scorecard_of(3))
    shown = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert LONG_NAME in shown
    assert any("my-own-agent-with-a-long-display-name" in t for t in shown)
    assert any(t.startswith("ExecutedTruncatedToolCall") for t in shown)
    assert any(t.endswith("· 123.45 s wall") for t in shown), shown
    assert render_png(scorecard_of(1)).startswith(b"\x89PNG")
