//! The OpenAI Responses-compatible endpoint.

pub mod drive;
pub mod input;
pub mod translate;
pub mod wire;
