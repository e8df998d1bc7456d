"""Which case a worker takes next (``harness.scheduling.CaseQueue``): pure, no children."""

from __future__ import annotations

from harness.planning import RunSettings, plan_case
from harness.scenario import scenario_from_dict
from harness.scheduling import CaseQueue as _CaseQueue

HANG = {"rules": [{"fault": {"phase": "request", "action": "hang"}}]}


def CaseQueue(cases: list, settings: RunSettings) -> _CaseQueue:
    """The queue of ``cases`` (scenario, target), each planned once as the runner does."""
    return _CaseQueue([plan_case(s, t, settings) for s, t in cases], settings)


def make(name: str, expected: dict[str, str], **fields) -> object:
    return scenario_from_dict({"name": name, "summary": name, "expected": expected, **fields})


def short_cases(target: str, n: int) -> list[tuple[object, str]]:
    stem = target.replace("-", "_").replace(":", "_")
    return [(make(f"{stem}_{i}", {}), target) for i in range(n)]


def test_workers_spread_over_targets_and_each_stays_on_its_own():
    # target-major, as `harness mutants` builds it: one shared longest-first queue sent
    # every worker to the first target, then all of them to the next one at once
    cases = (
        short_cases("openai-sdk", 3) + short_cases("reference", 3) + short_cases("mutant:none", 2)
    )
    queue = CaseQueue(cases, RunSettings(jobs=2))
    first = {w: queue.take("general", w, None, block=False) for w in ("w0", "w1")}
    targets = {w: item[1].target for w, item in first.items() if item is not None}
    assert len(set(targets.values())) == 2  # two workers, two targets
    taken = {w: [targets[w]] for w in targets}
    for _ in range(2):
        for w in ("w0", "w1"):
            item = queue.take("general", w, taken[w][-1], block=False)
            assert item is not None
            taken[w].append(item[1].target)
    # each worker ran its own target's three cases in a row: its child is reused
    assert all(len(set(ts)) == 1 for ts in taken.values()), taken
    # the one target nobody is on comes next, rather than joining the other worker
    item = queue.take("general", "w0", taken["w0"][-1], block=False)
    assert item is not None and item[1].target not in taken.values()


def test_a_worker_whose_target_ran_out_joins_the_target_with_most_work_per_worker():
    cases = short_cases("openai-sdk", 1) + short_cases("reference", 2)
    queue = CaseQueue(cases, RunSettings(jobs=2))
    assert queue.take("general", "w1", None, block=False)[1].target == "reference"  # most work
    assert queue.take("general", "w0", None, block=False)[1].target == "openai-sdk"  # nobody on it
    assert queue.peek("general", "w0", "openai-sdk").target == "reference"
    assert queue.take("general", "w0", "openai-sdk", block=False)[1].target == "reference"


def test_lanes_take_only_their_kinds_and_in_their_order():
    hang = make("hang", {"openai-sdk": "hung"}, script=HANG)
    relay = make(
        "relay",
        {"openai-sdk": "ok"},
        ceiling_s=300,  # a quarter of its 15 s ceiling is a long case
        network={"backend": "relay", "relay": {"mode": "pass"}},
    )
    short = make("short", {"openai-sdk": "ok"})
    cases = [(short, "openai-sdk"), (relay, "openai-sdk"), (hang, "openai-sdk")]
    settings = RunSettings(jobs=1, time_scale=0.05, min_ceiling_s=3.0)
    queue = CaseQueue(cases, settings)
    assert [queue.count(k) for k in ("short", "long", "idle")] == [1, 1, 1]
    assert queue.peek("idle", "i", None).scenario.name == "hang"
    assert queue.peek("wait", "w", None).scenario.name == "relay"
    assert queue.take("general", "g", None, block=False)[1].scenario.name == "short"
    assert queue.take("general", "g", "openai-sdk", block=False)[1].scenario.name == "relay"
    assert queue.take("wait", "w", None, block=False)[1].scenario.name == "hang"
    assert queue.take("idle", "i", None, block=False) is None


def test_without_idle_lanes_an_expected_hang_is_a_long_case():
    hang = make("hang", {"openai-sdk": "hung"}, script=HANG)
    queue = CaseQueue([(hang, "openai-sdk")], RunSettings(jobs=1, idle_lanes=0))
    assert [queue.count(k) for k in ("short", "long", "idle")] == [0, 1, 0]


def test_a_stopped_queue_hands_out_nothing():
    queue = CaseQueue(short_cases("openai-sdk", 2), RunSettings(jobs=1))
    queue.stop()
    assert queue.take("general", "w0", None, block=False) is None
    assert queue.peek("general", "w0", None) is None


def test_a_scenario_paced_at_its_own_time_scale_floor_waits_on_a_wait_lane():
    paced = make("paced", {"openai-sdk": "ok"}, min_time_scale=0.2)
    plain = make("plain", {"openai-sdk": "ok"})
    cases = [(paced, "openai-sdk"), (plain, "openai-sdk")]
    queue = CaseQueue(cases, RunSettings(jobs=1, time_scale=0.05))
    assert [queue.count(k) for k in ("short", "long", "idle")] == [1, 1, 0]
    assert queue.peek("wait", "w", None).scenario.name == "paced"
    # a run as slow as the floor: nothing is paced slower than the rest
    queue = CaseQueue(cases, RunSettings(jobs=1, time_scale=0.2))
    assert [queue.count(k) for k in ("short", "long", "idle")] == [2, 0, 0]


def relay(name: str, ceiling_s: float) -> object:
    network = {"backend": "relay", "relay": {"mode": "pass"}}
    return make(name, {}, ceiling_s=ceiling_s, network=network)


def test_a_worker_leaves_its_target_only_for_a_case_longer_by_a_child_start_up():
    # at 0.05 a relay's estimate is a quarter of its ceiling: 3.75 s, 4.5 s, 12.5 s
    cases = [
        (relay("ref_a", 300), "reference"),
        (relay("ref_b", 300), "reference"),
        (relay("sdk_near", 360), "openai-sdk"),
        (relay("sdk_far", 1000), "openai-sdk"),
    ]
    queue = CaseQueue(cases, RunSettings(jobs=1, time_scale=0.05))
    assert queue.count("long") == 4
    # 12.5 s on another target beats 3.75 s + SWITCH_COST_S on its own: the long case
    # is not left for the tail
    assert queue.take("wait", "w", "reference", block=False)[1].scenario.name == "sdk_far"
    # 4.5 s is not worth a child start-up: it stays on reference
    assert queue.take("wait", "w", "reference", block=False)[1].scenario.name == "ref_a"


def test_a_call_expected_to_fail_goes_first_for_a_target_whose_backoff_is_real_time():
    from harness.planning import estimated_s

    settings = RunSettings()
    failing, ok = make("f", {"hermes": "error_as_reply"}), make("o", {"hermes": "ok"})
    assert estimated_s((failing, "hermes"), settings) > estimated_s((ok, "hermes"), settings)
    queue = CaseQueue([(ok, "hermes"), (failing, "hermes")], settings)
    first = queue.take("general", "w0", None, block=False)
    assert first is not None and first[1].scenario.name == "f"
    # a target without a real-time backoff: the same estimate either way
    ref_failing, ref_ok = make("f2", {"reference": "error"}), make("o2", {"reference": "ok"})
    assert estimated_s((ref_failing, "reference"), settings) == estimated_s(
        (ref_ok, "reference"), settings
    )


def test_a_raw_retry_after_is_real_time_in_the_estimate():
    from harness.planning import estimated_s

    settings = RunSettings()
    waits = make(
        "w",
        {"hermes": "ok"},
        script={
            "rules": [
                {
                    "fault": {
                        "phase": "request",
                        "action": "status",
                        "code": 429,
                        "retry_after": "30",
                    }
                }
            ]
        },
    )
    plain = make("p", {"hermes": "ok"})
    assert estimated_s((waits, "hermes"), settings) == 30.0
    assert estimated_s((plain, "hermes"), settings) < 30.0


def test_a_target_with_max_parallel_is_taken_by_at_most_that_many_workers():
    # litellm-proxy: every child starts a gateway of its own (Target.max_parallel = 2)
    from harness.targets.clients.litellm_proxy import LiteLLMProxyReferenceTarget

    cap = LiteLLMProxyReferenceTarget.max_parallel
    assert cap == 2
    cases = short_cases("litellm-proxy", 5) + short_cases("reference", 1)
    queue = CaseQueue(cases, RunSettings(jobs=4))
    workers = [f"w{i}" for i in range(4)]
    first = {w: queue.take("general", w, None, block=False) for w in workers}
    on = [item[1].target if item else None for item in first.values()]
    assert on.count("litellm-proxy") == cap
    assert on.count("reference") == 1 and on.count(None) == 1  # the fourth has nothing it may take
    # the reference worker, its target done, does not join the full target either
    ref = workers[on.index("reference")]
    assert queue.peek("general", ref, "reference") is None
    assert queue.take("general", ref, "reference", block=False) is None
    # the proxy's own workers carry on until its cases are done
    proxy = workers[on.index("litellm-proxy")]
    left = [queue.take("general", proxy, "litellm-proxy", block=False) for _ in range(3)]
    assert [item[1].target for item in left if item] == ["litellm-proxy"] * 3
    assert queue.take("general", proxy, "litellm-proxy", block=False) is None


def test_a_gateway_target_gets_the_budget_times_its_upstream_retries_unless_written_for_it():
    from harness.planning import plan_case
    from harness.targets.clients.litellm_proxy import LiteLLMProxyReferenceTarget

    fanout = LiteLLMProxyReferenceTarget.requests_per_request
    assert fanout == 3  # the proxy's Router: 1 + num_retries 2
    plain = make("budgeted", {}, budget={"max_requests": 3})
    written = make(
        "written", {}, budget={"max_requests": 3, "max_requests_for": {"litellm-proxy": 5}}
    )
    unbounded = make("unbounded", {})
    settings = RunSettings()
    assert plan_case(plain, "reference", settings).max_requests == 3
    assert plan_case(plain, "litellm-proxy", settings).max_requests == 3 * fanout
    assert plan_case(written, "litellm-proxy", settings).max_requests == 5
    assert plan_case(unbounded, "litellm-proxy", settings).max_requests is None


def test_the_gateway_runs_its_whole_case_at_its_time_scale_floor():
    # the fault script and the client's deadlines at one scale: a first byte the scenario
    # makes 3x late for its deadline stays late through the proxy
    from harness.planning import plan_case

    late = make("late", {}, script={"first_byte_delay_s": 3})
    plan = plan_case(late, "litellm-proxy", RunSettings(time_scale=0.05))
    assert plan.time_scale == 0.5  # the relay scenarios' floor
    assert plan_case(late, "reference", RunSettings(time_scale=0.05)).time_scale == 0.05


def test_the_cap_counts_idle_lanes_apart_so_a_capped_targets_hangs_wait_beside_it():
    # litellm-proxy leases its gateways from the runner's pool, so more of its expected
    # hangs wait at once (Target.idle_parallel) than its cases run (Target.max_parallel)
    from harness.targets.clients.litellm_proxy import LiteLLMProxyReferenceTarget as Proxy

    assert Proxy.idle_parallel > Proxy.max_parallel > 0
    hang = {"rules": [{"fault": {"phase": "request", "action": "hang"}}]}
    n = Proxy.idle_parallel + 1
    hangs = [
        (make(f"h{i}", {"litellm-proxy": "hung"}, script=hang), "litellm-proxy") for i in range(n)
    ]
    cases = short_cases("litellm-proxy", 3) + hangs
    queue = CaseQueue(cases, RunSettings(jobs=4, idle_lanes=16))
    assert queue.count("idle") == n
    general = [queue.take("general", f"g{i}", None, block=False) for i in range(4)]
    assert [item is not None for item in general] == [True] * Proxy.max_parallel + [False] * (
        4 - Proxy.max_parallel
    )
    idle = [queue.take("idle", f"i{i}", None, block=False) for i in range(n)]
    # idle_parallel idle lanes on the target beside its max_parallel general workers
    assert [item is not None for item in idle] == [True] * Proxy.idle_parallel + [False]


def test_without_idle_parallel_the_idle_lanes_take_the_max_parallel_cap():
    from harness.targets.base import Target

    assert Target.idle_parallel == 0  # the default: max_parallel for both
    from harness.scheduling import _full

    class Capped(Target):
        max_parallel = 2

    class Wider(Capped):
        idle_parallel = 5

    for cls, idle_cap in ((Capped, 2), (Wider, 5)):
        plan = type("Plan", (), {"target_cls": cls})()
        group = [(1.0, 0, plan)]
        assert _full(group, "t", ["t"] * 2) is True  # general lanes: max_parallel
        assert _full(group, "t", ["t"] * (idle_cap - 1), idle=True) is False
        assert _full(group, "t", ["t"] * idle_cap, idle=True) is True


def test_a_capped_target_with_more_work_than_its_cap_clears_goes_first():
    # litellm-proxy (max_parallel 2): fourteen 1.2 s cases need 8.4 s of wall time on its
    # two workers, more than the 6 s uncapped case; left to the tail, they were the run's end
    # (a combined run: the gateway's cases began at 106 s of 309 s, behind hermes's)
    long_relay = make(
        "long",
        {"reference": "ok"},
        ceiling_s=480,  # a quarter of the 24 s ceiling at 0.05: 6 s
        network={"backend": "relay", "relay": {"mode": "pass"}},
    )
    proxied = [
        (make(f"p{i}", {"litellm-proxy": "ok"}, ceiling_s=3), "litellm-proxy") for i in range(14)
    ]
    settings = RunSettings(jobs=2, time_scale=0.05)
    cases = [(long_relay, "reference"), *proxied]
    planned = [plan_case(s, t, settings) for s, t in cases]
    head = max(p.estimate_s for p in planned if p.target == "litellm-proxy")
    work = sum(p.estimate_s for p in planned if p.target == "litellm-proxy")
    reference = next(p.estimate_s for p in planned if p.target == "reference")
    assert head < reference < work / 2  # the case this test is about
    queue = CaseQueue(cases, settings)
    assert queue.take("general", "w0", None, block=False)[1].target == "litellm-proxy"
    assert queue.take("general", "w1", None, block=False)[1].target == "litellm-proxy"
    # the cap reached, the third worker takes the long case
    assert queue.take("general", "w2", None, block=False)[1].target == "reference"


def test_a_worker_waits_for_a_capped_target_held_by_lanes_that_cannot_take_its_cases():
    # 2026-12-06 CI: two wait lanes took litellm-proxy+openai-sdk's long cases first, so
    # the cap (2) was full; every general worker found nothing it might take and left,
    # and the short cases, which wait lanes never take, were never run (50 of 97).
    import threading

    from harness.targets.clients.litellm_proxy import LiteLLMProxySDKTarget

    assert LiteLLMProxySDKTarget.max_parallel == 2
    target = "litellm-proxy+openai-sdk"
    relay = {"backend": "relay", "relay": {"mode": "pass"}}
    long_cases = [(make(f"relay_{i}", {}, network=relay), target) for i in range(2)]
    shorts = [(make(f"short_{i}", {}), target) for i in range(3)]
    queue = CaseQueue(long_cases + shorts, RunSettings(jobs=2, wait_lanes=2))
    assert queue.count("long") == 2 and queue.count("short") == 3
    held = [queue.take("wait", f"w{i}", None) for i in range(2)]  # the cap, on long cases
    assert all(item is not None and item[1].scenario.name.startswith("relay") for item in held)
    assert queue.take("general", "g0", None, block=False) is None  # capped now, not done

    got: list = []
    taken = threading.Event()

    def general() -> None:
        got.append(queue.take("general", "g0", None))
        taken.set()

    thread = threading.Thread(target=general, daemon=True)
    thread.start()
    assert not taken.wait(0.2)  # it waits: the target is capped, its cases are left
    # a wait lane comes back for its next case: nothing of its kinds is left, it leaves,
    # and the general worker takes the short case it freed the cap for
    assert queue.take("wait", "w0", target) is None
    assert taken.wait(10), "the general worker was never woken"
    thread.join(10)
    assert got[0] is not None and got[0][1].scenario.name.startswith("short")
    rest = [queue.take("general", "g0", target) for _ in range(2)]
    assert all(item is not None for item in rest)
    assert queue.take("general", "g0", target) is None  # all five taken, nothing lost


def test_a_run_whose_workers_left_cases_untaken_fails_instead_of_passing_short(monkeypatch):
    import pytest

    from harness import runner
    from harness.runner import run_cases

    # the queue hands out nothing (as a worker that gave up on a capped target did)
    monkeypatch.setattr(runner.CaseQueue, "take", lambda self, *args, **kwargs: None)
    cases = short_cases("reference", 2)
    with pytest.raises(
        RuntimeError, match=r"2 of 2 cases were never run: reference_0\[reference\]"
    ):
        run_cases(cases, settings=RunSettings(jobs=1))
