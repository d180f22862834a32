//! The gateway's side of an MCP connection: what it says it is, and what it does when the
//! server asks something of it. A gateway has no user to ask and lends no model, so it
//! declares no capabilities and declines every request; it listens for tool list changes.
// Sampling, roots and logging are deprecated in the protocol (SEP-2577), yet older servers
// still send them: they are answered, so the deprecated types are named here.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorCode, ErrorData, Implementation,
    ListRootsResult, LoggingMessageNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::sync::Notify;

use crate::output::bound_text;
use crate::stdio::MAX_STDERR_LINE;

#[derive(Debug, Clone)]
pub(crate) struct Handler {
    pub server: Arc<str>,
    /// Woken on `notifications/tools/list_changed`: the supervisor lists the tools again.
    pub tools_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // The older era asks mid-call; declining lets the tool finish in its own words.
        tracing::warn!(server = %self.server, "declined a request for user input (elicitation): the gateway has no user to ask");
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        tracing::warn!(server = %self.server, "declined a request for the client's model (sampling)");
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "the gateway does not lend its model (sampling)",
            None,
        ))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "the gateway has no roots to share",
            None,
        ))
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // What a server logs is its own to size: cut as its stderr lines are.
        let data = bound_text(params.data.to_string(), MAX_STDERR_LINE);
        tracing::debug!(server = %self.server, level = ?params.level, data = %data, "log message");
    }
}
