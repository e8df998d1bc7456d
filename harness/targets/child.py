"""``python -m harness.targets.child NAME``: the documented child command line, kept for
targets outside this repository whose ``Target.command`` names it. The child itself is
:mod:`harness.targets.runtime.child` (what ``Target.command`` starts)."""

from harness.targets.runtime.child import main

if __name__ == "__main__":
    raise SystemExit(main())
