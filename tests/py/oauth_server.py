"""A real OAuth 2.0 authorization server and a protected resource for tests/oauth.rs,
built on authlib's Flask integration (authorization code with PKCE S256 required,
refresh tokens rotated, client_secret_basic), all in memory.

Usage: oauth_server.py REDIRECT_URI (the client's registered one, matched exactly). Prints `PORT <n>` once it listens on 127.0.0.1.

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
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7636 import CodeChallenge
from flask import Flask, jsonify, request
from werkzeug.serving import make_server

REDIRECT = {"uri": sys.argv[1]}
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


CLIENT = Client()
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
    def __init__(self, data, user):
        self.data = data
        self.user = user
        self.issued_at = time.time()
        self.revoked = False  # the access token
        self.refresh_used = False  # the refresh token (rotated once used)

    def check_client(self, client):
        return client.get_client_id() == CLIENT_ID

    def get_scope(self):
        return self.data.get("scope", "")

    def get_expires_in(self):
        return self.data.get("expires_in", 0)

    def is_expired(self):
        return time.time() > self.issued_at + self.get_expires_in()

    def is_revoked(self):
        return self.revoked


class CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]

    def save_authorization_code(self, code, request):
        CODES[code] = Code(code, request.user, request.payload)

    def query_authorization_code(self, code, client):
        found = CODES.get(code)
        return None if found is None or found.is_expired() else found

    def delete_authorization_code(self, authorization_code):
        CODES.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code):
        return authorization_code.user


class RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]
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
    token = Token(dict(data), request.user)
    TOKENS[data["access_token"]] = token
    if data.get("refresh_token"):
        REFRESH[data["refresh_token"]] = token


app = Flask(__name__)
app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": 3600, "refresh_token": 30}
server = AuthorizationServer(
    app, query_client=lambda cid: CLIENT if cid == CLIENT_ID else None, save_token=save_token
)
server.register_grant(CodeGrant, [CodeChallenge(required=True)])
server.register_grant(RefreshGrant)


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
        code_challenge_methods_supported=["S256"],
        grant_types_supported=["authorization_code", "refresh_token"],
    )


http = make_server("127.0.0.1", 0, app, threaded=True)
print("PORT", http.server_port, flush=True)
http.serve_forever()
