"""A remote MCP server that requires OAuth, for tests/oauth.rs: the official MCP SDK's
MCPServer as a resource server (its protected resource metadata, RFC 9728; a 401 with
`WWW-Authenticate: Bearer resource_metadata=...` to a request without a valid token;
only tokens issued for this resource, RFC 8707), beside the authlib authorization
server of oauth_server.py (dynamic client registration, PKCE, rotated refresh tokens).

Usage: oauth_mcp_server.py. Prints `AUTH <port>` and `MCP <port>` once both listen on
127.0.0.1. The tool `whoami` answers the token's user; `notes` lists theirs.
"""

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import uvicorn  # noqa: E402
from mcp.server.auth.middleware.auth_context import get_access_token  # noqa: E402
from mcp.server.auth.provider import AccessToken  # noqa: E402
from mcp.server.auth.settings import AuthSettings  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

import oauth_server as auth  # noqa: E402

auth_port = auth.serve()
issuer = f"http://127.0.0.1:{auth_port}"
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.bind(("127.0.0.1", 0))
mcp_port = sock.getsockname()[1]
resource = f"http://127.0.0.1:{mcp_port}/mcp"


class Verifier:
    """Checks a bearer token against the authorization server's own records."""

    async def verify_token(self, token):
        found = auth.TOKENS.get(token)
        if found is None or found.is_expired() or found.is_revoked():
            return None
        return AccessToken(
            token=token,
            client_id=found.client_id,
            scopes=found.get_scope().split(),
            expires_at=int(found.issued_at + found.get_expires_in()),
            resource=found.resource,
            subject=found.user,
        )


app = MCPServer(
    "notes",
    token_verifier=Verifier(),
    auth=AuthSettings(
        issuer_url=issuer,
        resource_server_url=resource,
        required_scopes=["notes.read"],
        validate_token_resource=True,
    ),
)

NOTES = {"alice": ["buy milk", "call bob"], "bob": ["fix the roof"]}


@app.tool()
def whoami() -> str:
    """Says whom the token is for."""
    token = get_access_token()
    return f"you are {token.subject}"


@app.tool()
def notes() -> list[str]:
    """The notes of the token's user."""
    return NOTES.get(get_access_token().subject, [])


print("AUTH", auth_port, flush=True)
print("MCP", mcp_port, flush=True)
config = uvicorn.Config(app.streamable_http_app(), log_level="warning")
uvicorn.Server(config).run(sockets=[sock])
