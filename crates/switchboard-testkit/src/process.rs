//! What a test or benchmark reads of a process it started: its resident memory, from
//! `/proc` (Linux), the figure memory bounds are stated in.

/// The resident memory (VmRSS) of process `pid`, in MiB; `None` once it has gone.
pub fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}
