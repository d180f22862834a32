use switchboard_tools::tool;

/// Greets someone.
#[tool]
fn greet(name: &str) -> String {
    format!("hello {name}")
}

fn main() {}
