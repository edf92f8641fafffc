//! `--otlp URL`: OpenTelemetry spans of what a command did, sent as OTLP/JSON over HTTP to a
//! collector once the command's own output is written — the spans the package and the Worker send
//! (`pkg-template/otlp.js`; `tests/js/otlp.test.mjs` checks that both name them alike):
//! `rag.search` with `rag.embed`, `rag.search.bm25`, `rag.search.dense`, `rag.rrf_fusion`,
//! `rag.rerank` laid end to end from the core's timings; `rag.ingest` and `rag.embed` for a build.
//! A collector that is down or refuses costs a warning on stderr, never the command.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};
use serde_json::{json, Value};
use sextant::options::{Mode, RerankStrategy, SearchOptions};
use sextant::search::SearchResponse;

/// How long sending may take before the spans are given up.
const TIMEOUT: Duration = Duration::from_secs(5);

/// A child span: its name, its length in milliseconds (`None`: not run), its attributes.
type Child<'a> = (&'a str, Option<f64>, Vec<(&'a str, Value)>);

/// What a build did, for its spans.
pub struct BuildWork<'a> {
    /// The inputs, comma-separated.
    pub source: &'a str,
    pub documents: usize,
    pub chunks: usize,
    /// Chunks embedded now (the rest came from the cache).
    pub embedded: usize,
    pub embed_ms: f64,
    pub threads: usize,
}

/// Spans waiting to be sent to one collector.
pub struct Otlp {
    host: String,
    port: u16,
    path: String,
    spans: Vec<Value>,
}

/// `bytes` random bytes as hex (trace and span ids; not for secrets).
fn random_hex(bytes: usize) -> String {
    let mut out = String::new();
    while out.len() < bytes * 2 {
        let mut h = RandomState::new().build_hasher();
        h.write_usize(out.len());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(bytes * 2);
    out
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn nanos(ms: f64) -> String {
    format!("{}", (ms * 1e6).round() as u128)
}

/// OTLP attributes from `(key, value)` pairs, leaving out nulls.
fn attributes(pairs: &[(&str, Value)]) -> Value {
    let list: Vec<Value> = pairs
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let value = match v {
                Value::Bool(b) => json!({ "boolValue": b }),
                Value::Number(n) if n.is_i64() || n.is_u64() => json!({ "intValue": n.to_string() }),
                Value::Number(n) => json!({ "doubleValue": n.as_f64() }),
                other => json!({ "stringValue": other.as_str().map_or_else(|| other.to_string(), str::to_string) }),
            };
            json!({ "key": k, "value": value })
        })
        .collect();
    Value::Array(list)
}

impl Otlp {
    /// A collector's traces endpoint, `http://host:port/v1/traces`.
    pub fn new(url: &str) -> Result<Self> {
        let Some(rest) = url.strip_prefix("http://") else {
            bail!("--otlp {url:?}: give the collector's OTLP/HTTP traces endpoint as http://host:4318/v1/traces (https is not supported by the CLI; send to a local OpenTelemetry Collector)");
        };
        let (authority, path) = rest
            .split_once('/')
            .map_or((rest, "/v1/traces".to_string()), |(a, p)| (a, format!("/{p}")));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (
                h.to_string(),
                p.parse::<u16>()
                    .map_err(|_| anyhow::anyhow!("--otlp {url:?}: {p:?} is not a port"))?,
            ),
            None => (authority.to_string(), 80),
        };
        if host.is_empty() {
            bail!("--otlp {url:?}: no host; e.g. http://localhost:4318/v1/traces");
        }
        Ok(Self {
            host,
            port,
            path,
            spans: Vec::new(),
        })
    }

    /// A root span and its children laid end to end from its start: `(name, ms, attributes)`.
    fn tree(
        &mut self,
        root: &str,
        start_ms: f64,
        end_ms: f64,
        root_attributes: &[(&str, Value)],
        children: &[Child<'_>],
    ) {
        let trace_id = random_hex(16);
        let root_id = random_hex(8);
        self.spans.push(json!({
            "traceId": trace_id, "spanId": root_id, "name": root, "kind": 1,
            "startTimeUnixNano": nanos(start_ms), "endTimeUnixNano": nanos(end_ms.max(start_ms)),
            "attributes": attributes(root_attributes), "status": { "code": 0 },
        }));
        let mut at = start_ms;
        for (name, ms, attrs) in children {
            let Some(ms) = ms else { continue };
            self.spans.push(json!({
                "traceId": trace_id, "spanId": random_hex(8), "parentSpanId": root_id, "name": name, "kind": 1,
                "startTimeUnixNano": nanos(at), "endTimeUnixNano": nanos(at + ms),
                "attributes": attributes(attrs), "status": { "code": 0 },
            }));
            at += ms;
        }
    }

    /// The spans of one search that started at `start_ms` (wall clock) and just ended.
    pub fn search(&mut self, start_ms: f64, query: &str, options: &SearchOptions, response: &SearchResponse) {
        let t = &response.timings;
        let query_length = json!(query.chars().count());
        let top_k = json!(options.k);
        let keyword = options.mode != Mode::Keyword;
        let children = [
            (
                "rag.embed",
                keyword.then_some(t.embed_ms),
                vec![
                    ("provider", json!("sextant")),
                    ("batch_size", json!(1)),
                    ("text_count", json!(1)),
                ],
            ),
            (
                "rag.search.bm25",
                (options.mode != Mode::Dense).then_some(t.keyword_ms),
                vec![("query_length", query_length.clone()), ("top_k", top_k.clone())],
            ),
            (
                "rag.search.dense",
                keyword.then_some(t.vector_ms),
                vec![("query_length", query_length.clone()), ("top_k", top_k.clone())],
            ),
            (
                "rag.rrf_fusion",
                Some(t.fusion_ms),
                vec![
                    ("input_lists", json!(if options.mode == Mode::Hybrid { 2 } else { 1 })),
                    ("output_count", json!(response.results.len())),
                ],
            ),
            (
                "rag.rerank",
                (t.rerank_ms > 0.0).then_some(t.rerank_ms),
                vec![
                    (
                        "strategy",
                        json!(if options.rerank == Some(RerankStrategy::Llm) {
                            "llm"
                        } else {
                            "cross_encoder"
                        }),
                    ),
                    ("input_count", json!(options.rerank_depth)),
                    ("top_k", top_k.clone()),
                ],
            ),
        ];
        let root = [
            ("mode", json!(options.mode.name())),
            ("top_k", top_k.clone()),
            ("query_length", query_length),
            ("result_count", json!(response.results.len())),
        ];
        self.tree("rag.search", start_ms, now_ms(), &root, &children);
    }

    /// The spans of a build that started at `start_ms`: `rag.ingest` (documents read and cut
    /// into chunks) and `rag.embed` (chunks embedded), each as long as it took.
    pub fn build(&mut self, start_ms: f64, work: &BuildWork<'_>) {
        let end = now_ms();
        let ingest_ms = (end - start_ms - work.embed_ms).max(0.0);
        let ingest = [
            ("source", json!(work.source)),
            ("chunk_count", json!(work.chunks)),
            ("document_count", json!(work.documents)),
        ];
        self.tree("rag.ingest", start_ms, start_ms + ingest_ms, &ingest, &[]);
        let embed = [
            ("provider", json!("sextant")),
            ("batch_size", json!(1)),
            ("text_count", json!(work.embedded)),
            ("workers", json!(work.threads)),
        ];
        self.tree("rag.embed", start_ms + ingest_ms, end, &embed, &[]);
    }

    /// Sends every span in one request; a failure is a warning on stderr, never an error.
    pub fn send(self) {
        let count = self.spans.len();
        if count == 0 {
            return;
        }
        if let Err(e) = self.post() {
            eprintln!("warning: the OpenTelemetry collector at http://{}:{}{} did not take {count} spans ({e}); they are dropped", self.host, self.port, self.path);
        }
    }

    fn post(&self) -> Result<()> {
        let body = serde_json::to_vec(&json!({
            "resourceSpans": [{
                "resource": { "attributes": attributes(&[("service.name", json!("sextant-cli")), ("telemetry.sdk.name", json!("sextant-search")), ("telemetry.sdk.language", json!("rust"))]) },
                "scopeSpans": [{ "scope": { "name": "sextant-search" }, "spans": self.spans }],
            }],
        }))?;
        let address = (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| anyhow::anyhow!("{} does not resolve", self.host))?;
        let mut stream = TcpStream::connect_timeout(&address, TIMEOUT)?;
        stream.set_read_timeout(Some(TIMEOUT))?;
        stream.set_write_timeout(Some(TIMEOUT))?;
        write!(
            stream,
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.host,
            self.port,
            body.len()
        )?;
        stream.write_all(&body)?;
        let mut head = [0u8; 64];
        let n = stream.read(&mut head)?;
        let status = std::str::from_utf8(&head[..n])
            .unwrap_or("")
            .split(' ')
            .nth(1)
            .unwrap_or("")
            .to_string();
        if !status.starts_with('2') {
            bail!(
                "it answered {}",
                if status.is_empty() { "nothing" } else { status.as_str() }
            );
        }
        Ok(())
    }
}

/// Milliseconds since the Unix epoch, for a command's start.
pub fn wall_ms() -> f64 {
    now_ms()
}
