"""The ground floor: located errors, token counts, and the data contracts.

Traces (trace@1), labels (labels@1), prompts (jinja2 candidates) and run files (results@1 and
the atomic writer every run uses). Everything above reads its inputs through here.
"""
