//! The MCP server over a [`ToolCatalog`]: `tools/list` and `tools/call` as the protocol
//! words them, and `notifications/tools/list_changed` to clients that listen, in either
//! era. Everything else (initialize, discover, ping, versions, the empty prompt and
//! resource lists) is the SDK's.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter,
    Tool,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::catalog::{CallError, CatalogTool, ToolCatalog};
use switchboard_tools::names;

/// What a server says of itself, and how it names tools.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// `serverInfo.name` and `.version`.
    pub name: String,
    pub version: String,
    /// What clients may show their model about this server.
    pub instructions: Option<String>,
    /// The longest served tool name (see [`names`]).
    pub max_name_chars: usize,
}

/// Serves one catalog; cheap to clone (one per session or request).
#[derive(Debug)]
pub struct McpServer<C> {
    catalog: Arc<C>,
    options: Arc<ServerOptions>,
    /// Cancelled once the last clone of this instance is dropped: when the SDK has ended the
    /// session (or request) it served, so the tasks started for it end with it.
    ended: CancellationToken,
    _ending: Arc<DropGuard>,
}

impl<C> Clone for McpServer<C> {
    fn clone(&self) -> Self {
        Self {
            catalog: Arc::clone(&self.catalog),
            options: Arc::clone(&self.options),
            ended: self.ended.clone(),
            _ending: Arc::clone(&self._ending),
        }
    }
}

impl<C: ToolCatalog> McpServer<C> {
    pub fn new(catalog: Arc<C>, mut options: ServerOptions) -> Self {
        options.max_name_chars = options.max_name_chars.max(names::MIN_MAX_CHARS);
        Self::serving(catalog, Arc::new(options))
    }

    fn serving(catalog: Arc<C>, options: Arc<ServerOptions>) -> Self {
        let ended = CancellationToken::new();
        Self {
            catalog,
            options,
            _ending: Arc::new(ended.clone().drop_guard()),
            ended,
        }
    }

    /// The same server for one more session: what it starts ends when that session does
    /// (a clone would live as long as the one it was cloned from).
    pub(crate) fn for_session(&self) -> Self {
        Self::serving(Arc::clone(&self.catalog), Arc::clone(&self.options))
    }

    /// The catalog's name of the tool served as `served` to this request, if any. A name
    /// that is served unchanged is the catalog's own; only shortened ones need the list.
    fn resolve(&self, request: &http::Extensions, served: &str) -> Option<String> {
        let max = self.options.max_name_chars;
        if names::fits(served, max) && !looks_shortened(served) {
            return Some(served.to_owned());
        }
        self.catalog
            .tools(request)
            .into_iter()
            .find(|tool| names::served(&tool.name, max) == served)
            .map(|tool| tool.name)
    }

    fn describe(&self, tool: CatalogTool) -> Tool {
        let input_schema = match tool.input_schema {
            Some(Value::Object(schema)) => schema,
            _ => empty_schema(),
        };
        let mut described = Tool::new_with_raw(
            names::served(&tool.name, self.options.max_name_chars).into_owned(),
            tool.description.map(Into::into),
            Arc::new(input_schema),
        );
        if let Some(Value::Object(schema)) = tool.output_schema {
            described = described.with_raw_output_schema(Arc::new(schema));
        }
        described
    }
}

/// Whether a name that fits could be the shortened form of another: its last 9 characters
/// are `_` and the hash. Such names are looked up in the list, so that a name the catalog
/// does not know as such still maps back.
fn looks_shortened(name: &str) -> bool {
    name.len() > 9
        && name.as_bytes()[name.len() - 9] == b'_'
        && name[name.len() - 8..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The request's HTTP extensions (none over stdio).
fn http_extensions(extensions: &rmcp::model::Extensions) -> http::Extensions {
    extensions
        .get::<http::request::Parts>()
        .map(|parts| parts.extensions.clone())
        .unwrap_or_default()
}

/// `{"type": "object"}` with nothing allowed: MCP's schema of a tool without parameters.
fn empty_schema() -> Map<String, Value> {
    let Value::Object(schema) = json!({"type": "object", "additionalProperties": false}) else {
        return Map::new();
    };
    schema
}

impl<C: ToolCatalog> ServerHandler for McpServer<C> {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(
            // Prompts and resources are declared, and their lists (the SDK's) are empty:
            // clients that ask for them anyway, as some do at start-up, get what a server
            // without any would say, with the caching hints every list carries, rather than
            // an error they may take for the server failing.
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.options.name.clone(),
            self.options.version.clone(),
        ));
        if let Some(instructions) = &self.options.instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let request = http_extensions(&context.extensions);
        let tools = self
            .catalog
            .tools(&request)
            .into_iter()
            .map(|tool| self.describe(tool))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let extensions = http_extensions(&context.extensions);
        let unknown = || ErrorData::invalid_params(format!("unknown tool: {}", request.name), None);
        let Some(name) = self.resolve(&extensions, &request.name) else {
            return Err(unknown());
        };
        let arguments = request.arguments.clone().unwrap_or_default();
        let call = self.catalog.call(&extensions, &name, arguments);
        // A client that cancels (or, over HTTP, closes the request's stream) drops the call:
        // one still queued for the tool's runtime then never runs.
        let outcome = tokio::select! {
            outcome = call => outcome,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        let output = match outcome {
            Ok(output) => output,
            Err(CallError::UnknownTool(_)) => return Err(unknown()),
            Err(error @ CallError::Unavailable(_)) => {
                return Err(ErrorData::internal_error(error.to_string(), None));
            }
        };
        let content = vec![ContentBlock::text(output.text.clone())];
        let result = if output.is_error {
            CallToolResult::error(content)
        } else if let Some(structured) = output.structured {
            let mut result = CallToolResult::success(content);
            result.structured_content = Some(structured);
            result
        } else {
            CallToolResult::success(content)
        };
        Ok(result.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A 2025-11-25 session (or stdio) hears of changes on its own stream until it ends.
        // Its end is this server's, not the next change: waiting for that would hold every
        // closed session's listener (kilobytes each) until the list changed.
        let mut changes = self.catalog.changes();
        let peer = context.peer;
        let ended = self.ended.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => {
                        if changed.is_err() || peer.notify_tool_list_changed().await.is_err() {
                            break;
                        }
                    }
                    () = ended.cancelled() => break,
                }
            }
        });
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // 2026-07-28 clients subscribe with `subscriptions/listen` instead.
        let mut changes = self.catalog.changes();
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
                () = context.cancelled() => return Ok(()),
            }
        }
    }
}
