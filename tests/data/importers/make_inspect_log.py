"""Regenerate inspect-tool-run.eval: a tiny inspect eval run offline with mockllm/model.

Two samples; the scripted model calls a tool (`lookup`) and answers. Run from this directory:
`python make_inspect_log.py` (writes to a temporary log dir and copies the one .eval here).
"""

import shutil
import tempfile
from pathlib import Path

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, system_message, use_tools
from inspect_ai.tool import tool


@tool
def lookup():
    async def execute(key: str) -> str:
        """Look up a config value.

        Args:
            key: the config key.
        """
        return {"retry_limit": "347", "region": "eu-west-3"}.get(key, "ERROR: unknown key")

    return execute


def scripted() -> list[ModelOutput]:
    outs = []
    for key, answer in (("retry_limit", "The retry limit is 347."), ("region", "The region is eu-west-3.")):
        call = ModelOutput.for_tool_call("mockllm/model", "lookup", {"key": key}, content=f"Checking {key}.")
        done = ModelOutput.from_content("mockllm/model", answer)
        for o in (call, done):
            o.usage = ModelUsage(input_tokens=120, output_tokens=18, total_tokens=138)
        outs += [call, done]
    return outs


if __name__ == "__main__":
    task = Task(
        name="config_lookup",
        dataset=[Sample(id="retry", input="What is the retry limit?", target="347"),
                 Sample(id="region", input="Which region do we deploy to?", target="eu-west-3")],
        solver=[system_message("You answer from the config; use the lookup tool."), use_tools(lookup()), generate()],
        scorer=includes(),
    )
    with tempfile.TemporaryDirectory() as tmp:
        model = get_model("mockllm/model", custom_outputs=scripted())
        [log] = eval(task, model=model, log_dir=tmp, display="none", max_samples=1)
        shutil.copy(log.location, Path(__file__).parent / "inspect-tool-run.eval")
