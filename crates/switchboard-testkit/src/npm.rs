//! npm packages the tests drive (agent CLIs, a browser driver), installed on first use into
//! `${SWITCHBOARD_CACHE:-~/.cache/switchboard}/npm/<package>-<version>`, outside the work
//! tree, and reused after. Each install is staged beside its final place and moved in whole,
//! so tests running at once never see half an installation, and it is bounded in time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The cache directory the project's slow set-ups share.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("SWITCHBOARD_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/switchboard"))
        })
        .unwrap_or_else(|| std::env::temp_dir().join("switchboard-cache"))
}

/// The install directory of `package@version` (its `node_modules` is inside), installing it
/// when it is not there yet. `Err` says why it cannot be had here (npm missing); a failed
/// install panics with npm's own words.
pub fn npm_package(package: &str, version: &str) -> Result<PathBuf, String> {
    // npm's own cache does not take two installs at once from one process's tests.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _installing = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let name = format!(
        "{}-{version}",
        package.trim_start_matches('@').replace('/', "-")
    );
    let npm = cache_dir().join("npm");
    let prefix = npm.join(&name);
    let manifest = |root: &Path| root.join("node_modules").join(package).join("package.json");
    if manifest(&prefix).exists() {
        return Ok(prefix);
    }
    let npm_runs = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !npm_runs {
        return Err(format!("npm is missing, so {package} cannot be installed"));
    }
    let staging = npm.join(format!(".{name}-{}", std::process::id()));
    std::fs::create_dir_all(&staging).unwrap();
    let output = Command::new("timeout")
        .args([
            "-k",
            "10",
            "600",
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(&staging)
        .arg(format!("{package}@{version}"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success() && manifest(&staging).exists(),
        "npm install {package}@{version} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    if std::fs::rename(&staging, &prefix).is_err() {
        // Another run got there first.
        let _ = std::fs::remove_dir_all(&staging);
    }
    Ok(prefix)
}
