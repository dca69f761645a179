//! How a response ends, from the run object after its drive: the status the SDKs know
//! (a paused run is `completed`, its waiting items in the output), the error of a failed
//! run, and the tokens this response's model turns used.

use super::wire::{
    IncompleteDetails, InputTokensDetails, OutputTokensDetails, ResponseError, ResponseStatus,
    ResponseUsage,
};
use toolgate_protocol::{FileOutput, RequiredItem, RunObject, RunStatus, Usage};

/// How the run's part in a response ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    pub status: ResponseStatus,
    pub error: Option<ResponseError>,
    pub incomplete: Option<IncompleteDetails>,
    pub usage: ResponseUsage,
    /// What the run still waits for (a paused run): listed in the output if no event
    /// announced them.
    pub waiting: Vec<RequiredItem>,
    /// The files the run's tools saved: cited on the response's last message.
    pub files: Vec<FileOutput>,
    /// Unix seconds.
    pub at: i64,
}

/// The ending of a response from the run object after the drive (if it could be read)
/// and the error the drive ended with (if any). `before` is the run's usage when the
/// response began.
pub fn ending(run: Option<&RunObject>, error: Option<&str>, before: Usage, at: i64) -> Ending {
    let usage = run
        .map(|r| usage_between(before, r.usage))
        .unwrap_or_default();
    let failed = |message: String| Ending {
        status: ResponseStatus::Failed,
        error: Some(ResponseError {
            code: "server_error".into(),
            message,
        }),
        incomplete: None,
        usage,
        waiting: Vec::new(),
        files: Vec::new(),
        at,
    };
    if let Some(message) = error {
        return failed(message.to_string());
    }
    let Some(run) = run else {
        return failed("the run could not be read after it stopped".into());
    };
    let files = run.files.clone();
    let plain = |status| Ending {
        status,
        error: None,
        incomplete: None,
        usage,
        waiting: Vec::new(),
        files: files.clone(),
        at,
    };
    match run.status {
        RunStatus::Completed => plain(ResponseStatus::Completed),
        RunStatus::RequiresAction => Ending {
            waiting: run
                .required_action
                .as_ref()
                .map(|r| r.items.clone())
                .unwrap_or_default(),
            ..plain(ResponseStatus::Completed)
        },
        RunStatus::Incomplete => Ending {
            incomplete: Some(IncompleteDetails {
                reason: "max_iterations".into(),
            }),
            ..plain(ResponseStatus::Incomplete)
        },
        RunStatus::Cancelled => plain(ResponseStatus::Cancelled),
        RunStatus::Failed => failed(
            run.last_error
                .clone()
                .unwrap_or_else(|| "the run failed".into()),
        ),
        RunStatus::InProgress => failed(format!(
            "run {} stopped while in progress; toolgate resume {} continues it",
            run.id, run.id
        )),
    }
}

/// The tokens used between two readings of a run's usage.
pub fn usage_between(before: Usage, after: Usage) -> ResponseUsage {
    let input = after.prompt_tokens.saturating_sub(before.prompt_tokens);
    let output = after
        .completion_tokens
        .saturating_sub(before.completion_tokens);
    ResponseUsage {
        input_tokens: input,
        input_tokens_details: InputTokensDetails::default(),
        output_tokens: output,
        output_tokens_details: OutputTokensDetails::default(),
        total_tokens: input + output,
    }
}
