"""One time_scale rule for every source: CLI, environment, pytest option / ini, RunSettings."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.environment import EnvironmentError_, check_time_scale, read_environment
from harness.foreground import time_scale_error
from harness.pytest_plugin import OPTIONS
from harness.runner import RunSettings

BAD = ["inf", "nan", "0", "-1", "100.5", "fast"]


@pytest.mark.parametrize("text", BAD)
def test_every_source_rejects_the_same_values(text, capsys):
    with pytest.raises(ValueError, match="allowed: a number > 0 and <= 100"):
        check_time_scale(text)
    with pytest.raises(EnvironmentError_, match="HARNESS_TIME_SCALE"):
        read_environment({"HARNESS_TIME_SCALE": text})
    (option,) = [o for o in OPTIONS if o.name == "time_scale"]
    with pytest.raises(ValueError):
        option.parse(text)
    with pytest.raises(ValueError, match="time_scale"):
        RunSettings(time_scale=text)  # type: ignore[arg-type]
    if text == "fast":
        return  # not a number at all: argparse's own type check answers (exit 2)
    # harness serve / harness proxy (argparse has made the text a float)
    assert "allowed: a number > 0 and <= 100" in (time_scale_error(float(text)) or "")
    assert main(["run", "chat_healthy_stream", "--time-scale", text]) == 2
    err = capsys.readouterr().err
    assert "--time-scale" in err and "allowed: a number > 0 and <= 100" in err


@pytest.mark.parametrize("text", ["0.01", "1", "100"])
def test_every_source_accepts_the_same_values(text):
    value = float(text)
    assert check_time_scale(text) == value
    assert read_environment({"HARNESS_TIME_SCALE": text}).time_scale == value
    assert RunSettings(time_scale=value).time_scale == value
    assert time_scale_error(value) is None
