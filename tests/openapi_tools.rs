//! OpenAPI documents as a tool source. The public Petstore documents (Swagger 2.0 and
//! OpenAPI 3.0, tests/fixtures/openapi) parse into one tool per operation; a real
//! FastAPI app (tests/py/pets_api.py) serving its own OpenAPI 3.1 document is called
//! through `toolgate tools list/show/call` and from an agent's run, under the `http`
//! entry's network rule (loopback refused unless `TOOLGATE_HTTP_ALLOW` opens it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::serving;
use toolgate_test_support::toolgate;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolgate::tool::{Entry, Permission, ToolLibrary, openapi};

const TOKEN: &str = "pets-bearer-5ac0e2";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openapi")
        .join(name)
}

fn library(file: &str) -> (tempfile::TempDir, ToolLibrary) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), file).unwrap();
    let lib = ToolLibrary::load(dir.path(), &toolgate::tool::sources::standard()).unwrap();
    (dir, lib)
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn binding(lib: &ToolLibrary, name: &str) -> openapi::Binding {
    match &lib.get(name).unwrap().spec.entry {
        Entry::Source(b) if b.source == "openapi" => b.decode().unwrap(),
        other => panic!("{name} runs as {other:?}"),
    }
}

#[test]
fn the_swagger_2_petstore_parses_into_one_tool_per_operation() {
    let (_dir, lib) = library(&format!(
        "openapi: {}\nname: petstore\nauth: {{type: api_key, key: \"${{env:PETSTORE_KEY}}\"}}\n",
        fixture("petstore-v2.json").display()
    ));
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    let names: Vec<String> = lib
        .names()
        .into_iter()
        .filter(|n| n.starts_with("petstore__"))
        .collect();
    // 20 operations; uploadFile (a multipart file upload) cannot be called.
    assert_eq!(names.len(), 19, "{names:?}");
    assert!(!names.contains(&"petstore__uploadFile".to_string()));

    let get = lib.get("petstore__getPetById").unwrap();
    assert_eq!(get.spec.permission, Permission::Auto);
    assert_eq!(
        get.spec.description,
        "Find pet by ID\n\nReturns a single pet"
    );
    assert_eq!(get.spec.parameters["required"], json!(["petId"]));
    let b = binding(&lib, "petstore__getPetById");
    assert_eq!(b.url, "https://petstore.swagger.io/v2/pet/{petId}");
    // The key goes where the document's apiKey scheme says.
    assert_eq!(
        b.auth,
        openapi::Auth::ApiKey {
            location: openapi::Location::Header,
            name: "api_key".into()
        }
    );

    // A body schema: its $refs inlined, OpenAPI's xml/example dropped, fields at the top.
    let add = lib.get("petstore__addPet").unwrap();
    assert_eq!(add.spec.permission, Permission::Confirm);
    let p = &add.spec.parameters;
    assert_eq!(p["required"], json!(["name", "photoUrls"]));
    assert_eq!(
        p["properties"]["category"]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(
        p["properties"]["tags"]["items"]["properties"]["id"]["type"],
        "integer"
    );
    assert!(
        !p.to_string().contains("$ref") && !p.to_string().contains("xml"),
        "{p}"
    );
    assert!(add.check(args(json!({"name": "Rex"}))).is_err());
    assert!(
        add.check(args(json!({"name": "Rex", "photoUrls": []})))
            .is_ok()
    );

    // The api_key header parameter is the API's key, set from the credential: not the model's.
    let del = lib.get("petstore__deletePet").unwrap();
    assert!(del.spec.parameters["properties"].get("api_key").is_none());
    assert!(!del.spec.parameters.to_string().contains("_auth_token"));
    assert!(del.spec.credentials.contains_key("_auth_token"));

    // A request as it is sent: path encoded, arrays repeated (collectionFormat: multi),
    // the key in its header, a form body.
    let find = lib.get("petstore__findPetsByStatus").unwrap();
    let req = openapi::request(
        &find.spec,
        &binding(&lib, "petstore__findPetsByStatus"),
        args(json!({"status": ["available", "sold"], "_auth_token": "k1"})),
    )
    .unwrap();
    assert_eq!(
        req.url.as_str(),
        "https://petstore.swagger.io/v2/pet/findByStatus?status=available&status=sold"
    );
    assert!(req.headers.contains(&("api_key".into(), "k1".into())));
    let form = lib.get("petstore__updatePetWithForm").unwrap();
    let req = openapi::request(
        &form.spec,
        &binding(&lib, "petstore__updatePetWithForm"),
        args(json!({"petId": 7, "name": "a b", "_auth_token": "k1"})),
    )
    .unwrap();
    assert_eq!(req.url.as_str(), "https://petstore.swagger.io/v2/pet/7");
    match req.body {
        Some(toolgate::tool::http::Body::Text(t)) => assert_eq!(t, "name=a+b"),
        _ => panic!("no form body"),
    }
    // An array body is one `body` argument.
    let many = lib.get("petstore__createUsersWithListInput").unwrap();
    assert_eq!(many.spec.parameters["required"], json!(["body"]));
    assert_eq!(many.spec.parameters["properties"]["body"]["type"], "array");
}

#[test]
fn the_openapi_3_petstore_parses_with_a_base_url_and_a_filter() {
    // Its only server is relative: without base_url the file is one clear error.
    let (_dir, lib) = library(&format!(
        "openapi: {}\nname: pets3\n",
        fixture("petstore-v3.json").display()
    ));
    assert_eq!(lib.errors().len(), 1);
    assert!(
        lib.errors()[0].message.contains("set base_url"),
        "{:?}",
        lib.errors()
    );

    let (_dir, lib) = library(&format!(
        "openapi: {}\nname: pets3\nbase_url: https://petstore3.swagger.io/api/v3/\nauth: {{type: bearer, token: \"${{secret:PETS3}}\"}}\n",
        fixture("petstore-v3.json").display()
    ));
    assert!(lib.errors().is_empty(), "{:?}", lib.errors());
    let count = lib
        .names()
        .iter()
        .filter(|n| n.starts_with("pets3__"))
        .count();
    // 19 operations; uploadFile's body is application/octet-stream.
    assert_eq!(count, 18);
    let b = binding(&lib, "pets3__getPetById");
    assert_eq!(b.url, "https://petstore3.swagger.io/api/v3/pet/{petId}");
    assert_eq!(b.auth, openapi::Auth::Bearer);
    let update = lib.get("pets3__updatePet").unwrap();
    assert_eq!(
        update.spec.parameters["required"],
        json!(["name", "photoUrls"])
    );
    let req = openapi::request(
        &update.spec,
        &binding(&lib, "pets3__updatePet"),
        args(json!({"id": 3, "name": "Rex", "photoUrls": [], "_auth_token": "t"})),
    )
    .unwrap();
    assert!(
        req.headers
            .contains(&("Authorization".into(), "Bearer t".into()))
    );
    match req.body {
        Some(toolgate::tool::http::Body::Json(v)) => {
            assert_eq!(v, json!({"id": 3, "name": "Rex", "photoUrls": []}))
        }
        _ => panic!("no JSON body"),
    }

    // `operations:` keeps only these; a name the document lacks is an error line.
    let (_dir, lib) = library(&format!(
        "openapi: {}\nname: pets3\nbase_url: https://petstore3.swagger.io/api/v3\noperations: [getPetById, addPet, nope]\npermission: never\npermissions: {{getPetById: confirm}}\n",
        fixture("petstore-v3.json").display()
    ));
    let names: Vec<String> = lib
        .names()
        .into_iter()
        .filter(|n| n.starts_with("pets3__"))
        .collect();
    assert_eq!(names, ["pets3__addPet", "pets3__getPetById"]);
    assert_eq!(lib.errors().len(), 1);
    assert!(lib.errors()[0].message.contains("no operation 'nope'"));
    assert_eq!(
        lib.get("pets3__addPet").unwrap().spec.permission,
        Permission::Never
    );
    assert_eq!(
        lib.get("pets3__getPetById").unwrap().spec.permission,
        Permission::Confirm
    );
}

#[test]
fn a_bad_openapi_file_is_one_line_naming_it() {
    for (file, expect) in [
        ("openapi: missing.json\nname: x\n", "cannot read"),
        (
            "openapi: {openapi: 3.0.0, paths: {}}\nname: x\nbase_url: ftp://a\n",
            "base_url",
        ),
        (
            "openapi: {openapi: 3.0.0, paths: {}}\nname: x\nbase_url: http://a\nauth: {type: bearer, token: plain}\n",
            "not a source",
        ),
        (
            "openapi: {openapi: 3.0.0, paths: {}}\nname: x\nbase_url: http://a\nretries: 2\n",
            "unknown field `retries`",
        ),
        (
            "openapi: {swagger: \"1.2\", paths: {}}\nname: x\n",
            "not supported",
        ),
    ] {
        let (_dir, lib) = library(file);
        assert_eq!(lib.errors().len(), 1, "{file}");
        let e = lib.errors()[0].to_string();
        assert!(e.contains("api.yaml") && e.contains(expect), "{file}: {e}");
    }
}

/// The FastAPI app on a free port; killed when dropped.
struct Api {
    child: Child,
    port: u16,
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

fn start_api() -> Api {
    let python = serving::python("tests/openapi_tools.rs");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/pets_api.py"))
        .arg(port.to_string())
        .env("PETS_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let api = Api { child, port };
    let start = Instant::now();
    while get(port, "/openapi.json").is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the API did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    api
}

fn cli(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    toolgate(dir)
        .args(args)
        .env_remove("TOOLGATE_HTTP_ALLOW")
        .env_remove("PETS_TOKEN")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn all(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_live_fastapi_app_is_called_through_its_own_document() {
    let api = start_api();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("tools")).unwrap();
    // Its document as served, beside the file that points at it.
    std::fs::write(
        d.join("tools/pets.json"),
        get(api.port, "/openapi.json").unwrap(),
    )
    .unwrap();
    std::fs::write(
        d.join("tools/pets.yaml"),
        format!(
            "openapi: pets.json\nname: pets\nbase_url: http://127.0.0.1:{}\nauth: {{type: bearer, token: \"${{env:PETS_TOKEN}}\"}}\n",
            api.port
        ),
    )
    .unwrap();
    let allow = ("TOOLGATE_HTTP_ALLOW", "127.0.0.1");
    let token = ("PETS_TOKEN", TOKEN);

    let out = cli(d, &["tools", "check"], &[]);
    assert!(out.status.success(), "{}", all(&out));
    let out = cli(d, &["tools", "list"], &[]);
    let text = all(&out);
    for line in [
        "pets__getPet",
        "pets__listPets",
        "pets__putPet",
        "openapi:GET getPet",
    ] {
        assert!(text.contains(line), "{text}");
    }

    // The path id and the body's id share a name: each is prefixed by its place; the
    // Authorization header parameter is the token's, not the model's.
    let out = cli(d, &["tools", "show", "pets__putPet", "--json"], &[]);
    assert!(out.status.success(), "{}", all(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let props = shown["parameters"]["properties"].as_object().unwrap();
    let names: Vec<&String> = props.keys().collect();
    assert_eq!(
        names,
        ["path_id", "name", "tag", "body_id", "owner"],
        "{shown}"
    );
    assert_eq!(shown["permission"], "confirm");
    assert_eq!(shown["parameters"]["required"], json!(["path_id", "name"]));

    // Loopback is refused by the same rule as the `http` entry...
    let out = cli(
        d,
        &["tools", "call", "pets__getPet", "--args", r#"{"id": 1}"#],
        &[token],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert!(all(&out).contains("loopback"), "{}", all(&out));
    // ...and reached when allowed: the JSON body stays JSON.
    let out = cli(
        d,
        &[
            "tools",
            "call",
            "pets__getPet",
            "--args",
            r#"{"id": 1}"#,
            "--json",
        ],
        &[allow, token],
    );
    assert!(out.status.success(), "{}", all(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["output"]["parts"][0]["json"],
        json!({"name": "Rex", "tag": "dog", "id": 1, "owner": null})
    );
    // An array in the query repeats its name.
    let out = cli(
        d,
        &[
            "tools",
            "call",
            "pets__listPets",
            "--args",
            r#"{"tags": ["cat"]}"#,
            "--json",
        ],
        &[allow, token],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["output"]["parts"][0]["json"][0]["name"], "Tom", "{v}");
    // A 404 is an error result with the status and the API's complaint.
    let out = cli(
        d,
        &[
            "tools",
            "call",
            "pets__getPet",
            "--args",
            r#"{"id": 99}"#,
            "--json",
        ],
        &[allow, token],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let text = all(&out);
    assert!(
        text.contains("HTTP 404") && text.contains("no pet 99"),
        "{text}"
    );
    // A body over the file's cap is cut, and says so.
    std::fs::create_dir(d.join("capped")).unwrap();
    std::fs::copy(d.join("tools/pets.json"), d.join("capped/pets.json")).unwrap();
    std::fs::write(
        d.join("capped/pets.yaml"),
        format!(
            "openapi: pets.json\nname: pets\nbase_url: http://127.0.0.1:{}\nmax_response: 20\noperations: [listPets]\n",
            api.port
        ),
    )
    .unwrap();
    let out = cli(
        d,
        &[
            "tools",
            "--tools",
            "capped",
            "call",
            "pets__listPets",
            "--json",
        ],
        &[allow],
    );
    assert!(out.status.success(), "{}", all(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["output"]["parts"][0]["text"].as_str().unwrap();
    assert!(text.starts_with(r#"[{"name":"Rex","tag""#), "{text}");
    assert!(text.contains("[response truncated: 20 of"), "{text}");
    // Without its token the call does not start; with a wrong one the API says 401.
    let body = r#"{"path_id": 7, "body_id": 3, "name": "Fido", "owner": {"name": "Ann"}}"#;
    let out = cli(
        d,
        &["tools", "call", "pets__putPet", "--args", body],
        &[allow],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert!(all(&out).contains("PETS_TOKEN"), "{}", all(&out));
    let out = cli(
        d,
        &["tools", "call", "pets__putPet", "--args", body],
        &[allow, ("PETS_TOKEN", "wrong")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert!(
        all(&out).contains("HTTP 401") && all(&out).contains("bad token"),
        "{}",
        all(&out)
    );

    // An agent's run: the model reads a pet and stores one (approved by the agent file).
    std::fs::write(
        d.join("agent.yaml"),
        "name: keeper\nmodel: scripted:replies.yaml\ntools: [pets__getPet, pets__putPet]\npermissions: {pets__putPet: auto}\nworkspace: .\n",
    )
    .unwrap();
    std::fs::write(
        d.join("replies.yaml"),
        format!(
            "replies:\n  - content: Looking.\n    tool_calls:\n      - {{id: c1, name: pets__getPet, arguments: {{id: 2}}}}\n      - {{id: c2, name: pets__putPet, arguments: {body}}}\n  - content: Stored Fido.\n"
        ),
    )
    .unwrap();
    let out = cli(
        d,
        &["run", "--agent", "agent.yaml", "--json", "store fido"],
        &[allow, token],
    );
    assert!(out.status.success(), "{}", all(&out));
    assert!(!all(&out).contains(TOKEN));
    let out = cli(d, &["calls", "--json"], &[]);
    let text = all(&out);
    assert!(text.contains("Tom"), "{text}");
    assert!(
        text.contains("Fido") && text.contains(r#"\"body_id\":3"#),
        "{text}"
    );
    assert!(!text.contains(TOKEN), "{text}");
    // The API has it under the path's id.
    let stored = get(api.port, "/pets/7").unwrap();
    assert!(
        stored.contains(r#""name":"Fido""#) && stored.contains(r#""id":7"#),
        "{stored}"
    );
}
