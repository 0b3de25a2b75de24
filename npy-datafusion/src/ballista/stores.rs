//! The object stores of a cluster's scheduler and executors (features `ballista` and
//! `remote`): [`ClusterStores`] holds the stores of the buckets and hosts the cluster's
//! tables live in, built once from the process's own `AWS_*` environment;
//! [`executor_config_with_stores`] and [`scheduler_config_with_stores`] register them in
//! every runtime the executor and scheduler build, and make a table on a store that is
//! missing fail with an error that names the store and how to register it.

use std::fmt;
use std::sync::Arc;

use ballista_executor::executor_process::ExecutorProcessConfig;
use ballista_scheduler::config::SchedulerConfig;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::object_store::{ObjectStoreRegistry, ObjectStoreUrl};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use object_store::ObjectStore;
use url::Url;

use super::{executor_config, scheduler_config};
use npy_remote::{is_url, store_for_url, RemoteOptions};
use npy_serde::{Error, Result};

/// The object stores a Ballista scheduler or executor registers in its runtime: one per
/// bucket (`s3://bucket/`) or host (`http(s)://host[:port]/`) its tables live in, each built
/// once by [`store_for_url`] (credentials, region and endpoint from this process's `AWS_*`
/// environment, the timeouts and retries of its [`RemoteOptions`]).
///
/// ```
/// use npy_datafusion::ballista::ClusterStores;
/// use npy_remote::RemoteOptions;
///
/// let options = RemoteOptions::default();
/// let stores = ClusterStores::new()
///     .with_store("s3://bucket/shards/", &options)?
///     .with_store("https://data.example/", &options)?;
/// assert_eq!(stores.urls().collect::<Vec<_>>(), ["s3://bucket/", "https://data.example/"]);
/// // Not an object-store URL: an error naming it.
/// let e = ClusterStores::new().with_store("/data/shards/", &options).unwrap_err();
/// assert!(e.to_string().starts_with("/data/shards/: not an object-store URL"), "{e}");
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct ClusterStores {
    stores: Vec<(ObjectStoreUrl, Arc<dyn ObjectStore>)>,
}

impl fmt::Debug for ClusterStores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.urls()).finish()
    }
}

impl ClusterStores {
    /// No stores: a process with these reads local paths only, and a table on an object
    /// store fails with an error that names the store (see [`executor_config_with_stores`]).
    pub fn new() -> Self {
        ClusterStores::default()
    }

    /// These stores and the one of `location`'s bucket or host (`s3://bucket/...`,
    /// `http(s)://host/...`; the path after it does not matter). Nothing is requested: bad
    /// credentials show at the first read. Errors: `location` is not such a URL, or names no
    /// bucket or host.
    pub fn with_store(mut self, location: &str, options: &RemoteOptions) -> Result<Self> {
        if !is_url(location) {
            return Err(Error::remote(
                location,
                "not an object-store URL: expected s3://bucket/, http://host/ or https://host/",
            ));
        }
        let (store, _) = store_for_url(location, options)?;
        let (scheme, rest) = location.split_once("://").unwrap_or((location, ""));
        let authority = rest.split('/').next().unwrap_or(rest);
        let root = ObjectStoreUrl::parse(format!("{}://{authority}", scheme.to_ascii_lowercase()))
            .map_err(|e| Error::remote(location, e))?;
        self.stores.retain(|(url, _)| url != &root);
        self.stores.push((root, store));
        Ok(self)
    }

    /// The stores' URLs (`s3://bucket/`, `https://host/`), in the order they were added.
    pub fn urls(&self) -> impl Iterator<Item = &str> {
        self.stores.iter().map(|(url, _)| url.as_str())
    }

    /// True if there is no store.
    pub fn is_empty(&self) -> bool {
        self.stores.is_empty()
    }

    /// `runtime` with these stores registered, and a registry whose error for a store that
    /// is not there names it and says how to register it.
    ///
    /// ```
    /// use datafusion::execution::object_store::ObjectStoreUrl;
    /// use datafusion::execution::runtime_env::RuntimeEnv;
    /// use npy_datafusion::ballista::ClusterStores;
    /// use npy_remote::RemoteOptions;
    ///
    /// let stores = ClusterStores::new().with_store("s3://bucket/", &RemoteOptions::default())?;
    /// let runtime = stores.runtime(&RuntimeEnv::default())?;
    /// assert!(runtime.object_store(ObjectStoreUrl::parse("s3://bucket")?).is_ok());
    /// let e = runtime.object_store(ObjectStoreUrl::parse("s3://other")?).unwrap_err();
    /// assert!(e.to_string().contains("--store s3://other/"), "{e}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn runtime(&self, runtime: &RuntimeEnv) -> DfResult<Arc<RuntimeEnv>> {
        self.runtime_of(runtime, "this Ballista process")
    }

    /// [`runtime`](ClusterStores::runtime), the error for a missing store naming `process`.
    fn runtime_of(&self, runtime: &RuntimeEnv, process: &str) -> DfResult<Arc<RuntimeEnv>> {
        for (url, store) in &self.stores {
            runtime.register_object_store(url.as_ref(), Arc::clone(store));
        }
        let hinted = Hinted {
            inner: Arc::clone(&runtime.object_store_registry),
            process: process.to_string(),
        };
        RuntimeEnvBuilder::from_runtime_env(runtime)
            .with_object_store_registry(Arc::new(hinted))
            .build_arc()
    }
}

/// A registry whose missing stores say how to register them in a cluster's processes
/// (DataFusion's own error calls a missing store an internal error, a bug to report).
struct Hinted {
    inner: Arc<dyn ObjectStoreRegistry>,
    /// The process the registry is in, as its error names it.
    process: String,
}

impl fmt::Debug for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClusterStores({:?})", self.inner)
    }
}

impl ObjectStoreRegistry for Hinted {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> DfResult<Arc<dyn ObjectStore>> {
        self.inner.get_store(url).map_err(|_| {
            let root = format!(
                "{}://{}/",
                url.scheme(),
                &url[url::Position::BeforeHost..url::Position::AfterPort]
            );
            DataFusionError::Configuration(format!(
                "{} has no object store for {root}: start the scheduler \
                 and every executor with --store {root} (npy-scheduler, npy-executor; in \
                 code, npy_datafusion::ballista::ClusterStores), each with the AWS_* environment \
                 of the store",
                self.process
            ))
        })
    }
}

/// [`executor_config`] (the codecs) with `stores` registered in every runtime the executor
/// builds for its tasks: the runtime of `config.override_runtime_producer` if it has one,
/// else one that spills to `config.work_dir` (as Ballista's own). Ballista's memory pool
/// (`memory_pool_size`) is set on top of it, as without stores. A table on a store not in
/// `stores` fails its task with an error naming the store and `--store` (also with no
/// stores at all).
///
/// ```
/// use ballista_executor::executor_process::ExecutorProcessConfig;
/// use npy_datafusion::ballista::{executor_config_with_stores, ClusterStores};
/// use npy_remote::RemoteOptions;
///
/// let stores = ClusterStores::new().with_store("s3://bucket/", &RemoteOptions::default())?;
/// let config = executor_config_with_stores(ExecutorProcessConfig::default(), stores);
/// assert!(config.override_physical_codec.is_some() && config.override_runtime_producer.is_some());
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn executor_config_with_stores(
    config: ExecutorProcessConfig,
    stores: ClusterStores,
) -> ExecutorProcessConfig {
    let mut config = executor_config(config);
    let base = config.override_runtime_producer.take();
    let work_dir = config.work_dir.clone();
    let process = format!("Ballista executor {}", config.executor_id);
    config.override_runtime_producer = Some(Arc::new(move |session_config| {
        let runtime = match &base {
            Some(base) => base(session_config)?,
            None => {
                let mut builder = RuntimeEnvBuilder::new();
                if let Some(dir) = &work_dir {
                    builder = builder.with_temp_file_path(dir.clone());
                }
                builder.build_arc()?
            }
        };
        stores.runtime_of(&runtime, &process)
    }));
    config
}

/// [`scheduler_config`] (the codecs) with `stores` registered in the runtime of every
/// session the scheduler plans in (the state of `config.override_session_builder` if it has
/// one, else Ballista's default session): the scheduler lists the files of the tables on
/// them. A table on a store not in `stores` fails its query with an error naming the store
/// and `--store` (also with no stores at all).
///
/// ```
/// use ballista_scheduler::config::SchedulerConfig;
/// use datafusion::prelude::SessionConfig;
/// use npy_datafusion::ballista::{scheduler_config_with_stores, ClusterStores};
/// use npy_remote::RemoteOptions;
///
/// let stores = ClusterStores::new().with_store("s3://bucket/", &RemoteOptions::default())?;
/// let config = scheduler_config_with_stores(SchedulerConfig::default(), stores);
/// let build = config.override_session_builder.as_ref().unwrap();
/// let state = build(npy_datafusion::ballista::session_config())?;
/// let url = datafusion::execution::object_store::ObjectStoreUrl::parse("s3://bucket")?;
/// assert!(state.runtime_env().object_store(url).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn scheduler_config_with_stores(
    config: SchedulerConfig,
    stores: ClusterStores,
) -> SchedulerConfig {
    let mut config = scheduler_config(config);
    let base = config.override_session_builder.take();
    config.override_session_builder = Some(Arc::new(move |session_config| {
        let state = match &base {
            Some(base) => base(session_config)?,
            None => ballista_core::utils::default_session_builder(session_config)?,
        };
        let runtime = stores.runtime_of(state.runtime_env(), "the Ballista scheduler")?;
        let id = state.session_id().to_string();
        Ok(
            datafusion::execution::SessionStateBuilder::new_from_existing(state)
                .with_session_id(id)
                .with_runtime_env(runtime)
                .build(),
        )
    }));
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::execution::SessionStateBuilder;
    use datafusion::prelude::SessionConfig;

    fn url(s: &str) -> ObjectStoreUrl {
        ObjectStoreUrl::parse(s).unwrap()
    }

    #[test]
    fn stores_are_one_per_bucket_or_host() {
        let o = RemoteOptions::default();
        let stores = ClusterStores::new()
            .with_store("S3://b/x/", &o)
            .unwrap()
            .with_store("http://h:8080/a/b.npy", &o)
            .unwrap()
            .with_store("s3://b/y/", &o)
            .unwrap();
        assert_eq!(
            stores.urls().collect::<Vec<_>>(),
            ["http://h:8080/", "s3://b/"]
        );
        let e = ClusterStores::new().with_store("s3:///x", &o).unwrap_err();
        assert!(e.to_string().contains("no bucket"), "{e}");
        let e = ClusterStores::new().with_store("gs://b/", &o).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("gs://b/: not an object-store URL"),
            "{e}"
        );
    }

    #[test]
    fn an_executor_keeps_its_runtime_producer_and_names_itself() {
        let stores = ClusterStores::new()
            .with_store("s3://b/", &RemoteOptions::default())
            .unwrap();
        let base = RuntimeEnvBuilder::new().build_arc().unwrap();
        let from_base = Arc::clone(&base);
        let config = ExecutorProcessConfig {
            executor_id: "ex1".to_string(),
            override_runtime_producer: Some(Arc::new(move |_| Ok(Arc::clone(&from_base)))),
            ..Default::default()
        };
        let config = executor_config_with_stores(config, stores);
        assert!(config.override_logical_codec.is_some());
        let produce = config.override_runtime_producer.unwrap();
        let runtime = produce(&SessionConfig::new()).unwrap();
        assert!(Arc::ptr_eq(&runtime.disk_manager, &base.disk_manager));
        assert!(Arc::ptr_eq(&runtime.memory_pool, &base.memory_pool));
        assert!(runtime.object_store(url("s3://b")).is_ok());
        assert!(runtime.object_store(url("file://")).is_ok());
        let e = runtime.object_store(url("s3://c")).unwrap_err().to_string();
        assert!(
            e.contains("Ballista executor ex1 has no object store for s3://c/: ")
                && e.contains("--store s3://c/"),
            "{e}"
        );
    }

    #[test]
    fn a_scheduler_keeps_its_session_builder_and_names_itself() {
        let mut config = SchedulerConfig::default();
        config.override_session_builder = Some(Arc::new(|config| {
            Ok(SessionStateBuilder::new()
                .with_config(config)
                .with_session_id("s1".to_string())
                .build())
        }));
        let config = scheduler_config_with_stores(config, ClusterStores::new());
        let build = config.override_session_builder.unwrap();
        let state = build(SessionConfig::new()).unwrap();
        assert_eq!(state.session_id(), "s1");
        let e = state
            .runtime_env()
            .object_store(url("https://h:9443"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the Ballista scheduler has no object store for https://h:9443/"),
            "{e}"
        );
    }
}
