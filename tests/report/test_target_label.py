"""Reports name a target by its class's ``name``, with the import path where they differ."""

from __future__ import annotations

from harness.report.common import target_label


def test_a_path_target_shows_its_name_and_its_import_path() -> None:
    path = "harness.targets.clients.openai_sdk:OpenAISDKTarget"
    assert target_label(path) == f"openai-sdk ({path})"


def test_a_registered_name_mutant_or_command_is_shown_as_given() -> None:
    for name in ("openai-sdk", "reference", "mutant:no-keepalive", "command:./x.sh"):
        assert target_label(name) == name


def test_a_target_that_cannot_be_loaded_here_is_shown_as_given() -> None:
    assert target_label("somebody_elses.module:Agent") == "somebody_elses.module:Agent"
