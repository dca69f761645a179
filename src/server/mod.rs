//! The HTTP server (placeholder until the server skeleton lands from main).

pub mod responses;
