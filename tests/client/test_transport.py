"""Ownership: a fresh httpx client per SDK client, the caller's kwargs never mutated,
closed clients never reused -- and a test proving the old bug shape really fails."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.client import ClientSettings, ReferenceClient, SettingsError, errors
from harness.client.compat import httpx, openai
from harness.client.transport import TransportFactory
from harness.faults import script_from_dict

from .support import FAST, USER

_text = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12
)
_headers = st.dictionaries(_text.map(lambda s: "x-" + s), _text, max_size=3)
SDK_KWARGS = st.fixed_dictionaries(
    {},
    optional={
        "organization": _text,
        "project": _text,
        "default_headers": _headers,
        "default_query": st.dictionaries(_text, _text, max_size=3),
        "timeout": st.floats(min_value=0.1, max_value=60),
        "max_retries": st.integers(min_value=0, max_value=5),
    },
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kwargs=SDK_KWARGS)
def test_any_caller_kwargs_dict_is_left_unchanged(kwargs: dict) -> None:
    before = copy.deepcopy(kwargs)
    nested = {k: id(v) for k, v in kwargs.items() if isinstance(v, dict)}
    owned = TransportFactory().build(
        base_url="http://127.0.0.1:9/v1", api_key="k", sdk_kwargs=kwargs, settings=ClientSettings()
    )
    try:
        assert kwargs == before
        assert "http_client" not in kwargs
        assert {k: id(v) for k, v in kwargs.items() if isinstance(v, dict)} == nested
        assert owned.sdk.max_retries == 0  # retries are the reference client's
        if "default_headers" in kwargs:
            kwargs["default_headers"]["x-late"] = "mutation"
            assert "x-late" not in owned.sdk.default_headers
    finally:
        owned.close()


def test_each_build_gets_its_own_http_client_and_closing_the_sdk_closes_it() -> None:
    factory = TransportFactory()
    a = factory.build(
        base_url="http://127.0.0.1:9/v1", api_key="k", sdk_kwargs={}, settings=ClientSettings()
    )
    b = factory.build(
        base_url="http://127.0.0.1:9/v1", api_key="k", sdk_kwargs={}, settings=ClientSettings()
    )
    assert a.http is not b.http
    a.sdk.close()
    assert a.http.is_closed and not b.http.is_closed
    a.close()  # idempotent after the SDK closed it
    b.close()
    b.close()


def test_a_caller_supplied_http_client_is_refused_with_a_clear_error() -> None:
    with pytest.raises(SettingsError, match="http_client"):
        ReferenceClient("http://127.0.0.1:9/v1", http_client=object()).complete(USER)


@pytest.mark.timeout(30)
def test_old_bug_shape_a_shared_closed_http_client_fails_every_later_call(fault_server) -> None:
    """The #10933 shape: an httpx.Client injected into the caller's shared kwargs dict
    (no defensive copy). The first SDK client closes it; the next call fails. This is the
    failure the sequential-chat tests below must be able to see."""
    shared = {"base_url": fault_server.base_url, "api_key": "k", "max_retries": 0}
    shared["http_client"] = httpx.Client()  # the injection, in place
    first = openai.OpenAI(**shared)
    first.chat.completions.create(model="test-model", messages=USER)
    first.close()  # rebuild: the SDK closes its http_client -- the shared one
    second = openai.OpenAI(**shared)
    # openai 2.x wraps the RuntimeError in APIConnectionError; openai 3.x raises it as is.
    with pytest.raises((openai.APIConnectionError, RuntimeError)) as info:
        second.chat.completions.create(model="test-model", messages=USER)
    cause = (
        info.value.__cause__ if isinstance(info.value, openai.APIConnectionError) else info.value
    )
    assert "Cannot send a request, as the client has been closed" in str(cause)
    # and through our boundary it is a typed transport error, not success
    assert type(errors.map_exception(info.value)) is errors.TransportError


@pytest.mark.timeout(30)
def test_sequential_chats_with_rebuilds_and_closes_between_them_all_succeed(fault_server) -> None:
    kwargs = {"default_headers": {"x-test": "1"}}
    before = copy.deepcopy(kwargs)
    client = ReferenceClient(fault_server.base_url, settings=FAST, **kwargs)
    seen = []
    for step in (
        "chat",
        "rebuild",
        "chat",
        "close",
        "chat",
        "close",
        "close",
        "rebuild",
        "rebuild",
        "chat",
    ):
        if step == "chat":
            reply = client.complete(USER)
            assert reply.text == fault_server.requests()[-1].expected_text
            assert reply.attempts == 1
            seen.append(client._owned)
        else:
            getattr(client, step)()
    client.close()
    assert kwargs == before
    assert len({id(o) for o in seen}) == 4 and all(o.closed for o in seen)


@pytest.mark.timeout(30)
def test_a_client_whose_attempt_was_aborted_is_never_reused(fault_server) -> None:
    fault_server.load(
        script_from_dict(
            {
                "rules": [
                    {"match": {"attempts": [1]}, "fault": {"phase": "request", "action": "hang"}}
                ]
            }
        )
    )
    with ReferenceClient(fault_server.base_url, settings=FAST) as client:
        reply = client.complete(USER)
        assert reply.attempts == 2
        assert client.builds == 2  # the aborted attempt's SDK client was discarded
        first = [r.connection for r in fault_server.requests()]
        assert first[0] != first[1]
