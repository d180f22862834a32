//! What a request's model name resolved to: a route (by name, alias or the default route)
//! or a character. Resolved once, when the front-end has parsed the body; the same value
//! then decides authorization, the token reservation, the answer and the log line.

use std::sync::Arc;

use switchboard_characters::Character;

use crate::character;
use switchboard_upstream::Route;

/// The route or character that answers a request.
#[derive(Debug, Clone)]
pub enum Target {
    Route(Arc<Route>),
    Character(Arc<Character>),
}

impl Target {
    /// The id `/v1/models` lists it under and keys' `routes` globs are matched against: the
    /// route's name (whichever alias was asked for) or `character/<file stem>`.
    pub fn id(&self) -> Option<String> {
        match self {
            Self::Route(route) => Some(route.name.clone()),
            Self::Character(character) => character::id(character),
        }
    }

    /// Its name in log lines and metric labels: never the raw client string.
    pub fn label(&self) -> String {
        match self {
            Self::Route(route) => route.name.clone(),
            Self::Character(character) => format!("{}{}", character::PREFIX, character.name()),
        }
    }
}
