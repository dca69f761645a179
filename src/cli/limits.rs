//! The process's concurrency limits from the command line (`--limit-global`,
//! `--limit-category`, `--limit-queue`, `--limit-strategy`): one limiter per process,
//! shared by every run it drives; an agent file's `limits:` is that agent's share
//! inside it.

use std::sync::{Arc, OnceLock};

use clap::Args;
use toolgate::engine::{LimitConfig, ProcessLimits, Strategy};

#[derive(Args, Debug, Default, Clone)]
pub struct LimitArgs {
    /// Tool calls running at once in this process, all runs and agents together
    /// (default 16).
    #[arg(long, env = "TOOLGATE_LIMIT_GLOBAL", value_name = "N")]
    limit_global: Option<usize>,
    /// Calls of one tool category running at once in this process (repeatable:
    /// --limit-category http=2).
    #[arg(long = "limit-category", value_name = "CATEGORY=N", value_parser = category)]
    limit_category: Vec<(String, usize)>,
    /// Calls that may wait for a slot; more are refused (a call a person approved always
    /// waits) (default 1024).
    #[arg(long, value_name = "N")]
    limit_queue: Option<usize>,
    /// What a call that cannot run yet does: fifo (wait in order), priority (higher
    /// priority first) or reject (refused at once).
    #[arg(long, value_name = "STRATEGY", value_parser = strategy)]
    limit_strategy: Option<Strategy>,
}

fn category(text: &str) -> Result<(String, usize), String> {
    let (name, n) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not CATEGORY=N (e.g. http=2)"))?;
    let n = n
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("'{n}' in '{text}' is not a number of calls"))?;
    if name.trim().is_empty() || n == 0 {
        return Err(format!(
            "'{text}': name a category and at least one call (e.g. http=2)"
        ));
    }
    Ok((name.trim().to_string(), n))
}

fn strategy(text: &str) -> Result<Strategy, String> {
    match text {
        "fifo" => Ok(Strategy::Fifo),
        "priority" => Ok(Strategy::Priority),
        "reject" => Ok(Strategy::Reject),
        other => Err(format!(
            "'{other}' is not a strategy; one of fifo, priority, reject"
        )),
    }
}

impl LimitArgs {
    fn config(&self) -> Result<LimitConfig, String> {
        let mut c = LimitConfig::default();
        if let Some(n) = self.limit_global {
            if n == 0 {
                return Err("--limit-global must be at least 1".into());
            }
            c.global = n;
        }
        c.per_category.extend(self.limit_category.iter().cloned());
        if let Some(n) = self.limit_queue {
            c.queue = n;
        }
        if let Some(s) = self.limit_strategy {
            c.strategy = s;
        }
        Ok(c)
    }

    /// Sets this process's limits (once: the first command to ask sets them).
    pub fn apply(&self) -> Result<(), super::Failure> {
        let config = self.config().map_err(super::Failure::bad_input)?;
        let _ = PROCESS.set(ProcessLimits::new(config));
        Ok(())
    }
}

static PROCESS: OnceLock<Arc<ProcessLimits>> = OnceLock::new();

/// This process's limiter: every runner the command makes shares it.
pub fn process() -> Arc<ProcessLimits> {
    Arc::clone(PROCESS.get_or_init(|| ProcessLimits::new(LimitConfig::default())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn categories_and_strategies_read_or_say_why_not() {
        assert_eq!(category("http=2"), Ok(("http".into(), 2)));
        assert!(category("http").unwrap_err().contains("CATEGORY=N"));
        assert!(category("http=0").is_err());
        assert!(category("http=x").unwrap_err().contains("not a number"));
        assert_eq!(strategy("priority"), Ok(Strategy::Priority));
        assert!(
            strategy("lifo")
                .unwrap_err()
                .contains("fifo, priority, reject")
        );
    }
}
