"""Typed stubs for toolgate_parse (the classes are defined in Rust)."""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__version__: str

JSON = Any
"""A JSON value as ``json.loads`` gives it."""

Tools = Union[Sequence[Mapping[str, JSON]], Mapping[str, Mapping[str, JSON]]]
"""Tool definitions (OpenAI's ``{"type": "function", "function": {...}}``, or
``{"name", "parameters"}``; ``input_schema`` and ``inputSchema`` are read too), or a
mapping of tool name -> parameters JSON Schema."""

class ToolCall:
    """One tool call, whatever dialect it was written in."""

    @property
    def id(self) -> str:
        """The model's own id (native and Hermes calls), else generated: ``call_1``, ..."""
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> Dict[str, JSON]:
        """Typed by the tool's schema when one was given; a new dict on each read."""
    def to_dict(self) -> Dict[str, JSON]: ...
    def __eq__(self, other: object) -> bool: ...

class Reasoning:
    """One block of reasoning (from a stream: one piece of a block)."""

    @property
    def text(self) -> str: ...
    @property
    def start(self) -> int:
        """Where the text starts in the input: a UTF-8 byte offset."""
    @property
    def end(self) -> int: ...
    def to_dict(self) -> Dict[str, JSON]: ...
    def __eq__(self, other: object) -> bool: ...

class Problem:
    """Something odd met while parsing."""

    @property
    def kind(self) -> str:
        """``unclosed_tag``, ``implicit_close``, ``invalid_json``, ``truncated_call``, ..."""
    @property
    def message(self) -> str: ...
    @property
    def offset(self) -> int:
        """Where in the input: a UTF-8 byte offset."""
    @property
    def call_id(self) -> Optional[str]: ...
    @property
    def tool(self) -> Optional[str]: ...
    def to_dict(self) -> Dict[str, JSON]: ...
    def __eq__(self, other: object) -> bool: ...

class TextDelta:
    """Streamed text that is not a call or reasoning."""

    text: str
    def __init__(self, text: str) -> None: ...
    def __eq__(self, other: object) -> bool: ...

class ParsedTurn:
    """The result of parsing one model output."""

    @property
    def text(self) -> str:
        """Everything that is not a call or reasoning, in order."""
    @property
    def reasoning(self) -> List[Reasoning]: ...
    @property
    def calls(self) -> List[ToolCall]: ...
    @property
    def problems(self) -> List[Problem]: ...
    def to_dict(self) -> Dict[str, JSON]:
        """The JSON shape ``toolgate parse`` prints."""
    def __eq__(self, other: object) -> bool: ...

Event = Union[TextDelta, Reasoning, ToolCall, Problem]

def parse(
    text: str,
    dialect: str = "auto",
    tools: Optional[Tools] = None,
    *,
    strict: bool = False,
    reasoning_opened: bool = False,
    id_prefix: str = "call_",
) -> ParsedTurn:
    """Parses one whole model output (text, a chat.completion JSON or an SSE recording).

    Raises ``ValueError`` for an unknown dialect or tools it cannot read.
    """

def dialects() -> List[str]:
    """The dialect names ``parse`` and ``StreamParser`` take (aliases left out)."""

class StreamParser:
    """A model output fed in chunks; any split gives what ``parse`` gives."""

    def __init__(
        self,
        dialect: str = "auto",
        tools: Optional[Tools] = None,
        *,
        strict: bool = False,
        reasoning_opened: bool = False,
        id_prefix: str = "call_",
    ) -> None: ...
    def feed(self, chunk: Union[str, bytes]) -> List[Event]:
        """The events the chunk completed. Bytes may be cut inside a character."""
    def finish(self) -> List[Event]:
        """Ends the output: the events of what was held back."""
