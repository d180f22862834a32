use switchboard_tools::tool;

/// Says hi.
#[tool(title = "hi")]
fn hi() {}

fn main() {}
