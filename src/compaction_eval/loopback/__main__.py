"""`python -m compaction_eval.loopback --port N [--fault KIND[:COUNT]] [--always KIND]`:
serve the loopback Messages API until interrupted; point a client at it with
ANTHROPIC_BASE_URL=http://127.0.0.1:N and any dummy ANTHROPIC_API_KEY."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from compaction_eval.loopback.cache_model import PrefixCache
from compaction_eval.loopback.faults import FAULT_KINDS, Fault, parse_fault
from compaction_eval.loopback.server import LoopbackServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compaction_eval.loopback", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--fault", action="append", default=[], help=f"queue a fault for the next requests: KIND[:COUNT], KIND in {', '.join(FAULT_KINDS)}")
    parser.add_argument("--always", help="a fault for every request after the queue")
    parser.add_argument("--retry-after", type=float, default=0.0, help="retry-after seconds of a 429")
    parser.add_argument("--delay", type=float, default=5.0, help="seconds a slow answer waits")
    parser.add_argument("--min-cache-tokens", type=int, default=1024, help="shortest cacheable prefix")
    parser.add_argument("--log", help="write the request log (JSON lines) here on exit")
    args = parser.parse_args(argv)
    server = LoopbackServer(args.port, cache=PrefixCache(min_tokens=args.min_cache_tokens))
    for spec in args.fault:
        fault, count = parse_fault(spec)
        server.faults.push(Fault(fault.kind, args.retry_after, args.delay), count or 1)
    if args.always:
        server.faults.always(Fault(args.always, args.retry_after, args.delay))
    # Stop cleanly on SIGTERM and on SIGINT even when started in the background (where
    # the shell leaves SIGINT ignored).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    server.start()
    print(f"loopback Messages API on {server.url} (ANTHROPIC_BASE_URL={server.url})", file=sys.stderr, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if args.log:
            with open(args.log, "w", encoding="utf-8") as fh:
                for entry in server.requests:
                    fh.write(json.dumps(entry) + "\n")
        print(f"served {len(server.served())} generation request(s); billed input {server.billed_input():.0f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
