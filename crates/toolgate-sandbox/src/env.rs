//! The environment of a sandboxed program, built from nothing: `PATH` (toolgate's, less
//! the folders the sandbox hides), `HOME` and `TMPDIR` (its fresh folder), `LANG`, and
//! the variables its tool declares. Nothing else of toolgate's environment — no
//! `TOOLGATE_*`, no other tool's credential — reaches it.

use std::ffi::OsString;
use std::path::Path;

/// `PATH` when toolgate's own leaves nothing the program may read.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The variables, in order (a declared variable wins over a built one of the same name).
pub fn build(
    home: &Path,
    declared: &[(String, String)],
    readable: &dyn Fn(&Path) -> bool,
) -> Vec<(OsString, OsString)> {
    let path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| readable(d))
                .collect::<Vec<_>>()
        })
        .filter(|dirs| !dirs.is_empty())
        .and_then(|dirs| std::env::join_paths(dirs).ok())
        .unwrap_or_else(|| FALLBACK_PATH.into());
    let lang = std::env::var_os("LANG").unwrap_or_else(|| "C.UTF-8".into());
    let mut env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), path),
        ("HOME".into(), home.into()),
        ("TMPDIR".into(), home.into()),
        ("LANG".into(), lang),
    ];
    for (k, v) in declared {
        env.retain(|(name, _)| name != k.as_str());
        env.push((k.into(), v.into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_built_or_declared() {
        let env = build(
            Path::new("/tmp/x/home"),
            &[
                ("TZ".into(), "UTC".into()),
                ("LANG".into(), "fr_FR.UTF-8".into()),
            ],
            &|d| d.starts_with("/usr"),
        );
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH", "HOME", "TMPDIR", "TZ", "LANG"]);
        let path = env[0].1.to_string_lossy().into_owned();
        assert!(
            path.split(':')
                .all(|d| d.starts_with("/usr") || path == FALLBACK_PATH),
            "{path}"
        );
        assert_eq!(env[4].1, "fr_FR.UTF-8");
    }
}
