"""``harness fuzz`` (search the fault space for contract failures) and ``harness repro``
(one scenario as a standalone pytest directory).

Bad input is checked before the first example: an unknown target, API or action, a
target that cannot run here, an output directory that cannot hold files (one line,
exit 2). Exit status of ``fuzz``: 1 when it made a finding, 0 when none.

Not here: the search (``harness.fuzz.search``), writing findings and repros
(``harness.fuzz.findings``, ``harness.fuzz.repro``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.cli import common
from harness.cli.availability import require_runnable

__all__ = ["register"]

DEFAULT_EXAMPLES = 100
DEFAULT_OUT = "fuzz-findings"


def register(commands: Any) -> None:
    fuzz = commands.add_parser(
        "fuzz",
        help="search the fault space for contract failures; shrink and write each one",
        description="Draw fault scripts from the fault registry, run each as a case "
        "against TARGET, shrink every contract failure to its smallest script, confirm it "
        "and write it as a scenario TOML (docs/fuzz.md).",
    )
    common.add_target_options(fuzz, default="openai-sdk")
    fuzz.add_argument(
        "--api",
        action="append",
        metavar="API",
        help="API to fuzz (repeatable; default: every API the target speaks)",
    )
    fuzz.add_argument(
        "--action",
        action="append",
        metavar="ACTION",
        help="draw only this fault action (repeatable; default: every server action)",
    )
    fuzz.add_argument(
        "--backend",
        action="append",
        metavar="BACKEND",
        help="network in between to draw: server (none), relay, toxiproxy, kernel "
        "(repeatable; default: server, relay and toxiproxy where present; kernel, which "
        "runs in real time, only when named)",
    )
    budget = fuzz.add_mutually_exclusive_group()
    budget.add_argument(
        "--examples",
        type=common.positive_int,
        metavar="N",
        help=f"examples to generate (default: {DEFAULT_EXAMPLES})",
    )
    budget.add_argument(
        "--minutes", type=_positive_float, metavar="M", help="search for M minutes instead"
    )
    fuzz.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default: 0)")
    fuzz.add_argument(
        "--out", metavar="DIR", default=DEFAULT_OUT, help=f"findings directory ({DEFAULT_OUT})"
    )
    fuzz.add_argument(
        "--jobs", "-j", type=common.positive_int, default=1, help="parallel searches (default: 1)"
    )
    fuzz.add_argument(
        "--db",
        metavar="DIR",
        help="Hypothesis example database (default: .cache/fuzz-db; 'none': no database)",
    )
    fuzz.add_argument(
        "--confirm",
        type=common.positive_int,
        default=3,
        metavar="N",
        help="replays of a shrunk failure; all must fail for 'confirmed' (default: 3)",
    )
    fuzz.add_argument(
        "--reference",
        default="reference",
        metavar="TARGET",
        help="run each finding on this target too (does anyone meet the contract?); "
        "'none' to skip (default: reference)",
    )
    fuzz.add_argument(
        "--same-as",
        metavar="TARGET",
        help="also a finding: a case TARGET ends with another outcome kind (ok, error, "
        "hung ...) though the verdict passed; runs every example on TARGET too",
    )
    fuzz.add_argument(
        "--posture",
        metavar="FILE",
        help="a 'harness posture --json' report of the target: durations either side of "
        "the deadlines it measured (the silent call's give-up, the dead-peer bound) are "
        "drawn too",
    )
    fuzz.add_argument("--quiet", "-q", action="store_true", help="no line per case")
    fuzz.set_defaults(func=cmd_fuzz)

    repro = commands.add_parser(
        "repro",
        help="write one scenario as a standalone pytest directory for a client's maintainers",
        description="Write DIR with the scenario, one pytest file using only the installed "
        "plugin, and a README with the command and expected vs actual.",
    )
    repro.add_argument("scenario", metavar="SCENARIO", help="a catalog name or a .toml file")
    common.add_target_options(repro, default="openai-sdk")
    repro.add_argument("--out", metavar="DIR", required=True, help="directory to write")
    repro.set_defaults(func=cmd_repro)


def cmd_fuzz(args: argparse.Namespace) -> int:
    config = _fuzz_settings(args)
    out_dir = common.check_out_dir(args.out)

    from harness.fuzz.findings import (
        timing_sensitive_entries,
        unsatisfiable_entries,
        write_findings,
    )
    from harness.fuzz.search import Search

    out = common.out_console()
    meta = {
        "target": config.target,
        "seed": config.seed,
        "apis": list(config.apis),
        "backends": list(config.backends),
        "same_as": config.same_as,
    }

    def on_finding(finding: Any) -> None:
        apart = unsatisfiable_entries(search.report.unsatisfiable)
        flaky = timing_sensitive_entries(search.report.timing_sensitive)
        write_findings(
            out_dir, search.report.findings, **meta, unsatisfiable=apart, timing_sensitive=flaky
        )
        ref = finding.reference
        # a contract the reference fails too is nobody's to meet: say so on the line
        met = "" if ref is None else f"; {ref.target}: {ref.outcome.label} {ref.verdict}"
        out.print(
            f"[bold red]finding[/] {finding.result.outcome.label} ({', '.join(finding.key[1])}): "
            f"{finding.data['summary']}  \\[{finding.status} {finding.rate}{met}"
            f"{'; unshrunk: the shrunk form never failed again' if finding.unshrunk else ''}] "
            f"first seen {finding.first_seen_s:.1f} s, shrunk by {finding.found_s:.1f} s",
            highlight=False,
        )

    def on_case(result: Any) -> None:
        if not args.quiet:
            out.print(
                f"[dim]{search.report.cases:5d} {result.outcome.label} {result.verdict}  "
                f"{result.scenario}[/]",
                highlight=False,
            )

    search = Search(config, on_finding=on_finding, on_case=on_case)
    report = search.run()
    write_findings(
        out_dir,
        report.findings,
        **meta,
        examples=report.examples,
        cases=report.cases,
        elapsed_s=round(report.elapsed_s, 1),
        cases_per_minute=round(report.cases_per_minute, 1),
        stopped_by=report.stopped_by,
        unsatisfiable=unsatisfiable_entries(report.unsatisfiable),
        timing_sensitive=timing_sensitive_entries(report.timing_sensitive),
    )
    if report.timing_sensitive:
        out.print(
            f"{len(report.timing_sensitive)} group(s) failed once and passed when replayed "
            f"(timing; not shrunk): see 'timing_sensitive' in {out_dir}/findings.json",
            highlight=False,
        )
    if report.unsatisfiable:
        out.print(
            f"{len(report.unsatisfiable)} group(s) failed by --reference too (a contract "
            f"nobody met; not findings): see 'unsatisfiable' in {out_dir}/findings.json",
            highlight=False,
        )
    out.print(
        f"{len(report.findings)} finding(s) in {report.examples} examples, {report.cases} cases, "
        f"{report.elapsed_s:.0f} s ({report.cases_per_minute:.0f} cases/min; "
        f"stopped by {report.stopped_by}); written to {out_dir}",
        highlight=False,
    )
    return common.EXIT_MISMATCH if report.findings else common.EXIT_OK


def cmd_repro(args: argparse.Namespace) -> int:
    targets = common.selected_targets(args, ["openai-sdk"])
    if len(targets) != 1:
        raise common.UsageError(f"repro takes one --target; got {', '.join(targets)}")
    require_runnable(targets)
    out_dir = common.check_out_dir(args.out)
    scenarios = common.load_scenarios(args, patterns=[args.scenario])
    if len(scenarios) != 1:
        names = ", ".join(s.name for s in scenarios)
        raise common.UsageError(f"repro takes one scenario; {args.scenario!r} matches {names}")

    from harness.fuzz.repro import write_repro
    from harness.runner import RunSettings, run_cases

    scale = common.time_scale(args)
    scenario = scenarios[0]
    result = run_cases([(scenario, targets[0])], settings=RunSettings(time_scale=scale))[0]
    files = write_repro(out_dir, scenario, targets[0], result, time_scale=scale)
    out = common.out_console()
    out.print(
        f"{scenario.name} x {targets[0]}: {result.outcome.label}, verdict {result.verdict}; "
        f"wrote {', '.join(str(f) for f in files)}",
        highlight=False,
    )
    out.print(f"run it: cd {out_dir} && python -m pytest -q", highlight=False)
    return common.EXIT_OK


def _fuzz_settings(args: argparse.Namespace) -> Any:
    """The search's settings, every input checked (one line, exit 2 on a bad one)."""
    from harness.apis import APIS
    from harness.faults import ACTIONS
    from harness.fuzz.settings import FuzzSettings
    from harness.fuzz.space import action_spaces
    from harness.targets import load_target

    targets = common.selected_targets(args, ["openai-sdk"])
    if len(targets) != 1:
        raise common.UsageError(f"fuzz takes one --target; got {', '.join(targets)}")
    target = targets[0]
    require_runnable([target])
    speaks = tuple(a for a in APIS if a in load_target(target).apis)
    apis = tuple(dict.fromkeys(args.api or speaks))
    for api in apis:
        if api not in APIS:
            raise common.UsageError(f"--api {api!r} is not valid; allowed: {', '.join(APIS)}")
        if api not in speaks:
            raise common.UsageError(
                f"--api {api}: {target} does not speak it; allowed: {', '.join(speaks)}"
            )
    playable = [s.name for s in action_spaces()]
    for action in args.action or ():
        if action not in playable:
            known = "a relay action, not drawn" if action in ACTIONS else "unknown"
            raise common.UsageError(
                f"--action {action!r} is not valid ({known}); allowed: {', '.join(playable)}"
            )
    reference = None if args.reference == "none" else args.reference
    if reference is not None:
        _check_other_target(reference)
    same_as = args.same_as
    if same_as is not None:
        _check_other_target(same_as)
        if same_as == target:
            raise common.UsageError(f"--same-as {same_as}: the target itself; name another")
        theirs = load_target(same_as).apis
        for api in apis:
            if api not in theirs:
                raise common.UsageError(
                    f"--same-as {same_as} does not speak {api}; allowed APIs for both: "
                    f"{', '.join(a for a in apis if a in theirs) or 'none'}"
                )
    scale = common.time_scale(args)
    durations = _posture_durations(args.posture, target, scale)
    backends = _backends(args.backend)  # last: it may say what it leaves out
    return FuzzSettings(
        target=target,
        apis=apis,
        actions=tuple(args.action or ()),
        backends=backends,
        examples=None if args.minutes else (args.examples or DEFAULT_EXAMPLES),
        minutes=args.minutes,
        seed=args.seed,
        jobs=args.jobs,
        time_scale=scale,
        durations=durations,
        database=_database(args.db),
        confirm=args.confirm,
        reference=reference,
        same_as=same_as,
    )


def _check_other_target(name: str) -> None:
    """A second target (``--reference``, ``--same-as``) is valid and can run here."""
    common.selected_targets(argparse.Namespace(target=[name], target_python=None))
    require_runnable([name])


def _posture_durations(path: str | None, target: str, scale: float) -> tuple[float, ...]:
    """Durations past the target's measured deadlines from a posture report (exit 2 on
    a file that is not one, or has no entry for the target)."""
    if path is None:
        return ()
    from harness.fuzz.space import durations_past

    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise common.UsageError(f"--posture {path}: cannot read it ({exc.strerror})") from None
    except ValueError:
        raise common.UsageError(
            f"--posture {path}: not JSON; write it with harness posture --json"
        ) from None
    targets = report.get("targets") if isinstance(report, dict) else None
    if not isinstance(targets, dict):
        raise common.UsageError(
            f"--posture {path}: no 'targets' table; write it with harness posture --json"
        )
    entry = targets.get(target)
    if not isinstance(entry, dict):
        raise common.UsageError(
            f"--posture {path} has no entry for {target}; it has: {', '.join(targets) or 'none'}"
        )
    durations = durations_past(entry, scale)
    said = ", ".join(f"{d:g}" for d in durations) or "none (no deadline measured)"
    print(
        f"fuzz: durations from {path} (scenario s at --time-scale {scale:g}): {said}",
        file=sys.stderr,
    )
    return durations


def _backends(named: list[str] | None) -> tuple[str, ...]:
    """The backends to draw: the named ones (each must run here, else exit 2), or the
    defaults that run here (the others said once on stderr)."""
    from harness.faults.network.spec import NETWORK_BACKENDS
    from harness.fuzz.space import DEFAULT_BACKENDS, backends_missing

    for backend in named or ():
        if backend not in NETWORK_BACKENDS:
            raise common.UsageError(
                f"--backend {backend!r} is not valid; allowed: {', '.join(NETWORK_BACKENDS)}"
            )
    wanted = tuple(dict.fromkeys(named or DEFAULT_BACKENDS))
    missing = backends_missing(wanted)
    if named:
        for backend, why in missing.items():
            raise common.UsageError(f"--backend {backend} cannot run here: {why}")
    for backend, why in missing.items():
        print(f"fuzz: {backend} not drawn: {why}", file=sys.stderr)
    return tuple(b for b in wanted if b not in missing)


def _database(value: str | None) -> Path | None:
    if value == "none":
        return None
    if value is not None:
        return common.check_out_dir(value, option="--db")
    from harness.paths import CACHE_DIR

    return CACHE_DIR / "fuzz-db"


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a number > 0")
    return value
