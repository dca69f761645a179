//! A mistake in an agent or tool file is reported at the right field and line, whatever
//! the file's syntax: block YAML, flow YAML or JSON (issue 39, item 5); MCP server
//! declarations too.

use std::path::Path;

use toolgate::agent::Agent;

/// One broken file: its name, its text, and what the report must say.
struct Case {
    name: &'static str,
    file: &'static str,
    text: &'static str,
    /// `PATH:LINE: field 'F': ...` must hold this (after the file's path).
    expected: &'static str,
}

const AGENTS: &[Case] = &[
    Case {
        name: "mode misspelt, block YAML",
        file: "a.yaml",
        text: "name: a\ntools: []\nmode: nativ\n",
        expected: ":3: field 'mode': unknown variant `nativ`",
    },
    Case {
        name: "mode misspelt, flow YAML",
        file: "a.yaml",
        text: "{name: a,\n  tools: [],\n  mode: nativ}\n",
        expected: ":3: field 'mode': unknown variant `nativ`",
    },
    Case {
        name: "mode misspelt, JSON",
        file: "a.json",
        text: "{\"name\": \"a\",\n \"mode\": \"nativ\"}\n",
        expected: ":2: field 'mode': unknown variant `nativ`",
    },
    Case {
        name: "unknown field, flow YAML",
        file: "a.yaml",
        text: "{name: a,\n  memory: docs}\n",
        expected: ":2: field 'memory': unknown field `memory`",
    },
    Case {
        name: "unknown field, JSON",
        file: "a.json",
        text: "{\"name\": \"a\",\n \"memory\": \"docs\"}\n",
        expected: ":2: field 'memory': unknown field `memory`",
    },
    Case {
        name: "nested field, flow YAML",
        file: "a.yaml",
        text: "{name: a, limits: {global: many}}\n",
        expected: ":1: field 'limits.global': ",
    },
];

const TOOLS: &[Case] = &[
    Case {
        name: "read_only not a boolean, block YAML",
        file: "t.yaml",
        text: "name: t\ndescription: d\nread_only: maybe\n",
        expected: ":3: field 'read_only': ",
    },
    Case {
        name: "read_only not a boolean, flow YAML",
        file: "t.yaml",
        text: "{name: t,\n description: d,\n read_only: maybe}\n",
        expected: ":3: field 'read_only': ",
    },
    Case {
        name: "read_only not a boolean, JSON",
        file: "t.json",
        text: "{\"name\": \"t\",\n \"read_only\": \"maybe\"}\n",
        expected: ":2: field 'read_only': ",
    },
    Case {
        name: "a tag that is a map, flow YAML",
        file: "t.yaml",
        text: "{name: t, tags: [a, {b: 1}]}\n",
        expected: ":1: field 'tags[1]': ",
    },
    Case {
        name: "unknown field, JSON",
        file: "t.json",
        text: "{\"name\": \"t\",\n \"permision\": \"auto\"}\n",
        expected: ":2: field 'permision': unknown field `permision`",
    },
];

/// Writes each case's file, reads it with `read`, and collects every row whose report
/// differs from what it should say (one failing row does not hide the rest).
fn check(cases: &[Case], read: impl Fn(&Path) -> Result<(), String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for case in cases {
        let path = dir.path().join(case.file);
        std::fs::write(&path, case.text).unwrap();
        match read(&path) {
            Ok(()) => wrong.push(format!("{}: read without a fault", case.name)),
            Err(report) => {
                let expected = format!("{}{}", path.display(), case.expected);
                if !report.starts_with(&expected) {
                    wrong.push(format!(
                        "{}:\n  got  {report}\n  want {expected}...",
                        case.name
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn agent_file_faults_name_the_field_in_every_syntax() {
    check(AGENTS, |path| {
        Agent::load(path).map(drop).map_err(|e| e.to_string())
    });
}

#[test]
fn tool_file_faults_name_the_field_in_every_syntax() {
    check(TOOLS, |path| {
        toolgate::tool::load_file(path)
            .map(drop)
            .map_err(|e| e.to_string())
    });
}

const MCP: &[Case] = &[
    Case {
        name: "permission misspelt, block YAML",
        file: "m.yaml",
        text: "mcp_server: time\ncommand: x\npermission: sometimes\n",
        expected: ":3: MCP server: field 'permission': unknown variant `sometimes`",
    },
    Case {
        name: "unknown field, JSON",
        file: "m.json",
        text: "{\"mcp_server\": \"time\", \"command\": \"x\",\n \"permision\": \"auto\"}\n",
        expected: ":2: MCP server: field 'permision': unknown field `permision`",
    },
];

#[test]
fn mcp_declaration_faults_name_the_field() {
    check(MCP, |path| {
        match toolgate::tool::mcp::config::read(path).errors.first() {
            Some(e) => Err(e.to_string()),
            None => Ok(()),
        }
    });
}
