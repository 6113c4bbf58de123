"""`compaction-eval prompts list | show NAME | copy NAME DIR`, `init DIR` and `docs [TOPIC]`:
bringing your own prompt, starting from a packaged one, without `python -c`.

The packaged prompts are the ones `run` uses outside a project (contracts/paths.py); a copied
prompt keeps working without its partials (`_span.j2` is read from the package when it is not
beside the prompt: contracts/prompts.py). The prompt format is docs/prompts.md, shipped in the
package (`compaction-eval docs prompts`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from compaction_eval.contracts.problems import ContractError, Problem

PACKAGE = Path(__file__).resolve().parent.parent
DOCS = PACKAGE / "docs"
SCAFFOLD = PACKAGE / "scaffold"
# topic -> the shipped file (labels.md is written with the key lint; shown when present)
TOPICS = {"prompts": "prompts.md", "labels": "labels.md"}


def docs_path(topic: str) -> Path:
    return DOCS / TOPICS[topic]


def _packaged() -> dict[str, Path]:
    from compaction_eval.contracts.prompts import load_candidates, packaged_prompts

    return {c.name: c.path for c in load_candidates([packaged_prompts()])}


def _find(name: str) -> Path:
    """A packaged prompt by name, or a template file given as a path."""
    packaged = _packaged()
    if name in packaged:
        return packaged[name]
    if name.endswith(".j2") and Path(name).is_file():
        return Path(name)
    raise ContractError([Problem(name, "", f"no packaged prompt of that name (packaged: {', '.join(sorted(packaged))}; "
                                           "or give a .j2 file)")])


def cmd_prompts_list(args: argparse.Namespace) -> int:
    from compaction_eval.contracts.paths import resolve_inputs
    from compaction_eval.contracts.prompts import load_candidates, packaged_prompts

    folders = [Path(p) for p in (args.prompts or [])] or list(dict.fromkeys([*resolve_inputs(None, "prompts"), packaged_prompts()]))
    rows: list[dict[str, Any]] = []
    for folder in folders:
        for c in load_candidates([folder]):
            packaged = c.path.resolve().parent == packaged_prompts().resolve()
            rows.append({"name": c.name, "file": str(c.path), "packaged": packaged, "fields": list(c.fields), "description": c.description})
    if getattr(args, "format", "text") == "json":
        print(json.dumps({"command": "prompts list", "prompts": rows}, indent=1, ensure_ascii=False))
        return 0
    for r in rows:
        where = "packaged" if r["packaged"] else r["file"]
        print(f"{r['name']:<18} {len(r['fields']):>2} fields  {where}")
        if r["description"]:
            print(f"{'':<18} {r['description'][:110]}")
    print("copy one to edit: compaction-eval prompts copy NAME DIR [--name NEW]; the format: compaction-eval docs prompts",
          file=sys.stderr)
    return 0


def cmd_prompts_show(args: argparse.Namespace) -> int:
    sys.stdout.write(_find(args.name).read_text(encoding="utf-8"))
    return 0


def renamed(text: str, name: str, where: str) -> str:
    """`text` (a template) with its header's `name:` set to `name`."""
    from compaction_eval.contracts.prompts import HEADER_BLOCK, PROMPT_NAME, with_name

    if not PROMPT_NAME.fullmatch(name):
        raise ContractError([Problem("--name", "", f"{name!r}: a name is letters, digits, '_', '.' and '-'")])
    if not HEADER_BLOCK.match(text):
        raise ContractError([Problem(where, "line 1", "missing metadata header {#- name: ... -#}")])
    return with_name(text, name)


def copy_prompt(name: str, folder: Path, *, new_name: str | None = None, force: bool = False) -> Path:
    """Copy a packaged prompt into `folder` as `<new_name or name>.j2`; an existing file is
    refused unless `force`. The copy is checked (it renders) before it is written."""
    from compaction_eval.contracts.prompts import load_candidate
    from compaction_eval.contracts.runfiles import write_text_new

    source = _find(name)
    text = source.read_text(encoding="utf-8")
    if new_name:
        text = renamed(text, new_name, str(source))
    target = write_text_new(folder / f"{new_name or source.stem}.j2", text, force=force, flag="the copy")
    load_candidate(target)  # a copy must work where it is (`_span.j2` from the package)
    return target


def cmd_prompts_copy(args: argparse.Namespace) -> int:
    target = copy_prompt(args.name, Path(args.dir), new_name=args.new_name, force=args.force)
    print(target)
    print(f"prompts copy: {target} (edit it, then: compaction-eval lint {target})", file=sys.stderr)
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """prompts/<name>.j2 (a copy of a packaged prompt), labels/ and fixtures/traces/ with a
    README each, and a CI workflow; nothing that exists is overwritten."""
    from compaction_eval.contracts.runfiles import write_text_new

    root = Path(args.dir)
    files = {
        Path("labels/README.md"): (SCAFFOLD / "labels-README.md").read_text(encoding="utf-8"),
        Path("fixtures/traces/README.md"): (SCAFFOLD / "traces-README.md").read_text(encoding="utf-8"),
        Path(".github/workflows/compaction-eval.yml"): (SCAFFOLD / "workflow.yml").read_text(encoding="utf-8"),
    }
    prompt = root / "prompts" / f"{args.name}.j2"
    existing = [p for p in [prompt, *(root / f for f in files)] if p.exists()]
    if existing:
        raise ContractError([Problem(str(p), "", "exists: init never overwrites (remove it or choose another DIR)") for p in existing])
    copy_prompt(args.prompt, root / "prompts", new_name=args.name)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        write_text_new(root / rel, text)
    for rel in [prompt.relative_to(root), *files]:
        print(root / rel)
    print(f"init: {root}: next, import a trace into fixtures/traces, draft its labels, then `compaction-eval lint` "
          f"and `compaction-eval recall` (see labels/README.md)", file=sys.stderr)
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    path = docs_path(args.topic)
    if not path.is_file():
        raise ContractError([Problem(str(path), "", f"the {args.topic} document is not in this installation")])
    if args.path:
        print(path)
        return 0
    sys.stdout.write(path.read_text(encoding="utf-8"))
    return 0


def lint_prompt_files(paths: list[Path], *, shape: str, show: bool = True) -> tuple[int, list[Problem]]:
    """The prompt lint of `lint` (compaction/promptlint.py): problems printed on stdout as
    lint prints them (unless not `show`: `--format json` prints only its document there),
    warnings and notes on stderr; returns (prompts linted, problems)."""
    from compaction_eval.cli.common import terminal_safe
    from compaction_eval.compaction.promptlint import lint_prompt, prompt_files

    files = prompt_files(paths)
    problems: list[Problem] = []
    for f in files:
        found = lint_prompt(f, shape=shape)  # type: ignore[arg-type]
        problems += found.problems
        for p in found.problems if show else []:
            print(terminal_safe(str(p)))
        for line in [*found.warnings, *found.notes]:
            print(line, file=sys.stderr)
    return len(files), problems


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prompts", help="the packaged prompts: list, show one, copy one to edit (format: `compaction-eval docs prompts`)")
    prompts_sub = p.add_subparsers(dest="prompts_command", required=True)
    q = prompts_sub.add_parser("list", help="the prompts with their fields and descriptions (the project's and the packaged ones)")
    q.add_argument("--prompts", nargs="+", help="list these files or folders instead")
    q.add_argument("--format", choices=["text", "json"], default="text")
    q.set_defaults(func=cmd_prompts_list)
    q = prompts_sub.add_parser("show", help="print a prompt template (a packaged prompt's name, or a .j2 file)")
    q.add_argument("name")
    q.set_defaults(func=cmd_prompts_show)
    q = prompts_sub.add_parser("copy", help="copy a packaged prompt into DIR to edit it (its _span.j2 comes from the package)")
    q.add_argument("name", help="a packaged prompt's name (compaction-eval prompts list)")
    q.add_argument("dir", help="the folder to copy it into (created)")
    q.add_argument("--name", dest="new_name", help="the copy's name (file NAME.j2 and header name); default: the original's")
    q.add_argument("--force", action="store_true", help="replace an existing file")
    q.set_defaults(func=cmd_prompts_copy)

    p = sub.add_parser("init", help="scaffold a project: prompts/ (a copy of a packaged prompt), labels/, fixtures/traces/, a CI workflow")
    p.add_argument("dir", nargs="?", default=".", help="the project folder (default: here)")
    p.add_argument("--prompt", default="handoff", help="the packaged prompt to start from (default: handoff)")
    p.add_argument("--name", default="mine", help="your prompt's name (default: mine)")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("docs", help="the shipped documentation: the prompt format (prompts), the labels format (labels)")
    p.add_argument("topic", choices=sorted(TOPICS), nargs="?", default="prompts")
    p.add_argument("--path", action="store_true", help="print where the file is instead of its text")
    p.set_defaults(func=cmd_docs)
