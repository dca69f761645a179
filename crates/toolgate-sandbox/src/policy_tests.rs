//! The sandbox policy's tests: defaults, limits in their units, the stricter of two policies, and the one-line summaries.

#![allow(clippy::unwrap_used)]
use super::*;

fn policy(v: Value) -> SandboxPolicy {
    SandboxPolicy::parse(&v, Path::new("/tools")).unwrap()
}

#[test]
fn defaults_are_confined_and_off_is_written_out() {
    let p = policy(json!({}));
    let r = p.rules().unwrap();
    assert_eq!(r.fs, Fs::WorkspaceWrite);
    assert!(!r.network);
    assert_eq!(r.limits, Limits::default());
    assert_eq!(policy(json!("off")), SandboxPolicy::Off);
    // YAML reads a bare `off` as false.
    assert_eq!(policy(json!(false)), SandboxPolicy::Off);
    assert_eq!(policy(json!({"fs": false})).rules().unwrap().fs, Fs::Off);
    assert!(SandboxPolicy::parse(&json!(true), Path::new("/")).is_err());
    assert!(SandboxPolicy::parse(&json!({"fs": "none"}), Path::new("/")).is_err());
    assert_eq!(
        SandboxPolicy::parse(&json!({"net": true}), Path::new("/"))
            .unwrap_err()
            .0,
        "net"
    );
}

#[test]
fn limits_read_in_their_units() {
    let p = policy(
        json!({"read": ["data"], "limits": {"cpu": "2m", "memory": "512M", "processes": "off", "file_size": 1024}}),
    );
    let r = p.rules().unwrap();
    assert_eq!(r.read, [PathBuf::from("/tools/data")]);
    assert_eq!(r.limits.cpu, Some(120));
    assert_eq!(r.limits.memory, Some(512 << 20));
    assert_eq!(r.limits.processes, None);
    assert_eq!(r.limits.file_size, Some(1024));
    assert_eq!(r.limits.open_files, Some(DEFAULT_OPEN_FILES));
    for bad in [
        json!({"cpu": -1}),
        json!({"memory": "lots"}),
        json!({"threads": 3}),
    ] {
        assert!(
            SandboxPolicy::parse(&json!({"limits": bad}), Path::new("/")).is_err(),
            "{bad}"
        );
    }
    let shown = p.to_json();
    assert_eq!(shown["limits"]["memory"], "512M");
    assert_eq!(shown["limits"]["processes"], "off");
    assert_eq!(
        policy(shown),
        p,
        "what is shown reads back as the same policy"
    );
}

#[test]
fn the_stricter_wins() {
    let tool = policy(
        json!({"fs": "workspace-write", "network": true, "write": ["/data/out"], "read": ["/opt/x"], "limits": {"cpu": 100, "memory": "off"}}),
    );
    let agent = Ceiling::parse(
        &json!({"fs": "workspace-read", "read": ["/opt"], "limits": {"cpu": 10, "processes": 5000}}),
        Path::new("/"),
    )
    .unwrap();
    let met = tool.meet(&agent);
    let r = met.rules().unwrap();
    assert_eq!(r.fs, Fs::WorkspaceRead);
    assert!(r.network, "the agent said nothing about the network");
    assert!(r.write.is_empty(), "workspace-read writes nothing");
    assert_eq!(
        r.read,
        [PathBuf::from("/opt/x")],
        "/data/out is outside /opt"
    );
    assert_eq!(r.limits.cpu, Some(10));
    assert_eq!(r.limits.memory, None);
    assert_eq!(r.limits.processes, Some(DEFAULT_PROCESSES));
    // Off meets a ceiling: only the ceiling's settings.
    let off = SandboxPolicy::Off
        .meet(&Ceiling::parse(&json!({"network": false}), Path::new("/")).unwrap());
    let r = off.rules().unwrap();
    assert_eq!((r.fs, r.network, r.limits), (Fs::Off, false, Limits::NONE));
    // An empty ceiling changes nothing.
    assert_eq!(
        SandboxPolicy::Off.meet(&Ceiling::parse(&json!({}), Path::new("/")).unwrap()),
        SandboxPolicy::Off
    );
    assert!(Ceiling::parse(&json!("off"), Path::new("/")).is_err());
}

#[test]
fn summaries_read_at_a_glance() {
    assert_eq!(policy(json!({})).summary(), "workspace-write");
    assert_eq!(SandboxPolicy::Off.summary(), "off");
    assert_eq!(
        policy(json!({"fs": "off", "network": true, "read": ["/a"]})).summary(),
        "fs off, network, +1 path"
    );
}

#[test]
fn every_fs_setting_reads_back_from_its_name() {
    use strum::VariantArray;
    let names: Vec<&str> = Fs::VARIANTS.iter().map(|f| f.as_str()).collect();
    assert_eq!(names, ["workspace-write", "workspace-read", "off"]);
    for fs in Fs::VARIANTS {
        assert_eq!(Fs::parse(&json!(fs.as_str())).unwrap(), *fs);
    }
}
