//! What an operator watches a process by: Prometheus metrics ([`metrics`], served at
//! `GET /metrics`), OpenTelemetry spans exported over OTLP ([`otel`]) named by the GenAI
//! conventions ([`genai`]), and the trace context carried into and out of the process
//! ([`propagate`]).

pub mod exposition;
pub mod genai;
pub mod labels;
pub mod metrics;
pub mod otel;
pub mod propagate;

pub use labels::{OTHER, model_name};
