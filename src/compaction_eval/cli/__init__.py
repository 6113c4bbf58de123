"""The command line: the only place that parses arguments or prints."""
