//! [`RemoteNpy::read_rows`]'s row reads: each chunk's GET streamed, frame by frame as the
//! client returned them, to a decoding thread (tokio's blocking pool) that decodes every frame
//! straight into its elements' place in the result (`npy_serde`'s `PlacedRecords`). The task
//! that drives the GETs only forwards frames; nothing is copied before the decode.
//!
//! A read of one GET of at most [`INLINE_BYTES`] is decoded on the task itself, frame by frame
//! as the GET's body arrives: handing it to another thread costs more than it could save
//! (a wake-up of the decoding thread per frame, each delayed on a loaded machine).
//!
//! Up to [`FetchOptions::concurrency`](crate::FetchOptions) chunks are in flight: a chunk's
//! turn ends when its body has arrived (exactly its bytes, or an error naming the object and
//! range) and the decoder has decoded all of it, so at most that many chunks' frames are ever
//! held, as when each chunk was collected and decoded in turn. Errors are those of the chunks
//! in order: the first chunk that failed, to fetch (first) or to decode.

use std::collections::HashMap;
use std::ops::Range;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};

use super::RemoteNpy;
use crate::zipdir::Crc;
use npy_serde::error::{Error, Result};
use npy_serde::read::PlacedRecords;
use npy_serde::NpyRecord;

/// Reads of one GET up to this many bytes are decoded on the task that drives the GET.
pub(crate) const INLINE_BYTES: u64 = 1 << 20;

/// What the fetching task tells the decoder.
enum Msg {
    /// The next frame of a chunk's body.
    Frame(usize, Bytes),
    /// A chunk's body is complete: its decoding result, once every frame is decoded.
    End(usize, oneshot::Sender<Result<()>>),
}

impl RemoteNpy {
    /// Elements `elems` (not empty, of elements of at least one byte, in C order) decoded in
    /// place; `crc` (a whole member's, started over its header) updated over every data byte
    /// in order and checked.
    pub(crate) async fn read_placed<T>(
        &self,
        elems: Range<u64>,
        crc: Option<(Crc, u32)>,
    ) -> Result<Vec<T>>
    where
        T: DeserializeOwned + NpyRecord + Send + 'static,
    {
        let opts = &self.obj.opts;
        let per = (opts.chunk / self.itemsize).max(1);
        let count = elems.end - elems.start;
        let slots = PlacedRecords::<T>::new(&self.rb, &self.header, count, per)
            .map_err(|e| self.obj.error(e))?;
        let parts = slots.parts();
        if parts == 1 && count.saturating_mul(self.itemsize) <= INLINE_BYTES {
            return self.read_inline(slots, elems, crc).await;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let decoder = tokio::task::spawn_blocking(move || decode(slots, rx));
        let keep = crc.is_some();
        let fetched = futures::stream::iter(0..parts)
            .map(|i| {
                let first = elems.start + i as u64 * per;
                let part = first..elems.end.min(first + per);
                self.fetch_part(i, part, tx.clone(), keep)
            })
            .buffered(opts.concurrency)
            .try_fold(crc, |mut crc, frames| async move {
                if let Some((c, _)) = &mut crc {
                    frames.iter().for_each(|f| c.update(f));
                }
                Ok(crc)
            })
            .await;
        drop(tx);
        let decoded = decoder.await.map_err(|e| self.obj.error(e));
        // Decoding errors count from the read's first element: the whole array's positions.
        let at = self.header.data_offset + elems.start * self.itemsize;
        let crc = fetched.map_err(|e| self.locate(e, elems.start, at))?;
        // Every chunk was fetched and decoded: the whole member's CRC, then the elements.
        self.check_crc(crc)?;
        decoded?.map_err(|e| self.locate(e, elems.start, at))
    }

    /// The elements `elems`, one GET's, decoded into `slots` (of one part) on this task as
    /// each frame arrives; `crc` as for [`read_placed`](RemoteNpy::read_placed).
    async fn read_inline<T>(
        &self,
        mut slots: PlacedRecords<T>,
        elems: Range<u64>,
        mut crc: Option<(Crc, u32)>,
    ) -> Result<Vec<T>>
    where
        T: DeserializeOwned + NpyRecord + Send,
    {
        let at = self.header.data_offset + elems.start * self.itemsize;
        self.obj
            .get_frames(self.byte_range(&elems), |frame| {
                if let Some((c, _)) = &mut crc {
                    c.update(&frame);
                }
                slots.push(0, &frame)
            })
            .await
            .map_err(|e| self.locate(e, elems.start, at))?;
        self.check_crc(crc)?;
        slots.finish().map_err(|e| self.locate(e, elems.start, at))
    }

    /// One chunk: its GET's frames sent to the decoder as they arrive (and kept, for a CRC, if
    /// `keep`), then its decoding result awaited.
    async fn fetch_part(
        &self,
        i: usize,
        elems: Range<u64>,
        tx: mpsc::UnboundedSender<Msg>,
        keep: bool,
    ) -> Result<Vec<Bytes>> {
        let stopped = || self.obj.error("the decoding thread stopped");
        let mut kept = Vec::new();
        self.obj
            .get_frames(self.byte_range(&elems), |frame| {
                if keep {
                    kept.push(frame.clone());
                }
                tx.send(Msg::Frame(i, frame)).map_err(|_| stopped())
            })
            .await?;
        let (done, decoded) = oneshot::channel();
        tx.send(Msg::End(i, done)).map_err(|_| stopped())?;
        decoded.await.map_err(|_| stopped())??;
        Ok(kept)
    }
}

/// The decoder: every frame into its place, a chunk's result sent when its end is announced;
/// the elements once the fetching task hangs up (an error unless every chunk was decoded).
fn decode<T>(mut slots: PlacedRecords<T>, mut rx: mpsc::UnboundedReceiver<Msg>) -> Result<Vec<T>>
where
    T: DeserializeOwned + NpyRecord + Send,
{
    let mut failed: HashMap<usize, Error> = HashMap::new();
    while let Some(msg) = rx.blocking_recv() {
        match msg {
            Msg::Frame(i, frame) => {
                if failed.contains_key(&i) {
                    continue;
                }
                if let Err(e) = slots.push(i, &frame) {
                    failed.insert(i, e);
                }
            }
            Msg::End(i, done) => {
                let _ = done.send(failed.remove(&i).map_or(Ok(()), Err));
            }
        }
    }
    slots.finish()
}

#[cfg(test)]
mod tests {
    //! The placed reads over a store whose bodies arrive in small frames (records cut across
    //! them), against the same rows decoded from the file.

    use std::fmt;
    use std::ops::Range;
    use std::sync::Arc;

    use bytes::Bytes;
    use futures::future::BoxFuture;
    use futures::stream::BoxStream;
    use futures::{FutureExt, StreamExt};
    use object_store::memory::InMemory;
    use object_store::path::Path;
    use object_store::{
        CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
        ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload,
        PutResult, RenameOptions, Result,
    };
    use serde::{Deserialize, Serialize};

    use crate::count::{forward_store, Call};
    use crate::{FetchOptions, RemoteNpy};
    use npy_serde::{NpyRecord, ReaderBuilder};

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, NpyRecord)]
    struct Rec {
        id: i64,
        x: f32,
        flag: bool,
        #[npy(unicode = 4)]
        name: String,
    }

    /// A store whose GET bodies come in frames of `frame` bytes, the last `cut` bytes of
    /// each body but the first GET's left off (`cut` < 0: that many extra bytes sent).
    #[derive(Debug)]
    struct Frames {
        inner: Arc<dyn ObjectStore>,
        frame: usize,
        cut: isize,
        gets: std::sync::atomic::AtomicUsize,
    }

    impl Frames {
        fn pass(&self, _call: Call) {}
    }

    impl fmt::Display for Frames {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Frames({})", self.frame)
        }
    }

    impl ObjectStore for Frames {
        fn get_opts<'a, 'b, 'c>(
            &'a self,
            location: &'b Path,
            options: GetOptions,
        ) -> BoxFuture<'c, Result<GetResult>>
        where
            'a: 'c,
            'b: 'c,
            Self: 'c,
        {
            let first = self.gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
            let cut = if first { 0 } else { self.cut };
            async move {
                let mut res = self.inner.get_opts(location, options).await?;
                let whole = crate::fault::take_body(&mut res);
                let mut body = whole.bytes().await?.to_vec();
                let keep = body.len().saturating_add_signed(-cut);
                body.resize(keep, 0xAB);
                let body = Bytes::from(body);
                let frames: Vec<Result<Bytes>> = (0..body.len())
                    .step_by(self.frame)
                    .map(|at| Ok(body.slice(at..body.len().min(at + self.frame))))
                    .collect();
                let stream: BoxStream<'static, Result<Bytes>> =
                    futures::stream::iter(frames).boxed();
                res.payload = GetResultPayload::Stream(stream);
                Ok(res)
            }
            .boxed()
        }

        forward_store!(pass);
    }

    fn recs(n: usize) -> Vec<Rec> {
        (0..n)
            .map(|i| Rec {
                id: i as i64 * 3 - 7,
                x: i as f32 / 4.0,
                flag: i % 3 == 0,
                name: format!("r{}", i % 1000),
            })
            .collect()
    }

    const URL: &str = "memory:///t/x.npy";

    async fn open(file: Vec<u8>, frame: usize, cut: isize, opts: &FetchOptions) -> RemoteNpy {
        let mem = Arc::new(InMemory::new());
        let path = Path::from("t/x.npy");
        mem.put(&path, PutPayload::from(file)).await.unwrap();
        // The first GET (the header) whole; the reads through the frames.
        let store: Arc<dyn ObjectStore> = Arc::new(Frames {
            inner: mem,
            frame,
            cut,
            gets: Default::default(),
        });
        let rb = ReaderBuilder::new();
        RemoteNpy::open_with(store, path, URL, &rb, opts)
            .await
            .unwrap()
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// The file of `n` records (a `U4` name: 8 + 4 + 1 + 16 = 29 bytes a record) and where
    /// its data starts.
    fn file(n: usize) -> (Vec<Rec>, Vec<u8>, usize) {
        let data = recs(n);
        let f = npy_serde::to_vec(&data).unwrap();
        let start = f.len() - n * 29;
        (data, f, start)
    }

    #[test]
    fn frames_that_cut_records_any_chunking_and_concurrency() {
        let (data, f, _) = file(5000);
        block_on(async {
            // Chunks of 100 records (2900 bytes; the last chunk partial), frames of 7, 29,
            // 1000 and 4096 bytes; 1, 3 and 8 chunks in flight.
            for frame in [7, 29, 1000, 4096] {
                for conc in [1, 3, 8] {
                    let opts = FetchOptions::default()
                        .chunk_bytes(29 * 100 + 5)
                        .concurrency(conc);
                    let npy = open(f.clone(), frame, 0, &opts).await;
                    let all: Vec<Rec> = npy.read_rows(0..5000).await.unwrap();
                    assert_eq!(all, data, "frames of {frame}, {conc} in flight");
                    let some: Vec<Rec> = npy.read_rows(1234..4321).await.unwrap();
                    assert_eq!(
                        some,
                        data[1234..4321],
                        "frames of {frame}, {conc} in flight"
                    );
                    let one: Vec<Rec> = npy.read_rows(4999..5000).await.unwrap();
                    assert_eq!(one, data[4999..]);
                }
            }
        });
    }

    #[test]
    fn short_and_long_answers_are_errors_naming_the_object_and_range() {
        let (_, f, start) = file(1000);
        let range = format!("(bytes {start}..{})", start + 8700);
        block_on(async {
            let opts = FetchOptions::default().chunk_bytes(29 * 300);
            for (cut, says) in [
                (
                    1,
                    format!("short read: asked for 8700 bytes {range}, the store sent 8699"),
                ),
                (
                    -1,
                    format!("the store sent more than the 8700 bytes asked for {range}"),
                ),
            ] {
                let npy = open(f.clone(), 13, cut, &opts).await;
                let err = npy.read_rows::<Rec>(0..1000).await.unwrap_err();
                assert_eq!(err.kind().code(), "remote", "{err}");
                let msg = err.to_string();
                assert!(msg.starts_with(URL) && msg.contains(&says), "{msg}");
            }
        });
    }

    #[test]
    fn decoding_errors_in_a_later_chunk_keep_the_whole_arrays_positions() {
        // Record 2500's flag is 7 (not a bool), its bytes cut across frames.
        let (_, mut f, start) = file(3000);
        let at = start + 2500 * 29 + 12;
        f[at] = 7;
        block_on(async {
            for conc in [1, 4] {
                let opts = FetchOptions::default()
                    .chunk_bytes(29 * 256)
                    .concurrency(conc);
                let npy = open(f.clone(), 10, 0, &opts).await;
                let err = npy.read_rows::<Rec>(1000..3000).await.unwrap_err();
                assert_eq!(err.kind().code(), "invalid_value", "{err}");
                assert_eq!(err.position().record, Some(2500), "{err}");
                assert_eq!(err.position().byte, Some(at as u64), "{err}");
                // The records before it read.
                let ok: Vec<Rec> = npy.read_rows(0..2500).await.unwrap();
                assert_eq!(ok.len(), 2500);
            }
        });
    }

    #[test]
    fn one_small_get_is_decoded_on_the_task_with_the_same_answers() {
        // 3000 records (87000 bytes) in the default 8 MiB chunks: one GET, under
        // INLINE_BYTES; 40000 (1.16 MB): one GET over it, on the decoding thread.
        let (data, mut f, start) = file(3000);
        let (big, big_f, _) = file(40_000);
        const { assert!(40_000 * 29 > super::INLINE_BYTES && 3000 * 29 < super::INLINE_BYTES) };
        block_on(async {
            let opts = FetchOptions::default();
            for frame in [1, 13, 4096] {
                let npy = open(f.clone(), frame, 0, &opts).await;
                assert_eq!(npy.read_rows::<Rec>(0..3000).await.unwrap(), data);
                let some: Vec<Rec> = npy.read_rows(17..2000).await.unwrap();
                assert_eq!(some, data[17..2000], "frames of {frame}");
            }
            let npy = open(big_f, 4096, 0, &opts).await;
            assert_eq!(npy.read_rows::<Rec>(0..40_000).await.unwrap(), big);
            for (cut, says) in [
                (1, "short read: asked for 87000 bytes"),
                (-1, "the store sent more than the 87000 bytes asked for"),
            ] {
                let npy = open(f.clone(), 13, cut, &opts).await;
                let err = npy.read_rows::<Rec>(0..3000).await.unwrap_err();
                assert_eq!(err.kind().code(), "remote", "{err}");
                let msg = err.to_string();
                assert!(msg.starts_with(URL) && msg.contains(says), "{msg}");
            }
            // Record 2500's flag is 7: the whole array's positions.
            let at = start + 2500 * 29 + 12;
            f[at] = 7;
            let npy = open(f, 10, 0, &opts).await;
            let err = npy.read_rows::<Rec>(1000..3000).await.unwrap_err();
            assert_eq!(err.kind().code(), "invalid_value", "{err}");
            assert_eq!(err.position().record, Some(2500), "{err}");
            assert_eq!(err.position().byte, Some(at as u64), "{err}");
        });
    }

    #[test]
    fn plain_data_is_copied_in_place_from_cut_frames() {
        let values: Vec<f64> = (0..10_000).map(|i| i as f64 * 0.5).collect();
        let f = npy_serde::to_vec(&values).unwrap();
        block_on(async {
            let opts = FetchOptions::default().chunk_bytes(8 * 999).concurrency(2);
            let npy = open(f, 13, 0, &opts).await;
            let got: Vec<f64> = npy.read_rows(3..9_999).await.unwrap();
            assert_eq!(got, values[3..9_999]);
            // Byte ranges whose chunks cut elements (column scans).
            let raw = npy.fetch_rows(1..10_000, false).await.unwrap();
            let want: Vec<u8> = values[1..].iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(raw, want);
        });
    }
}
