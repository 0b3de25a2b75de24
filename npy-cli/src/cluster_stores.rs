//! The object-store flags of `npy-scheduler` and `npy-executor` (feature `ballista`; included
//! by both programs): `--store URL` (repeatable), `--timeout`,
//! `--retries`, and the [`ClusterStores`] they make.

use std::time::Duration;

use clap::Args;
use npy_datafusion::ballista::ClusterStores;
use npy_remote::RemoteOptions;

/// The stores this process registers (each built from its own AWS_* environment).
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// An object store the cluster's tables live in, s3://BUCKET/ or http(s)://HOST/
    /// (HOST:PORT/ with a port; repeat the flag for each). The scheduler and every executor
    /// need the same ones. For s3:// the credentials, region and endpoint come from this
    /// process's environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
    /// AWS_REGION, AWS_ENDPOINT_URL (an S3-compatible server, addressed path-style),
    /// AWS_ALLOW_HTTP=true for a plain-http endpoint; ~/.aws profiles are not read.
    #[arg(long = "store", value_name = "URL")]
    pub stores: Vec<String>,
    /// Seconds one request to a --store may take, from connecting to the last byte of its
    /// answer (connecting: at most 5 s, or this if shorter).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,
    /// How many times a failed request to a --store is retried (a refused connection, a
    /// timeout, a 5xx answer; a missing object or refused credentials are not retried).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: usize,
}

impl StoreArgs {
    /// The stores of `--store`, with `--timeout` and `--retries`; an error naming the flag
    /// and the URL (the library's error starts with it) for one that is not an `s3://` or
    /// `http(s)://` URL with a bucket or host.
    pub fn stores(&self) -> Result<ClusterStores, String> {
        let timeout = Duration::try_from_secs_f64(self.timeout)
            .map_err(|e| format!("--timeout {}: {e}", self.timeout))?;
        let options = RemoteOptions::default()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .retries(self.retries);
        self.stores
            .iter()
            .try_fold(ClusterStores::new(), |stores, url| {
                stores
                    .with_store(url, &options)
                    .map_err(|e| format!("--store {e}"))
            })
    }
}
