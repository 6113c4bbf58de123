"""Paired comparison of two runs, the regression rules, and committed baselines."""
