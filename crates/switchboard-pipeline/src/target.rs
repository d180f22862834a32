//! What a request's model name resolved to: a route (by name, alias or the default route)
//! or a character. Resolved once, when the front-end has parsed the body; the same value
//! then decides authorization, the token reservation, the answer and the log line.

use std::sync::Arc;

use switchboard_characters::Character;

use switchboard_upstream::CHARACTER_PREFIX as PREFIX;
use switchboard_upstream::Route;

/// The route or character that answers a request.
#[derive(Debug, Clone)]
pub enum Target {
    Route(Arc<Route>),
    Character(Arc<Character>),
}

/// A character's model id, `character/<name>`: by its file stem where the character is
/// listed and authorized (file stems make ids without spaces), or by whichever name a
/// client used (`character/<CHARACTER_NAME>` reaches the same character). The one place
/// that builds and reads ids with the prefix (which the route settings spell, so that no
/// route may take one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharacterId(String);

impl CharacterId {
    /// The id `/v1/models` lists `character` under and keys' `routes` globs are matched
    /// against: `character/<file stem>`.
    pub fn of(character: &Character) -> Option<Self> {
        character
            .file()
            .file_stem()
            .map(|stem| Self::named(&stem.to_string_lossy()))
    }

    /// The id of the character a client calls `name`.
    pub fn named(name: &str) -> Self {
        Self(format!("{PREFIX}{name}"))
    }

    /// The character's name in a model name that names one (`character/<name>`).
    pub fn parse(model: &str) -> Option<&str> {
        model.strip_prefix(PREFIX)
    }

    /// The name after `character/`: for an id by [`CharacterId::of`], the file stem that
    /// prefixes the character's tools' names at `/mcp`.
    pub fn name(&self) -> &str {
        &self.0[PREFIX.len()..]
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for CharacterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<CharacterId> for String {
    fn from(id: CharacterId) -> Self {
        id.0
    }
}

impl Target {
    /// The id `/v1/models` lists it under and keys' `routes` globs are matched against: the
    /// route's name (whichever alias was asked for) or `character/<file stem>`.
    pub fn id(&self) -> Option<String> {
        match self {
            Self::Route(route) => Some(route.name.clone()),
            Self::Character(character) => CharacterId::of(character).map(String::from),
        }
    }

    /// Its name in log lines and metric labels: never the raw client string.
    pub fn label(&self) -> String {
        match self {
            Self::Route(route) => route.name.clone(),
            Self::Character(character) => Self::character_label(character),
        }
    }

    /// A character's name in log lines and metric labels: `character/<CHARACTER_NAME>`.
    pub fn character_label(character: &Character) -> String {
        CharacterId::named(character.name()).into()
    }
}
