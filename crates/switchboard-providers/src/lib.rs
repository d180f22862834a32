//! HTTP clients for LLM backends behind one Backend trait
