"""A run history: every run's figures in one SQLite file, trends over nights, and an alarm for
a drift nobody committed (`compaction-eval history add | show | check`)."""
