"""The runtime of generated tool code: plain modules whose source codegen copies into each tools.py.

A bundle runs in a sandbox worker with nothing but the standard library, so tools.py cannot import
factory; codegen copies `common` and the backend's store (`sqlite_store` or `files_store`) into it
instead. That fixes the layout of these modules: a docstring, `from __future__ import annotations`,
`import <stdlib module>` lines, an optional `if typing.TYPE_CHECKING:` block holding only the imports
that annotations use, then the code. Every name the code defines starts with `_` (constants aside): the
sandbox serves any public callable of tools.py as a tool, so `from x import name` is no option either.
"""
