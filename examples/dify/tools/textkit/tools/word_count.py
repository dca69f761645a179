from collections import Counter
from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage


class WordCountTool(Tool):
    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        text = tool_parameters["text"]
        words = text.split()
        if tool_parameters.get("case", "fold") == "fold":
            words = [w.lower() for w in words]
        top = Counter(words).most_common(int(tool_parameters.get("top", 3)))
        result = {
            "words": len(words),
            "lines": len(text.splitlines()),
            "characters": len(text),
            "top": [{"word": w, "count": n} for w, n in top],
        }
        signature = self.runtime.credentials.get("signature")
        if signature:
            result["signed"] = True
        yield self.create_json_message(result)
