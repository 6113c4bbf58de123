"""`lint`, `import`, `labels draft` and `corpus`: checking, converting and describing corpora."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from compaction_eval.cli.common import DEFAULT_LABELS, DEFAULT_TRACES, error, terminal_safe, whole
from compaction_eval.contracts.problems import ContractError


def cmd_lint(args: argparse.Namespace) -> int:
    from compaction_eval.cli.prompts import lint_prompt_files
    from compaction_eval.corpus.lint import draft_warnings, lint

    given = [Path(p) for p in args.paths]
    # prompt templates (.j2, and those in a given folder) get the prompt lint (cli/prompts.py)
    n_prompts, problems = lint_prompt_files(given, shape=args.shape, show=getattr(args, "format", "text") != "json")
    paths = [p for p in given if p.suffix != ".j2"] if given else [Path(p) for p in (*DEFAULT_TRACES, *DEFAULT_LABELS)]
    traces = labels = 0
    skipped: list[Path] = []
    found: list = []
    warnings: list = []
    if paths:
        traces, labels, found, skipped = lint(paths, [Path(d) for d in args.traces], warnings=warnings)
        problems += found
    failing = bool(problems) or (args.strict and bool(warnings))
    if getattr(args, "format", "text") == "json":
        from compaction_eval.cli.progress import emit_json

        emit_json({"command": "lint", "ok": not failing, "prompts": n_prompts, "traces": traces, "labels": labels,
                   "problems": [{"file": p.file, "place": p.place, "message": p.message} for p in problems],
                   "key_warnings": [str(w) for w in warnings], "strict": args.strict,
                   "skipped": [str(p) for p in skipped], "warnings": list(draft_warnings(paths))})
        return 1 if failing else 0
    if not paths:
        print(f"lint: {n_prompts} prompt(s): {f'{len(problems)} problem(s)' if problems else 'ok'}", file=sys.stderr)
        return 1 if problems else 0
    for p in found:  # the prompt lint printed its own
        print(terminal_safe(str(p)))
    for w in warnings:
        print(terminal_safe(f"warning: {w}"))
    for path in skipped:
        print(terminal_safe(f"note: skipped {path}: JSON that is not a trace"), file=sys.stderr)
    for warning in draft_warnings(paths):
        print(terminal_safe(str(warning)), file=sys.stderr)
    status = f"{len(problems)} problem(s)" if problems else "ok"
    if warnings:
        status += f", {len(warnings)} key warning(s)" + (" (--strict: failing)" if args.strict else "")
    prompts = f"{n_prompts} prompt(s), " if n_prompts else ""
    print(f"lint: {prompts}{traces} trace file(s), {labels} labels file(s): {status}", file=sys.stderr)
    return 1 if failing else 0


def cmd_import(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.importing import import_files

    written = import_files([Path(s) for s in args.src], args.from_format, Path(args.out), redact=not args.keep_secrets, force=args.force)
    for path in written:
        print(path)
    print(f"import: {len(written)} trace(s) written to {args.out}", file=sys.stderr)
    return 0


def cmd_labels_draft(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.drafting import draft_yaml, write_draft
    from compaction_eval.corpus.load import read_trace

    trace, problems = read_trace(Path(args.trace))
    if trace is None:
        raise ContractError(problems)
    if not 1 <= args.point <= len(trace.messages):
        return error(f"{args.trace}: point {args.point} is outside the trace (1..{len(trace.messages)})")
    if args.out:
        write_draft(trace, args.point, args.out, force=args.force)
        print(f"draft labels: {args.out} (edit them, then set labelled_by: human)", file=sys.stderr)
    else:
        sys.stdout.write(draft_yaml(trace, args.point))
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.load import load_corpus
    from compaction_eval.corpus.stats import corpus_table, format_corpus_table

    corpus = load_corpus(args.traces or DEFAULT_TRACES, args.labels or DEFAULT_LABELS)
    table = corpus_table(corpus)
    print(json.dumps(table, indent=1) if args.format == "json" else format_corpus_table(table))
    return 0


def cmd_corpus_export(args: argparse.Namespace) -> int:
    from compaction_eval.corpus.export import export_hf
    from compaction_eval.corpus.load import load_corpus

    corpus = load_corpus(args.traces or DEFAULT_TRACES, args.labels or DEFAULT_LABELS)
    out = export_hf(corpus, Path(args.out), name=args.name, force=args.force)
    print(f"corpus export: {len(corpus.traces)} trace(s), {len(corpus.labels)} labelled, written to {out} "
          f"(datasets.load_from_disk / load_dataset; read back with --traces hf:{out} --labels hf:{out})", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lint", help="check traces, labels and prompt templates (.j2); every problem with file and place",
                       epilog=f"How to write labels and keys (the key rule lint checks): {labels_doc()}")
    p.add_argument("paths", nargs="*", help=f"files or directories (default: {' '.join(DEFAULT_TRACES + DEFAULT_LABELS)})")
    p.add_argument("--traces", nargs="*", default=DEFAULT_TRACES, help="where the traces of linted labels live")
    p.add_argument("--strict", action="store_true",
                   help="also fail (exit 1) on key warnings: weak keys, fact texts that leak later events, "
                        "current avoid items, compound facts")
    p.add_argument("--shape", choices=["inline", "messages"], default="inline",
                   help="prompts: the shape they will run in (inline: the prompt must render the conversation)")
    from compaction_eval.cli.progress import add_format_arg

    add_format_arg(p)
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("import", help="convert traces from other formats into trace@1 files")
    p.add_argument("src", nargs="+")
    p.add_argument("--from", dest="from_format", help="source format (default: detected)")
    p.add_argument("--out", required=True)
    p.add_argument("--force", action="store_true", help="replace trace files of the same id already in --out")
    p.add_argument("--keep-secrets", action="store_true",
                   help="write what the sources hold (default: secret-looking strings are replaced, counted in metadata.redactions)")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("labels", help="work on labels files (draft)",
                       epilog=f"The labels format, with the key rule and a worked example: {labels_doc()}")
    labels_sub = p.add_subparsers(dest="labels_command", required=True)
    q = labels_sub.add_parser("draft", help="propose candidate facts at a point, as a labels file to edit")
    q.add_argument("trace", help="a trace file (trace@1 or any importable format)")
    q.add_argument("--point", type=whole(0), required=True, help="the compaction point: messages[0:POINT] is the history")
    q.add_argument("--out", help="write the draft here (default: standard output); an existing file is refused")
    q.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    q.set_defaults(func=cmd_labels_draft)

    p = sub.add_parser("corpus", help="corpus statistics: traces, tokens, points, facts by category, synthetic vs real, by source; export")
    _corpus_inputs(p)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_corpus)
    corpus_sub = p.add_subparsers(dest="corpus_command")
    q = corpus_sub.add_parser("export", help="write traces + labels + provenance as a Hugging Face dataset folder")
    q.add_argument("out", help="the dataset folder to write (an earlier export is replaced only with --force)")
    q.add_argument("--force", action="store_true", help="replace an earlier export in OUT (never a folder holding other files)")
    q.add_argument("--format", choices=["hf"], default="hf", help="hf: datasets.save_to_disk layout plus a dataset card")
    q.add_argument("--name", default="compaction-eval corpus", help="the dataset's name in its card")
    _corpus_inputs(q)
    q.set_defaults(func=cmd_corpus_export)


def labels_doc() -> Path:
    """The labels-format document shipped in the package (docs/labels.md)."""
    import compaction_eval

    return Path(compaction_eval.__file__).parent / "docs" / "labels.md"


def _corpus_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--traces", nargs="+", help=f"trace files or directories, or hf:DATASET (default: {' '.join(DEFAULT_TRACES)})")
    p.add_argument("--labels", nargs="+", help=f"labels files or directories (DIR#N: N labelled traces per source), or hf:DATASET (default: {' '.join(DEFAULT_LABELS)})")
