"""futurelm library: future language modeling from temporal document history.

Li & Flanigan, "Future Language Modeling from Temporal Document History", ICLR 2024.
One concept per module; stages/ holds the thin CLIs that DVC runs. See docs/design.md.
"""
