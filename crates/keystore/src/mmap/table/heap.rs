//! The heap records of a batch, appended and synced before the index changes.

use super::*;

/// Heap records of a batch, laid out over the active segment and new ones as Salt rolls
/// them, written and fsync-ed by [`finish`](Self::finish) before the index changes.
pub(super) struct HeapAppender {
    heap: PathBuf,
    max: u64,
    /// (segment, its size before this batch, bytes to append)
    segs: Vec<(usize, u64, Vec<u8>)>,
}

impl HeapAppender {
    pub(super) fn start(view: &View, heap: &Path, geo: Geometry) -> Result<Self> {
        let mut seg = 0;
        while segment_path(heap, seg + 1).exists() {
            seg += 1;
        }
        let path = segment_path(heap, seg);
        let size = fs::metadata(&path)
            .map_err(|e| KeyStoreError::io("stat", &path, e))?
            .len();
        let _ = view;
        Ok(Self {
            heap: heap.to_owned(),
            max: geo.max_segment_bytes,
            segs: vec![(seg, size, Vec::new())],
        })
    }

    /// Queue `value`; returns its packed offset.
    pub(super) fn push(&mut self, value: &[u8]) -> u64 {
        if value.is_empty() {
            let (seg, base, buf) = self
                .segs
                .last()
                .map_or((0, 0, 0), |(s, b, v)| (*s, *b, v.len()));
            return ((seg as u64) << SEG_SHIFT) | (base + buf as u64);
        }
        let rec = (CRC_SIZE + value.len()) as u64;
        let roll = self.segs.last().is_some_and(|(_, base, buf)| {
            base + buf.len() as u64 + rec > self.max && base + (buf.len() as u64) > 0
        });
        if roll {
            let next = self.segs.last().map_or(0, |(s, _, _)| s + 1);
            self.segs.push((next, 0, Vec::new()));
        }
        let Some((seg, base, buf)) = self.segs.last_mut() else {
            return 0;
        };
        let off = *base + buf.len() as u64;
        buf.extend_from_slice(&xxh3_64(value).to_le_bytes());
        buf.extend_from_slice(value);
        ((*seg as u64) << SEG_SHIFT) | off
    }

    pub(super) fn finish(self) -> Result<()> {
        for (seg, base, buf) in self.segs {
            if buf.is_empty() {
                continue;
            }
            let path = segment_path(&self.heap, seg);
            let f = open_private(&path)?;
            f.write_all_at(&buf, base)
                .and_then(|()| f.sync_data())
                .map_err(|e| KeyStoreError::io("write", &path, e))?;
        }
        Ok(())
    }
}
