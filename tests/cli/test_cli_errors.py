"""Provider errors reach the user whole: the install hint is not cut at its first line."""

from __future__ import annotations

from inspect_ai._util.error import pip_dependency_error

from compaction_eval.cli.errors import error_message


def test_missing_provider_package_gives_the_full_install_hint_without_markup():
    exc = pip_dependency_error("OpenAI API", ["openai"])  # what inspect raises for --model openai/...
    msg = error_message(exc)
    assert "[bold]" not in msg and "\n" not in msg
    assert msg.startswith("OpenAI API requires optional dependencies")
    assert "pip install openai" in msg
    assert "compaction-eval[openai]" in msg


def test_google_maps_to_its_extra_and_plain_errors_pass_through():
    assert "compaction-eval[google]" in error_message(pip_dependency_error("Google API", ["google-genai"]))
    assert error_message(ValueError("bad value\nsecond line")) == "bad value second line"
