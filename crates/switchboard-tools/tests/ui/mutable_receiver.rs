use switchboard_tools::tool;

struct Counter(u32);

impl Counter {
    /// Counts up.
    #[tool]
    fn bump(&mut self, by: u32) -> u32 {
        self.0 += by;
        self.0
    }
}

fn main() {}
