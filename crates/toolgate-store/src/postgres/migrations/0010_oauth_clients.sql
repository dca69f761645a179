-- toolgate schema: OAuth clients toolgate registered itself as (RFC 7591, issue 46), one
-- per registration endpoint and callback URL, shared by every tenant; the client
-- secret, when the server gave one, sealed with the secrets' key.

CREATE TABLE oauth_clients (
    registration_endpoint TEXT    NOT NULL,
    redirect_uri          TEXT    NOT NULL,
    client_id             TEXT    NOT NULL,
    sealed_secret         TEXT,
    created_at            BIGINT  NOT NULL,
    PRIMARY KEY (registration_endpoint, redirect_uri)
);
