//! An http tool's credential check (`validate:` in its entry): the request filled with
//! the tool's credentials, sent under the tool's own network rule, and its answer as a
//! verdict (below 400: valid; otherwise invalid, the status and body the reason).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::http::{
    Body, DEFAULT_MAX_RESPONSE, HttpTool, Request, Retry, expand_context, expand_env, parse_method,
    parse_url, send,
};
use super::templates::fill;
use toolgate_tool::net::AllowList;
use toolgate_tool::{Entry, HttpCheck, Part, Tool, ToolContext, ToolError, ToolOutput, Verdict};

/// The most of an upstream's refusal kept as the reason.
const MAX_REASON: usize = 500;

impl HttpTool {
    /// Sends the entry's `validate:` request with `credentials`; `None` when the entry
    /// has none.
    pub async fn check(
        &self,
        ctx: &ToolContext,
        credentials: &Map<String, Value>,
    ) -> Option<Result<Verdict, ToolError>> {
        let Entry::Http {
            url,
            headers,
            allow_hosts,
            validate: Some(check),
            ..
        } = &self.spec().entry
        else {
            return None;
        };
        let req = match self.check_request(check, url, headers, allow_hosts, credentials, ctx) {
            Ok(req) => req,
            Err(e) => return Some(Err(e)),
        };
        Some(send(req).await.map(verdict_of))
    }

    fn check_request(
        &self,
        check: &HttpCheck,
        url: &str,
        headers: &BTreeMap<String, String>,
        allow_hosts: &[String],
        credentials: &Map<String, Value>,
        ctx: &ToolContext,
    ) -> Result<Request, ToolError> {
        let name = &self.spec().name;
        let template = check.url.as_deref().unwrap_or(url);
        let url = fill(&expand_env(template)?, credentials, true).ok_or_else(|| {
            ToolError::Execution(format!(
                "the validate URL of '{name}' needs parameters that are not credentials"
            ))
        })?;
        let mut url = parse_url(&url)?;
        if !check.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (key, template) in &check.query {
                if let Some(value) = fill(template, credentials, false) {
                    pairs.append_pair(key, &value);
                }
            }
        }
        let headers = check
            .headers
            .as_ref()
            .unwrap_or(headers)
            .iter()
            .map(|(k, v)| {
                let v = expand_context(v, &ctx.run)?;
                Ok((k.clone(), fill(&v, credentials, false).unwrap_or(v)))
            })
            .collect::<Result<Vec<_>, ToolError>>()?;
        let allow = AllowList::parse(allow_hosts)
            .map_err(|e| ToolError::Execution(e.to_string()))?
            .and(AllowList::from_env().map_err(|e| ToolError::Execution(e.to_string()))?);
        Ok(Request {
            method: parse_method(&check.method).map_err(|e| ToolError::Execution(e.to_string()))?,
            url,
            headers,
            body: None::<Body>,
            timeout: self.spec().timeout_or_default(),
            max_response: DEFAULT_MAX_RESPONSE,
            allow,
            retry: Retry::default(),
            files: None,
        })
    }
}

/// The answer as a verdict: a success is valid; an error result is invalid, its text
/// (the status line and the body) the reason.
pub(crate) fn verdict_of(out: ToolOutput) -> Verdict {
    if !out.is_error {
        return Verdict::Valid;
    }
    let text: Vec<String> = out
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => text.clone(),
            Part::Json { json } => json.to_string(),
            _ => String::new(),
        })
        .filter(|t| !t.is_empty())
        .collect();
    let mut reason = text.join(": ");
    if reason.len() > MAX_REASON {
        let cut = (0..=MAX_REASON)
            .rev()
            .find(|i| reason.is_char_boundary(*i))
            .unwrap_or(0);
        reason.truncate(cut);
        reason.push('…');
    }
    Verdict::Invalid { reason }
}
