//! Object stores for URLs: `s3://bucket/key` through object_store's `AmazonS3Builder` (the
//! standard AWS environment variables) and `http(s)://host/path` through its `HttpBuilder`, with
//! the request timeout and retries of [`RemoteOptions`].
//!
//! Credentials, region and endpoint come from the environment only
//! (`AmazonS3Builder::from_env`): `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, `AWS_REGION` (`us-east-1` if unset), `AWS_ENDPOINT_URL` (an
//! S3-compatible server; requests are then path-style, `ENDPOINT/bucket/key`) and
//! `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint such as a server on loopback. The profiles and
//! credentials of `~/.aws` are **not** read.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path;
use object_store::{BackoffConfig, ClientConfigKey, ClientOptions, ObjectStore, RetryConfig};

use super::fetch::{FetchOptions, MAX_BACKOFF};
use npy_serde::{Error, Result};

/// How requests to an object store are timed and retried: the [`FetchOptions`] of the doors
/// (the timeout and retries of a request among them: one notion, held once) and the connect
/// timeout of the stores [`store_for_url`] builds.
///
/// The defaults suit a person waiting at a terminal, not object_store's (30 s per request,
/// 10 retries over up to 3 minutes): **10 s** per request (from connecting to the last byte of
/// the body), **5 s** to connect, **2 retries** of a failed request (a connection error, a 5xx
/// answer, a timeout) after 50 ms, then 100 ms (the backoff doubles, at most 1 s). A missing
/// object or refused credentials are not retried. The worst case for one request is about
/// `(retries + 1) * timeout` ([`FetchOptions::request_bound`]).
///
/// ```
/// use std::time::Duration;
/// use npy_remote::{FetchOptions, RemoteOptions};
///
/// let options = RemoteOptions::default().timeout(Duration::from_secs(2)).retries(0);
/// assert_eq!(options.get_timeout(), Duration::from_secs(2));
/// assert_eq!(options.get_retries(), 0);
/// assert_eq!(RemoteOptions::default().get_connect_timeout(), Duration::from_secs(5));
/// // The doors over a store built with these options wait as long as its retries take.
/// let fetch: &FetchOptions = options.fetch_options();
/// assert_eq!(fetch.request_bound(), Duration::from_secs(2));
/// ```
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    fetch: FetchOptions,
    connect_timeout: Duration,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            fetch: FetchOptions::default()
                .timeout(Duration::from_secs(10))
                .retries(2),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

impl RemoteOptions {
    /// The longest one request may take, from connecting to its body's last byte (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.fetch.timeout = timeout;
        self
    }

    /// The longest connecting may take (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How many times a failed request is retried (default 2; 0 for none).
    pub fn retries(mut self, retries: usize) -> Self {
        self.fetch.retries = retries;
        self
    }

    /// The doors' fetch options, the timeout and retries included (these replace what
    /// [`timeout`](RemoteOptions::timeout) and [`retries`](RemoteOptions::retries) set).
    pub fn with_fetch_options(mut self, fetch: FetchOptions) -> Self {
        self.fetch = fetch;
        self
    }

    /// The fetch options for the doors ([`RemoteNpy::open_with`](crate::RemoteNpy::open_with),
    /// [`RemoteNpz::open_with`](crate::RemoteNpz::open_with)) over a store built with
    /// these options: their bound on a GET covers the store's retries.
    pub fn fetch_options(&self) -> &FetchOptions {
        &self.fetch
    }

    /// The request timeout.
    pub fn get_timeout(&self) -> Duration {
        self.fetch.timeout
    }

    /// The connect timeout.
    pub fn get_connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The number of retries.
    pub fn get_retries(&self) -> usize {
        self.fetch.retries
    }

    /// object_store's retry configuration for these options: `retries` retries, a backoff from
    /// 50 ms doubling up to 1 s, all within `(retries + 1) * (timeout + 1 s)`.
    ///
    /// ```
    /// let retry = npy_remote::RemoteOptions::default().retries(1).retry_config();
    /// assert_eq!(retry.max_retries, 1);
    /// ```
    pub fn retry_config(&self) -> RetryConfig {
        let attempts = u32::try_from(self.fetch.retries.saturating_add(1)).unwrap_or(u32::MAX);
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(50),
                max_backoff: MAX_BACKOFF,
                base: 2.0,
            },
            max_retries: self.fetch.retries,
            retry_timeout: (self.fetch.timeout + MAX_BACKOFF).saturating_mul(attempts),
        }
    }

    /// object_store's client options for these timeouts (plain HTTP allowed: an `http://` URL
    /// asks for it; S3 endpoints follow `AWS_ALLOW_HTTP`).
    ///
    /// ```
    /// let _ = npy_remote::RemoteOptions::default().client_options();
    /// ```
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions::new()
            .with_timeout(self.fetch.timeout)
            .with_connect_timeout(self.connect_timeout)
            .with_allow_http(true)
    }
}

/// True if `s` is a URL this module opens: `s3://`, `http://` or `https://` (the scheme in any
/// case).
///
/// ```
/// use npy_remote::is_url;
///
/// assert!(is_url("s3://bucket/a.npy"));
/// assert!(is_url("HTTPS://example.org/a.npy"));
/// assert!(!is_url("data/a.npy"));
/// assert!(!is_url("C:/a.npy"));
/// ```
pub fn is_url(s: &str) -> bool {
    scheme(s).is_some()
}

/// The scheme of a URL this module opens, in lower case, and the rest after `://`.
fn scheme(s: &str) -> Option<(&'static str, &str)> {
    let (scheme, rest) = s.split_once("://")?;
    ["s3", "http", "https"]
        .into_iter()
        .find(|known| scheme.eq_ignore_ascii_case(known))
        .map(|known| (known, rest))
}

/// An object store for `url` and the object's path in it.
///
/// - `s3://bucket/key`: an S3 store for `bucket` configured from the environment (see the module
///   docs: `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
///   `AWS_ALLOW_HTTP`; `~/.aws` is not read); the key is taken as written (not
///   percent-decoded) and may be empty or a prefix (`s3://bucket/dir/`).
/// - `http(s)://host[:port]/path`: an HTTP store for the host, the path percent-decoded.
///
/// Nothing is requested here: a missing object or bad credentials show at the first request.
///
/// ```
/// use npy_remote::{store_for_url, RemoteOptions};
///
/// let (_store, path) = store_for_url("http://127.0.0.1:9/dir/a%20b.npy", &RemoteOptions::default())?;
/// assert_eq!(path.as_ref(), "dir/a b.npy");
/// let (_store, path) = store_for_url("s3://bucket/dir/x.npy", &RemoteOptions::default())?;
/// assert_eq!(path.as_ref(), "dir/x.npy");
/// assert!(store_for_url("s3:///x.npy", &RemoteOptions::default()).is_err());
/// assert!(store_for_url("ftp://host/x.npy", &RemoteOptions::default()).is_err());
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn store_for_url(url: &str, options: &RemoteOptions) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let Some((scheme, rest)) = scheme(url) else {
        return Err(Error::remote(
            url,
            "not an object-store URL: expected s3://bucket/key, http://host/path or https://host/path",
        ));
    };
    let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
    if authority.is_empty() {
        let what = if scheme == "s3" { "bucket" } else { "host" };
        return Err(Error::remote(url, format!("the URL names no {what}")));
    }
    if scheme == "s3" {
        let path = Path::parse(key)
            .map_err(|e| Error::remote(url, format!("not a valid object key: {e}")))?;
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let store = AmazonS3Builder::from_env()
            .with_bucket_name(authority)
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
                ms(options.fetch.timeout),
            )
            .with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                ms(options.connect_timeout),
            )
            .with_retry(options.retry_config())
            .build()
            .map_err(|e| Error::remote(url, e))?;
        return Ok((Arc::new(store), path));
    }
    let path = Path::from_url_path(key)
        .map_err(|e| Error::remote(url, format!("not a valid URL path: {e}")))?;
    let store = HttpBuilder::new()
        .with_url(format!("{scheme}://{authority}"))
        .with_client_options(options.client_options())
        .with_retry(options.retry_config())
        .build()
        .map_err(|e| Error::remote(url, e))?;
    Ok((Arc::new(store), path))
}

/// A store's error as a message: a missing object is said plainly, the rest as object_store
/// words it (the request, the retries, the server's answer).
pub(crate) fn store_message(e: &object_store::Error) -> String {
    match e {
        object_store::Error::NotFound { .. } => "no such object (404 Not Found)".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_store_and_path() {
        let o = RemoteOptions::default();
        let (_, p) = store_for_url("s3://b/k", &o).unwrap();
        assert_eq!(p.as_ref(), "k");
        let (_, p) = store_for_url("s3://b/", &o).unwrap();
        assert_eq!(p.as_ref(), "");
        let (_, p) = store_for_url("S3://b", &o).unwrap();
        assert_eq!(p.as_ref(), "");
        let (_, p) = store_for_url("https://h:8443/a/b.npz", &o).unwrap();
        assert_eq!(p.as_ref(), "a/b.npz");
        let e = store_for_url("http:///a.npy", &o).unwrap_err();
        assert_eq!(e.kind().code(), "remote");
        assert!(e.to_string().starts_with("http:///a.npy: "), "{e}");
        assert!(e.to_string().contains("no host"), "{e}");
        let e = store_for_url("s3://b/a/../c", &o).unwrap_err();
        assert!(e.to_string().contains("not a valid object key"), "{e}");
    }

    #[test]
    fn retry_budget_follows_the_options() {
        let o = RemoteOptions::default()
            .timeout(Duration::from_millis(500))
            .retries(3);
        let r = o.retry_config();
        assert_eq!(r.max_retries, 3);
        assert_eq!(r.retry_timeout, Duration::from_secs(6));
        assert_eq!(r.backoff.init_backoff, Duration::from_millis(50));
        // The doors wait for every attempt and the backoff between them, within the budget.
        assert_eq!(
            o.fetch_options().request_bound(),
            Duration::from_millis(4 * 500 + 3000)
        );
        assert!(o.fetch_options().request_bound() <= r.retry_timeout);
        let d = RemoteOptions::default();
        assert_eq!(
            d.fetch_options().request_bound(),
            Duration::from_secs(3 * 10 + 2)
        );
        let replaced = d.with_fetch_options(FetchOptions::default().chunk_bytes(1 << 20));
        assert_eq!(
            replaced.get_timeout(),
            FetchOptions::default().get_timeout()
        );
        assert_eq!(replaced.fetch_options().chunk_size(), 1 << 20);
    }
}
