"""A real OAuth 2.0 authorization server and a protected resource for tests/oauth.rs,
built on authlib's Flask integration (authorization code with PKCE S256 required,
refresh tokens rotated, client_secret_basic), all in memory.

Usage: oauth_server.py REDIRECT_URI (the client's registered one, matched exactly). Prints `PORT <n>` once it listens on 127.0.0.1.
Imported (tests/py/oauth_mcp_server.py), it serves nothing until `serve()`.

Beside the one client registered by hand, clients may register themselves (RFC 7591,
`POST /register`, open registration): public clients (`token_endpoint_auth_method:
none`, PKCE) with their own redirect URIs, allowed the scope `notes.read`. A token
remembers the `resource` (RFC 8707) its grant named, and its client. `POST /revoke`
revokes a token (RFC 7009): a refresh token with the access token of its grant;
`GET /admin/live` counts the tokens still usable.

The consent page stands in for a person: `GET /authorize` with the header
`X-Test-User: NAME` and `X-Test-Decision: allow|deny` grants or refuses at once.
`GET /me` is the resource: it answers the token's user, or 401. `POST /admin/redirect_uri`
(the body) registers the client's one redirect URI once the client's port is known;
`GET /admin/tokens` lists every token issued (the oracle for "never in a record").
`POST /admin/revoke`
revokes every access token issued so far (not the refresh tokens), so the next use of
one is refused. Tokens from the code grant live an hour; those from a refresh live
30 seconds (within the client's refresh margin, so the next use refreshes again).
"""

import secrets
import sys
import time

from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector, current_token
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7636 import CodeChallenge
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

REDIRECT = {"uri": sys.argv[1] if len(sys.argv) > 1 else ""}
CLIENT_ID = "toolgate-test"
CLIENT_SECRET = "client-s3cret"
SCOPE = "calendar.read"


class Client(ClientMixin):
    def get_client_id(self):
        return CLIENT_ID

    def get_default_redirect_uri(self):
        return REDIRECT["uri"]

    def get_allowed_scope(self, scope):
        return " ".join(s for s in (scope or "").split() if s == SCOPE)

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri == REDIRECT["uri"]

    def check_client_secret(self, client_secret):
        return secrets.compare_digest(client_secret, CLIENT_SECRET)

    def check_endpoint_auth_method(self, method, endpoint):
        return method == "client_secret_basic"

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in ("authorization_code", "refresh_token")


class Registered(ClientMixin):
    """A client that registered itself: public, PKCE only."""

    def __init__(self, client_id, metadata):
        self.client_id = client_id
        self.metadata = metadata

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return self.metadata["redirect_uris"][0]

    def get_allowed_scope(self, scope):
        return " ".join(s for s in (scope or "").split() if s == "notes.read")

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri in self.metadata["redirect_uris"]

    def check_client_secret(self, client_secret):
        return False

    def check_endpoint_auth_method(self, method, endpoint):
        return method == "none"

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type in ("authorization_code", "refresh_token")


CLIENT = Client()
CLIENTS = {CLIENT_ID: CLIENT}
CODES = {}
TOKENS = {}  # access token -> Token
REFRESH = {}  # refresh token -> Token


class Code:
    def __init__(self, code, user, payload):
        self.code = code
        self.user = user
        self.redirect_uri = payload.redirect_uri
        self.scope = payload.scope
        self.code_challenge = payload.data.get("code_challenge")
        self.code_challenge_method = payload.data.get("code_challenge_method")
        self.client_id = payload.client_id
        self.auth_time = time.time()

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_code_challenge(self):
        return self.code_challenge

    def get_code_challenge_method(self):
        return self.code_challenge_method

    def get_auth_time(self):
        return self.auth_time

    def is_expired(self):
        return time.time() - self.auth_time > 300


class Token:
    def __init__(self, data, user, client_id, resource):
        self.data = data
        self.user = user
        self.client_id = client_id
        self.resource = resource
        self.issued_at = time.time()
        self.revoked = False  # the access token
        self.refresh_used = False  # the refresh token (rotated once used)

    def check_client(self, client):
        return client.get_client_id() == self.client_id

    def get_scope(self):
        return self.data.get("scope", "")

    def get_expires_in(self):
        return self.data.get("expires_in", 0)

    def is_expired(self):
        return time.time() > self.issued_at + self.get_expires_in()

    def is_revoked(self):
        return self.revoked


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "none"]

    def save_authorization_code(self, code, request):
        CODES[code] = Code(code, request.user, request.payload)

    def query_authorization_code(self, code, client):
        found = CODES.get(code)
        if found is None or found.is_expired() or found.client_id != client.get_client_id():
            return None
        return found

    def delete_authorization_code(self, authorization_code):
        CODES.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code):
        return authorization_code.user


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "none"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        token = REFRESH.get(refresh_token)
        return token if token is not None and not token.refresh_used else None

    def authenticate_user(self, credential):
        return credential.user

    def revoke_old_credential(self, credential):
        credential.revoked = True
        credential.refresh_used = True
        REFRESH.pop(credential.data.get("refresh_token"), None)


def save_token(data, request):
    # The resource the grant named (RFC 8707); a refresh keeps the one of its grant.
    old = REFRESH.get(request.form.get("refresh_token") or "")
    resource = request.form.get("resource") or (old.resource if old else None)
    token = Token(dict(data), request.user, request.client.get_client_id(), resource)
    TOKENS[data["access_token"]] = token
    if data.get("refresh_token"):
        REFRESH[data["refresh_token"]] = token


app = Flask(__name__)
app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": 3600, "refresh_token": 30}
server = AuthorizationServer(app, query_client=CLIENTS.get, save_token=save_token)
server.register_grant(CodeGrant, [CodeChallenge(required=True)])
server.register_grant(RefreshGrant)


class Registration(ClientRegistrationEndpoint):
    def authenticate_token(self, request):
        return "open registration"

    def resolve_public_key(self, request):
        return None

    def generate_client_secret(self, request):
        return None

    def get_server_metadata(self):
        return {}

    def save_client(self, client_info, client_metadata, request):
        if client_metadata.get("token_endpoint_auth_method") != "none":
            client_metadata["token_endpoint_auth_method"] = "none"
        client = Registered(client_info["client_id"], client_metadata)
        CLIENTS[client.client_id] = client
        return client


server.register_endpoint(Registration)


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "none"]

    def query_token(self, token_string, token_type_hint):
        return TOKENS.get(token_string) or REFRESH.get(token_string)

    def revoke_token(self, token, request):
        token.revoked = True
        token.refresh_used = True
        REFRESH.pop(token.data.get("refresh_token"), None)


server.register_endpoint(Revocation)


class Validator(BearerTokenValidator):
    def authenticate_token(self, token_string):
        return TOKENS.get(token_string)


require_oauth = ResourceProtector()
require_oauth.register_token_validator(Validator())


@app.get("/authorize")
def authorize():
    user = request.headers.get("X-Test-User")
    allowed = request.headers.get("X-Test-Decision") == "allow"
    server.get_consent_grant(end_user=user)
    return server.create_authorization_response(grant_user=user if allowed else None)


@app.post("/token")
def issue_token():
    return server.create_token_response()


@app.get("/me")
@require_oauth(SCOPE)
def me():
    return jsonify(user=current_token.user, scope=current_token.get_scope())


@app.post("/register")
def register_client():
    return server.create_endpoint_response("client_registration")


@app.post("/revoke")
def revoke_token():
    return server.create_endpoint_response("revocation")


@app.get("/admin/live")
def live_tokens():
    access = sum(1 for t in TOKENS.values() if not t.is_revoked() and not t.is_expired())
    return jsonify(access=access, refresh=len(REFRESH))


@app.get("/admin/clients")
def registered_clients():
    return jsonify(sorted(c for c in CLIENTS if c != CLIENT_ID))


@app.post("/admin/revoke")
def revoke_access():
    for token in TOKENS.values():
        token.revoked = True
    return jsonify(revoked=len(TOKENS))


@app.get("/admin/tokens")
def issued():
    return jsonify([t for token in TOKENS.values() for t in (token.data["access_token"], token.data.get("refresh_token")) if t])


@app.post("/admin/redirect_uri")
def set_redirect_uri():
    REDIRECT["uri"] = request.get_data(as_text=True)
    return jsonify(redirect_uri=REDIRECT["uri"])


@app.get("/.well-known/oauth-authorization-server")
def metadata():
    base = request.host_url.rstrip("/")
    return jsonify(
        issuer=base,
        authorization_endpoint=base + "/authorize",
        token_endpoint=base + "/token",
        registration_endpoint=base + "/register",
        revocation_endpoint=base + "/revoke",
        code_challenge_methods_supported=["S256"],
        grant_types_supported=["authorization_code", "refresh_token"],
    )


def serve():
    """Listens on a free port of 127.0.0.1 and serves on a thread of its own; the port."""
    import threading

    http = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    return http.server_port


if __name__ == "__main__":
    http = make_server("127.0.0.1", 0, app, threaded=True)
    print("PORT", http.server_port, flush=True)
    http.serve_forever()
