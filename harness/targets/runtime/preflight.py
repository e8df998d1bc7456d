"""Before a run: can each target be loaded here, and can its child start where it runs?

A ``package.module:Class`` target that cannot be imported, or a target whose
interpreter (``Target.python``, or ``--target-python``) lacks what the child needs, is
found before any case starts and reported as one line (:class:`TargetProblem`, exit 2
from the CLI) naming what is missing and how to install it. The check runs the
interpreter once, with the child's ``PYTHONPATH``: it imports the child runtime
(stdlib-only), the target's module and class, and the modules in ``Target.requires``.

Built-in targets are not probed (``ci/setup`` builds their venvs, and a missing one is
reported per case as skipped, so tests skip and CI fails).

Not here: starting the child (``harness.targets.runtime.process``).
"""

from __future__ import annotations

import os
import subprocess

from harness.paths import PROJECT_ROOT
from harness.targets import TARGETS, Target, is_target, load_target

__all__ = [
    "DEFAULT_PROBE_TIMEOUT_S",
    "TargetProblem",
    "check_targets",
    "child_python",
    "with_python",
]

#: How long the interpreter may take to import the client (a big SDK on a busy machine).
DEFAULT_PROBE_TIMEOUT_S = 120.0
#: The package root the child's ``PYTHONPATH`` starts with (as ``process.spawn`` sets it).
PACKAGE_ROOT = str(PROJECT_ROOT)

# Run in the target's interpreter: one line on stdout, exit 3 when a module is missing.
_PROBE = r"""
import importlib, sys
module, qualname, requires = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    import harness.targets.runtime.child
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    for name in requires:
        importlib.import_module(name)
except ModuleNotFoundError as exc:
    print("missing", exc.name or "?", exc)
    sys.exit(3)
except Exception as exc:
    print("error", type(exc).__name__ + ":", str(exc).splitlines()[0] if str(exc) else "")
    sys.exit(4)
print("ok", sys.version.split()[0])
"""


class TargetProblem(ValueError):
    """A target cannot run: ``str()`` is the one line shown to the user."""


def check_targets(
    names: list[str],
    *,
    python: str | None = None,
    timeout_s: float = DEFAULT_PROBE_TIMEOUT_S,
) -> None:
    """Raise :class:`TargetProblem` for the first of ``names`` that cannot run.

    ``python`` is the run's ``--target-python`` (it applies to ``module:Class`` targets).
    """
    for name in names:
        if not is_target(name) or name in TARGETS or name.startswith(("mutant:", "command:")):
            continue  # unknown names are the caller's error; built-ins are ours
        cls = _load(name)
        interpreter = child_python(cls, name, python)
        if interpreter is not None:
            _probe(name, cls, interpreter, timeout_s=timeout_s)


def child_python(cls: type[Target], name: str, python: str | None) -> str | None:
    """The interpreter ``name``'s child runs in when it is not the harness's own."""
    if python is not None and ":" in name and name not in TARGETS:
        return python
    return cls.python


def with_python(cls: type[Target], python: str) -> type[Target]:
    """``cls`` with its child run by ``python``: a subclass under the same import path,
    so the child (which imports the path) loads the original class."""
    return type(
        cls.__name__,
        (cls,),
        {"python": python, "__module__": cls.__module__, "__qualname__": cls.__qualname__},
    )


def _load(name: str) -> type[Target]:
    module = name.partition(":")[0]
    try:
        return load_target(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module
        if missing == module or module.startswith(f"{missing}."):
            hint = "is it on PYTHONPATH, or installed in the harness's environment?"
        else:
            hint = f"{module} imports it at the top: install it, or import it in prepare()"
        raise TargetProblem(f"target {name!r}: cannot import {missing!r} ({hint})") from None
    except AttributeError:
        raise TargetProblem(
            f"target {name!r}: module {module!r} has no {name.partition(':')[2]!r}"
        ) from None
    except ValueError as exc:  # not a Target subclass
        raise TargetProblem(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the user's module raised at import: say which
        raise TargetProblem(
            f"target {name!r}: importing {module!r} raised {type(exc).__name__}: {exc}"
        ) from None


def _probe(name: str, cls: type[Target], python: str, *, timeout_s: float) -> None:
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise TargetProblem(f"target {name!r}: python {python!r} is not an executable file")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    argv = [python, "-c", _PROBE, cls.__module__, cls.__qualname__, *cls.requires]
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        raise TargetProblem(
            f"target {name!r}: {python} did not import the target within {timeout_s:.0f} s"
        ) from None
    except OSError as exc:
        raise TargetProblem(f"target {name!r}: cannot run {python}: {exc}") from None
    line = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode == 3 and line.startswith("missing "):
        missing = line.split()[1]
        raise TargetProblem(
            f"target {name!r}: {python} cannot import {missing!r}; install it there: "
            f"uv pip install --python {python} {missing.split('.')[0]}"
        )
    if done.returncode != 0:
        detail = line.partition(" ")[2] or (done.stderr.strip().splitlines() or ["?"])[-1]
        raise TargetProblem(f"target {name!r}: {python} cannot load it: {detail}")
