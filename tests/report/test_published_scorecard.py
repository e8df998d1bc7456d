"""The published scorecard (``docs/scorecard/``) is what the code gives today: its
scenario set is the catalog's, every case still matches its target's expectations, and
its Markdown is the rendering of its JSON. Regenerate with ``bash ci/docs scorecard``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.expectations import with_overlays
from harness.paths import CATALOG_DIR
from harness.report.json_report import load_json, load_wall_times
from harness.report.scorecard import build_scorecard
from harness.report.scorecard.markdown import render_markdown
from harness.scenario import load_catalog

PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "scorecard"
STALE = "docs/scorecard is stale: regenerate it with `bash ci/docs scorecard`"


@pytest.fixture(scope="module")
def published() -> list:
    if not (PUBLISHED / "scorecard.json").is_file():
        pytest.fail(f"{STALE}: it has no scorecard.json (the results it shows)", pytrace=False)
    return load_json(PUBLISHED / "scorecard.json")


def test_its_scenarios_are_the_catalogs(published: list) -> None:
    catalog = {s.name for s in load_catalog()}
    for target in {r.target for r in published}:
        shown = {r.scenario for r in published if r.target == target}
        assert shown == catalog, (
            f"{STALE}: {target} lacks {sorted(catalog - shown)[:5]}, "
            f"has extra {sorted(shown - catalog)[:5]}"
        )


def test_every_case_still_matches_its_targets_expectations(published: list) -> None:
    catalog = load_catalog()
    off = []
    for target in sorted({r.target for r in published}):
        scenarios = {
            s.name: s for s in with_overlays(catalog, [target], (), catalog_dir=CATALOG_DIR)
        }
        for r in (r for r in published if r.target == target):
            expected = scenarios[r.scenario].expected_for(target)
            if expected is not None and not expected.matches(r.outcome):
                off.append(f"{target}/{r.scenario}: shows {r.outcome.label}, expected {expected}")
    assert not off, f"{STALE}: {len(off)} cases off their expectations: {off[:5]}"


def test_its_markdown_is_the_rendering_of_its_json(published: list) -> None:
    md = (PUBLISHED / "scorecard.md").read_text(encoding="utf-8")
    title = md.splitlines()[0].removeprefix("## ")
    card = build_scorecard(
        published, wall_s=load_wall_times(PUBLISHED / "scorecard.json"), title=title
    )
    assert md == render_markdown(card, picture="scorecard.png"), STALE
    assert "(sum of cases" not in md  # each target's run was timed: wall time
