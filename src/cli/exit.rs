//! The exit codes of `toolgate` (a contract: scripts and tests outside the crate read
//! them), in one table the commands use and the reference page is generated from.

use std::process::ExitCode;

/// The command did what it was asked (a run completed).
pub const DONE: u8 = 0;
/// Anything else failed: the store, a tool, the model, a run that failed or was
/// cancelled, a check that found a problem.
pub const FAILED: u8 = 1;
/// Bad input: a flag, an argument or a file is wrong (one line on stderr says which).
pub const BAD_INPUT: u8 = 2;
/// The run paused for action: an approval, or a client tool's output to submit.
pub const PAUSED: u8 = 3;
/// Interrupted: a second Ctrl-C while a run was stopping.
pub const INTERRUPTED: u8 = 130;

/// Every code, with its meaning, for the reference.
pub const CODES: [(u8, &str); 5] = [
    (
        DONE,
        "Done: the command did what it was asked (a run completed).",
    ),
    (
        FAILED,
        "Anything else failed: the store, a tool, the model, a run that failed or was \
         cancelled, a check (`doctor`) that found a problem.",
    ),
    (
        BAD_INPUT,
        "Bad input: a flag, an argument or a file is wrong; one line on stderr says which \
         (`toolgate: PATH:LINE: field 'mode': ...`). Clap's own usage errors exit 2 too.",
    ),
    (
        PAUSED,
        "The run paused for action: a call waits for approval or a client tool's output \
         (`toolgate show RUN` lists them; `approve`, `deny`, `submit` decide). `tools call` \
         of a client tool exits 3 too.",
    ),
    (
        INTERRUPTED,
        "Interrupted: Ctrl-C twice while a run was stopping (the first saves it, ready to \
         resume).",
    ),
];

/// `code` as the process's exit code.
pub fn code(code: u8) -> ExitCode {
    ExitCode::from(code)
}
