"""The live tier's data: the chats to make and what each did, plus the strict judge.

A *sequence* is three chats through one client with a rebuild between the second and
the third (the seed regression: a rebuilt client reused a closed transport and every
later call failed). Each chat asks the model to echo an exact random word, so a correct
answer is checkable; :func:`judge_reply` says everything wrong with a reply that came
back (empty, a bad finish reason, an error sentinel, not the word).

Results are plain frozen data (:class:`CaseResult`, :class:`LiveRun`) with every string
already redacted, ready for the console, JSON, JUnit and Markdown writers. A case may
carry an *expectation* of failure: the dry run uses that to prove the detector flags a
sentinel the fault server injects into an otherwise successful reply.

Not here: making the calls (``session`` for the in-process reference client,
``targets`` for any target in its child process), rendering (``report``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.live.redact import Redactor
from harness.live.sentinels import Finding, check_reply

__all__ = [
    "CaseResult",
    "ChatCase",
    "Expectation",
    "LiveRun",
    "echo_prompt",
    "judge_reply",
    "not_run",
    "plan_sequences",
    "random_word",
    "redacted_findings",
    "shorten",
]


@dataclass(frozen=True)
class Expectation:
    """What a case must produce to count as a pass of the *run*: ``ok`` True for a healthy
    call; ``ok`` False plus the finding names that must be among its findings."""

    ok: bool = True
    findings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChatCase:
    """One chat of a sequence. ``rebuild_before`` rebuilds the client before the call."""

    name: str
    word: str
    stream: bool
    rebuild_before: bool = False
    api: str = "chat"
    expect: Expectation = field(default_factory=Expectation)

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "user", "content": echo_prompt(self.word)}]


@dataclass(frozen=True)
class CaseResult:
    """What one chat did. Every string in it is redacted. ``elapsed_s`` is None for a
    chat whose own time is unknown (a target reports a whole sequence at once: its time
    is on the last chat). ``skipped``: the target cannot run here (``error`` says why);
    it neither passes nor fails the run."""

    name: str
    ok: bool
    findings: tuple[Finding, ...]
    elapsed_s: float | None
    stream: bool
    expected_word: str
    reply: str | None = None
    finish_reason: str | None = None
    attempts: int | None = None
    error: str | None = None
    expect: Expectation = field(default_factory=Expectation)
    skipped: bool = False

    @property
    def as_expected(self) -> bool:
        """True when the case did what the run expected of it (a skip is not a failure)."""
        if self.skipped:
            return True
        if self.expect.ok:
            return self.ok
        names = {f.sentinel for f in self.findings}
        return not self.ok and set(self.expect.findings) <= names

    def summary(self) -> str:
        """One line for tables: the reply when ok; else the error and what was found."""
        if self.skipped:
            return f"skipped: {self.error or 'not available here'}"
        if self.ok:
            return f"ok ({self.reply!r})"
        if self.error is None:
            return "; ".join(f.describe() for f in self.findings) or "failed"
        parts = [f"raised {shorten(self.error)}"]
        parts += [f.describe() for f in self.findings if f.where != "error"]
        in_error = sorted({f.sentinel for f in self.findings if f.where == "error"} - {"raised"})
        if in_error:
            parts.append("sentinels in the error: " + ", ".join(in_error))
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "as_expected": self.as_expected,
            "expected": {"ok": self.expect.ok, "findings": list(self.expect.findings)},
            "findings": [f.to_dict() for f in self.findings],
            "elapsed_s": None if self.elapsed_s is None else round(self.elapsed_s, 4),
            "skipped": self.skipped,
            "stream": self.stream,
            "expected_word": self.expected_word,
            "reply": self.reply,
            "finish_reason": self.finish_reason,
            "attempts": self.attempts,
            "error": self.error,
        }


@dataclass(frozen=True)
class LiveRun:
    """A whole tier run: ``mode`` is ``live`` or ``dry-run``; ``targets`` the clients it
    went through (``reference`` for the in-process session)."""

    mode: str
    model: str
    base_url: str
    cases: tuple[CaseResult, ...]
    elapsed_s: float
    targets: tuple[str, ...] = ("reference",)

    @classmethod
    def combined(cls, runs: Sequence[LiveRun]) -> LiveRun:
        """One run of several (same mode, model and base URL), cases in order."""
        first = runs[0]
        return cls(
            mode=first.mode,
            model=first.model,
            base_url=first.base_url,
            cases=tuple(c for run in runs for c in run.cases),
            elapsed_s=sum(run.elapsed_s for run in runs),
            targets=tuple(dict.fromkeys(t for run in runs for t in run.targets)),
        )

    @property
    def ok(self) -> bool:
        return bool(self.cases) and all(c.as_expected for c in self.cases)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "model": self.model,
            "base_url": self.base_url,
            "targets": list(self.targets),
            "ok": self.ok,
            "elapsed_s": round(self.elapsed_s, 4),
            "cases": [c.to_dict() for c in self.cases],
        }


def echo_prompt(word: str) -> str:
    """A prompt whose only correct answer is ``word``."""
    return (
        "This is an automated connectivity check. Reply with exactly the following word "
        f"and nothing else (no punctuation, no quotes): {word}"
    )


_SYLLABLES = ("ka", "lo", "mi", "ru", "te", "zo", "va", "ne", "pi", "su", "do", "fe")


def random_word(rng: random.Random) -> str:
    """A made-up word no model would produce by chance, e.g. ``kamirute4821``."""
    return "".join(rng.choice(_SYLLABLES) for _ in range(4)) + str(rng.randrange(1000, 10000))


def plan_sequences(
    rng: random.Random, *, streams: Sequence[bool] = (True, False), chats: int = 3
) -> list[list[ChatCase]]:
    """One sequence per stream mode: ``chats`` chats, the client rebuilt before the last."""
    sequences = []
    for stream in streams:
        label = "stream" if stream else "non-stream"
        sequences.append(
            [
                ChatCase(
                    name=f"{label}/chat-{i}",
                    word=random_word(rng),
                    stream=stream,
                    rebuild_before=(i == chats and chats > 1),
                )
                for i in range(1, chats + 1)
            ]
        )
    return sequences


def judge_reply(
    text: str | None,
    finish_reason: str | None,
    word: str,
    *,
    chunks: Sequence[str] | None = None,
    check_finish: bool = True,
) -> list[Finding]:
    """Everything wrong with a reply that came back: empty, a finish reason other than
    stop/length (unless ``check_finish`` is False: a target that reports only its last
    call's finish reason), an error sentinel anywhere in it, or not the word."""
    findings = check_reply(text, finish_reason, chunks=chunks)
    if not check_finish:
        findings = [f for f in findings if f.sentinel != "bad_finish_reason"]
    if text and text.strip() and not _contains_word(text, word):  # empty: flagged already
        findings.append(Finding("wrong_content", "reply", None, f"expected {word!r}"))
    return findings


def not_run(case: ChatCase, reason: str, error: str | None = None) -> CaseResult:
    """A case that never ran (``reason`` is its finding, e.g. ``run_ceiling``)."""
    why = error or "not started: the run's time budget is spent"
    return CaseResult(
        name=case.name,
        ok=False,
        findings=(Finding(reason, "error", None, shorten(why, 120)),),
        elapsed_s=0.0,
        stream=case.stream,
        expected_word=case.word,
        error=error,
        expect=case.expect,
    )


def redacted_findings(findings: Sequence[Finding], redactor: Redactor) -> tuple[Finding, ...]:
    return tuple(
        Finding(f.sentinel, f.where, f.offset, redactor.redact(f.excerpt), f.chunk)
        for f in findings
    )


def shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _contains_word(text: str, word: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", text, re.I) is not None
