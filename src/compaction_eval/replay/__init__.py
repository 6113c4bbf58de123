"""What an agent still knows after compaction, measured on recorded traces.

- `replay`: a recorded trace fed message by message through a context policy at a window
  (the recorded assistant turns replayed as they were); at each labelled point, which
  expected facts the agent's context still shows, tokens, compactions and cache-aware cost;
- `decay`: a chain of K compactions, each summarising the previous summary plus what came
  after it; survival of the facts established before the first one, with re-derivations
  counted apart;
- `probes`: questions generated from the labels, asked with only the compacted context,
  graded by the recall suite's matchers;
- `run`: the three result files (`replay.json`, `decay.json`, `probes.json`), written
  atomically into a run directory.
"""
