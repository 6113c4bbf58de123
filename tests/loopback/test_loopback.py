"""The loopback Messages API server, through the real `anthropic` SDK: answers (JSON and
server-sent events, text and tool use), count_tokens, batches, the prefix-cache arithmetic
and every injected fault."""

from __future__ import annotations

import time

import anthropic
import httpx
import pytest

from compaction_eval.loopback import (
    Fault,
    FaultPlan,
    LoopbackServer,
    PrefixCache,
    Usage,
    billed_input,
)
from compaction_eval.loopback.cache_model import request_blocks
from compaction_eval.loopback.faults import parse_fault

KEY = "sk-ant-DUMMY-KEY-0123456789"
SPAN = [
    {"role": "user", "content": "Fix the failing test in src/billing/invoice.py; do not change the public API."},
    {"role": "assistant", "content": [
        {"type": "text", "text": "I will run the tests first."},
        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "pytest tests/test_invoice.py"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1",
         "content": "FAILED tests/test_invoice.py::test_total - AssertionError: 347 != 346"}]},
    {"role": "assistant", "content": "The rounding in total() drops a cent; I decided to use Decimal because floats lose cents."},
]
INSTRUCTION = {"role": "user", "content": "Summarise the conversation above. Preserve file paths, exact error messages and numbers."}
TOOLS = [{"name": "bash", "description": "run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


@pytest.fixture
def server():
    srv = LoopbackServer(cache=PrefixCache(min_tokens=50)).start()
    try:
        yield srv
    finally:
        srv.stop()


def client(server: LoopbackServer, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0, **kw)


def settled(server: LoopbackServer, n: int) -> list[dict]:
    """The request log once it holds `n` entries (a handler records after it answered)."""
    deadline = time.monotonic() + 5
    while len(server.requests) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return server.requests


def request(**extra):
    return dict(model="claude-test", max_tokens=300, messages=[*SPAN, INSTRUCTION], **extra)


def test_json_and_streamed_answers_agree_and_summarise_the_span(server):
    c = client(server)
    plain = c.messages.create(**request())
    with c.messages.stream(**request()) as stream:
        streamed = stream.get_final_message()
    assert plain.content[0].text == streamed.content[0].text
    text = plain.content[0].text
    # the extractive summariser kept what the instruction asks for, from the span
    assert "src/billing/invoice.py" in text and "347 != 346" in text
    assert plain.stop_reason == streamed.stop_reason == "end_turn"
    assert streamed.usage.output_tokens == plain.usage.output_tokens > 0
    assert [r["stream"] for r in settled(server, 2)] == [False, True]


def test_tool_use_answer_streamed_and_not(server):
    c = client(server)
    ask = dict(model="claude-test", max_tokens=100, tools=TOOLS, messages=[{"role": "user", "content": 'CALL bash {"command": "ls src"}'}])
    plain = c.messages.create(**ask)
    with c.messages.stream(**ask) as stream:
        streamed = stream.get_final_message()
    for message in (plain, streamed):
        assert message.stop_reason == "tool_use"
        block = message.content[0]
        assert block.type == "tool_use" and block.name == "bash" and block.input == {"command": "ls src"}


def test_count_tokens_is_the_total_input_and_does_not_touch_the_cache(server):
    c = client(server)
    counted = c.messages.count_tokens(model="claude-test", messages=[*SPAN, INSTRUCTION], system="be brief")
    usage = c.messages.create(**request(system="be brief")).usage
    assert counted.input_tokens == usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    assert usage.cache_read_input_tokens == 0  # count_tokens wrote nothing


def test_missing_key_and_bad_json_are_client_errors(server):
    r = httpx.post(f"{server.url}/v1/messages", json=request())
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    r = httpx.post(f"{server.url}/v1/messages", content=b"{nope", headers={"x-api-key": KEY})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    # the key is never recorded, only that one was sent
    assert KEY not in repr(server.requests)


def test_batch_endpoints(server):
    c = client(server)
    batch = c.messages.batches.create(requests=[{"custom_id": f"s{i}", "params": request()} for i in range(2)])
    info = c.messages.batches.retrieve(batch.id)
    assert info.processing_status == "ended" and info.request_counts.succeeded == 2
    results = {r.custom_id: r for r in c.messages.batches.results(batch.id)}
    assert set(results) == {"s0", "s1"} and results["s0"].result.type == "succeeded"
    assert "invoice.py" in results["s1"].result.message.content[0].text
    assert len([r for r in settled(server, 5) if r["path"] == "batch"]) == 2


# ------------------------------------------------------------------------- cache model


def _cached_request(instruction: str, **kw):
    span = [dict(m) for m in SPAN]
    last = span[-1]
    span[-1] = {"role": "assistant", "content": [{"type": "text", "text": last["content"], "cache_control": {"type": "ephemeral"}}]}
    return {"model": "m", "max_tokens": 10, "messages": [*span, {"role": "user", "content": instruction}], **kw}


def test_prefix_cache_writes_then_reads_the_shared_prefix():
    cache = PrefixCache(min_tokens=50)
    first = cache.usage(_cached_request("Summarise, keep paths."))
    second = cache.usage(_cached_request("Summarise tersely."))
    prefix = sum(b.tokens for b in request_blocks(_cached_request("x"))[:-1])
    assert first.cache_read_input_tokens == 0 and first.cache_creation_input_tokens == prefix
    assert second.cache_read_input_tokens == prefix and second.cache_creation_input_tokens == 0
    assert second.input_tokens == first.input_tokens - request_blocks(_cached_request("Summarise, keep paths."))[-1].tokens + request_blocks(_cached_request("Summarise tersely."))[-1].tokens
    # billing: 1.25x write, 0.1x read
    assert first.billed == pytest.approx(first.input_tokens + 1.25 * prefix)
    assert billed_input(second) == pytest.approx(second.input_tokens + 0.1 * prefix)


def test_prefix_cache_minimum_length_ttl_and_automatic_breakpoint():
    now = [0.0]
    small = PrefixCache(min_tokens=10_000, clock=lambda: now[0])
    assert small.usage(_cached_request("a")).cache_creation_input_tokens == 0  # too short to cache
    cache = PrefixCache(min_tokens=50, clock=lambda: now[0])
    cache.usage(_cached_request("a"))
    now[0] = 299.0
    assert cache.usage(_cached_request("b")).cache_read_input_tokens > 0  # read refreshes the TTL
    now[0] = 598.0
    assert cache.usage(_cached_request("c")).cache_read_input_tokens > 0
    now[0] = 1000.0  # 5 minutes idle: expired, written again
    expired = cache.usage(_cached_request("d"))
    assert expired.cache_read_input_tokens == 0 and expired.cache_creation_input_tokens > 0
    # top-level cache_control: the breakpoint is the last block, so everything is written
    auto = PrefixCache(min_tokens=50).usage({"messages": [*SPAN, INSTRUCTION], "cache_control": {"type": "ephemeral"}})
    assert auto.input_tokens == 0 and auto.cache_creation_input_tokens == Usage(**auto.__dict__).total
    # no breakpoint at all: nothing cached
    assert PrefixCache(min_tokens=50).usage({"messages": [*SPAN, INSTRUCTION]}).cache_creation_input_tokens == 0


def test_lookback_finds_an_earlier_breakpoint():
    cache = PrefixCache(min_tokens=50)
    cache.usage(_cached_request("first"))
    # the next turn adds messages and moves its breakpoint to the new last block
    longer = {"messages": [*SPAN, {"role": "user", "content": "more"}, {"role": "assistant", "content": "ok"}],
              "cache_control": {"type": "ephemeral"}}
    assert cache.usage(longer).cache_read_input_tokens > 0


# ------------------------------------------------------------------------------ faults


def test_rate_limit_overloaded_and_server_error_statuses(server):
    server.faults.push(Fault("rate_limit", retry_after=7)).push("overloaded").push("server_error")
    c = client(server)
    with pytest.raises(anthropic.RateLimitError) as limited:
        c.messages.create(**request())
    assert limited.value.response.headers["retry-after"] == "7"
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        c.messages.create(**request())
    assert overloaded.value.status_code == 529 and "overloaded_error" in overloaded.value.response.text
    with pytest.raises(anthropic.InternalServerError):
        c.messages.create(**request())
    assert c.messages.create(**request()).content  # queue consumed: answers again
    assert [r.get("fault") for r in settled(server, 4)] == ["rate_limit", "overloaded", "server_error", None]


def test_sdk_retries_through_queued_faults(server):
    server.faults.push("rate_limit", 2).push("overloaded")
    c = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=3)
    assert c.messages.create(**request()).content
    assert [r["status"] for r in settled(server, 4)] == [429, 429, 529, 200]


def test_slow_drop_and_malformed(server):
    server.faults.push(Fault("slow", delay=3.0)).push("drop").push("malformed").push("malformed")
    c = client(server, timeout=0.5)
    with pytest.raises(anthropic.APITimeoutError):
        c.messages.create(**request())
    with pytest.raises(anthropic.APIConnectionError):
        c.messages.create(**request())
    with pytest.raises(Exception) as bad_json:  # the SDK fails on the body, not the status
        c.messages.create(**request())
    assert not isinstance(bad_json.value, anthropic.APIStatusError)
    with pytest.raises(Exception) as bad_stream:  # noqa: B017 - the SDK's type for a malformed stream is not its API
        with c.messages.stream(**request()) as stream:
            stream.get_final_message()
    assert not isinstance(bad_stream.value, anthropic.APIStatusError)


def test_persistent_fault_and_hang_release(server):
    server.faults.always("server_error")
    c = client(server)
    for _ in range(3):
        with pytest.raises(anthropic.InternalServerError):
            c.messages.create(**request())
    server.faults.clear()
    server.faults.push("hang")
    started = time.monotonic()
    import threading

    threading.Timer(0.5, server.faults.clear).start()
    with pytest.raises(anthropic.APIConnectionError):  # held, then dropped unanswered
        c.messages.create(**request())
    assert time.monotonic() - started >= 0.4
    assert settled(server, 4)[-1]["status"] == "held" and server.billed_input() == 0


def test_fault_plan_specs():
    assert parse_fault("rate_limit:3") == (Fault("rate_limit"), 3)
    assert parse_fault("overloaded") == (Fault("overloaded"), None)
    with pytest.raises(ValueError):
        Fault("meteor")
    plan = FaultPlan().after(2, "server_error")
    assert [getattr(plan.next(), "kind", None) for _ in range(4)] == [None, None, "server_error", "server_error"]


def test_concurrent_requests_all_write_until_the_first_answer_is_sent():
    cache = PrefixCache(min_tokens=50)
    (a, commit_a), (b, commit_b) = cache.begin(_cached_request("one")), cache.begin(_cached_request("two"))
    assert a.cache_creation_input_tokens == b.cache_creation_input_tokens > 0 and b.cache_read_input_tokens == 0
    commit_a()
    commit_b()
    assert cache.usage(_cached_request("three")).cache_read_input_tokens == a.cache_creation_input_tokens
