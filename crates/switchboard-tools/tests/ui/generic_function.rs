use switchboard_tools::tool;

/// Echoes anything.
#[tool]
fn echo<T: ToString>(value: T) -> String {
    value.to_string()
}

fn main() {}
