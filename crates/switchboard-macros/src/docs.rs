//! Reading descriptions out of doc comments: the first paragraph describes the tool, an
//! `# Arguments` list describes its parameters.

use std::collections::HashMap;

use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// The lines of every `///` comment (`#[doc = "…"]`) among `attrs`.
pub fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| {
            // `///` alone is an empty string, which `lines()` would drop with the paragraph break.
            let lines: Vec<String> = text.lines().map(|line| line.trim().to_owned()).collect();
            if lines.is_empty() {
                vec![String::new()]
            } else {
                lines
            }
        })
        .collect()
}

/// The first paragraph, joined into one line.
pub fn summary(lines: &[String]) -> String {
    lines
        .iter()
        .skip_while(|line| line.is_empty())
        .take_while(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parameter descriptions from an `# Arguments` section: lines like
/// ``* `name` - what it is`` or ``- `name`: what it is``.
pub fn argument_docs(lines: &[String]) -> HashMap<String, String> {
    let mut docs = HashMap::new();
    let mut in_section = false;
    let mut current: Option<String> = None;
    for line in lines {
        if let Some(heading) = line.strip_prefix('#') {
            in_section = heading
                .trim_start_matches('#')
                .trim()
                .eq_ignore_ascii_case("arguments");
            current = None;
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some(item) = line.strip_prefix("* ").or_else(|| line.strip_prefix("- ")) {
            let item = item.trim();
            if let Some(rest) = item.strip_prefix('`')
                && let Some((name, description)) = rest.split_once('`')
            {
                let description = description
                    .trim_start()
                    .trim_start_matches(['-', ':', '—'])
                    .trim();
                docs.insert(name.to_owned(), description.to_owned());
                current = Some(name.to_owned());
                continue;
            }
        }
        match (&current, line.is_empty()) {
            (Some(name), false) => {
                if let Some(text) = docs.get_mut(name) {
                    text.push(' ');
                    text.push_str(line);
                }
            }
            _ => current = None,
        }
    }
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(|line| line.trim().to_owned()).collect()
    }

    #[test]
    fn summary_is_the_first_paragraph() {
        let docs =
            lines("Rolls dice\nfor the players.\n\nMore detail.\n# Arguments\n* `n` - count");
        assert_eq!(summary(&docs), "Rolls dice for the players.");
    }

    #[test]
    fn arguments_section_gives_parameter_descriptions() {
        let docs = lines(
            "Roll.\n\n# Arguments\n\n* `count` - How many dice\n  to roll\n- `sides`: Faces per die\n\n# Returns\n* `x` - not a parameter",
        );
        let found = argument_docs(&docs);
        assert_eq!(
            found.get("count").map(String::as_str),
            Some("How many dice to roll")
        );
        assert_eq!(
            found.get("sides").map(String::as_str),
            Some("Faces per die")
        );
        assert!(!found.contains_key("x"));
    }
}
