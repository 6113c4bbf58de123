"""`validate-matchers`: agreement of the matchers with the human gold set."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def cmd_validate_matchers(args: argparse.Namespace) -> int:
    from compaction_eval.compaction.recorded import provenance
    from compaction_eval.contracts.runfiles import write_json_atomic
    from compaction_eval.validation.headline import format_headline, format_judge_rounds, validate_all
    from compaction_eval.validation.matchers import format_table

    result = validate_all(args.gold, model=args.model, judge_model=args.judge_model)
    recorded = provenance()  # a `recorded/` judge: who wrote its answers, beside its kappa
    if recorded:
        result["recorded_answers"] = recorded
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, result)
    if args.format == "json":
        print(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        if recorded:
            print(f"({recorded['note']})")
        print(format_headline(result["headline"]))
        print("")
        if "judge_rounds" in result:
            print(format_judge_rounds(result))
            print("")
        print(format_table(result))
        print(f"\nresult: {out}")
    controls = result.get("controls")
    return 1 if controls and controls["passed"] < controls["n"] else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate-matchers", help="agreement of the matchers with the human-judged gold set (labels/gold): accuracy, F1, kappa per category")
    p.add_argument("--gold", default="labels/gold", help="gold set directory (default: labels/gold)")
    p.add_argument("--model", help="also run the LLM judge with this inspect model (e.g. anthropic/claude-...); offline without it")
    p.add_argument("--judge-model", help="the LLM judge's kappa (95%% intervals by category, style, source) on every blind round and the test part, "
                   "beside the matcher, keys only and the second reader: one request per gold summary of those parts")
    p.add_argument("--out", default="results/validation/matchers.json", help="where to write the JSON result (default: results/validation/matchers.json)")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_validate_matchers)
