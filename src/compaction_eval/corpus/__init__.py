"""Loading, checking, converting and describing corpora of traces and labels."""
