"""The live tier's dry run: the same session code against an embedded fault server.

It runs in default CI so the live path cannot rot between real runs. The fault
server's reply text is deterministic but is not an echo, so each healthy case loads a
script whose ``content`` is the expected word: the echo check passes for the right
reason. Then cases that must be flagged, on a fresh client:

    sentinel-in-stream      a streamed reply carries "API call failed after 3 retries:
                            Connection error." split over several deltas
    sentinel-in-reply       a non-streamed reply carries a provider's error JSON
    wrong-word              the reply is another word: the echo check must fail
    http-401-echoes-key     the server answers 401 and echoes the API key in its error
                            message: the call raises, and the key must not reach any output
    recovers-after-401      the next call on the same client is healthy

:func:`run_dry_targets` runs the target form of the check (``targets``) for any target
against the same kind of server: per target a streaming and a non-streaming sequence of
three chats with a rebuild before the third, each answered with its word, and one
``sentinel-in-stream`` chat that must be flagged.

Not here: judging calls (``session``, ``targets``), rendering (``report``).
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING

from harness.faults import Fault, FaultScript, Phase, Rule, Status
from harness.live.config import LiveConfig
from harness.live.redact import Redactor
from harness.live.session import (
    ChatCase,
    ChatClient,
    Expectation,
    LiveRun,
    plan_sequences,
    random_word,
    run_tier,
)
from harness.live.targets import TargetSequence, plan_target_sequences, run_target_tier

if TYPE_CHECKING:
    from harness.server import FaultServer

__all__ = [
    "DRY_RUN_API_KEY",
    "DEFAULT_DRY_RUN_JOBS",
    "DRY_RUN_MODEL",
    "DryRunPlan",
    "dry_run_config",
    "dry_run_plan",
    "fault_server",
    "run_dry",
    "run_dry_targets",
    "target_dry_sequences",
]

#: Recognisable and fake: the dry run never sends a real key, even when one is set.
DRY_RUN_API_KEY = "sk-or-v1-DRYRUN-not-a-real-key-0000000000000000"
DRY_RUN_MODEL = "dry-run/echo-model"
#: The local server answers in milliseconds; a stuck dry run must end fast.
DRY_RUN_CALL_CEILING_S = 10.0
DRY_RUN_RUN_CEILING_S = 60.0
#: Targets checked side by side by default (two per core up to 8, like the runner's
#: workers): each waits mostly on its child's start-up and on loopback sockets.
DEFAULT_DRY_RUN_JOBS = max(1, min(2 * (os.cpu_count() or 1), 8))

SENTINEL_REPLY = "Sure. API call failed after 3 retries: Connection error."


class DryRunPlan:
    """The sequences to run and the fault script to load before each case."""

    def __init__(self, sequences: list[list[ChatCase]], scripts: dict[str, FaultScript]) -> None:
        self.sequences = sequences
        self.scripts = scripts

    def loader(self, server: FaultServer) -> Callable[[ChatCase], None]:
        """A ``before_call`` hook that loads each case's script into ``server``."""

        def load(case: ChatCase) -> None:
            server.load(self.scripts[case.name])

        return load


def dry_run_plan(rng: random.Random, *, api_key: str) -> DryRunPlan:
    """The healthy live sequences plus the must-be-flagged cases (see module docstring)."""
    sequences = plan_sequences(rng)
    scripts = {case.name: FaultScript(content=case.word) for seq in sequences for case in seq}

    def case(name: str, *, stream: bool, expect: Expectation) -> ChatCase:
        return ChatCase(name=f"dry/{name}", word=random_word(rng), stream=stream, expect=expect)

    stream_sentinel = case(
        "sentinel-in-stream",
        stream=True,
        expect=Expectation(False, ("api_call_failed", "connection_error")),
    )
    json_sentinel = case(
        "sentinel-in-reply", stream=False, expect=Expectation(False, ("provider_error_json",))
    )
    wrong = case("wrong-word", stream=True, expect=Expectation(False, ("wrong_content",)))
    unauthorized = case("http-401-echoes-key", stream=False, expect=Expectation(False, ("raised",)))
    recovers = case("recovers-after-401", stream=True, expect=Expectation(True))

    scripts[stream_sentinel.name] = FaultScript(content=f"{stream_sentinel.word} {SENTINEL_REPLY}")
    scripts[json_sentinel.name] = FaultScript(
        content=f'{json_sentinel.word} {{"error": {{"message": "Upstream error", "code": 502}}}}'
    )
    scripts[wrong.name] = FaultScript(content=random_word(rng))
    scripts[unauthorized.name] = FaultScript(
        rules=(
            Rule(
                Fault(
                    Phase("request"),
                    Status(code=401, message=f"Incorrect API key provided: {api_key}"),
                )
            ),
        )
    )
    scripts[recovers.name] = FaultScript(content=recovers.word)
    sequences.append([stream_sentinel, json_sentinel, wrong, unauthorized, recovers])
    return DryRunPlan(sequences, scripts)


def dry_run_config(base_url: str, *, api_key: str = DRY_RUN_API_KEY) -> LiveConfig:
    return LiveConfig(
        base_url=base_url,
        api_key=api_key,
        model=DRY_RUN_MODEL,
        first_byte_s=DRY_RUN_CALL_CEILING_S,
        call_ceiling_s=DRY_RUN_CALL_CEILING_S,
        run_ceiling_s=DRY_RUN_RUN_CEILING_S,
    )


def _with_start_up(config: LiveConfig, target: str, sequences: int) -> LiveConfig:
    """``config`` whose run ceiling also allows each sequence's child its declared start-up
    (``Target.start_s``): the ceiling bounds calls, and a target whose import takes tens
    of seconds on a loaded machine (litellm) spent the dry run's 60 s before its last
    sequence started."""
    from harness.targets import load_target

    start_s = float(load_target(target).start_s)
    if start_s <= 0:
        return config
    return dataclasses.replace(config, run_ceiling_s=config.run_ceiling_s + sequences * start_s)


@contextmanager
def fault_server() -> Iterator[FaultServer]:
    """An embedded fault server on 127.0.0.1 (imported lazily: only the dry run needs it)."""
    from harness.server import FaultServer

    with FaultServer() as server:
        yield server


def run_dry(
    *,
    server: FaultServer | None = None,
    api_key: str = DRY_RUN_API_KEY,
    seed: int | None = None,
    client_factory: Callable[[LiveConfig], ChatClient] | None = None,
    redactor: Redactor | None = None,
) -> LiveRun:
    """Run the dry run against ``server`` (default: a fresh embedded one)."""
    rng = random.Random(seed)
    if server is None:
        with fault_server() as own:
            return run_dry(
                server=own,
                api_key=api_key,
                seed=seed,
                client_factory=client_factory,
                redactor=redactor,
            )
    plan = dry_run_plan(rng, api_key=api_key)
    config = dry_run_config(server.base_url, api_key=api_key)
    return run_tier(
        config,
        plan.sequences,
        mode="dry-run",
        client_factory=client_factory,
        before_call=plan.loader(server),
        redactor=redactor or Redactor([api_key]),
    )


def target_dry_sequences(rng: random.Random) -> list[TargetSequence]:
    """The healthy target sequences plus one streamed chat carrying a sentinel."""
    sequences = plan_target_sequences(rng)
    word = random_word(rng)
    sequences.append(
        TargetSequence(
            label="dry/sentinel-in-stream",
            word=word,
            stream=True,
            calls=1,
            rebuild_after=None,
            expect=Expectation(False, ("api_call_failed",)),
            content=f"{word} {SENTINEL_REPLY}",
        )
    )
    return sequences


def run_dry_targets(
    targets: Sequence[str],
    *,
    environ: Mapping[str, str],
    ci: bool = False,
    server: FaultServer | None = None,
    api_key: str = DRY_RUN_API_KEY,
    seed: int | None = None,
    redactor: Redactor | None = None,
    jobs: int = DEFAULT_DRY_RUN_JOBS,
) -> LiveRun:
    """The target form of the check for every one of ``targets``, as one run. Against
    ``server`` when given (one target after another: a script is loaded per sequence);
    by default each target gets its own embedded server and up to ``jobs`` targets run
    side by side (their children mostly wait on local sockets and their own start-up)."""
    rng = random.Random(seed)
    redactor = redactor or Redactor([api_key])
    # Drawn in target order before anything runs: a seed gives the same words however
    # the targets are scheduled.
    planned = [(target, target_dry_sequences(rng)) for target in targets]

    def one(target: str, sequences: list[TargetSequence], srv: FaultServer) -> LiveRun:
        def load(seq: TargetSequence) -> None:
            srv.load(FaultScript(content=seq.content or seq.word))

        return run_target_tier(
            _with_start_up(dry_run_config(srv.base_url, api_key=api_key), target, len(sequences)),
            target,
            sequences,
            mode="dry-run",
            environ=environ,
            ci=ci,
            before_sequence=load,
            redactor=redactor,
        )

    if server is not None:
        return LiveRun.combined([one(t, seqs, server) for t, seqs in planned])

    def own_server(item: tuple[str, list[TargetSequence]]) -> LiveRun:
        with fault_server() as srv:
            return one(*item, srv)

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(planned)))) as pool:
        return LiveRun.combined(list(pool.map(own_server, planned)))
