//! The file formats' reference: each format's JSON Schema (generated with `schemars`
//! from the type that reads the file) written to `schemas/`, and a page per format
//! rendered from that schema.

use serde_json::Value;

use super::schema_md::{definitions, fields_table};
use super::{Page, to_json};

/// One file format: its schema's file, its page, and what the page says first.
struct Format {
    schema_file: &'static str,
    page: &'static str,
    /// A folder of this repository holding such files.
    folder: &'static str,
    title: &'static str,
    intro: &'static str,
    schema: fn() -> schemars::Schema,
}

const FORMATS: [Format; 4] = [
    Format {
        schema_file: "agent.schema.json",
        page: "agent-file.md",
        folder: "examples/agents",
        title: "Agent files",
        intro: "An agent file (YAML or JSON, passed with `--agent FILE` or found in the \
                `--agents` folder of `serve`) names an agent, its model, mode, instructions, \
                tools, permissions, limits and sub-agents.",
        schema: toolgate::agent::file_schema,
    },
    Format {
        schema_file: "tool.schema.json",
        page: "tool-file.md",
        folder: "tools",
        title: "Tool files",
        intro: "A tool file (`tools/*.yaml`, `*.yml` or `*.json`, one tool each) declares a \
                tool: its name, description, parameters, permission, and how it runs \
                (`entry`: a built-in, the client, a command or an HTTP call).",
        schema: toolgate::tool::sources::tool_file_schema,
    },
    Format {
        schema_file: "mcp-server.schema.json",
        page: "mcp-file.md",
        folder: "examples/mcp",
        title: "MCP server declarations",
        intro: "A file in the tools folder that holds `mcp_server:` (one server, toolgate's \
                form) or `mcpServers:` (the `mcp.json` desktop MCP clients write, read as it \
                is) declares MCP servers; each server's tools join the library as \
                `SERVER__TOOL`.",
        schema: toolgate::tool::mcp::config::file_schema,
    },
    Format {
        schema_file: "scripted-replies.schema.json",
        page: "scripted-replies.md",
        folder: "examples/agents",
        title: "Scripted model replies",
        intro: "A replies file (`--model scripted:FILE`) plays a model offline: each model \
                turn gets the next reply, after the conversation's last assistant message, so \
                a run resumed by another process goes on where it stopped.",
        schema: toolgate::model::ScriptedModel::file_schema,
    },
];

/// The schemas (`schemas/*.schema.json`) and the format pages.
pub fn pages() -> Vec<Page> {
    let mut out = Vec::new();
    for f in &FORMATS {
        let schema = heading_first((f.schema)().to_value());
        out.push(Page::new(
            format!("schemas/{}", f.schema_file),
            to_json(&schema),
        ));
        out.push(Page::reference(f.page, page(f, &schema)));
    }
    out
}

/// `schema` with `$schema`, `title` and `description` first, as a reader expects.
fn heading_first(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let mut out = serde_json::Map::new();
    for key in ["$schema", "title", "description"] {
        if let Some(v) = map.remove(key) {
            out.insert(key.to_string(), v);
        }
    }
    out.extend(map);
    Value::Object(out)
}

/// A format's page: what the file is, how an editor checks it, its fields and the
/// types they refer to.
fn page(f: &Format, schema: &Value) -> String {
    let mut out = format!("# {}\n\n{}\n\n", f.title, f.intro);
    out.push_str(&format!(
        "Its JSON Schema is `schemas/{file}` in the repository, generated from the type \
         that reads the file, so this page and the schema say what toolgate accepts. An \
         editor with the YAML language server (VS Code's YAML extension, Helix, Neovim, \
         Zed) checks and completes a file whose first line names the schema, by a path \
         relative to the file or by a URL; for a file in this repository's `{folder}/`:\n\n\
         ```yaml\n# yaml-language-server: $schema={up}schemas/{file}\n```\n\n\
         A JSON file can name it in a `$schema` key instead only where the format allows \
         unknown keys; toolgate's formats refuse them, so give the schema to the editor's \
         settings (`yaml.schemas`, `json.schemas`) instead.\n\n",
        file = f.schema_file,
        folder = f.folder,
        up = "../".repeat(f.folder.split('/').count()),
    ));
    out.push_str("## Fields\n\n");
    let table = fields_table(schema);
    if table.is_empty() {
        // A format with alternative forms: the fields of each.
        for (i, alt) in schema
            .get("anyOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            out.push_str(&format!("### Form {}\n\n{}\n", i + 1, fields_table(alt)));
            if let Some(servers) = alt.pointer("/properties/mcpServers") {
                out.push_str(&format!(
                    "Each server of `mcpServers` (or `servers`):\n\n{}\n",
                    fields_table(&servers["additionalProperties"])
                ));
            }
        }
    } else {
        out.push_str(&format!("{table}\n"));
    }
    let defs = schema.get("definitions").or_else(|| schema.get("$defs"));
    if let Some(defs) = defs.and_then(Value::as_object) {
        out.push_str("## Types\n\n");
        out.push_str(&definitions(defs, "###"));
    }
    out
}
