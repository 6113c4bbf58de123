"""What people read: the HTML report (`render.render_report`), terminal tables (`tables`),
and the gate's CI outputs. Nothing here computes a number the flow computed upstream.

The package itself imports nothing: the terminal tables must not pay for matplotlib.
"""
