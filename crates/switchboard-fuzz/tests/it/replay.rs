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

#[test]
fn every_target_has_a_fuzz_binary_and_every_binary_a_target() {
    let mut binaries: Vec<String> = std::fs::read_dir(repository().join("fuzz/fuzz_targets"))
        .unwrap()
        .map(|file| {
            let path = file.unwrap().path();
            path.file_stem().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    binaries.sort();
    let mut names: Vec<&str> = TARGETS.iter().map(|target| target.name).collect();
    names.sort_unstable();
    assert_eq!(binaries, names);
    let manifest = std::fs::read_to_string(repository().join("fuzz/Cargo.toml")).unwrap();
    for name in names {
        assert!(
            manifest.contains(&format!("path = \"fuzz_targets/{name}.rs\"")),
            "fuzz/Cargo.toml has no binary for {name}"
        );
    }
}
