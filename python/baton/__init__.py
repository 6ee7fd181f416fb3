"""baton's Python side: step events for `baton run`, training checks and tuners (baton.torch).

Importing this package imports nothing heavy; `baton.torch` imports torch.
"""

__version__ = "0.1.0"
