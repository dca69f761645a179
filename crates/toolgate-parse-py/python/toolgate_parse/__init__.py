"""toolgate-parse: every written form of a model's tool call, whole or streamed.

``parse(text)`` reads one whole model output; ``StreamParser`` one fed in chunks. Both
come from the Rust crate toolgate-parse (the module ``toolgate_parse._native``).
"""

from ._native import (
    ParsedTurn,
    Problem,
    Reasoning,
    StreamParser,
    TextDelta,
    ToolCall,
    __version__,
    dialects,
    parse,
)

__all__ = [
    "ParsedTurn",
    "Problem",
    "Reasoning",
    "StreamParser",
    "TextDelta",
    "ToolCall",
    "__version__",
    "dialects",
    "parse",
]
