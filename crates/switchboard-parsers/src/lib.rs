//! Tool calls out of raw model text, one parser per model family, identical streamed and whole
