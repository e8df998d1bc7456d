"""Make a reused hermes child start every job as a fresh child would.

Part of the hermes driver, inside hermes-agent's virtualenv (like ``turns``): standard
library and hermes only. A hermes child imports hermes and builds a throwaway agent
once (``turns.warm_up``, ~1.3 s of CPU); reusing it for the next job is only
sound if nothing a job changed survives into the next one. :class:`Baseline` is taken
after the warm-up, at the state in which a fresh child starts its first job, and
:meth:`Baseline.restore` puts that state back before every job:

* ``os.environ`` (and the working directory): a job's ``env`` is applied on top of the
  base environment, never on top of the previous job's. hermes reads every variable a
  job sets (the ``SETTING_ENV`` deadlines) per call, not at import, so restoring the
  environment is enough for them.
* ``HERMES_HOME``: files a job wrote (request dumps, ``tool_calls.jsonl``, sessions,
  state.db rows) are removed or put back as the warm-up left them. ``logs/`` is left
  alone: hermes's process-wide log handlers hold its files open and nothing reads them.
* :data:`MODULE_STATE`: module globals hermes-agent 0.19.0 changes while it runs an agent
  and reads again in the next one (caches of endpoint probes keyed by base URL -- the
  runner's fault server keeps its port, so a cached probe would skip requests a fresh
  child makes --, the config cache, the auxiliary client cache and "main runtime", an
  interrupt bit on the main thread, the retry jitter counter). Each is put back to its
  baseline value (containers refilled with a shallow copy of their baseline contents).
  The modules are imported at baseline time, so none is first imported by a job.

Not reset, and why: everything hermes keeps per agent (the stale-stream streak,
``_rate_limit_state``, fallback index, credential pool, clients) -- every job builds a
new ``AIAgent``; pure memo caches of pure functions (``functools.lru_cache`` on
``urlsplit``, pydantic type adapters); values resolved once from the machine and the
base environment (time zone, WSL, browser flags; the toolchain probe for the system
prompt is off: ``turns.PINNED_CONFIG``), the same for every job; display settings and log-once flags
(``agent.display``, ``*_warned``), which change no request; log handlers and the
activity-monitor thread, part of the child's leak baseline.

What a job leaves that this cannot undo is the runner's business: a leaked thread,
descriptor or socket stops reuse there. A job that crashes hermes's setup or ends in a
``BaseException`` that is not an ``Exception`` declines reuse (:func:`declines_reuse`),
and so does every job when an entry of :data:`MODULE_STATE` is missing (another hermes
version: the list was audited against 0.19.0).
"""

from __future__ import annotations

import copy
import filecmp
import importlib
import os
import shutil
import tempfile
from typing import Any

__all__ = ["MODULE_STATE", "Baseline", "declines_reuse"]

#: (module, global) pairs restored to their baseline value before every job (see above).
MODULE_STATE: tuple[tuple[str, str], ...] = (
    # endpoint / model metadata probes, keyed by base URL (or id() of a tool list)
    ("agent.model_metadata", "_model_metadata_cache"),
    ("agent.model_metadata", "_model_metadata_cache_time"),
    ("agent.model_metadata", "_novita_metadata_cache"),
    ("agent.model_metadata", "_novita_metadata_cache_time"),
    ("agent.model_metadata", "_endpoint_model_metadata_cache"),
    ("agent.model_metadata", "_endpoint_model_metadata_cache_time"),
    ("agent.model_metadata", "_endpoint_probe_path_cache"),
    ("agent.model_metadata", "_LOCAL_CTX_PROBE_CACHE"),
    ("agent.model_metadata", "_codex_oauth_context_cache"),
    ("agent.model_metadata", "_codex_oauth_context_cache_time"),
    ("agent.model_metadata", "_TOOLS_TOKENS_CACHE"),
    # auxiliary clients: the last main runtime, cached clients, unhealthy providers
    ("agent.auxiliary_client", "_RUNTIME_MAIN_API_KEY"),
    ("agent.auxiliary_client", "_RUNTIME_MAIN_API_MODE"),
    ("agent.auxiliary_client", "_RUNTIME_MAIN_AUTH_MODE"),
    ("agent.auxiliary_client", "_RUNTIME_MAIN_BASE_URL"),
    ("agent.auxiliary_client", "_RUNTIME_MAIN_COMPAT_SNAPSHOT"),
    ("agent.auxiliary_client", "_RUNTIME_MAIN_MODEL"),
    ("agent.auxiliary_client", "_RUNTIME_MAIN_PROVIDER"),
    ("agent.auxiliary_client", "_client_cache"),
    ("agent.auxiliary_client", "_aux_unhealthy_until"),
    ("agent.auxiliary_client", "_aux_unhealthy_logged_at"),
    ("agent.auxiliary_client", "_stale_base_url_warned"),
    # config.yaml is rewritten per job; its cache is keyed by mtime and size
    ("hermes_cli.config", "_LOAD_CONFIG_CACHE"),
    ("hermes_cli.config", "_RAW_CONFIG_CACHE"),
    ("hermes_cli.config", "_LAST_EXPANDED_CONFIG_BY_PATH"),
    ("hermes_cli.config", "_env_cache"),
    ("hermes_cli.managed_scope", "_CONFIG_CACHE"),
    ("hermes_cli.managed_scope", "_ENV_CACHE"),
    ("agent.skill_utils", "_RAW_CONFIG_CACHE"),
    ("agent.skill_utils", "_ENV_DETECT_CACHE"),
    ("agent.skill_utils", "_EXTERNAL_DIRS_CACHE"),
    ("agent.prompt_builder", "_BACKEND_PROBE_CACHE"),
    ("agent.prompt_builder", "_SKILLS_PROMPT_CACHE"),
    ("model_tools", "_tool_defs_cache"),
    ("model_tools", "_last_resolved_tool_names"),
    # turn bookkeeping that outlives an agent
    ("tools.interrupt", "_interrupted_threads"),
    ("agent.agent_runtime_helpers", "_INFLIGHT_TURNS_BY_SESSION"),
    ("agent.retry_utils", "_jitter_counter"),
)
#: HERMES_HOME entries never restored: held open by process-wide log handlers.
_KEEP = ("logs",)
#: Status of a job whose result says nothing about hermes's state.
_UNTOUCHED = ("skipped", "not_applicable")


class Baseline:
    """The state a fresh child starts its first job in: take it after the warm-up."""

    def __init__(self, home: str) -> None:
        self.home = home
        self.environ = dict(os.environ)
        self.cwd = os.getcwd()
        self.missing: list[str] = []
        self._values: dict[tuple[str, str], Any] = {}
        for module_name, attr in MODULE_STATE:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                self.missing.append(f"{module_name} (not importable)")
                continue
            if not hasattr(module, attr):
                self.missing.append(f"{module_name}.{attr}")
                continue
            self._values[(module_name, attr)] = copy.copy(getattr(module, attr))
        # beside HERMES_HOME, in the child's scratch directory (removed with it)
        self._template = tempfile.mkdtemp(
            prefix="hermes-home-baseline-", dir=os.path.dirname(os.path.abspath(home))
        )
        shutil.copytree(home, self._template, dirs_exist_ok=True, ignore=_ignore_kept(home))

    @property
    def reason_not_reusable(self) -> str | None:
        """Why no job may be reused after (None: every entry was found)."""
        if not self.missing:
            return None
        return "process state not audited for this hermes: " + ", ".join(self.missing)

    def restore(self) -> None:
        """Put the environment, HERMES_HOME and :data:`MODULE_STATE` back to the baseline."""
        os.environ.clear()
        os.environ.update(self.environ)
        if os.getcwd() != self.cwd:
            os.chdir(self.cwd)
        _restore_tree(self._template, self.home)
        for (module_name, attr), value in self._values.items():
            module = importlib.import_module(module_name)
            current = getattr(module, attr)
            if isinstance(current, dict | list | set) and type(current) is type(value):
                # in place: other modules may hold a reference to the same object
                current.clear()
                if isinstance(current, list):
                    current.extend(value)
                else:
                    current.update(value)
            else:
                setattr(module, attr, copy.copy(value))

    def close(self) -> None:
        shutil.rmtree(self._template, ignore_errors=True)


def declines_reuse(
    report: dict[str, Any], baseline: Baseline, *, setup_failed: bool = False
) -> str | None:
    """Why the child must not take another job after this one's ``report`` (None: it
    may); ``setup_failed``: the job raised outside any turn (building the agent)."""
    if report.get("status") in _UNTOUCHED:
        return None
    if baseline.reason_not_reusable:
        return baseline.reason_not_reusable
    if setup_failed:
        return "hermes's setup raised: its state is unknown"
    mro = report.get("mro") or ()
    if report.get("status") == "raised" and "Exception" not in mro:
        return f"{report.get('error')} is not an Exception: hermes may not have cleaned up"
    return None


def _ignore_kept(root: str) -> Any:
    def ignore(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if os.path.samefile(directory, root) and n in _KEEP]

    return ignore


def _restore_tree(template: str, home: str) -> None:
    """Make ``home`` (but its kept entries) hold exactly ``template``'s files."""
    for dirpath, dirnames, filenames in os.walk(home, topdown=True):
        rel = os.path.relpath(dirpath, home)
        if rel == os.curdir:
            dirnames[:] = [d for d in dirnames if d not in _KEEP]
            filenames = [f for f in filenames if f not in _KEEP]
        for name in list(dirnames):
            if not os.path.isdir(os.path.join(template, rel, name)):
                shutil.rmtree(os.path.join(dirpath, name))
                dirnames.remove(name)
        for name in filenames:
            if not os.path.isfile(os.path.join(template, rel, name)):
                os.remove(os.path.join(dirpath, name))
    for dirpath, _dirnames, filenames in os.walk(template):
        rel = os.path.relpath(dirpath, template)
        os.makedirs(os.path.join(home, rel), exist_ok=True)
        for name in filenames:
            source, target = os.path.join(dirpath, name), os.path.join(home, rel, name)
            if not (os.path.isfile(target) and filecmp.cmp(source, target, shallow=False)):
                shutil.copy2(source, target)
