//! The demonstration characters of the repository's `characters/` directory load and do
//! what their README promises.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use switchboard_characters::{CharacterSession, LoadOptions, Loaded, load_characters};
use switchboard_tools::{ToolCall, ToolResult};

fn demo() -> Loaded {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../characters");
    load_characters(&dir, &LoadOptions::default())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn start(runtime: &tokio::runtime::Runtime, loaded: &Loaded, name: &str) -> CharacterSession {
    runtime
        .block_on(loaded.get(name).unwrap().start_conversation())
        .unwrap()
}

fn call(
    runtime: &tokio::runtime::Runtime,
    session: &CharacterSession,
    name: &str,
    arguments: &str,
) -> ToolResult {
    let call = ToolCall {
        id: "call_1".to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    };
    runtime.block_on(session.call_tool(&call))
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_five_characters_load() {
    let loaded = demo();
    assert!(loaded.rejections.is_empty(), "{:#?}", loaded.rejections);
    let names: Vec<&str> = loaded.listed().map(|character| character.name()).collect();
    assert_eq!(
        names,
        [
            "Companion",
            "French Tutor",
            "Game Master",
            "Narrator",
            "Quiz Show"
        ]
    );
    let tools = |name: &str| loaded.get(name).unwrap().tools().len();
    assert_eq!((tools("companion"), tools("french-tutor")), (0, 0));
    assert_eq!(
        (tools("narrator"), tools("game-master"), tools("quiz-show")),
        (1, 3, 1)
    );
}

#[test]
fn the_narrator_logs_the_event_and_confirms_it() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let runtime = runtime();
    let loaded = demo();
    let narrator = start(&runtime, &loaded, "narrator");
    let result = call(
        &runtime,
        &narrator,
        "log_story_event",
        r#"{"event":"The hero fell","importance":"high"}"#,
    );
    assert_eq!(result.content, "Logged story event: The hero fell");
    let result = call(
        &runtime,
        &narrator,
        "log_story_event",
        r#"{"event":"A door creaks"}"#,
    );
    assert_eq!(result.content, "Logged story event: A door creaks");
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("Narrator: [NARRATOR EVENT] [HIGH] The hero fell"),
        "{logs}"
    );
    assert!(
        logs.contains("Narrator: [NARRATOR EVENT] [MEDIUM] A door creaks"),
        "{logs}"
    );
}

#[test]
fn the_game_master_rolls_dice_and_keeps_a_scoreboard_per_conversation() {
    let runtime = runtime();
    let loaded = demo();
    let game = start(&runtime, &loaded, "game master");
    for _ in 0..20 {
        let rolled = call(&runtime, &game, "roll_dice", r#"{"count":3,"sides":20}"#).content;
        let rest = rolled
            .strip_prefix("Rolled 3d20: ")
            .unwrap_or_else(|| panic!("{rolled}"));
        let (rolls, total) = rest.split_once(" (total ").unwrap();
        let rolls: Vec<u32> = rolls
            .split(", ")
            .map(|roll| roll.parse().unwrap())
            .collect();
        assert_eq!(rolls.len(), 3);
        assert!(rolls.iter().all(|roll| (1..=20).contains(roll)), "{rolled}");
        assert_eq!(
            total.trim_end_matches(')').parse::<u32>().unwrap(),
            rolls.iter().sum::<u32>()
        );
    }
    assert!(
        call(&runtime, &game, "roll_dice", "{}")
            .content
            .starts_with("Rolled 1d6: ")
    );
    let refused = call(&runtime, &game, "roll_dice", r#"{"sides":7}"#);
    assert!(
        refused.is_error
            && refused
                .content
                .starts_with("Error: Invalid parameters - /sides"),
        "{refused:?}"
    );

    assert_eq!(
        call(&runtime, &game, "get_scoreboard", "").content,
        "No scores recorded yet"
    );
    call(
        &runtime,
        &game,
        "record_score",
        r#"{"player":"Ada","points":5}"#,
    );
    call(
        &runtime,
        &game,
        "record_score",
        r#"{"player":"Linus","points":8}"#,
    );
    assert_eq!(
        call(
            &runtime,
            &game,
            "record_score",
            r#"{"player":"Ada","points":4}"#
        )
        .content,
        "Ada now has 9 points"
    );
    assert_eq!(
        call(&runtime, &game, "get_scoreboard", "{}").content,
        "1. Ada: 9\n2. Linus: 8"
    );

    let other = start(&runtime, &loaded, "game-master");
    assert_eq!(
        call(&runtime, &other, "get_scoreboard", "{}").content,
        "No scores recorded yet"
    );
}

#[test]
fn the_quiz_show_asks_five_random_questions_and_reveals_their_answers() {
    let runtime = runtime();
    let loaded = demo();
    let prompts: Vec<String> = (0..8)
        .map(|_| {
            start(&runtime, &loaded, "quiz show")
                .system_prompt()
                .to_owned()
        })
        .collect();
    for prompt in &prompts {
        let numbered = prompt
            .lines()
            .filter(|line| line.len() > 3 && line[..3].ends_with(". "))
            .count();
        assert_eq!(numbered, 5, "{prompt}");
    }
    assert!(
        prompts.iter().any(|prompt| prompt != &prompts[0]),
        "eight conversations all got the same questions"
    );

    let quiz = start(&runtime, &loaded, "quiz-show");
    let revealed = call(&runtime, &quiz, "reveal_answer", r#"{"question":5}"#);
    assert!(
        revealed.content.starts_with("Question 5: the answer is "),
        "{revealed:?}"
    );
    assert!(call(&runtime, &quiz, "reveal_answer", r#"{"question":6}"#).is_error);
}

#[test]
fn the_plain_characters_make_their_prompts() {
    let runtime = runtime();
    let loaded = demo();
    let companion = start(&runtime, &loaded, "companion");
    assert!(
        companion.system_prompt().contains("UTC on the server"),
        "{}",
        companion.system_prompt()
    );
    let tutor = start(&runtime, &loaded, "French Tutor");
    assert!(
        tutor
            .system_prompt()
            .contains("Sujet de conversation proposé"),
        "{}",
        tutor.system_prompt()
    );
}
