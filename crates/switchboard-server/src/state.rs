//! Everything the handlers share. What a reload replaces (routes, keys and their limits,
//! the request limits) is one [`Snapshot`] value swapped atomically; the rest is built once at
//! start-up (the characters swap inside their own registry).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use metrics_exporter_prometheus::PrometheusHandle;
use switchboard_characters::{CharacterRegistry, LoadOptions};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ConfigProblems};
use crate::connections::ConnectionLimits;
use crate::drain::Readiness;
use crate::store::{self, ResponseStore};
use crate::telemetry;
use crate::traces;
use switchboard_access::Access;
use switchboard_pipeline::Pipeline;
use switchboard_pipeline::tool_servers::ToolServers;
use switchboard_upstream::{ClientHooks, Health, Route, RouteTable, ToolCalling};

/// Shared state of a running gateway.
#[derive(Debug, Clone)]
pub struct AppState {
    live: Arc<Reloadable>,
    pub characters: Arc<CharacterRegistry>,
    pub metrics: PrometheusHandle,
    pub connections: ConnectionLimits,
    /// Cancelled when a shutdown's grace period ends: answers still running then end with
    /// `server_shutting_down`, in their API's format.
    pub hard_stop: CancellationToken,
    /// Responses made with `store: true`.
    pub responses: Arc<dyn ResponseStore>,
    /// What `/readyz` answers, and the requests in flight a drain waits for.
    pub readiness: Arc<Readiness>,
}

#[derive(Debug)]
struct Reloadable {
    current: ArcSwap<Snapshot>,
    /// The same snapshots, for what must follow each swap (the MCP endpoint's change
    /// notices).
    swaps: watch::Sender<Arc<Snapshot>>,
    /// Held while a reload builds and swaps, so that two reloads cannot both start from
    /// the same configuration.
    reloading: Mutex<()>,
    /// How many problems the last reload met (0: it succeeded, or none was asked): a
    /// gateway running its previous configuration says so in `/healthz`.
    reload_problems: std::sync::atomic::AtomicUsize,
}

/// The configuration a request runs under, built whole before it is swapped in: a request
/// takes one snapshot (the access gate puts it in the request's `Caller`) and keeps it to
/// its end, so it never sees part of one configuration and part of another.
pub struct Snapshot {
    /// What it was built from (flags applied; the settings that need a restart as running),
    /// also the source of the request limits: `max_body_bytes`, `request_timeout_secs`,
    /// `max_answer_bytes`, `character_max_tokens`.
    pub config: Config,
    /// The routes, the characters and the bounds of an answer, as the pipeline takes them.
    pub pipeline: Pipeline,
    /// Whether each of these routes' backends answers.
    pub health: Health,
    /// The keys and their limits.
    pub access: Arc<Access>,
}

impl fmt::Debug for Snapshot {
    // The configuration may hold a Redis password; the access layer shows only the address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("routes", &self.pipeline.routes)
            .field("character_route", &self.pipeline.character_route)
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

impl Snapshot {
    /// Builds the routes' clients and the keys. `env` reads API keys and `key_env`
    /// variables; `previous`, on a reload, hands over rate-limit counters and the Redis
    /// connection. Every problem is named.
    fn build(
        config: Config,
        env: &dyn Fn(&str) -> Option<String>,
        previous: Option<&Snapshot>,
        characters: &Arc<CharacterRegistry>,
        hard_stop: &CancellationToken,
    ) -> Result<Self, ConfigProblems> {
        let mut problems = Vec::new();
        let access = Access::build(
            &config.access_settings(),
            env,
            previous.map(|live| &*live.access),
        )
        .map_err(|found| problems.extend(found))
        .ok();
        // Checked here rather than with the file: a flag may name another route.
        if let Some(name) = &config.character_route {
            match config.routes.iter().find(|route| &route.name == name) {
                None => problems.push(format!("character_route: no route is named \"{name}\"")),
                Some(route) if route.tool_calling == ToolCalling::Prompted => problems.push(format!(
                    "character_route: \"{name}\" uses prompted tool calling; characters need a route with native tool calling"
                )),
                Some(_) => {}
            }
        }
        let tool_servers = ToolServers::build(
            &config.mcp_servers,
            env,
            previous.map(|live| &live.pipeline.tool_servers),
        )
        .map_err(|found| problems.extend(found))
        .ok();
        let mut routes = Vec::with_capacity(config.routes.len());
        let hooks = ClientHooks {
            request_headers: traces::header_hook(),
            wrap: Some(&traces::traced_backend),
        };
        for (index, route) in config.routes.iter().enumerate() {
            match Route::from_config(route, config.request_timeout(), env, &hooks) {
                Ok(built) => routes.push(Arc::new(built)),
                Err(error) => {
                    problems.push(format!("route[{index}] (\"{}\"): {error}", route.name))
                }
            }
        }
        let (Some(access), Some(tool_servers)) = (access, tool_servers) else {
            return Err(ConfigProblems(problems));
        };
        if !problems.is_empty() {
            return Err(ConfigProblems(problems));
        }
        let routes = RouteTable::new(&config.routes, config.default_route.as_deref(), routes)
            .map_err(|problem| ConfigProblems(vec![problem]))?;
        let character_route = match &config.character_route {
            Some(name) => routes.named(name).cloned(),
            // Characters need native tool calling: a prompted first route must not stop
            // a prompted-only gateway from starting.
            None => routes
                .all()
                .iter()
                .find(|route| route.prompted.is_none())
                .cloned(),
        };
        Ok(Self {
            health: Health::new(routes.all()),
            pipeline: Pipeline {
                routes,
                character_route,
                characters: Arc::clone(characters),
                tool_servers,
                settings: config.pipeline_settings(),
                hard_stop: hard_stop.clone(),
            },
            config,
            access: Arc::new(access),
        })
    }
}

/// What a reload changed, by name, as the log reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    pub routes: usize,
    pub routes_added: Vec<String>,
    pub routes_removed: Vec<String>,
    pub routes_changed: Vec<String>,
    pub keys: usize,
    pub keys_added: Vec<String>,
    pub keys_removed: Vec<String>,
    pub keys_changed: Vec<String>,
    /// MCP servers, told only where a configuration had any.
    pub mcp_servers: Option<usize>,
    pub mcp_servers_added: Vec<String>,
    pub mcp_servers_removed: Vec<String>,
    pub mcp_servers_changed: Vec<String>,
    /// Settings the file changed that only a restart applies; the running values stay.
    pub needs_restart: Vec<String>,
}

impl Reloaded {
    fn between(before: &Config, after: &Config, needs_restart: Vec<String>) -> Self {
        let routes = Changes::between(&before.routes, &after.routes, |route| &route.name);
        let keys = Changes::between(&before.keys, &after.keys, |key| &key.name);
        let servers = Changes::between(&before.mcp_servers, &after.mcp_servers, |server| {
            &server.name
        });
        Self {
            routes: after.routes.len(),
            routes_added: routes.added,
            routes_removed: routes.removed,
            routes_changed: routes.changed,
            keys: after.keys.len(),
            keys_added: keys.added,
            keys_removed: keys.removed,
            keys_changed: keys.changed,
            mcp_servers: (!before.mcp_servers.is_empty() || !after.mcp_servers.is_empty())
                .then_some(after.mcp_servers.len()),
            mcp_servers_added: servers.added,
            mcp_servers_removed: servers.removed,
            mcp_servers_changed: servers.changed,
            needs_restart,
        }
    }
}

impl fmt::Display for Reloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let changes = |added: &[String], removed: &[String], changed: &[String]| {
            let parts: Vec<String> = [("added", added), ("removed", removed), ("changed", changed)]
                .into_iter()
                .filter(|(_, names)| !names.is_empty())
                .map(|(what, names)| format!("{what} {}", names.join(", ")))
                .collect();
            if parts.is_empty() {
                "unchanged".to_owned()
            } else {
                parts.join("; ")
            }
        };
        write!(
            f,
            "{} route(s) ({}), {} key(s) ({})",
            self.routes,
            changes(
                &self.routes_added,
                &self.routes_removed,
                &self.routes_changed
            ),
            self.keys,
            changes(&self.keys_added, &self.keys_removed, &self.keys_changed)
        )?;
        match self.mcp_servers {
            Some(count) => write!(
                f,
                ", {count} MCP server(s) ({})",
                changes(
                    &self.mcp_servers_added,
                    &self.mcp_servers_removed,
                    &self.mcp_servers_changed
                )
            ),
            None => Ok(()),
        }
    }
}

/// Entries of a list (routes, keys, MCP servers) added, removed and changed, matched by name.
struct Changes {
    added: Vec<String>,
    removed: Vec<String>,
    changed: Vec<String>,
}

impl Changes {
    fn between<T: PartialEq>(before: &[T], after: &[T], name: impl Fn(&T) -> &String) -> Self {
        let find = |list: &'_ [T], wanted: &String| -> Option<usize> {
            list.iter().position(|entry| name(entry) == wanted)
        };
        let mut changes = Self {
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
        };
        for entry in after {
            match find(before, name(entry)) {
                None => changes.added.push(name(entry).clone()),
                Some(old) if before[old] != *entry => changes.changed.push(name(entry).clone()),
                Some(_) => {}
            }
        }
        for entry in before {
            if find(after, name(entry)).is_none() {
                changes.removed.push(name(entry).clone());
            }
        }
        changes
    }
}

impl AppState {
    /// Builds the routes' clients and the keys, and loads the characters. `env` reads API
    /// keys and `key_env` variables.
    pub fn build(
        config: &Config,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigProblems> {
        // First: the routes register their replicas' series, which need the recorder.
        let metrics = telemetry::prometheus();
        // The tool-list cache's gauges exist from the start, not from the first list.
        switchboard_pipeline::report_kept_tools();
        // A folder nobody configured may be absent: a gateway without characters.
        let characters = Arc::new(CharacterRegistry::load(
            config.characters_dir(),
            LoadOptions {
                optional_dir: config.characters.is_none(),
                mcp_servers: Some(config.mcp_server_names()),
                ..LoadOptions::default()
            },
        ));
        let hard_stop = CancellationToken::new();
        let live = Snapshot::build(config.clone(), env, None, &characters, &hard_stop)?;
        let responses = store::open(&config.responses, config.state.as_deref())
            .map_err(|problem| ConfigProblems(vec![problem]))?;
        let live = Arc::new(live);
        Ok(Self {
            live: Arc::new(Reloadable {
                swaps: watch::Sender::new(Arc::clone(&live)),
                current: ArcSwap::new(live),
                reloading: Mutex::new(()),
                reload_problems: std::sync::atomic::AtomicUsize::new(0),
            }),
            characters,
            metrics,
            connections: config.startup().connection_limits(config.request_timeout()),
            hard_stop,
            responses,
            readiness: Arc::default(),
        })
    }

    /// The configuration new requests run under now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.live.current.load_full()
    }

    /// Each configuration as it is swapped in.
    pub fn configurations(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.live.swaps.subscribe()
    }

    /// Builds everything `config` describes and swaps it in whole, or, when anything is
    /// wrong, changes nothing and names every problem. Settings that need a restart keep
    /// their running values ([`Config::keep_startup_settings`]). Keys keep their rate-limit
    /// counters by name; requests already running finish under the configuration they
    /// started with. The characters reload on their own.
    pub fn reload(
        &self,
        mut config: Config,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Reloaded, ConfigProblems> {
        let _one_at_a_time = self
            .live
            .reloading
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = self.snapshot();
        let needs_restart = config.keep_startup_settings(&previous.config.startup());
        let live = Snapshot::build(
            config,
            env,
            Some(&previous),
            &self.characters,
            &self.hard_stop,
        )?;
        let reloaded = Reloaded::between(&previous.config, &live.config, needs_restart);
        live.health.check_routes();
        // Characters naming a server that is no longer (or now) configured load again.
        self.characters
            .set_mcp_servers(Some(live.config.mcp_server_names()));
        let live = Arc::new(live);
        self.live.current.store(Arc::clone(&live));
        self.live.swaps.send_replace(live);
        Ok(reloaded)
    }

    /// Records how the last reload went: the number of problems that kept the running
    /// configuration (0 when it was swapped in).
    pub fn reloaded_with(&self, problems: usize) {
        self.live
            .reload_problems
            .store(problems, std::sync::atomic::Ordering::Release);
    }

    /// The problems of the last reload, when it failed and the previous configuration runs.
    pub fn failed_reload(&self) -> Option<usize> {
        let problems = self
            .live
            .reload_problems
            .load(std::sync::atomic::Ordering::Acquire);
        (problems > 0).then_some(problems)
    }

    /// Re-checks the backends of the routes in force every `period`, for as long as the
    /// gateway runs.
    pub fn watch_health(&self, period: Duration) {
        let live = Arc::clone(&self.live);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                live.current.load_full().health.check().await;
            }
        });
    }
}

impl AppState {
    /// Every model name a client can send: route names, then the listed characters' ids.
    pub fn model_ids(&self, snapshot: &Snapshot) -> Vec<String> {
        let routes = snapshot
            .pipeline
            .routes
            .all()
            .iter()
            .map(|route| route.name.clone());
        let characters = self
            .characters
            .current()
            .listed()
            .filter_map(|character| {
                switchboard_pipeline::CharacterId::of(character).map(String::from)
            })
            .collect::<Vec<_>>();
        routes.chain(characters).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_ENV: &dyn Fn(&str) -> Option<String> = &|_| None;

    fn route(name: &str, extra: &str) -> String {
        format!(
            "[[route]]\nname = \"{name}\"\nprovider = \"openai\"\nurl = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n{extra}\n"
        )
    }

    /// A `[[key]]` whose secret is `name` itself.
    fn key(name: &str, extra: &str) -> String {
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(name.as_bytes()));
        format!("[[key]]\nname = \"{name}\"\nsha256 = \"{digest}\"\n{extra}\n")
    }

    #[test]
    fn building_names_every_problem_the_environment_and_the_flags_leave() {
        let text = format!(
            "character_route = \"prompted\"\nmetrics_key = {{ key_env = \"METRICS_KEY\" }}\n{}{}[[key]]\nname = \"twin\"\nkey_env = \"TWIN_KEY\"\n{}{}",
            key("ci", ""),
            "[[key]]\nname = \"env\"\nkey_env = \"MISSING_KEY\"\n",
            route("native", ""),
            route("prompted", "tool_calling = \"prompted\"")
        );
        let config = Config::from_toml(&text).unwrap();
        let env = |name: &str| (name == "TWIN_KEY").then(|| "ci".to_owned());
        let problems = AppState::build(&config, &env).unwrap_err();
        assert_eq!(
            problems.0,
            [
                "key[1] (\"env\").key_env: the environment variable MISSING_KEY is not set or is empty",
                "key[2] (\"twin\").key_env: the same key as key[0] (\"ci\"); each key needs its own secret",
                "metrics_key.key_env: the environment variable METRICS_KEY is not set or is empty",
                "character_route: \"prompted\" uses prompted tool calling; characters need a route with native tool calling",
            ]
        );
        let mut open = Config::from_toml(&route("native", "")).unwrap();
        open.listen = "0.0.0.0:8080".parse().unwrap();
        open.character_route = Some("nowhere".into());
        let problems = AppState::build(&open, NO_ENV).unwrap_err();
        assert_eq!(problems.0.len(), 2, "{problems}");
        assert!(
            problems.0[0].starts_with("listen: refusing to listen on 0.0.0.0:8080 without keys"),
            "{problems}"
        );
        assert_eq!(
            problems.0[1],
            "character_route: no route is named \"nowhere\""
        );
    }

    #[test]
    fn a_reload_swaps_everything_or_nothing() {
        let config = Config::from_toml(&format!("{}{}", route("a", ""), key("ci", ""))).unwrap();
        let state = AppState::build(&config, NO_ENV).unwrap();
        let before = state.snapshot();

        let broken = Config::from_toml(&format!(
            "character_route = \"gone\"\n{}{}[[key]]\nname = \"env\"\nkey_env = \"MISSING_KEY\"\n",
            route("b", ""),
            key("ci", "")
        ))
        .unwrap();
        let problems = state.reload(broken, NO_ENV).unwrap_err();
        assert_eq!(problems.0.len(), 2, "{problems}");
        assert!(
            problems.0[0].starts_with("key[1] (\"env\").key_env:"),
            "{problems}"
        );
        assert!(problems.0[1].starts_with("character_route:"), "{problems}");
        assert!(
            Arc::ptr_eq(&state.snapshot(), &before),
            "nothing was swapped"
        );

        let good = Config::from_toml(&format!(
            "listen = \"127.0.0.1:9999\"\nmax_body_bytes = 1000\n{}{}{}{}",
            route("a", "aliases = [\"gpt-*\"]"),
            route("b", ""),
            key("ci", "routes = [\"b\"]"),
            key("ops", "")
        ))
        .unwrap();
        let reloaded = state.reload(good, NO_ENV).unwrap();
        assert_eq!(
            reloaded,
            Reloaded {
                routes: 2,
                routes_added: vec!["b".into()],
                routes_removed: vec![],
                routes_changed: vec!["a".into()],
                keys: 2,
                keys_added: vec!["ops".into()],
                keys_removed: vec![],
                keys_changed: vec!["ci".into()],
                needs_restart: vec!["listen".to_owned()],
                ..Reloaded::default()
            }
        );
        assert_eq!(
            reloaded.to_string(),
            "2 route(s) (added b; changed a), 2 key(s) (added ops; changed ci)"
        );
        let after = state.snapshot();
        assert_eq!(after.config.listen, config.listen, "the listener stays");
        assert_eq!(after.config.max_body_bytes, 1000);
        assert_eq!(
            after
                .pipeline
                .routes
                .resolve("gpt-5")
                .map(|route| route.name.as_str()),
            Some("a")
        );
        assert_eq!(after.access.key_names().collect::<Vec<_>>(), ["ci", "ops"]);
        let names = |live: &Snapshot| -> Vec<String> {
            live.health
                .snapshot()
                .into_iter()
                .map(|backend| backend.route)
                .collect()
        };
        assert_eq!(names(&after), ["a", "b"], "health follows the routes");
        // A request that took its snapshot before still sees the old configuration whole.
        assert!(before.pipeline.routes.named("b").is_none());
        assert_eq!(names(&before), ["a"]);
    }
}
