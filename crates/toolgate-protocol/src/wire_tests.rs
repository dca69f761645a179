//! Every run event's JSON, byte for byte: what `--json`, SSE and `/v1/events` carry.
//! Written against the two-level events this module had before (an untagged `Tool`
//! wrapper around the engine's events), so that the one tagged enum keeps every field,
//! its order and its name. The one change: `tool.started`, `tool.output` and
//! `tool.finished` put `type` first, like every other event (the wrapper wrote `run_id`
//! before it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::samples::every_event;

#[test]
fn every_event_keeps_its_json() {
    let wrong: Vec<String> = every_event()
        .into_iter()
        .filter_map(|(event, json)| {
            let got = serde_json::to_string(&event).unwrap();
            (got != json).then(|| format!("{}:\n  got  {got}\n  want {json}", event.name()))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_table_has_every_event() {
    let mut named: Vec<&str> = every_event().iter().map(|(e, _)| e.name()).collect();
    named.sort();
    named.dedup();
    let mut names = RunEvent::NAMES.to_vec();
    names.sort();
    assert_eq!(named, names);
}

#[test]
fn every_event_is_named_by_its_type() {
    for (event, _) in every_event() {
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(value["type"], event.name(), "{event:?}");
        assert_eq!(event.run_id(), "run_1");
    }
}

#[test]
fn every_event_reads_back() {
    for (event, json) in every_event() {
        // A sub-agent's item repeats `run_id`: written, never read back.
        if json.matches("\"run_id\"").count() > 1 {
            continue;
        }
        let mut expected = event.clone();
        if let RunEvent::ApprovalRequested(events::ApprovalRequested { item, .. })
        | RunEvent::ApprovalExpiring(events::ApprovalExpiring { item, .. })
        | RunEvent::ApprovalExpired(events::ApprovalExpired { item, .. }) = &mut expected
        {
            item.policy = None;
        }
        if let RunEvent::RunRequiresAction(events::RunRequiresAction { items, .. }) = &mut expected
        {
            items.iter_mut().for_each(|i| i.policy = None);
        }
        let read: RunEvent = serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert_eq!(read, expected, "{json}");
    }
}

/// Each variant of `T`: its strum name (`as_str`, `FromStr`) is its serde name, and
/// each reads back, so that the store's columns, metrics' labels and the wire can
/// never drift apart.
fn names_agree<T>()
where
    T: strum::VariantArray
        + Serialize
        + for<'de> Deserialize<'de>
        + Copy
        + Into<&'static str>
        + std::str::FromStr
        + PartialEq
        + std::fmt::Debug,
{
    for &variant in T::VARIANTS {
        let name: &'static str = variant.into();
        assert_eq!(serde_json::to_value(variant).unwrap(), name, "{variant:?}");
        assert_eq!(name.parse::<T>().ok(), Some(variant), "{name}");
        assert_eq!(
            serde_json::from_value::<T>(serde_json::Value::from(name)).unwrap(),
            variant
        );
    }
    assert!("no_such_name".parse::<T>().is_err());
}

#[test]
fn every_name_table_is_the_serde_one() {
    names_agree::<CallStatus>();
    names_agree::<CallerKind>();
    names_agree::<RunStatus>();
    names_agree::<ItemKind>();
    names_agree::<OnTimeout>();
    names_agree::<ErrorKind>();
    names_agree::<identity::Role>();
}
