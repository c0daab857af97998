"""TraceAssembler: completion rules, limits, duplicates, late spans, timer order."""

from __future__ import annotations

from evaluators.traces.records import LogRecord, SpanRecord
from monitor.engine.assembler import TraceAssembler
from tests.support.completed_traces import pop_due

T1 = "1" * 32
T2 = "2" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def span(trace_id: str, span_id: str, parent: str = "", *, ended: bool = True, kind: int = 1) -> SpanRecord:
    return SpanRecord(trace_id, span_id, parent, f"s{span_id}", kind, 1, 2 if ended else 0)


def make(clock: Clock, **kw) -> TraceAssembler:
    kw.setdefault("quiet_period", 5.0)
    kw.setdefault("max_trace_wait", 120.0)
    return TraceAssembler(clock=clock, **kw)


def test_complete_after_quiet_period_once_root_ended():
    clock = Clock()
    asm = make(clock)
    asm.add([span(T1, "b" * 16, "a" * 16)])
    clock.now += 4
    asm.add([span(T1, "a" * 16)])  # the root arrives last
    clock.now += 4.9
    assert pop_due(asm) == []
    clock.now += 0.2
    done = pop_due(asm)
    assert [d.trace_id for d in done] == [T1]
    assert done[0].reason == "quiet" and len(done[0].spans) == 2
    assert asm.traces_pending == 0 and asm.spans_pending == 0


def test_new_spans_push_the_quiet_deadline():
    clock = Clock()
    asm = make(clock)
    asm.add([span(T1, "a" * 16)])
    clock.now += 4
    asm.add([span(T1, "c" * 16, "a" * 16)])
    clock.now += 4
    assert pop_due(asm) == []
    clock.now += 1.1
    assert len(pop_due(asm)[0].spans) == 2


def test_trace_without_root_completes_at_max_wait():
    clock = Clock()
    asm = make(clock, max_trace_wait=30.0)
    asm.add([span(T1, "b" * 16, "f" * 16)])  # parent never arrives, INTERNAL: not a root
    clock.now += 29
    assert pop_due(asm) == []
    clock.now += 1.5
    done = pop_due(asm)
    assert done[0].reason == "max_wait"


def test_server_span_with_remote_parent_counts_as_root():
    clock = Clock()
    asm = make(clock)
    asm.add([span(T1, "b" * 16, "f" * 16, kind=2)])
    clock.now += 5.1
    assert [d.reason for d in pop_due(asm)] == ["quiet"]


def test_unended_root_waits_for_max_wait():
    clock = Clock()
    asm = make(clock, max_trace_wait=60.0)
    asm.add([span(T1, "a" * 16, ended=False)])
    clock.now += 10
    assert pop_due(asm) == []


def test_duplicates_and_late_spans_are_counted_not_reopened():
    clock = Clock()
    asm = make(clock)
    first = asm.add([span(T1, "a" * 16), span(T1, "a" * 16)])
    assert (first.accepted, first.duplicates) == (1, 1)
    clock.now += 6
    assert len(pop_due(asm)) == 1
    late = asm.add([span(T1, "d" * 16, "a" * 16)])
    assert late.late == 1 and late.accepted == 0
    assert asm.traces_pending == 0 and asm.late_spans == 1


def test_per_trace_cap_and_pending_limit():
    clock = Clock()
    asm = make(clock, max_spans_per_trace=3, max_pending_spans=5)
    result = asm.add([span(T1, f"{i:016x}", "a" * 16) for i in range(1, 6)])
    assert (result.accepted, result.over_trace_cap) == (3, 2)
    assert asm.has_room_for(2) and not asm.has_room_for(3)


def test_an_empty_assembler_takes_one_request_larger_than_the_limit():
    asm = make(Clock(), max_pending_spans=2)
    assert asm.has_room_for(50)
    asm.add([span(T1, "a" * 16)])
    assert not asm.has_room_for(50)


def test_logs_wait_with_their_trace_and_count_towards_the_limit():
    clock = Clock()
    asm = make(clock, max_pending_spans=3)
    asm.add_logs([LogRecord(T1, "a" * 16, "gen_ai.client.inference.operation.details")])
    asm.add([span(T1, "a" * 16)])
    assert not asm.has_room_for(2)
    clock.now += 6
    done = pop_due(asm)
    assert len(done[0].logs) == 1 and asm.logs_pending == 0


def test_due_traces_come_out_in_deadline_order_and_limit_is_respected():
    clock = Clock()
    asm = make(clock)
    asm.add([span(T2, "a" * 16)])
    clock.now += 1
    asm.add([span(T1, "b" * 16)])
    clock.now += 10
    assert [d.trace_id for d in pop_due(asm, limit=1)] == [T2]
    assert [d.trace_id for d in pop_due(asm)] == [T1]


def test_flush_all_completes_everything():
    clock = Clock()
    asm = make(clock)
    asm.add([span(T1, "a" * 16, ended=False), span(T2, "b" * 16)])
    done = asm.flush_all()
    assert sorted(d.trace_id for d in done) == [T1, T2]
    assert {d.reason for d in done} == {"shutdown"} and asm.traces_pending == 0


def test_many_traces_heap_stays_bounded():
    clock = Clock()
    asm = make(clock)
    for i in range(1000):
        asm.add([span(f"{i + 1:032x}", "a" * 16)])
        asm.add([span(f"{i + 1:032x}", "b" * 16, "a" * 16)])
    assert len(asm._heap) <= 2 * 1000
    clock.now += 6
    assert len(pop_due(asm)) == 1000


def test_due_traces_wait_in_the_due_queue_and_keep_counting_against_memory():
    clock = Clock()
    asm = make(clock)  # quiet period 5s
    asm.add([span(T1, "a" * 16), span(T1, "c" * 16, parent="a" * 16), span(T2, "b" * 16)])
    assert asm.collect_due() == 0 and asm.due_count == 0  # in the quiet period: not evaluation work
    clock.now += 5.2
    assert asm.collect_due() == 2 and asm.due_count == 2
    assert asm.traces_pending == 2 and asm.spans_pending == 0 and asm.spans_held == 3
    first = asm.take_due(1)
    assert [c.trace_id for c in first] == [T1] and asm.due_count == 1 and asm.spans_held == 1
    assert [c.trace_id for c in asm.flush_all()] == [T2]
    assert asm.spans_held == 0 and asm.traces_pending == 0


def test_due_spans_count_against_the_pending_limit():
    clock = Clock()
    asm = TraceAssembler(quiet_period=5.0, max_pending_spans=2, clock=clock)
    asm.add([span(T1, "a" * 16), span(T2, "b" * 16)])
    clock.now += 6
    asm.collect_due()
    assert not asm.has_room_for(1)
    asm.take_due()
    assert asm.has_room_for(2)
