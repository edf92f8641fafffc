//! The one set of error codes sextant shows its users, end to end: the core's errors, the JS
//! package's (fetching, the LLM call) and the Worker's (HTTP). Every error a user can meet carries
//! one of these as its `code` (a JS `Error`'s `code` property, the Worker's `error.code`), and each
//! code has one HTTP status, which the Worker uses as it is. The package exports the table as
//! `defaults().error_codes`, and the tests check that the JS code and `index.d.ts` use no other.

use serde::{Deserialize, Serialize};

/// A stable, machine-readable error code. Serialised in `SCREAMING_SNAKE_CASE` (`BAD_ARGUMENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// An argument or option is missing, of the wrong type or out of range.
    BadArgument,
    /// Dense or hybrid search, or framing, on an engine loaded without the model; or anything
    /// that frames passages for an LLM (context, ask, graphs, research, an LLM judge, citations)
    /// from the keyword-only build, which has no model.
    NoModel,
    /// `model.onnx` or `tokenizer.json` cannot be loaded.
    BadModel,
    /// Tokenising or running the model failed.
    EmbedFailed,
    /// The index (or one of its files) is damaged, truncated or not an index.
    CorruptBundle,
    /// The index's format version is outside what this sextant reads.
    UnsupportedVersion,
    /// The model given is not the one the index was built with.
    ModelMismatch,
    /// The WebAssembly module is not initialised yet (JS package).
    NotReady,
    /// Fetching an index file, the model or the tokenizer failed (JS package).
    FetchFailed,
    /// The caller aborted the request.
    Aborted,
    /// The LLM base URL is not an http(s) URL.
    LlmBadUrl,
    /// The LLM endpoint could not be reached.
    LlmUnreachable,
    /// The LLM endpoint refused the credentials (401 or 403).
    LlmAuth,
    /// The LLM endpoint answered with another 4xx status.
    LlmHttp,
    /// The LLM endpoint kept answering 429 or 5xx.
    LlmUnavailable,
    /// The LLM did not answer in time.
    LlmTimeout,
    /// The LLM's answer was not a readable chat completion (not SSE or JSON, empty, a line over
    /// the limit).
    LlmBadResponse,
    /// The LLM's stream ended before the answer was complete, or the answer went over the length
    /// limit; what arrived is attached as `partial_answer`.
    LlmIncomplete,
    /// The LLM is not configured for this service (Worker).
    LlmNotConfigured,
    /// The request lacks the bearer token the service requires (Worker).
    Unauthorized,
    /// The request's origin may not call this service (`CORS_ORIGINS`).
    Forbidden,
    /// The route does not take this HTTP method (Worker).
    MethodNotAllowed,
    /// The request body is over the service's limit (Worker).
    PayloadTooLarge,
    /// The search files are not built or not deployed (Worker).
    NotBuilt,
    /// The service's own configuration is wrong (Worker).
    BadConfig,
    /// A bug: something that should not fail did.
    Internal,
}

impl ErrorCode {
    /// Every code, in the order of the documentation.
    pub const ALL: [ErrorCode; 26] = [
        ErrorCode::BadArgument,
        ErrorCode::NoModel,
        ErrorCode::BadModel,
        ErrorCode::EmbedFailed,
        ErrorCode::CorruptBundle,
        ErrorCode::UnsupportedVersion,
        ErrorCode::ModelMismatch,
        ErrorCode::NotReady,
        ErrorCode::FetchFailed,
        ErrorCode::Aborted,
        ErrorCode::LlmBadUrl,
        ErrorCode::LlmUnreachable,
        ErrorCode::LlmAuth,
        ErrorCode::LlmHttp,
        ErrorCode::LlmUnavailable,
        ErrorCode::LlmTimeout,
        ErrorCode::LlmBadResponse,
        ErrorCode::LlmIncomplete,
        ErrorCode::LlmNotConfigured,
        ErrorCode::Unauthorized,
        ErrorCode::Forbidden,
        ErrorCode::MethodNotAllowed,
        ErrorCode::PayloadTooLarge,
        ErrorCode::NotBuilt,
        ErrorCode::BadConfig,
        ErrorCode::Internal,
    ];

    /// The code as it appears in errors: `BAD_ARGUMENT`, `CORRUPT_BUNDLE`, …
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadArgument => "BAD_ARGUMENT",
            ErrorCode::NoModel => "NO_MODEL",
            ErrorCode::BadModel => "BAD_MODEL",
            ErrorCode::EmbedFailed => "EMBED_FAILED",
            ErrorCode::CorruptBundle => "CORRUPT_BUNDLE",
            ErrorCode::UnsupportedVersion => "UNSUPPORTED_VERSION",
            ErrorCode::ModelMismatch => "MODEL_MISMATCH",
            ErrorCode::NotReady => "NOT_READY",
            ErrorCode::FetchFailed => "FETCH_FAILED",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::LlmBadUrl => "LLM_BAD_URL",
            ErrorCode::LlmUnreachable => "LLM_UNREACHABLE",
            ErrorCode::LlmAuth => "LLM_AUTH",
            ErrorCode::LlmHttp => "LLM_HTTP",
            ErrorCode::LlmUnavailable => "LLM_UNAVAILABLE",
            ErrorCode::LlmTimeout => "LLM_TIMEOUT",
            ErrorCode::LlmBadResponse => "LLM_BAD_RESPONSE",
            ErrorCode::LlmIncomplete => "LLM_INCOMPLETE",
            ErrorCode::LlmNotConfigured => "LLM_NOT_CONFIGURED",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::NotBuilt => "NOT_BUILT",
            ErrorCode::BadConfig => "BAD_CONFIG",
            ErrorCode::Internal => "INTERNAL",
        }
    }

    /// The HTTP status a service answers with for this code: 4xx where the request is at fault,
    /// 5xx where the service or its upstream is.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::BadArgument | ErrorCode::NoModel => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::Aborted => 499,
            ErrorCode::BadModel
            | ErrorCode::EmbedFailed
            | ErrorCode::CorruptBundle
            | ErrorCode::UnsupportedVersion
            | ErrorCode::ModelMismatch
            | ErrorCode::LlmBadUrl
            | ErrorCode::BadConfig
            | ErrorCode::Internal => 500,
            ErrorCode::FetchFailed
            | ErrorCode::LlmUnreachable
            | ErrorCode::LlmAuth
            | ErrorCode::LlmHttp
            | ErrorCode::LlmBadResponse
            | ErrorCode::LlmIncomplete => 502,
            ErrorCode::NotReady | ErrorCode::LlmUnavailable | ErrorCode::LlmNotConfigured | ErrorCode::NotBuilt => 503,
            ErrorCode::LlmTimeout => 504,
        }
    }

    /// Whether trying the same request again later may succeed.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::FetchFailed
                | ErrorCode::LlmUnreachable
                | ErrorCode::LlmUnavailable
                | ErrorCode::LlmTimeout
                | ErrorCode::LlmIncomplete
                | ErrorCode::NotReady
        )
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the error table, as `defaults().error_codes` gives it to JS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCodeInfo {
    /// The code.
    pub code: ErrorCode,
    /// Its HTTP status.
    pub http_status: u16,
    /// Whether a retry may succeed.
    pub retryable: bool,
}

/// The whole table, in [`ErrorCode::ALL`] order.
pub fn error_table() -> Vec<ErrorCodeInfo> {
    ErrorCode::ALL
        .into_iter()
        .map(|code| ErrorCodeInfo {
            code,
            http_status: code.http_status(),
            retryable: code.retryable(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert!(seen.insert(code.as_str()), "{code} twice");
            let back: ErrorCode = serde_json::from_str(&json).unwrap();
            assert_eq!(back, code);
        }
    }

    #[test]
    fn statuses_put_the_blame_where_it_belongs() {
        assert_eq!(ErrorCode::BadArgument.http_status(), 400);
        assert_eq!(ErrorCode::CorruptBundle.http_status(), 500);
        assert_eq!(ErrorCode::LlmAuth.http_status(), 502);
        assert_eq!(ErrorCode::LlmTimeout.http_status(), 504);
        for code in ErrorCode::ALL {
            assert!((400..600).contains(&code.http_status()), "{code}");
        }
    }
}
