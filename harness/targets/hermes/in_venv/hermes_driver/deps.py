"""What hermes-agent installs lazily that the catalog makes it import, and the check that
nothing is left for it to install during a run.

hermes installs some provider SDKs on first use (``tools.lazy_deps``: the Anthropic SDK
for ``api_mode=anthropic_messages``) into its own virtualenv, in the middle of a case:
one case then measured a pip install, and the venv changed under the run. So
``ci/setup`` installs :data:`FEATURES`' packages with hermes's venv (``python -I
.../hermes_driver/deps.py --specs`` prints hermes's own pins for what is missing), the driver turns
hermes's lazy installs off (``security.allow_lazy_installs: false``, hermes's own switch)
and refuses to start while any is missing (:func:`missing_line`: one line naming the
packages).

Stdlib and hermes only: it runs in hermes's virtualenv, as a module of the driver and
as a script from ``ci/setup``.
"""

from __future__ import annotations

import sys

__all__ = ["FEATURES", "missing", "missing_line"]

#: hermes lazy-install features the catalog reaches: the Messages API scenarios build
#: hermes's Anthropic client (``agent.anthropic_adapter``).
FEATURES = ("provider.anthropic",)


def missing() -> dict[str, tuple[str, ...]]:
    """{feature: the pip specs hermes would install for it now}; empty when none. A hermes
    without ``tools.lazy_deps`` (or without a feature) installs nothing lazily."""
    try:
        from tools import lazy_deps  # noqa: PLC0415 - hermes's own module, in its venv
    except ImportError:
        return {}
    found = {}
    for feature in FEATURES:
        try:
            specs = tuple(lazy_deps.feature_missing(feature))
        except KeyError:
            continue
        if specs:
            found[feature] = specs
    return found


def missing_line() -> str | None:
    """One line naming what hermes would install during a run, or None."""
    found = missing()
    if not found:
        return None
    what = ", ".join(f"{' '.join(specs)} ({feature})" for feature, specs in found.items())
    return (
        f"the hermes venv lacks {what}, which hermes would install during a run; "
        f"run ci/setup (it installs them first)"
    )


def main(argv: list[str]) -> int:
    if argv[1:] == ["--specs"]:  # for ci/setup: the pip specs to install, one a line
        for specs in missing().values():
            print("\n".join(specs))
        return 0
    if argv[1:] == ["--check"]:
        line = missing_line()
        if line:
            print(line, file=sys.stderr)
        return 1 if line else 0
    print("usage: deps.py --specs | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
