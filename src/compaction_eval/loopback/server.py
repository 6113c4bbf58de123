"""The loopback Messages API server (stdlib `http.server`, one thread per connection).

Endpoints: `POST /v1/messages` (JSON, or server-sent events when `"stream": true`),
`POST /v1/messages/count_tokens`, and the message-batch endpoints
(`POST /v1/messages/batches`, `GET /v1/messages/batches/<id>`, `.../results`,
`POST .../cancel`); batches end as soon as they are created.

Every request is recorded in `server.requests` when it arrives (path, request identity,
status, fault, usage; the status and usage are filled in before the answer is sent, and
`answered`, the time the last byte of a generation answer was written, after); API keys
are never recorded, only whether one was sent.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from compaction_eval.loopback.cache_model import PrefixCache, Usage
from compaction_eval.loopback.faults import Fault, FaultPlan
from compaction_eval.loopback.responder import JudgeScript, answer, request_key
from compaction_eval.loopback.sse import message_events

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


class LoopbackServer:
    """A Messages API stand-in bound to 127.0.0.1.

    Args:
        port: 0 for an ephemeral port.
        faults: the fault plan (a new empty one by default); change it while running.
        cache: the prompt-cache model (min 1024 tokens by default).
        keep_bodies: keep every request body in `server.bodies` (to check what was sent).
        judge_script: answers LLM judge requests (`responder.JudgeScript`); change it while
            running. None: judge requests get the summariser's answer like any other.

    Use as a context manager, or `start()` / `stop()`.
    """

    def __init__(
        self, port: int = 0, faults: FaultPlan | None = None, cache: PrefixCache | None = None, keep_bodies: bool = False,
        judge_script: JudgeScript | None = None,
    ) -> None:
        self.judge_script = judge_script
        self.faults = faults or FaultPlan()
        self.cache = cache or PrefixCache()
        self.requests: list[dict[str, Any]] = []
        self.keep_bodies = keep_bodies
        self.bodies: list[str] = []
        self.batches: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release held requests, close the socket."""
        self.stopping.set()
        self.faults.released.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- bookkeeping

    def next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):06d}"

    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            entry["seq"] = len(self.requests)
            entry["time"] = time.time()
            self.requests.append(entry)
        return entry

    def served(self) -> list[dict[str, Any]]:
        """Generation requests answered successfully (what a provider would bill)."""
        return [r for r in self.requests if r["path"] in ("/v1/messages", "batch") and r["status"] == 200]

    def billed_input(self) -> float:
        """Billed input of every served request, in uncached-token units."""
        return sum(Usage(**r["usage"]).billed for r in self.served())

    def respond(self, request: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """A complete answer with usage from the cache model, and the function that stores
        its cache writes (call it once the answer has been sent)."""
        message = answer(request, self.next_id("msg"), self.judge_script)
        usage, commit = self.cache.begin(request)
        message["usage"] = {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "output_tokens": message["usage"]["output_tokens"],
        }
        return message, commit


def _usage_of(message: dict[str, Any]) -> dict[str, int]:
    u = message["usage"]
    return {k: u[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}


def _handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: a dropped one is clean

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # the request log is server.requests; stderr stays quiet

        # ------------------------------------------------------------ plumbing

        def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", server.next_id("req"))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
            body = {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}
            self._send_json(status, body, headers)

        def _body(self) -> dict[str, Any] | None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if server.keep_bodies:
                server.bodies.append(raw.decode("utf-8", "replace"))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return None
            return body if isinstance(body, dict) else None

        def _authorised(self) -> bool:
            return bool(self.headers.get("x-api-key") or self.headers.get("authorization"))

        # ------------------------------------------------------------ routes

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            body = self._body()
            entry: dict[str, Any] = server.record({"path": path, "key_sent": self._authorised(), "status": None})
            try:
                if not entry["key_sent"]:
                    entry["status"] = 401
                    self._send_error(401, "x-api-key header is required")
                elif body is None:
                    entry["status"] = 400
                    self._send_error(400, "request body is not valid JSON")
                elif path == "/v1/messages":
                    self._messages(body, entry)
                elif path == "/v1/messages/count_tokens":
                    entry["status"] = 200
                    self._send_json(200, {"input_tokens": server.cache.usage(body, dry_run=True).total})
                elif path == "/v1/messages/batches":
                    self._create_batch(body, entry)
                elif path.startswith("/v1/messages/batches/") and path.endswith("/cancel"):
                    batch = server.batches.get(path.split("/")[4])
                    entry["status"] = 200 if batch else 404
                    self._send_json(200, batch["info"]) if batch else self._send_error(404, "no such batch")
                else:
                    entry["status"] = 404
                    self._send_error(404, f"no route {path}")
            except (BrokenPipeError, ConnectionResetError):
                entry["status"] = entry.get("status") or "client_gone"

        def do_GET(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            parts = path.strip("/").split("/")
            entry: dict[str, Any] = server.record({"path": path, "key_sent": self._authorised(), "status": None})
            batch = server.batches.get(parts[3]) if len(parts) >= 4 and parts[:3] == ["v1", "messages", "batches"] else None
            try:
                if batch is None:
                    entry["status"] = 404
                    self._send_error(404, f"no route {path}")
                elif len(parts) == 5 and parts[4] == "results":
                    entry["status"] = 200
                    data = "".join(json.dumps(r) + "\n" for r in batch["results"]).encode("utf-8")
                    self.send_response(200)
                    self.send_header("Content-Type", "application/binary")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    entry["status"] = 200
                    self._send_json(200, batch["info"])
            except (BrokenPipeError, ConnectionResetError):
                entry["status"] = "client_gone"

        # ------------------------------------------------------------ messages

        def _fault(self, fault: Fault | None, entry: dict[str, Any], stream: bool) -> bool:
            """Apply `fault`; True when the request was answered (or dropped) by it."""
            if fault is None:
                return False
            entry["fault"] = fault.kind
            if fault.kind == "rate_limit":
                entry["status"] = 429
                self._send_error(429, "rate limited (loopback fault)", {"retry-after": f"{fault.retry_after:g}"})
            elif fault.kind == "overloaded":
                entry["status"] = 529
                self._send_error(529, "Overloaded (loopback fault)")
            elif fault.kind == "server_error":
                entry["status"] = 500
                self._send_error(500, "Internal server error (loopback fault)")
            elif fault.kind == "drop":
                entry["status"] = "dropped"
                self.close_connection = True
            elif fault.kind == "hang":
                # Held without an answer, then dropped: never answered, never billed.
                server.faults.released.wait()
                entry["status"] = "held"
                self.close_connection = True
            elif fault.kind == "malformed":
                entry["status"] = "malformed"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
                self.end_headers()
                self.wfile.write(b"event: message_start\ndata: {not json\n\n" if stream else b'{"id": "msg_broken", "content": [')
            elif fault.kind == "slow":
                server.stopping.wait(fault.delay)
                return False  # then answered normally, usually after the client gave up
            return True

        def _messages(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
            stream = bool(body.get("stream"))
            entry.update(request=request_key(body), model=body.get("model"), stream=stream)
            if not isinstance(body.get("messages"), list) or not body.get("max_tokens"):
                entry["status"] = 400
                self._send_error(400, "messages and max_tokens are required")
                return
            if self._fault(server.faults.next(), entry, stream):
                return
            message, commit = server.respond(body)
            entry.update(usage=_usage_of(message), message=message["id"])
            entry["status"] = 200
            try:
                if not stream:
                    self._send_json(200, message)
                    self.wfile.flush()
                    entry["answered"] = time.time()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in message_events(message):
                    self.wfile.write(chunk)
                self.wfile.flush()
                entry["answered"] = time.time()  # the whole answer is with the client
            finally:
                commit()

        def _create_batch(self, body: dict[str, Any], entry: dict[str, Any]) -> None:
            batch_id = server.next_id("msgbatch")
            results = []
            for item in body.get("requests") or []:
                params = item.get("params") or {}
                message, commit = server.respond(params)
                commit()
                results.append({"custom_id": item.get("custom_id"), "result": {"type": "succeeded", "message": message}})
                server.record({"path": "batch", "status": 200, "request": request_key(params), "model": params.get("model"),
                               "stream": False, "usage": _usage_of(message), "batch": batch_id})
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            info = {
                "id": batch_id, "type": "message_batch", "processing_status": "ended",
                "request_counts": {"processing": 0, "succeeded": len(results), "errored": 0, "canceled": 0, "expired": 0},
                "created_at": now, "ended_at": now, "expires_at": now, "archived_at": None, "cancel_initiated_at": None,
                "results_url": f"{server.url}/v1/messages/batches/{batch_id}/results",
            }
            server.batches[batch_id] = {"info": info, "results": results}
            entry.update(status=200, batch=batch_id)
            self._send_json(200, info)

    return Handler
