//! Wire formats Switchboard speaks (OpenAI, Anthropic, Ollama): types, one event model, stream decoders and encoders, translation
