//! The soak's world: a tools folder (two tools that change the world and log every
//! launch, a read-only one, a client one) and scripted agents that mix AUTO, CONFIRM and
//! client calls over two to four turns, written into the soak's temporary folder.

use std::path::{Path, PathBuf};

/// Tools whose calls change the world: each launch appends the call id to
/// `launches.log` in the workspace, so a second launch of one call shows.
pub const LAUNCHING: [&str; 2] = ["launch", "deploy"];

/// The file every launch of a launching tool appends its call id to.
pub const LAUNCH_LOG: &str = "launches.log";

/// The file every run of the read-only tool appends its call id to (it may run again).
pub const READ_LOG: &str = "reads.log";

/// A bash script: log the call id, sleep 0 to 149 ms, answer.
fn script(log: &str, answer: &str) -> String {
    format!(
        "echo \"$TOOLGATE_CALL_ID\" >> {log}; printf -v t '0.%03d' $((RANDOM % 150)); sleep $t; echo {answer}"
    )
}

fn command_tool(name: &str, permission: &str, read_only: bool, log: &str, what: &str) -> String {
    let script = script(log, &format!("{name}-ok"));
    format!(
        "name: {name}\n\
         description: {what}\n\
         permission: {permission}\n\
         read_only: {read_only}\n\
         timeout: 20\n\
         parameters:\n  type: object\n  properties:\n    what: {{type: string}}\n  required: [what]\n\
         entry:\n  type: command\n  command: bash\n  args: [\"-c\", {script:?}]\n"
    )
}

/// One scripted call: `(id, tool, argument)`; an empty id lets toolgate make one.
type Call = (&'static str, &'static str, &'static str);

/// An agent: its name, mode, and the calls of each model turn (the last reply, with no
/// calls, is added).
struct AgentDef {
    name: &'static str,
    xml: bool,
    turns: &'static [&'static [Call]],
}

const AGENTS: &[AgentDef] = &[
    AgentDef {
        name: "mixed",
        xml: false,
        turns: &[
            &[("", "launch", "a"), ("", "peek", "x")],
            &[("", "deploy", "b"), ("", "ask_user", "Colour?")],
            &[("", "launch", "c")],
        ],
    },
    AgentDef {
        name: "approvals",
        xml: false,
        turns: &[
            &[("call_d1", "deploy", "a"), ("call_d2", "deploy", "b")],
            &[
                ("call_l1", "launch", "c"),
                ("call_ask", "ask_user", "Size?"),
                ("call_p1", "peek", "y"),
            ],
        ],
    },
    AgentDef {
        name: "client_first",
        xml: false,
        turns: &[
            &[("call_ask", "ask_user", "Which one?")],
            &[
                ("call_l1", "launch", "a"),
                ("call_l2", "launch", "b"),
                ("call_l3", "launch", "c"),
            ],
            &[("call_d1", "deploy", "d"), ("call_p1", "peek", "z")],
        ],
    },
    AgentDef {
        name: "auto_only",
        xml: false,
        turns: &[
            &[("", "launch", "a"), ("", "launch", "b")],
            &[("", "peek", "x")],
            &[("", "launch", "c"), ("", "peek", "y")],
        ],
    },
    AgentDef {
        name: "xml_mixed",
        xml: true,
        turns: &[
            &[("", "launch", "a"), ("", "peek", "x")],
            &[("", "deploy", "b")],
            &[("", "ask_user", "Name?"), ("", "launch", "c")],
        ],
    },
];

/// The folders the world lives in.
pub struct World {
    pub tools: PathBuf,
    pub agents: PathBuf,
    /// The agent names, for choosing one per run.
    pub names: Vec<&'static str>,
}

impl World {
    pub fn agent_file(&self, name: &str) -> PathBuf {
        self.agents.join(format!("{name}.yaml"))
    }

    /// Whether the agent's results come back as tool messages (native mode).
    pub fn native(&self, name: &str) -> bool {
        AGENTS.iter().any(|a| a.name == name && !a.xml)
    }
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn replies(agent: &AgentDef) -> String {
    let mut out = String::from("replies:\n");
    for (n, calls) in agent.turns.iter().enumerate() {
        if agent.xml {
            let mut text = format!("Turn {}.", n + 1);
            for (_, tool, arg) in calls.iter() {
                let key = if *tool == "ask_user" {
                    "question"
                } else {
                    "what"
                };
                text.push_str(&format!(
                    "\n<tool_call><name>{tool}</name><params><{key}><![CDATA[{arg}]]></{key}></params></tool_call>"
                ));
            }
            out.push_str(&format!("  - content: {}\n", quote(&text)));
            continue;
        }
        out.push_str(&format!(
            "  - content: {}\n    tool_calls:\n",
            quote(&format!("Turn {}.", n + 1))
        ));
        for (id, tool, arg) in calls.iter() {
            let key = if *tool == "ask_user" {
                "question"
            } else {
                "what"
            };
            let id = if id.is_empty() {
                String::new()
            } else {
                format!("id: {id}, ")
            };
            out.push_str(&format!(
                "      - {{{id}name: {tool}, arguments: {{{key}: {}}}}}\n",
                quote(arg)
            ));
        }
    }
    out.push_str("  - content: All done.\n");
    out
}

/// Writes the tools and agents under `root`.
pub fn write(root: &Path) -> std::io::Result<World> {
    let tools = root.join("tools");
    let agents = root.join("agents");
    std::fs::create_dir_all(&tools)?;
    std::fs::create_dir_all(&agents)?;
    let files = [
        (
            "launch.yaml",
            command_tool("launch", "auto", false, LAUNCH_LOG, "Start something (AUTO, not read-only)."),
        ),
        (
            "deploy.yaml",
            command_tool("deploy", "confirm", false, LAUNCH_LOG, "Deploy something (CONFIRM, not read-only)."),
        ),
        (
            "peek.yaml",
            command_tool("peek", "auto", true, READ_LOG, "Look at something (AUTO, read-only)."),
        ),
        (
            "ask_user.yaml",
            "name: ask_user\ndescription: Ask the person.\nparameters:\n  type: object\n  properties:\n    question: {type: string}\n  required: [question]\nentry: {type: client}\n".to_string(),
        ),
    ];
    for (name, text) in files {
        std::fs::write(tools.join(name), text)?;
    }
    for agent in AGENTS {
        let tools_used = "[launch, deploy, peek, ask_user]";
        let mode = if agent.xml { "xml" } else { "native" };
        let file = format!(
            "name: {name}\nmodel: scripted:{name}.replies.yaml\nmode: {mode}\ninstructions: A soak agent.\ntools: {tools_used}\nmax_iterations: 8\n",
            name = agent.name
        );
        std::fs::write(agents.join(format!("{}.yaml", agent.name)), file)?;
        std::fs::write(
            agents.join(format!("{}.replies.yaml", agent.name)),
            replies(agent),
        )?;
    }
    Ok(World {
        tools,
        agents,
        names: AGENTS.iter().map(|a| a.name).collect(),
    })
}
