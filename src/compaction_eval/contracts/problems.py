"""Problems found in input files, reported with the file and the place inside it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One problem in one input file.

    Args:
        file: the file, as given by the user.
        place: where in the file: a JSON path (`messages[3].content[0]`), a message
            index, or a YAML line (`line 12, facts[2].keys[0]`).
        message: what is wrong, in one line.
    """

    file: str
    place: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.place}" if self.place else self.file
        return f"{where}: {self.message}"


class ContractError(Exception):
    """Input that breaks a data contract. `str()` is the first problem, one line."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        first = str(self.problems[0]) if self.problems else "invalid input"
        more = len(self.problems) - 1
        super().__init__(first + (f" (and {more} more problem(s))" if more > 0 else ""))

