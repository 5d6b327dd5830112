"""A user's pass written as a module, like Ren's own (NAME, docstring, run): tests/test_pipeline.

Rewrites: nothing (it only looks).
"""

NAME = "looks_only"


def run(sink, ctx=None):
    return sink
