"""Tool definitions of the worlds, as inspect ToolInfo (the suite's loop executes them)."""

from __future__ import annotations

from inspect_ai.tool import ToolInfo, ToolParams
from inspect_ai.util import JSONSchema

from compaction_eval.horizon.worlds import World


def _tool(name: str, description: str, **params: str) -> ToolInfo:
    optional = {"db"}
    return ToolInfo(
        name=name,
        description=description,
        parameters=ToolParams(
            properties={p: JSONSchema(type="string", description=d) for p, d in params.items()},
            required=[p for p in params if p not in optional],
        ),
    )


def world_tools(world: World) -> list[ToolInfo]:
    """The workspace tools; each description carries the world's tag."""
    tag = world.tag
    return [
        _tool("read_file", f"Read a whole file of the workspace. {tag}", path="file path"),
        _tool("grep", f"Search files under a directory for a literal string (2 lines of context). {tag}",
              pattern="literal text to find", path="directory to search"),
        _tool("list_dir", f"List a directory of the workspace. {tag}", path="directory path"),
        _tool("run_tests", f"Run the test suite and print the results. {tag}"),
        _tool("query", f"Run a SQL query against a database. {tag}", sql="the SQL text",
              db='database: "primary" (default) or "replica"'),
    ]


SUBMIT_TOOL = _tool("submit", "Submit the final answer (ends the task).", answer="the answer")
