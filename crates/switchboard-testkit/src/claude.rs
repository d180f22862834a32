//! Claude Code as the tests run it: headless, in a scratch home, talking to the gateway
//! under test and nothing else.

use std::path::Path;
use std::process::Command;

/// `timeout -k 5 SECS claude` run in `work`, its arguments to be added by the caller. Its
/// environment is only `PATH`, the scratch `home`, the gateway at `base_url` as its
/// Anthropic endpoint with `api_key`, and telemetry, updates and other traffic turned off,
/// so that nothing of the machine's own set-up reaches the run.
pub fn claude_code(
    claude: &Path,
    timeout_secs: &str,
    home: &Path,
    work: &Path,
    base_url: &str,
    api_key: &str,
) -> Command {
    let mut command = Command::new("timeout");
    command
        .args(["-k", "5", timeout_secs])
        .arg(claude)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", api_key)
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    command
}
