//! What the tool of one OpenAPI operation needs to make its request: the URL template,
//! where each argument goes (path, query, header, cookie, body field or whole body),
//! the body's media type and the API's authentication. Stored in the tool's spec
//! (`Entry::OpenApi`), so `tools show --json` tells exactly what a call sends.

use serde::{Deserialize, Serialize};

/// The argument that carries the API key or bearer token (a credential: injected when
/// the call runs, never in the model's schema).
pub const AUTH_TOKEN: &str = "_auth_token";
/// The argument that carries the basic-auth user name when it is a credential.
pub const AUTH_USERNAME: &str = "_auth_username";
/// The argument that carries the basic-auth password.
pub const AUTH_PASSWORD: &str = "_auth_password";

/// One operation, ready to call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// The `name:` of the `openapi:` file (the tools' prefix).
    pub api: String,
    /// The operation's `operationId` (or the name made for it).
    pub operation: String,
    pub method: String,
    /// The base URL and the document's path, `{name}` where a path parameter goes.
    pub url: String,
    /// Where each argument goes, besides the body.
    #[serde(default)]
    pub params: Vec<Param>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyBinding>,
    #[serde(default)]
    pub auth: Auth,
    /// Hosts or networks this API may reach although the network rule refuses them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_hosts: Vec<String>,
    /// Bytes of the response body kept (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response: Option<usize>,
    /// Headers every call sends (`${context:NAME}` and `${VAR}` expanded per call).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers: std::collections::BTreeMap<String, String>,
    /// The API's credential check: the operation its file's `validate:` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Box<Binding>>,
}

/// A path, query, header or cookie parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// The argument's name in the tool's schema (renamed when two places share a name).
    pub arg: String,
    /// The name in the request.
    pub name: String,
    #[serde(rename = "in")]
    pub location: Location,
    /// For an array in the query: `name=a&name=b` (true) or `name=a,b` (false).
    #[serde(default = "yes")]
    pub explode: bool,
}

fn yes() -> bool {
    true
}

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    /// Its name, as OpenAPI writes it (`path`, `query`, `header`, `cookie`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The request body: its media type and how the arguments make it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyBinding {
    /// `application/json`, `application/x-www-form-urlencoded` or another text type.
    pub content_type: String,
    pub shape: BodyShape,
    /// Sent (as `{}` when no field was given) even when no argument fills it.
    #[serde(default)]
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BodyShape {
    /// An object body: argument -> field.
    Fields(Vec<Field>),
    /// The whole body is one argument (an array, a scalar, a text).
    Whole(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    pub arg: String,
    pub name: String,
}

impl Auth {
    /// The request header this authentication sets, if any.
    pub fn header(&self) -> Option<&str> {
        match self {
            Auth::None => None,
            Auth::ApiKey { location, name } => (*location == Location::Header).then_some(name),
            Auth::Bearer | Auth::Basic { .. } | Auth::OAuth2 { .. } => Some("Authorization"),
        }
    }
}

/// How the API is authenticated. Secret values are credentials of the tool
/// ([`AUTH_TOKEN`], [`AUTH_USERNAME`], [`AUTH_PASSWORD`]), never stored here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Auth {
    #[default]
    None,
    /// The key in a header, a query parameter or a cookie named `name`.
    ApiKey {
        #[serde(rename = "in")]
        location: Location,
        name: String,
    },
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `Authorization: Basic ...`; the user name as written when it is not a credential.
    Basic {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        username: Option<String>,
    },
    /// `Authorization: Bearer <the run's user's token>` from the document's `oauth2`
    /// scheme (authorization code): the run pauses for the user's consent when there is
    /// none yet.
    #[serde(rename = "oauth2")]
    OAuth2 {
        provider: Box<toolgate_tool::oauth::OAuthProvider>,
    },
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use strum::VariantArray;

    #[test]
    fn every_location_is_named_as_serde_names_it() {
        for l in Location::VARIANTS {
            assert_eq!(serde_json::to_value(l).unwrap(), l.as_str());
            assert_eq!(l.as_str().parse::<Location>().unwrap(), *l);
        }
    }
}
