//! `current_time`: the current date and time in an IANA time zone (the zone database
//! is built in).

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value, json};

use super::{Handled, spec as builtin_spec, text_arg};
use toolgate_tool::{Permission, ToolContext, ToolError, ToolOutput, ToolSpec};

pub fn spec() -> ToolSpec {
    ToolSpec {
        credentials: Default::default(),
        is_final: false,
        hidden: false,
        sandbox: None,
        read_only: true,
        ..builtin_spec(
            "current_time",
            "The current date and time in a time zone.",
            Permission::Auto,
            json!({"type": "object", "properties": {"timezone": {"type": "string", "default": "UTC", "description": "An IANA time zone such as Europe/Paris or America/New_York."}}, "additionalProperties": false}),
        )
    }
}

/// The handler of the tool.
pub fn current_time<'a>(_ctx: &'a ToolContext, args: Map<String, Value>) -> Handled<'a> {
    Box::pin(async move {
        let name = match text_arg(&args, "timezone") {
            "" => "UTC",
            n => n,
        };
        let tz = TimeZone::get(name).map_err(|_| {
            ToolError::Execution(format!(
                "'{name}' is not a known time zone; use an IANA name such as Europe/Paris, Asia/Tokyo or UTC"
            ))
        })?;
        Ok(ToolOutput::json(now_in(Timestamp::now(), name, tz)))
    })
}

fn now_in(now: Timestamp, name: &str, tz: TimeZone) -> Value {
    let zoned = now.to_zoned(tz);
    json!({
        "timezone": name,
        "datetime": zoned.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        "weekday": zoned.strftime("%A").to_string(),
        "unix": now.as_second(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn formats_in_zone() {
        let t: Timestamp = "2026-07-01T12:00:00Z".parse().unwrap();
        let v = now_in(t, "Europe/Paris", TimeZone::get("Europe/Paris").unwrap());
        assert_eq!(v["datetime"], "2026-07-01T14:00:00+02:00");
        assert_eq!(v["weekday"], "Wednesday");
        let v = now_in(t, "Asia/Kolkata", TimeZone::get("Asia/Kolkata").unwrap());
        assert_eq!(v["datetime"], "2026-07-01T17:30:00+05:30");
    }
}
