"""Writing a scorecard's three files: the Markdown table, the PNG grid and the HTML page.

Not here: the scorecard itself (``harness.report.scorecard``), each rendering
(``markdown``, ``picture``, ``html``).
"""

from __future__ import annotations

from pathlib import Path

from harness.report.scorecard import Scorecard
from harness.report.scorecard.html import render_html
from harness.report.scorecard.markdown import render_markdown
from harness.report.scorecard.picture import render_png

__all__ = ["write_scorecard"]


def write_scorecard(out_dir: str | Path, scorecard: Scorecard) -> dict[str, Path]:
    """Write ``scorecard.md``, ``scorecard.png`` and ``scorecard.html`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    png = render_png(scorecard)
    paths = {
        "md": out / "scorecard.md",
        "png": out / "scorecard.png",
        "html": out / "scorecard.html",
    }
    paths["png"].write_bytes(png)
    paths["md"].write_text(render_markdown(scorecard, picture="scorecard.png"), encoding="utf-8")
    paths["html"].write_text(render_html(scorecard, png=png), encoding="utf-8")
    return paths
