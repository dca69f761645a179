//! The web, built in: `web_fetch` (a URL as readable Markdown, PDF text, JSON or an
//! image) and `web_search` (a configured provider's results), both sending through the
//! HTTP tools' network rule.

pub mod fetch;
mod get;
mod html;
mod kind;
mod pdf;
mod render;
pub mod search;
