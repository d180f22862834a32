//! `console.log/info/warn/error/debug` for character code: lines go to the terminal log
//! (tracing, target `character`) prefixed with the character's name, as developers expect
//! to see them while a conversation runs. Nothing is printed once a call's deadline passed.

use std::cell::RefCell;
use std::rc::Rc;

use rquickjs::function::Rest;
use rquickjs::{Ctx, Function, Object, Value};

use crate::clock::Clock;
use crate::exception;

#[derive(Debug, Clone, Copy)]
enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    label: Rc<RefCell<String>>,
    clock: Rc<Clock>,
) -> rquickjs::Result<()> {
    let console = Object::new(ctx.clone())?;
    for (name, level) in [
        ("log", Level::Info),
        ("info", Level::Info),
        ("warn", Level::Warn),
        ("error", Level::Error),
        ("debug", Level::Debug),
    ] {
        let label = Rc::clone(&label);
        let clock = Rc::clone(&clock);
        let function = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            if clock.expired() {
                return;
            }
            let text = args
                .0
                .iter()
                .map(|value| display(&ctx, value))
                .collect::<Vec<_>>()
                .join(" ");
            emit(level, &label.borrow(), &text);
        })?;
        console.set(name, function)?;
    }
    ctx.globals().set("console", console)
}

fn emit(level: Level, character: &str, text: &str) {
    match level {
        Level::Debug => tracing::debug!(target: "character", "{character}: {text}"),
        Level::Info => tracing::info!(target: "character", "{character}: {text}"),
        Level::Warn => tracing::warn!(target: "character", "{character}: {text}"),
        Level::Error => tracing::error!(target: "character", "{character}: {text}"),
    }
}

/// How a browser console shows a value: strings bare, errors with their stack, objects as JSON.
fn display<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    if let Some(text) = value.as_string().and_then(|text| text.to_string().ok()) {
        return text;
    }
    if let Some(error) = value.as_exception() {
        let head = exception::coerce(ctx, value);
        return match error.stack() {
            Some(stack) if !stack.is_empty() => format!("{head}\n{stack}"),
            _ => head,
        };
    }
    if value.is_object()
        && !value.is_function()
        && let Ok(Some(json)) = ctx.json_stringify(value.clone())
        && let Ok(json) = json.to_string()
    {
        return json;
    }
    ctx.catch();
    exception::coerce(ctx, value)
}
