"""toolgate's adapter for Dify tools: runs one tool class of a Dify provider.

Usage: python3 -c <this file> TOOL_SOURCE.py PLUGIN_ROOT
stdin:  {"tool_parameters": {...}, "credentials": {...}}
   or:  python3 -c <this file> PROVIDER_SOURCE.py PLUGIN_ROOT --validate
stdin:  {"credentials": {...}}; stdout: {"kind": "valid"} or {"kind": "invalid",
        "reason": ...}: what the provider's `_validate_credentials` said.
stdout: the messages the tool yields, one JSON object per line with its kind:
        {"kind": "text"|"json"|"link"|"image"|"blob", ...}; a blob's bytes in base64
        with its mime type and file name.
A tool that raises exits 1 with the error on stderr. When the tool needs a part of
the `dify_plugin` package that the stand-in below does not have, it exits 2 saying so
in one line; nothing is installed by this adapter.
"""
import base64
import importlib.util
import inspect
import json
import sys
import types
from enum import Enum


def stand_in():
    """A minimal `dify_plugin`: what tool classes import to yield their messages."""

    class MessageType(str, Enum):
        TEXT = "text"
        JSON = "json"
        LINK = "link"
        IMAGE = "image"
        IMAGE_LINK = "image_link"
        BLOB = "blob"
        FILE = "file"
        VARIABLE = "variable"
        LOG = "log"

    class _Message:
        def __init__(self, **fields):
            self.__dict__.update(fields)

    class ToolInvokeMessage:
        def __init__(self, type, message, meta=None):
            self.type = type
            self.message = message
            self.meta = meta or {}

    ToolInvokeMessage.MessageType = MessageType
    ToolInvokeMessage.TextMessage = lambda text: _Message(text=text)
    ToolInvokeMessage.JsonMessage = lambda json_object: _Message(json_object=json_object)
    ToolInvokeMessage.BlobMessage = lambda blob: _Message(blob=blob)

    class ToolRuntime:
        def __init__(self, credentials=None, user_id=None, session_id=None):
            self.credentials = dict(credentials or {})
            self.user_id = user_id
            self.session_id = session_id

    class Tool:
        def __init__(self, runtime=None, session=None):
            self.runtime = runtime or ToolRuntime()
            self.session = session

        @classmethod
        def from_credentials(cls, credentials, user_id=None, session_id=None):
            return cls(runtime=ToolRuntime(credentials, user_id, session_id), session=None)

        def create_text_message(self, text):
            return ToolInvokeMessage(MessageType.TEXT, _Message(text=text))

        def create_json_message(self, json_object, suppress_output=False):
            return ToolInvokeMessage(MessageType.JSON, _Message(json_object=json_object))

        def create_link_message(self, link):
            return ToolInvokeMessage(MessageType.LINK, _Message(text=link))

        def create_image_message(self, image):
            return ToolInvokeMessage(MessageType.IMAGE, _Message(text=image))

        def create_blob_message(self, blob, meta=None):
            return ToolInvokeMessage(MessageType.BLOB, _Message(blob=blob), meta)

        def create_variable_message(self, variable_name, variable_value):
            return ToolInvokeMessage(
                MessageType.VARIABLE,
                _Message(variable_name=variable_name, variable_value=variable_value, stream=False),
            )

        def create_log_message(self, label, data, status=None, parent=None):
            return ToolInvokeMessage(MessageType.LOG, _Message(label=label, data=data))

        def invoke(self, tool_parameters):
            return self._invoke(tool_parameters)

    class ToolProvider:
        def validate_credentials(self, credentials):
            return self._validate_credentials(credentials)

    class ToolProviderCredentialValidationError(Exception):
        pass

    class ToolInvokeError(Exception):
        pass

    modules = {
        "dify_plugin": {"Tool": Tool, "ToolProvider": ToolProvider},
        "dify_plugin.entities": {},
        "dify_plugin.entities.tool": {
            "ToolInvokeMessage": ToolInvokeMessage,
            "ToolRuntime": ToolRuntime,
        },
        "dify_plugin.errors": {},
        "dify_plugin.errors.tool": {
            "ToolProviderCredentialValidationError": ToolProviderCredentialValidationError,
            "ToolInvokeError": ToolInvokeError,
        },
        "dify_plugin.interfaces": {},
        "dify_plugin.interfaces.tool": {"Tool": Tool, "ToolProvider": ToolProvider},
    }
    for name, attrs in modules.items():
        module = types.ModuleType(name)
        module.__path__ = []
        module.__dict__.update(attrs)
        sys.modules[name] = module
    return Tool


def tool_base():
    try:
        from dify_plugin import Tool

        return Tool
    except ImportError:
        return stand_in()


def provider_base():
    """The `ToolProvider` class providers subclass (the real package's, else the stand-in's)."""
    tool_base()
    return sys.modules["dify_plugin"].ToolProvider


def line(msg):
    """One message as one JSON line, with its kind: text, json, link, image, blob."""
    kind = getattr(msg.type, "value", msg.type)
    body = msg.message
    if kind == "text":
        out = {"kind": "text", "text": body.text}
    elif kind == "json":
        out = {"kind": "json", "json": body.json_object}
    elif kind == "link":
        out = {"kind": "link", "url": body.text}
    elif kind in ("image", "image_link"):
        out = {"kind": "image", "url": body.text}
    elif kind == "variable":
        out = {"kind": "json", "json": {body.variable_name: body.variable_value}}
    elif kind in ("blob", "file"):
        meta = getattr(msg, "meta", None) or {}
        blob = getattr(body, "blob", b"") or b""
        if isinstance(blob, str):
            blob = blob.encode()
        out = {
            "kind": "blob",
            "data": base64.b64encode(blob).decode(),
            "mime": meta.get("mime_type") or "application/octet-stream",
            "name": meta.get("filename") or meta.get("file_name"),
        }
    elif kind == "log":
        print("log: %s" % getattr(body, "label", ""), file=sys.stderr)
        return None
    else:
        out = {"kind": "text", "text": str(body)}
    return json.dumps(out, ensure_ascii=False, default=str)


def load(source, name):
    """The module at `source`; exits 2 when it needs the dify_plugin package."""
    spec = importlib.util.spec_from_file_location(name, source)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        if (e.name or "").startswith("dify_plugin") or "dify_plugin" in str(e):
            print(
                "toolgate: %s needs the dify_plugin package (%s): install it for this python "
                "(pip install dify_plugin); toolgate installs nothing" % (source, e),
                file=sys.stderr,
            )
            sys.exit(2)
        raise
    return module


def validate(source, credentials):
    """Runs the provider's `_validate_credentials`: valid, or invalid with its reason."""
    base = provider_base()
    module = load(source, "toolgate_dify_provider")
    classes = [
        c
        for c in vars(module).values()
        if inspect.isclass(c) and issubclass(c, base) and c is not base
    ]
    if not classes:
        print("toolgate: %s defines no ToolProvider class" % source, file=sys.stderr)
        sys.exit(2)
    try:
        classes[0]()._validate_credentials(credentials)
    except Exception as e:
        reason = str(e) or type(e).__name__
        out = {"kind": "invalid", "reason": reason}
    else:
        out = {"kind": "valid"}
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")


def main():
    source, root = sys.argv[1], sys.argv[2]
    request = json.load(sys.stdin)
    sys.path.insert(0, root)
    if sys.argv[3:] == ["--validate"]:
        validate(source, request.get("credentials") or {})
        return
    base = tool_base()
    module = load(source, "toolgate_dify_tool")
    classes = [
        c
        for c in vars(module).values()
        if inspect.isclass(c) and issubclass(c, base) and c is not base
    ]
    if not classes:
        print("toolgate: %s defines no Tool class" % source, file=sys.stderr)
        sys.exit(2)
    tool = classes[0].from_credentials(request.get("credentials") or {})
    params = request.get("tool_parameters") or {}
    arity = len(inspect.signature(tool._invoke).parameters)
    result = tool._invoke("toolgate", params) if arity >= 2 else tool._invoke(params)
    if result is None:
        return
    if not isinstance(result, (list, tuple)) and not inspect.isgenerator(result):
        result = [result]
    for msg in result:
        text = line(msg)
        if text is not None:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


try:
    main()
except SystemExit:
    raise
except BaseException as e:
    print("%s: %s" % (type(e).__name__, e), file=sys.stderr)
    sys.exit(1)
