"""Expectations overlays: validation with file + field, merging, and the CLI round trip
(``--write-expectations`` then ``--expectations``) for an out-of-tree target."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from harness.expectations import (
    Overlay,
    apply_overlays,
    expectation_text,
    load_overlay,
    overlays_for,
    render_overlay,
    shipped_overlays,
)
from harness.outcome import Outcome
from harness.scenario import ScenarioError, load_catalog, scenario_from_dict

NAMES = ["chat_healthy_stream", "chat_mid_stream_stall"]
#: Three scenarios, three outcomes for the bare SDK: ok, truncated_as_complete, an error.
ROUND_TRIP = ["chat_healthy_stream", "chat_truncated_no_terminal", "html_502_page"]

AGENT = '''
from harness.targets.clients.openai_sdk import OpenAISDKTarget


class MyAgent(OpenAISDKTarget):
    """An out-of-tree client: the bare SDK under another name, from outside the package."""

    name = "my-agent"
'''


def overlay(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def error_for(path: Path) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_overlay(path, scenarios=NAMES)
    assert str(path) in str(info.value)
    return info.value


def test_overlay_parses_expectations_and_budgets(tmp_path):
    path = overlay(
        tmp_path,
        """
        target = "my-agent"
        [expected]
        chat_healthy_stream = "ok"
        chat_mid_stream_stall = "error:APITimeoutError|ReadTimeout"
        [max_requests]
        chat_mid_stream_stall = 6
        """,
    )
    o = load_overlay(path, scenarios=NAMES)
    assert o.target == "my-agent"
    assert o.expected["chat_mid_stream_stall"] == "error:APITimeoutError|ReadTimeout"
    assert o.max_requests == {"chat_mid_stream_stall": 6}


def test_unknown_scenario_names_the_field_and_lists_the_scenarios(tmp_path):
    err = error_for(overlay(tmp_path, 'target = "x"\n[expected]\nchat_nope = "ok"\n'))
    assert err.field == "expected.chat_nope" and err.problem == "unknown scenario"
    assert err.allowed == ", ".join(NAMES)


def test_bad_outcome_names_the_field_and_the_outcome_syntax(tmp_path):
    err = error_for(overlay(tmp_path, 'target = "x"\n[expected]\nchat_healthy_stream = "fine"\n'))
    assert err.field == "expected.chat_healthy_stream"
    assert "error:ClassName" in err.allowed and "hung" in err.allowed


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('[expected]\nchat_healthy_stream = "ok"\n', "target"),
        ('target = "x"\nexpect = {}\n', "expect"),
        (
            'target = "x"\n[max_requests]\nchat_healthy_stream = 0\n',
            "max_requests.chat_healthy_stream",
        ),
        ('target = "x"\nexpected = "ok"\n', "expected"),
        ("target = \n", "(toml)"),
        ('target = "x"\n[varies.nope]\nno_leaks = "why"\n', "varies.nope"),
        (
            'target = "x"\n[varies.chat_healthy_stream]\nno_leak = "why"\n',
            "varies.chat_healthy_stream.no_leak",
        ),
        (
            'target = "x"\n[varies.chat_healthy_stream]\nno_leaks = ""\n',
            "varies.chat_healthy_stream.no_leaks",
        ),
        ('target = "x"\nvaries = { chat_healthy_stream = 1 }\n', "varies.chat_healthy_stream"),
    ],
)
def test_other_bad_input_names_its_field(tmp_path, text, field):
    assert error_for(overlay(tmp_path, text)).field == field


def test_overlay_adds_to_and_overrides_inline_expectations_and_budgets():
    s = scenario_from_dict(
        {"name": "chat_healthy_stream", "summary": "s", "expected": {"reference": "ok"}}
    )
    path_overlay = Overlay(
        target="reference", expected={"chat_healthy_stream": "hung"}, max_requests={}
    )
    new = Overlay(
        target="my-agent",
        expected={"chat_healthy_stream": "ok"},
        max_requests={"chat_healthy_stream": 2},
    )
    (merged,) = apply_overlays([s], [path_overlay, new])
    assert merged.expected == {"reference": "hung", "my-agent": "ok"}
    assert merged.budget.max_requests_of("my-agent") == 2
    assert s.expected == {"reference": "ok"}  # the loaded scenario is left as it was


def test_expectation_text_round_trips_through_the_outcome_syntax():
    from harness.outcome import Expected

    cases = [
        Outcome("ok"),
        Outcome("hung"),
        Outcome("truncated_as_complete"),
        Outcome("error", "APIConnectionError", ("APIConnectionError", "APIError")),
        Outcome(
            "error", "RetriesExhausted:StreamIdleTimeout", ("RetriesExhausted", "StreamIdleTimeout")
        ),
        Outcome("false_kill", "StreamIdleTimeout", ("StreamIdleTimeout",)),
        Outcome("not_applicable"),
    ]
    for outcome in cases:
        assert Expected.parse(expectation_text(outcome)).matches(outcome), outcome
    assert expectation_text(Outcome("skipped")) is None


def test_shipped_overlays_validate_against_the_catalog():
    names = [s.name for s in load_catalog()]
    for o in shipped_overlays(scenarios=names):
        assert o.expected or o.max_requests or o.varies, o.path


def test_a_file_for_a_target_outside_the_run_is_an_error(tmp_path):
    path = overlay(tmp_path, 'target = "other"\n')
    with pytest.raises(ScenarioError, match="not a target of this run"):
        overlays_for(["my-agent"], [path], scenarios=NAMES)


def test_render_keeps_only_the_target_and_leaves_skipped_cases_out():
    from harness.runner import CaseResult

    def result(scenario, target, outcome):
        return CaseResult(scenario, target, "", outcome, True, 0.05, 3.0)

    text = render_overlay(
        "t",
        [
            result("b", "t", Outcome("hung")),
            result("a", "t", Outcome("ok")),
            result("a", "other", Outcome("hung")),
            result("c", "t", Outcome("skipped")),
        ],
    )
    assert text.splitlines()[2:] == ['target = "t"', "", "[expected]", 'a = "ok"', 'b = "hung"']


@pytest.fixture
def out_of_tree(tmp_path, monkeypatch):
    """``agentpkg.agent:MyAgent`` on PYTHONPATH (parent and children), outside the repo."""
    pkg = tmp_path / "agentpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "agent.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p)
    )
    return "agentpkg.agent:MyAgent"


@pytest.mark.timeout(120)
def test_write_then_gate_round_trips_for_an_out_of_tree_target(tmp_path, out_of_tree, capsys):
    recorded = tmp_path / "my-agent.toml"
    first = tmp_path / "first.json"
    argv = ["run", *ROUND_TRIP, "-t", out_of_tree, "--time-scale", "0.02", "-q"]
    # No expectation anywhere: judged by verdict only, exit 0, and not "3/3 as expected".
    assert main([*argv, "--write-expectations", str(recorded), "--json", str(first)]) == 0
    out = capsys.readouterr().out
    assert "0/0 cases as expected" in out and "3 with no expectation" in out
    report = json.loads(first.read_text())
    assert [r["expected"] for r in report["results"]] == ["", "", ""]
    written = load_overlay(recorded, scenarios=ROUND_TRIP)
    assert written.target == out_of_tree
    assert written.expected == {
        "chat_healthy_stream": "ok",
        "chat_truncated_no_terminal": "truncated_as_complete",
        "html_502_page": written.expected["html_502_page"],
    }
    assert written.expected["html_502_page"].startswith("error:")

    gated = tmp_path / "gated.json"
    assert main([*argv, "--expectations", str(recorded), "--json", str(gated)]) == 0
    assert "3/3 cases as expected" in capsys.readouterr().out
    assert all(r["matched"] and r["expected"] for r in json.loads(gated.read_text())["results"])

    # The gate bites: an overlay that says otherwise is a mismatch, exit 1.
    recorded.write_text(
        recorded.read_text().replace('chat_healthy_stream = "ok"', 'chat_healthy_stream = "hung"')
    )
    assert main([*argv, "--expectations", str(recorded)]) == 1


def test_bad_overlay_on_the_command_line_exits_2_with_file_and_field(tmp_path, capsys):
    path = overlay(tmp_path, 'target = "reference"\n[expected]\nno_such = "ok"\n')
    assert main(["run", "chat_healthy_stream", "-t", "reference", "--expectations", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: expected.no_such: unknown scenario; allowed: " in err
    assert len(err.strip().splitlines()) == 1


def test_write_expectations_needs_one_target_and_a_writable_place(tmp_path, capsys):
    argv = ["run", "chat_healthy_stream"]
    assert main([*argv, "--write-expectations", str(tmp_path / "x.toml")]) == 2  # two targets
    assert "records one target" in capsys.readouterr().err
    nowhere = tmp_path / "missing" / "x.toml"
    assert main([*argv, "-t", "reference", "--write-expectations", str(nowhere)]) == 2
    assert f"{nowhere}: cannot write there" in capsys.readouterr().err
