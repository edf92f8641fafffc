//! The user's OpenAI-compatible LLM, as the CLI calls it (`search --rerank llm`): one chat
//! completion at a time, not streamed, tried again on 429 and 5xx (Retry-After honoured) until
//! the call's deadline, its reply read up to a cap. The API key comes from
//! `$SEXTANT_LLM_API_KEY`, never a flag (a flag shows in `ps` and shell history), and no error
//! repeats it. The words sent are the core's (`sextant::prompt`).

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::Serialize;
use sextant::options::LlmSettings;
use sextant::prompt::ChatMessage;

/// The environment variable holding the API key.
pub const API_KEY_VAR: &str = "SEXTANT_LLM_API_KEY";

/// The LLM flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LlmFlags {
    /// The OpenAI-compatible API's base URL, e.g. https://api.openai.com/v1 or
    /// http://localhost:11434/v1 (its key, if it needs one, in $SEXTANT_LLM_API_KEY).
    #[arg(long, value_name = "URL")]
    pub llm_base_url: Option<String>,
    /// The model the API runs, e.g. gpt-4o-mini.
    #[arg(long, value_name = "NAME")]
    pub llm_model: Option<String>,
}

impl LlmFlags {
    /// The client, for `purpose` (what needs it, said in the error when a flag is missing).
    pub fn client(&self, purpose: &str) -> Result<Llm> {
        let (Some(base), Some(model)) = (&self.llm_base_url, &self.llm_model) else {
            bail!("{purpose} needs --llm-base-url and --llm-model (the API key, if any, in ${API_KEY_VAR})");
        };
        Llm::new(base, model, std::env::var(API_KEY_VAR).ok().filter(|k| !k.is_empty()))
    }
}

/// Why a call failed: the package's error code for it (`LLM_TIMEOUT`, `LLM_UNAVAILABLE`, …) and
/// what happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LlmError {
    /// The code, as the package names it.
    pub code: &'static str,
    /// What happened and what to do.
    pub message: String,
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for LlmError {}

fn fail<T>(code: &'static str, message: impl Into<String>) -> Result<T, LlmError> {
    Err(LlmError {
        code,
        message: message.into(),
    })
}

/// An OpenAI-compatible chat API.
pub struct Llm {
    url: String,
    model: String,
    api_key: Option<String>,
}

impl Llm {
    /// The API at `base_url` (http or https), with `model`.
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Result<Self> {
        let base = base_url.trim_end_matches('/');
        let host = base.strip_prefix("https://").or_else(|| base.strip_prefix("http://"));
        if host.is_none_or(str::is_empty) {
            bail!("--llm-base-url {base_url:?} is not an http(s) URL; use e.g. https://api.openai.com/v1");
        }
        if model.trim().is_empty() {
            bail!("--llm-model is empty; name the model the API runs");
        }
        Ok(Self {
            url: format!("{base}/chat/completions"),
            model: model.to_string(),
            api_key,
        })
    }

    /// The text of the first choice of one chat completion of `messages`, within `settings`'
    /// timeout (all tries together), tries and reply cap.
    pub fn chat(&self, messages: &[ChatMessage], settings: &LlmSettings) -> Result<String, LlmError> {
        let deadline = (settings.timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(settings.timeout_ms));
        let timed_out = || {
            fail(
                "LLM_TIMEOUT",
                format!("the LLM did not answer within {} ms", settings.timeout_ms),
            )
        };
        let body = serde_json::json!({
            "model": self.model,
            "stream": false,
            "temperature": settings.temperature,
            "messages": messages,
        })
        .to_string();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return timed_out();
            }
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .timeout_global(left)
                .http_status_as_error(false)
                .build()
                .into();
            let mut request = agent.post(&self.url).header("content-type", "application/json");
            if let Some(key) = &self.api_key {
                request = request.header("authorization", &format!("Bearer {key}"));
            }
            let mut response = match request.send(&body) {
                Ok(response) => response,
                Err(ureq::Error::Timeout(_)) => return timed_out(),
                Err(e) => {
                    return fail(
                        "LLM_UNREACHABLE",
                        format!(
                            "could not reach the LLM at {}: {}; check --llm-base-url",
                            self.url,
                            self.redact(&e.to_string())
                        ),
                    )
                }
            };
            let status = response.status().as_u16();
            if status == 429 || status >= 500 {
                let retry_after = response
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(|s| Duration::from_secs_f64(s.min(60.0)));
                let wait = retry_after.unwrap_or(Duration::from_millis((500u64 << (attempt - 1).min(4)).min(8000)));
                let fits = deadline.is_none_or(|d| Instant::now() + wait < d);
                if attempt < settings.max_tries && fits {
                    std::thread::sleep(wait);
                    continue;
                }
                return fail(
                    "LLM_UNAVAILABLE",
                    format!("the LLM answered {status} after {attempt} tries; try again later"),
                );
            }
            let limit = settings.max_answer_bytes as u64 + 65_536;
            let text = match response.body_mut().with_config().limit(limit).read_to_string() {
                Ok(text) => text,
                Err(ureq::Error::Timeout(_)) => return timed_out(),
                Err(ureq::Error::BodyExceedsLimit(_)) => {
                    return fail("LLM_INCOMPLETE", format!("the LLM's answer is over {limit} bytes"))
                }
                Err(e) => {
                    return fail(
                        "LLM_INCOMPLETE",
                        format!("the LLM's answer broke off: {}", self.redact(&e.to_string())),
                    )
                }
            };
            if status == 401 || status == 403 {
                return fail(
                    "LLM_AUTH",
                    format!("the LLM refused the request ({status}); check ${API_KEY_VAR} and that the key may use --llm-model"),
                );
            }
            if !(200..300).contains(&status) {
                let said: String = self
                    .redact(&text)
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(300)
                    .collect();
                return fail("LLM_HTTP", format!("the LLM answered {status}: {said}"));
            }
            return completion_text(&text, settings.max_answer_bytes);
        }
    }

    /// `text` without the API key.
    fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) if key.len() >= 4 => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_string(),
        }
    }
}

/// `choices[0].message.content` of a chat completion's JSON, at most `max_bytes` long.
fn completion_text(json: &str, max_bytes: usize) -> Result<String, LlmError> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else {
        return fail(
            "LLM_BAD_RESPONSE",
            "the LLM answered with JSON that does not parse; check that --llm-base-url is an OpenAI-compatible API",
        );
    };
    let Some(content) = value.pointer("/choices/0/message/content").and_then(|c| c.as_str()) else {
        return fail(
            "LLM_BAD_RESPONSE",
            "the LLM's answer is not a chat completion (no choices[0].message.content)",
        );
    };
    if content.len() > max_bytes {
        return fail("LLM_INCOMPLETE", format!("the LLM's answer is over {max_bytes} bytes"));
    }
    Ok(content.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_must_be_http() {
        assert!(Llm::new("ftp://x", "m", None).is_err());
        assert!(Llm::new("localhost:8080", "m", None).is_err());
        assert!(Llm::new("http://localhost:8080/v1/", " ", None).is_err());
        assert_eq!(
            Llm::new("http://localhost:8080/v1/", "m", None).unwrap().url,
            "http://localhost:8080/v1/chat/completions"
        );
    }

    #[test]
    fn the_answer_is_the_first_choice() {
        assert_eq!(
            completion_text(r#"{"choices":[{"message":{"content":"1: 5"}}]}"#, 100).unwrap(),
            "1: 5"
        );
        assert!(completion_text(r#"{"choices":[]}"#, 100).is_err());
        assert!(completion_text("not json", 100).is_err());
        assert!(completion_text(r#"{"choices":[{"message":{"content":"long"}}]}"#, 2).is_err());
    }

    #[test]
    fn the_key_never_shows_in_an_error() {
        let llm = Llm::new("http://x", "m", Some("sk-secret-1234".into())).unwrap();
        assert_eq!(llm.redact("bad key sk-secret-1234 given"), "bad key [redacted] given");
    }
}
