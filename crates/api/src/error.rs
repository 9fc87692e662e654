//! Errors as rest_cherrypy answers them: CherryPy's `HTTPError` page (`text/html`) with the
//! status, Salt's message (or CherryPy's default text for the status) and CherryPy's footer.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The CherryPy version Salt 3007's packages ship, named in the error page's footer.
const CHERRYPY_VERSION: &str = "18.10.0";

/// An HTTP error with Salt's status and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// The status code.
    pub status: StatusCode,
    /// The message (CherryPy's default text for the status when Salt gives none).
    pub message: String,
    /// `Retry-After` seconds (a 429 of salt-rs's per-token rate limit).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// `cherrypy.HTTPError(status, message)`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// `cherrypy.HTTPError(status)`: CherryPy's default text.
    pub fn status(status: StatusCode) -> Self {
        Self::new(status, default_text(status))
    }

    /// 400 (Salt's `SaltInvocationError`).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 401 (Salt's authentication and authorization errors).
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 503 (`SaltDaemonNotRunning`, `SaltReqTimeoutError`).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }

    /// An exception raised from a master's `{"error": {"name", "message"}}` answer
    /// (`salt.utils.error.raise_error`), mapped to a status as `hypermedia_handler` does.
    pub fn from_salt(name: &str, message: &str) -> Self {
        match name {
            "AuthenticationError"
            | "AuthorizationError"
            | "EauthAuthenticationError"
            | "TokenAuthenticationError" => Self::unauthorized(message),
            "SaltInvocationError" => Self::bad_request(message),
            "SaltDaemonNotRunning" | "SaltReqTimeoutError" => Self::unavailable(message),
            "SaltClientTimeout" => Self::status(StatusCode::GATEWAY_TIMEOUT),
            _ => {
                tracing::warn!("the master raised {name}: {message}");
                Self::internal()
            }
        }
    }

    /// The 500 `hypermedia_handler` answers for any other exception.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "An unexpected error occurred",
        )
    }
}

/// CherryPy's default text for a status.
fn default_text(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "Bad request syntax or unsupported method",
        401 => "No permission -- see authorization schemes",
        403 => "Request forbidden -- authorization will not help",
        404 => "Nothing matches the given URI",
        405 => "Specified method is invalid for this resource",
        406 => "URI not available in preferred format",
        413 => "Entity is too large",
        // Python's `http.server` text, which CherryPy uses for codes it has none of its own.
        429 => "The user has sent too many requests in a given amount of time (\"rate limiting\").",
        503 => {
            "The server is currently unable to handle the request due to a temporary \
             overloading or maintenance of the server."
        }
        504 => "The gateway server did not receive a timely response",
        _ => {
            "The server encountered an unexpected condition which prevented it from \
             fulfilling the request."
        }
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// CherryPy's `_HTTPErrorTemplate`.
pub fn error_page(status: StatusCode, message: &str) -> String {
    let status = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    format!(
        "<!DOCTYPE html PUBLIC\n\"-//W3C//DTD XHTML 1.0 Transitional//EN\"\n\
         \"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n<html>\n<head>\n    \
         <meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\"></meta>\n    \
         <title>{status}</title>\n    <style type=\"text/css\">\n    #powered_by {{\n        \
         margin-top: 20px;\n        border-top: 2px solid black;\n        font-style: italic;\n    \
         }}\n\n    #traceback {{\n        color: red;\n    }}\n    </style>\n</head>\n    \
         <body>\n        <h2>{status}</h2>\n        <p>{message}</p>\n        \
         <pre id=\"traceback\"></pre>\n    <div id=\"powered_by\">\n      <span>\n        \
         Powered by <a href=\"http://www.cherrypy.dev\">CherryPy {CHERRYPY_VERSION}</a>\n      \
         </span>\n    </div>\n    </body>\n</html>\n",
        message = escape(message)
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, error_page(self.status, &self.message)).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html;charset=utf-8"),
        );
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}
