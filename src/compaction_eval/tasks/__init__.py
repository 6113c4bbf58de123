"""The inspect tasks. Each task file only wires dataset, solver and scorer together."""
