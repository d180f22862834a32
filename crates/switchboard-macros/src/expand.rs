//! The expansion of `#[tool]`: checks the signature, then writes the arguments struct, the
//! definition and the typed entry point.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, ItemFn, LitStr, Pat, PathArguments, ReturnType, Type};

use crate::docs::{argument_docs, doc_lines, summary};

struct Parameter {
    name: syn::Ident,
    ty: Type,
    description: Option<String>,
}

enum Output {
    Nothing,
    Value(Type),
    Fallible(Option<Type>),
}

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut function: ItemFn = syn::parse2(item)?;
    let tool_name = parse_name(attr)?.unwrap_or_else(|| function.sig.ident.to_string());
    check_signature(&function)?;

    let lines = doc_lines(&function.attrs);
    let description = summary(&lines);
    let documented = argument_docs(&lines);
    let method = function.sig.receiver().is_some();
    let parameters = take_parameters(&mut function, &documented)?;
    let output = output_of(&function.sig.output);

    let fields = parameters.iter().map(|parameter| {
        let name = &parameter.name;
        let ty = &parameter.ty;
        let doc = parameter
            .description
            .as_deref()
            .map(|text| quote!(#[doc = #text]));
        let default = is_option(ty).then(|| quote!(#[serde(default)]));
        quote!(#doc #default #name: #ty)
    });
    let names: Vec<&syn::Ident> = parameters.iter().map(|parameter| &parameter.name).collect();
    let function_name = &function.sig.ident;
    let awaited = function.sig.asyncness.map(|_| quote!(.await));
    let invoke = if method {
        quote!(this.#function_name(#(#names),*))
    } else {
        quote!(#function_name(#(#names),*))
    };
    let output_schema = match &output {
        Output::Nothing | Output::Fallible(None) => quote!(::core::option::Option::None),
        Output::Value(ty) | Output::Fallible(Some(ty)) => {
            quote!(::core::option::Option::Some(::switchboard_tools::__private::schema_for::<#ty>()))
        }
    };
    let convert = match &output {
        Output::Nothing => {
            quote!({ #invoke #awaited; ::core::result::Result::Ok(::switchboard_tools::__private::serde_json::Value::Null) })
        }
        Output::Value(_) => quote!(::switchboard_tools::__private::output(#invoke #awaited)),
        Output::Fallible(_) => quote!(match #invoke #awaited {
            ::core::result::Result::Ok(value) => ::switchboard_tools::__private::output(value),
            ::core::result::Result::Err(error) => ::core::result::Result::Err(::switchboard_tools::ToolError::new(error)),
        }),
    };

    let vis = &function.vis;
    let constructor = format_ident!("{}_tool", function_name);
    let (receiver, capture, clone) = if method {
        (
            quote!(self: ::std::sync::Arc<Self>),
            quote!(let this = self;),
            quote!(let this = ::std::sync::Arc::clone(&this);),
        )
    } else {
        (quote!(), quote!(), quote!())
    };
    let doc = format!(
        "The `{tool_name}` tool: validated arguments in, [`{function_name}`](Self) called, its result out."
    );
    Ok(quote! {
        #function

        #[doc = #doc]
        #vis fn #constructor(#receiver) -> ::switchboard_tools::FnTool {
            #[derive(::switchboard_tools::__private::serde::Deserialize, ::switchboard_tools::__private::schemars::JsonSchema)]
            #[serde(crate = "::switchboard_tools::__private::serde", deny_unknown_fields)]
            #[schemars(crate = "::switchboard_tools::__private::schemars")]
            struct __SwitchboardArguments { #(#fields,)* }

            let definition = ::switchboard_tools::__private::definition(
                #tool_name,
                #description,
                ::switchboard_tools::__private::schema_for::<__SwitchboardArguments>(),
                #output_schema,
            );
            #capture
            ::switchboard_tools::FnTool::new(definition, move |arguments| {
                #clone
                ::std::boxed::Box::pin(async move {
                    let __SwitchboardArguments { #(#names),* } = ::switchboard_tools::__private::arguments(arguments)?;
                    #convert
                })
            })
        }
    })
}

fn parse_name(attr: TokenStream) -> syn::Result<Option<String>> {
    let mut name = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("name") {
            let value: LitStr = meta.value()?.parse()?;
            name = Some(value.value());
            Ok(())
        } else {
            Err(meta.error("unknown #[tool] option; the only option is `name = \"...\"`"))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(name)
}

fn check_signature(function: &ItemFn) -> syn::Result<()> {
    let signature = &function.sig;
    if !signature.generics.params.is_empty() {
        return Err(syn::Error::new(
            signature.generics.span(),
            "#[tool] functions cannot be generic: the parameters schema must be known when the tool is defined",
        ));
    }
    if let Some(receiver) = signature.receiver()
        && (receiver.reference.is_none() || receiver.mutability.is_some())
    {
        return Err(syn::Error::new(
            receiver.span(),
            "#[tool] methods must take `&self`: the tool shares its object across concurrent calls",
        ));
    }
    if signature.variadic.is_some() {
        return Err(syn::Error::new(
            signature.span(),
            "#[tool] functions cannot be variadic",
        ));
    }
    Ok(())
}

/// Collects the typed parameters and removes their doc attributes, which Rust does not
/// allow on parameters once the macro has read them.
fn take_parameters(
    function: &mut ItemFn,
    documented: &std::collections::HashMap<String, String>,
) -> syn::Result<Vec<Parameter>> {
    let mut parameters = Vec::new();
    for input in function.sig.inputs.iter_mut() {
        let FnArg::Typed(typed) = input else { continue };
        let Pat::Ident(ident) = typed.pat.as_ref() else {
            return Err(syn::Error::new(
                typed.pat.span(),
                "#[tool] parameters must be plain names: each becomes a JSON property",
            ));
        };
        if let Type::Reference(reference) = typed.ty.as_ref() {
            return Err(syn::Error::new(
                reference.span(),
                "#[tool] parameters are read from JSON and must be owned types (use `String` instead of `&str`)",
            ));
        }
        if let Type::ImplTrait(_) = typed.ty.as_ref() {
            return Err(syn::Error::new(
                typed.ty.span(),
                "#[tool] parameters cannot be `impl Trait`: a JSON schema needs a concrete type",
            ));
        }
        let own_docs = doc_lines(&typed.attrs).join(" ").trim().to_owned();
        typed.attrs.retain(|attr| !attr.path().is_ident("doc"));
        let name = ident.ident.clone();
        let description = if own_docs.is_empty() {
            documented.get(&name.to_string()).cloned()
        } else {
            Some(own_docs)
        };
        parameters.push(Parameter {
            name,
            ty: typed.ty.as_ref().clone(),
            description,
        });
    }
    Ok(parameters)
}

fn output_of(output: &ReturnType) -> Output {
    let ReturnType::Type(_, ty) = output else {
        return Output::Nothing;
    };
    if is_unit(ty) {
        return Output::Nothing;
    }
    if let Type::Path(path) = ty.as_ref()
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
    {
        let ok = match &last.arguments {
            PathArguments::AngleBracketed(arguments) => {
                arguments.args.iter().find_map(|argument| match argument {
                    GenericArgument::Type(ty) => Some(ty.clone()),
                    _ => None,
                })
            }
            _ => None,
        };
        return Output::Fallible(ok.filter(|ty| !is_unit(ty)));
    }
    Output::Value(ty.as_ref().clone())
}

fn is_unit(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(tuple) if tuple.elems.is_empty())
}

fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|segment| segment.ident == "Option"))
}
