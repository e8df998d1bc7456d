"""The scorecard's HTML in a real headless Chromium (Debian's ``chromium``, installed by
``ci/setup``): loaded from disk, the picture and the grid render and no cell's text is
clipped, at 1, 3 and 12 targets; screenshots of the page and of the PNG are kept in the
test's directory (its path is printed) for a person to look at."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.report.scorecard.write import write_scorecard
from tests.report.scorecard_fixtures import LONG_NAME, scorecard_of

pytestmark = pytest.mark.timeout(240)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
# Run in the page after it loads: what rendered, and which cells overflow their box.
CHECK = """
<script>
window.addEventListener("load", () => {
  const img = document.getElementById("picture");
  const grid = document.getElementById("grid");
  const clipped = [...document.querySelectorAll("td, th")]
    .filter(c => c.scrollWidth > c.clientWidth + 1 || c.scrollHeight > c.clientHeight + 1)
    .map(c => c.textContent);
  const out = document.createElement("pre");
  out.id = "check";
  out.textContent = JSON.stringify({
    picture: img ? [img.complete, img.naturalWidth, img.naturalHeight] : null,
    rows: grid ? grid.rows.length : 0,
    cols: grid ? grid.rows[0].cells.length : 0,
    grid_px: grid ? [grid.offsetWidth, grid.offsetHeight] : null,
    clipped: clipped,
    titles: [...document.querySelectorAll("td.v[title]")].length,
  });
  document.body.appendChild(out);
});
</script>
"""


def _chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: ci/setup installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (ci/setup installs it as root)")
    return found


def _run(chromium: str, tmp: Path, *args: str) -> str:
    profile = tmp / "profile"
    done = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("n_targets", [1, 3, 12])
def test_the_html_renders_the_picture_and_the_grid_unclipped(
    tmp_path: Path, n_targets: int
) -> None:
    chromium = _chromium()
    card = scorecard_of(n_targets)
    paths = write_scorecard(tmp_path / "card", card)
    page = paths["html"].read_text(encoding="utf-8")
    checked = tmp_path / "checked.html"
    checked.write_text(page.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    dom = _run(chromium, tmp_path, "--virtual-time-budget=5000", "--dump-dom", checked.as_uri())
    found = re.search(r'<pre id="check">(.*?)</pre>', dom, re.DOTALL)
    assert found, dom[-2000:]
    seen = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    complete, width, height = seen["picture"]
    assert complete and width > 300 and height > 100, seen
    assert seen["rows"] == len(card.scenarios) + 1 and seen["cols"] == n_targets + 1, seen
    assert seen["grid_px"][0] > 100 and seen["grid_px"][1] > 100, seen
    assert seen["clipped"] == [], seen
    assert seen["titles"] == n_targets * len(card.scenarios)  # failed checks on hover
    assert LONG_NAME in page and "123.45 s wall" in page

    shots = tmp_path / "screenshots"
    shots.mkdir()
    for name, url, size in (
        ("html", paths["html"].as_uri(), f"{max(1600, seen['grid_px'][0] + 80)},2400"),
        ("png", paths["png"].as_uri(), f"{width + 40},{height + 40}"),
    ):
        shot = shots / f"scorecard-{n_targets}-targets-{name}.png"
        _run(chromium, tmp_path, f"--screenshot={shot}", f"--window-size={size}", url)
        assert shot.stat().st_size > 5_000, shot
    print(f"screenshots: {shots}")
