//! Replays every fuzz target's seeds and every saved crash input (`fuzz/regressions/<target>/`)
//! through the same checks the fuzzer runs, so a crash found once stays fixed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use switchboard_fuzz::{REGRESSIONS, TARGETS, repository, target};

#[test]
fn every_seed_passes_its_targets_checks() {
    for target in TARGETS {
        let seeds = (target.seeds)().unwrap();
        assert!(
            seeds.len() >= 5,
            "{}: only {} seeds",
            target.name,
            seeds.len()
        );
        for (number, seed) in seeds.iter().enumerate() {
            if let Err(finding) = (target.check)(seed) {
                panic!("{} seed {number}: {finding}", target.name);
            }
        }
    }
}

#[test]
fn every_saved_crash_input_passes_its_targets_checks() {
    let root = repository().join(REGRESSIONS);
    let mut replayed = 0;
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !dir.is_dir() {
            continue;
        }
        let target = target(&name)
            .unwrap_or_else(|| panic!("{REGRESSIONS}/{name} is not the name of a fuzz target"));
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            let input = std::fs::read(&file).unwrap();
            if let Err(finding) = (target.check)(&input) {
                panic!("{}: {finding}", file.display());
            }
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no regression input under {}", root.display());
}
