//! Which route answers a model name: an exact route name first, then the first route whose
//! `aliases` pattern matches (in file order), then the configured `default_route`. Clients
//! send the model names they know (`claude-sonnet-4-5-…`, `gpt-5.5`), so aliases are how
//! an agent's own name reaches a local model.

use std::collections::HashMap;
use std::sync::Arc;

use globset::{Glob, GlobMatcher};

use super::{Route, RouteConfig};

#[derive(Debug)]
pub struct RouteTable {
    routes: Vec<Arc<Route>>,
    by_name: HashMap<String, usize>,
    /// (pattern, route index) in file order.
    aliases: Vec<(GlobMatcher, usize)>,
    default: Option<usize>,
}

impl RouteTable {
    /// Builds the table from the configured routes (`routes` built from `configs`, in the
    /// same order) and the route that answers names nothing else does.
    pub fn new(
        configs: &[RouteConfig],
        default_route: Option<&str>,
        routes: Vec<Arc<Route>>,
    ) -> Result<Self, String> {
        let by_name: HashMap<String, usize> = routes
            .iter()
            .enumerate()
            .map(|(index, route)| (route.name.clone(), index))
            .collect();
        let mut aliases = Vec::new();
        for (index, route) in configs.iter().enumerate() {
            for pattern in &route.aliases {
                let glob = Glob::new(pattern)
                    .map_err(|error| format!("route \"{}\": alias {error}", route.name))?;
                aliases.push((glob.compile_matcher(), index));
            }
        }
        let default = match default_route {
            Some(name) => Some(
                *by_name
                    .get(name)
                    .ok_or_else(|| format!("default_route: no route is named \"{name}\""))?,
            ),
            None => None,
        };
        Ok(Self {
            routes,
            by_name,
            aliases,
            default,
        })
    }

    /// Every route, in file order.
    pub fn all(&self) -> &[Arc<Route>] {
        &self.routes
    }

    /// The route with exactly this name.
    pub fn named(&self, name: &str) -> Option<&Arc<Route>> {
        self.by_name.get(name).map(|&index| &self.routes[index])
    }

    /// The route that answers a client's model name.
    pub fn resolve(&self, model: &str) -> Option<&Arc<Route>> {
        self.named(model)
            .or_else(|| {
                self.aliases
                    .iter()
                    .find(|(pattern, _)| pattern.is_match(model))
                    .map(|(_, index)| &self.routes[*index])
            })
            .or_else(|| self.default.map(|index| &self.routes[index]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClientHooks;

    /// The `[[route]]` entries and `default_route` of a configuration file.
    #[derive(serde::Deserialize)]
    struct Routes {
        default_route: Option<String>,
        route: Vec<RouteConfig>,
    }

    fn table(text: &str) -> RouteTable {
        let file: Routes = toml::from_str(text).unwrap();
        let timeout = std::time::Duration::from_secs(300);
        let routes = file
            .route
            .iter()
            .map(|route| {
                Arc::new(
                    Route::from_config(route, timeout, &|_| None, &ClientHooks::default()).unwrap(),
                )
            })
            .collect();
        RouteTable::new(&file.route, file.default_route.as_deref(), routes).unwrap()
    }

    const ROUTES: &str = r#"
[[route]]
name = "local"
provider = "openai"
url = "http://127.0.0.1:1/v1"
model = "m"
aliases = ["claude-*", "gpt-5*"]

[[route]]
name = "claude-haiku"
provider = "openai"
url = "http://127.0.0.1:1/v1"
model = "m"

[[route]]
name = "other"
provider = "openai"
url = "http://127.0.0.1:1/v1"
model = "m"
aliases = ["claude-*", "*"]
"#;

    #[test]
    fn exact_names_then_aliases_in_file_order_then_the_default() {
        let routes = table(ROUTES);
        let name = |model: &str| routes.resolve(model).map(|route| route.name.clone());
        assert_eq!(name("claude-haiku").as_deref(), Some("claude-haiku"));
        assert_eq!(name("claude-sonnet-4-5-20250929").as_deref(), Some("local"));
        assert_eq!(name("gpt-5.5").as_deref(), Some("local"));
        assert_eq!(name("llama").as_deref(), Some("other"));
        let without_catch_all = table(&ROUTES.replace(", \"*\"", ""));
        assert!(without_catch_all.resolve("llama").is_none());
        let with_default = table(&format!(
            "default_route = \"claude-haiku\"\n{}",
            ROUTES.replace(", \"*\"", "")
        ));
        assert_eq!(
            with_default
                .resolve("llama")
                .map(|route| route.name.as_str()),
            Some("claude-haiku")
        );
    }
}
