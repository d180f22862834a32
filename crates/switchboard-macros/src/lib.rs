//! `#[tool]`: turns a plain Rust function into a validated Switchboard tool.
//!
//! On a free function `foo` it adds `fn foo_tool() -> switchboard_tools::FnTool`; on a method
//! `foo(&self, …)` it adds `fn foo_tool(self: Arc<Self>) -> FnTool`. The definition comes from
//! the signature and doc comments; the arguments are deserialized into a generated struct
//! whose JSON Schema (via schemars) is the tool's parameters schema.
//!
//! It must not know anything beyond the tool model of `switchboard-tools`.

mod docs;
mod expand;

use proc_macro::TokenStream;

/// Makes a function callable as a tool. Options: `#[tool(name = "other_name")]`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
