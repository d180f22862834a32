//! Characters: JavaScript character files with tools, loaded, validated and run sandboxed under a hard timeout
