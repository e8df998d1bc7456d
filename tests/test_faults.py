"""Arbitrary fault scripts either validate or raise FaultSpecError (Hypothesis)."""

from __future__ import annotations

import dataclasses

from hypothesis import event, given, settings
from hypothesis import strategies as st

from harness.faults import ACTIONS, PHASE_KINDS, FaultScript, FaultSpecError, script_from_dict

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=200_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
phases = st.one_of(
    st.sampled_from(PHASE_KINDS),
    st.builds(
        lambda k, n: f"{k}:{n}",
        st.sampled_from(PHASE_KINDS),
        st.integers(min_value=-3, max_value=500),
    ),
    st.text(max_size=10),
    scalars,
)
param_names = sorted({f.name for cls in ACTIONS.values() for f in dataclasses.fields(cls)})
faults = st.fixed_dictionaries(
    {"action": st.one_of(st.sampled_from(sorted(ACTIONS)), scalars)},
    optional={"phase": phases, **{name: st.one_of(scalars, values) for name in param_names}},
)
matches = st.fixed_dictionaries(
    {},
    optional={
        "path": st.one_of(st.sampled_from(["/v1/chat/completions", "/v1/responses"]), scalars),
        "attempts": st.one_of(
            st.integers(min_value=-1, max_value=4),
            st.lists(st.integers(-1, 4), max_size=3),
            scalars,
        ),
        "connections": st.one_of(st.integers(min_value=0, max_value=3), scalars),
        "request_on_connection": st.one_of(st.integers(min_value=0, max_value=3), scalars),
    },
)
rules = st.one_of(
    st.fixed_dictionaries({"fault": faults}, optional={"match": st.one_of(matches, scalars)}),
    values,
)
scripts = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "rules": st.one_of(st.lists(rules, max_size=3), scalars),
            "framing": st.one_of(st.sampled_from(["chunked", "content-length", "close"]), scalars),
            "events": st.one_of(st.integers(min_value=-1, max_value=200_000), scalars),
            "event_interval_s": scalars,
            "first_byte_delay_s": scalars,
            "keepalive_comment_s": scalars,
            "idle_timeout_s": scalars,
            "content": scalars,
            "bogus": scalars,
        },
    ),
    values,
)


@settings(max_examples=400)
@given(data=scripts)
def test_any_script_validates_or_raises_fault_spec_error(data: object) -> None:
    try:
        script = script_from_dict(data)  # type: ignore[arg-type]
    except FaultSpecError as exc:
        assert exc.field and exc.allowed  # names the field and what is allowed
        event("rejected")
        return
    event(f"valid with {len(script.rules)} rules")
    assert isinstance(script, FaultScript)
    # a valid script survives a round trip through plain data, and scales
    assert script_from_dict(script.to_dict()) == script
    try:
        assert script.scaled(0.5).events == script.events
    except FaultSpecError as exc:  # a subnormal duration that scales to 0 is refused, clearly
        assert exc.allowed


@st.composite
def plausible_scripts(draw: st.DrawFn) -> dict:
    """Mostly-valid scripts: real actions at phases they allow, params of the right kind."""
    rules = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        name = draw(st.sampled_from(sorted(ACTIONS)))
        cls = ACTIONS[name]
        kind = draw(st.sampled_from(cls.phases))
        phase = f"{kind}:{draw(st.integers(0, 50))}" if kind in ("event", "bytes") else kind
        fault: dict = {"action": name, "phase": phase}
        for f in dataclasses.fields(cls):
            if draw(st.booleans()):
                if f.name.endswith("_s"):
                    fault[f.name] = draw(st.none() | st.floats(min_value=0, max_value=5))
                elif f.name in ("code",):
                    fault[f.name] = draw(st.integers(300, 600))
                elif f.name in ("after_bytes",):
                    fault[f.name] = draw(st.integers(-1, 10_000))
                elif f.name in ("rst",):
                    fault[f.name] = draw(st.booleans())
                elif f.name == "headers":
                    fault[f.name] = draw(
                        st.dictionaries(st.sampled_from(["x-a", "x-b"]), st.text(max_size=5))
                    )
                elif f.name == "per":
                    fault[f.name] = draw(st.sampled_from(["event", "byte", "token"]))
                else:
                    fault[f.name] = draw(st.text(max_size=8))
        match = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "attempts": st.integers(1, 3),
                    "request_on_connection": st.lists(st.integers(1, 3), min_size=1),
                },
            )
        )
        rules.append({"match": match, "fault": fault})
    return {
        "rules": rules,
        "framing": draw(st.sampled_from(["chunked", "content-length", "close"])),
        "events": draw(st.integers(1, 20)),
    }


@settings(max_examples=300)
@given(data=plausible_scripts())
def test_plausible_scripts_validate_or_name_the_bad_field(data: dict) -> None:
    try:
        script = script_from_dict(data)
    except FaultSpecError as exc:
        assert exc.field.startswith("script.") and exc.allowed
        event("rejected")
        return
    event(f"valid with {len(script.rules)} rules")
    assert script_from_dict(script.to_dict()) == script
    try:
        scaled = script.scaled(0.01)
    except FaultSpecError as exc:  # e.g. a subnormal interval_s that scales to 0
        assert exc.allowed
        return
    assert len(scaled.rules) == len(data["rules"])
