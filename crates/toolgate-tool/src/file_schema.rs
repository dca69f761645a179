//! JSON Schemas of the values agent and tool files hold that are read by hand rather
//! than by serde (permission words and rules, hooks, durations, sandboxes, parameters,
//! credentials): each says what the function that reads the value accepts, and is
//! used by the files' derived schemas (`#[schemars(schema_with = ...)]`).

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::spec::Permission;

/// A permission word (`auto`, `confirm`, `never`) or a map of rules (read by
/// `policy::read_permission`).
pub fn permission(generator: &mut SchemaGenerator) -> Schema {
    let word = generator.subschema_for::<Permission>();
    json_schema!({
        "description": "A permission word, or rules: CEL expressions over the call's arguments \
            (`deny_if`, `confirm_if`, `auto_if`, checked in that order) and the word for a call \
            no rule matched (`otherwise`).",
        "anyOf": [
            word,
            {
                "type": "object",
                "properties": {
                    "deny_if": {"type": "string", "description": "Refuse the call when this holds."},
                    "confirm_if": {"type": "string", "description": "Ask a person when this holds."},
                    "auto_if": {"type": "string", "description": "Run at once when this holds."},
                    "otherwise": word,
                },
                "additionalProperties": false
            }
        ]
    })
}

/// A duration: seconds as a number, or a string with a unit (`30s`, `1500ms`, `5m`,
/// `2h`), as `policy::parse_duration` reads it.
pub fn duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Seconds (`90`), or a number with a unit: `ms`, `s`, `m`, `h` (`1500ms`, `5m`).",
        "anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": "^\\s*[0-9]+(\\.[0-9]+)?\\s*(ms|s|m|h)?\\s*$"}
        ]
    })
}

/// `on_timeout`: what happens to an approval nobody decided in time.
pub fn on_timeout(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "What an approval nobody decided within `approval_timeout` becomes: \
            `deny` (the default: the call is denied and the run goes on) or `cancel_run`.",
        "enum": ["deny", "cancel_run"]
    })
}

/// `hooks`: a program or an endpoint asked before each call and after each result.
pub fn hooks(generator: &mut SchemaGenerator) -> Schema {
    let timeout = duration(generator);
    let confined = sandbox(generator);
    let hook = json_schema!({
        "type": "object",
        "description": "A program (`command`) or an HTTP endpoint (`url`), given the call as JSON.",
        "properties": {
            "command": {
                "type": "array", "items": {"type": "string"}, "minItems": 1,
                "description": "The program and its arguments: [PROGRAM, ARGS...]."
            },
            "url": {"type": "string", "format": "uri", "description": "An http(s) URL the call is POSTed to."},
            "timeout": timeout,
            "on_error": {
                "enum": ["deny", "confirm"],
                "description": "What a hook that fails or times out means for the call (default deny)."
            },
            "sandbox": confined
        },
        "oneOf": [{"required": ["command"]}, {"required": ["url"]}],
        "additionalProperties": false
    });
    json_schema!({
        "type": "object",
        "description": "Hooks run around each call; they fail closed.",
        "properties": {
            "before_call": hook,
            "after_result": hook
        },
        "additionalProperties": false
    })
}

/// The settings a sandbox and an agent's sandbox ceiling share.
fn sandbox_settings() -> Schema {
    let limit = json_schema!({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]});
    json_schema!({
        "type": "object",
        "properties": {
            "fs": {
                "enum": ["workspace-write", "workspace-read", "off"],
                "description": "How much of the file system the program sees (default workspace-write)."
            },
            "read": {"type": "array", "items": {"type": "string"}, "description": "More folders it may read."},
            "write": {"type": "array", "items": {"type": "string"}, "description": "More folders it may write."},
            "network": {"type": "boolean", "description": "Whether it may open network connections (default false)."},
            "limits": {
                "type": "object",
                "description": "Resource limits: a number, a string with a unit (`10m`, `4G`) or `off`.",
                "properties": {
                    "cpu": limit, "memory": limit, "processes": limit,
                    "file_size": limit, "open_files": limit
                },
                "additionalProperties": false
            }
        },
        "additionalProperties": false
    })
}

/// A tool's `sandbox:`: `off`, or its settings.
pub fn sandbox(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "The sandbox of the programs the tool starts (command tools, the shell \
            built-in): `off`, or its settings.",
        "anyOf": [{"const": "off"}, sandbox_settings()]
    })
}

/// An agent's `sandbox:`: limits on its tools' sandboxes (the stricter setting wins).
pub fn sandbox_ceiling(_: &mut SchemaGenerator) -> Schema {
    let mut s = sandbox_settings();
    s.insert(
        "description".into(),
        "Limits on the sandboxes of all the agent's tools: for each setting the stricter of the \
         tool's and this one applies."
            .into(),
    );
    s
}

/// `parameters:` (and `output:`): a JSON Schema object, or the list form.
pub fn parameters(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A JSON Schema of type object, or a list of parameters (each a `name` with \
            JSON Schema keywords, `required`, `nullable`, `validation`).",
        "anyOf": [
            {"type": "object"},
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "required": {"type": "boolean"},
                        "nullable": {"type": "boolean"}
                    },
                    "required": ["name"]
                }
            }
        ]
    })
}

/// `credentials:`: argument -> `${env:VAR}` or `${secret:NAME}`.
pub fn credentials(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "Arguments the model never fills, by name: `${env:VAR}` or `{env: VAR}` \
            (an environment variable of toolgate's), `${secret:NAME}` or `{secret: NAME}` (a stored secret).",
        "additionalProperties": {
            "anyOf": [
                {"type": "string", "pattern": "^\\s*\\$\\{(env|secret):\\s*[A-Za-z0-9_.-]+\\s*\\}\\s*$"},
                {
                    "type": "object",
                    "properties": {"env": {"type": "string"}, "secret": {"type": "string"}},
                    "minProperties": 1, "maxProperties": 1, "additionalProperties": false
                }
            ]
        }
    })
}

/// `label` and `help`: a plain string, or languages and their texts.
pub fn localized(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A plain string (taken as `en_US`), or languages and their texts: \
            `{en_US: Pets, zh_Hans: 宠物}`.",
        "anyOf": [
            {"type": "string", "minLength": 1},
            {"type": "object", "minProperties": 1,
             "propertyNames": {"pattern": "^[A-Za-z0-9_-]{2,16}$"},
             "additionalProperties": {"type": "string", "minLength": 1}}
        ]
    })
}

/// `icon`: a short text or an image file beside the tool file.
pub fn icon(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A short text (an emoji, at most 8 characters) or an image file beside \
            the tool file (.svg, .png, .jpg, .gif, .webp; at most 32 KiB). URLs are refused: \
            the inbox loads nothing from another host.",
        "type": "string",
        "minLength": 1
    })
}

/// Any JSON value (a field read later by its own rules, described in its doc comment).
pub fn any(_: &mut SchemaGenerator) -> Schema {
    json_schema!(true)
}

/// `Permission` in a derived schema: the word, with its meaning.
impl JsonSchema for Permission {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Permission".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "`auto`: runs at once; `confirm`: waits for a person's approval; \
                `never`: refused without asking.",
            "enum": ["auto", "confirm", "never"]
        })
    }
}
