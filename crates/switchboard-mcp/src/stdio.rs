//! MCP over stdin and stdout, for clients that spawn their servers. Nothing else may
//! write to stdout: logs go to stderr.

use rmcp::ServiceExt;

use crate::catalog::ToolCatalog;
use crate::handler::McpServer;

/// Why serving over stdio stopped early.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("the MCP client's handshake failed: {0}")]
    Handshake(String),
    #[error("the MCP session ended with an error: {0}")]
    Session(String),
}

/// Serves `server` on stdin and stdout until the client closes them.
pub async fn serve_stdio<C: ToolCatalog>(server: McpServer<C>) -> Result<(), StdioError> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| StdioError::Handshake(error.to_string()))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|error| StdioError::Session(error.to_string()))
}
