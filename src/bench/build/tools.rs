//! Finding the build tools on a PATH string, so "is `cc` missing?" can be
//! answered (and tested) for any PATH, not only the process's own.

pub(crate) use crate::sys::find_in_path;

/// The tools the built-in project needs.
pub(crate) const NEEDED: &[&str] = &["cc", "make"];

/// `Err(reason)` naming every tool of [`NEEDED`] missing from `path`.
pub(crate) fn check_tools(path: &str) -> Result<(), ToolsMissing> {
    let missing: Vec<&'static str> = NEEDED.iter().copied().filter(|t| find_in_path(t, path).is_none()).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ToolsMissing { missing, path: path.to_string() })
    }
}

/// The build tools not found on `PATH`.
#[derive(Debug, thiserror::Error)]
#[error("needs a C compiler `cc` and `make` on PATH; not found: {} (PATH={path})", .missing.join(", "))]
pub(crate) struct ToolsMissing {
    missing: Vec<&'static str>,
    path: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_path_without_the_tools_is_a_clear_reason() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().to_str().unwrap().to_string();
        let e = check_tools(&format!("{p}:/nonexistent")).unwrap_err().to_string();
        assert!(e.contains("not found: cc, make"), "{e}");
        assert!(check_tools("").is_err());
        // A fake `cc` that is not executable does not count; an executable one does.
        let cc = t.path().join("cc");
        std::fs::write(&cc, "#!/bin/sh\n").unwrap();
        assert!(find_in_path("cc", &p).is_none());
        std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_in_path("cc", &p), Some(cc));
        let e = check_tools(&p).unwrap_err().to_string();
        assert!(e.contains("not found: make") && !e.contains("cc,"), "{e}");
        // A directory named like the tool is not the tool.
        std::fs::create_dir(t.path().join("make")).unwrap();
        assert!(find_in_path("make", &p).is_none());
    }
}
