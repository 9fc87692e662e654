//! One bank of Salt 3008's `MmapCache` (`salt/utils/mmap_cache.py`): an open-addressing
//! index file of fixed-size slots, append-only heap segments, and a roster of live slots.
//!
//! ```text
//! index (size × slot_size bytes, slot 0 = header):
//!   header: [0xAB][occupied u64][deleted u64][high_water_mark u64]
//!   slot:   [status u8: 0 empty, 1 occupied, 2 deleted][key: key_size bytes, NUL-padded]
//!           [offset u64: segment id << 48 | offset in segment][length u32][mtime_ns u64]
//! heap (`.heap`, `.heap.1`, ...):  [xxh3_64(value) u64][value]
//! roster (`.roster`):              u32 slot numbers, 0xFFFF_FFFF = removed
//! ```
//!
//! All integers little-endian; the slot of a key is found by linear probing from
//! `xxh3_64(key) % (size - 1) + 1`. Reading maps the files read-only; writing takes the
//! same `flock` on `<index>.lock` as Salt's writer, appends to the heap, then updates the
//! index with `pwrite` (never through a writable map), then the roster, fsync-ing each.
//!
//! # Crash safety (what differs from Salt's own writer)
//!
//! A changed value is always appended as a new heap record and the slot repointed; an old
//! record is never overwritten (Salt's writer overwrites in place when the new value is
//! not longer, so a torn write there can fail the checksum and lose the entry). The heap
//! is fsync-ed before the index points into it, so after a crash at any point the slot
//! holds either its old pointer or its new one, each to a complete record: a key's state
//! change (accept, reject) keeps the record length, only the 8-byte offset changes, and
//! with Salt's default geometry (`slot_size` 96, `key_size` 64) that field lies inside one
//! 32-byte-aligned block, so no sector-sized write can tear it. A crash between the index
//! and the roster leaves the header's `occupied` count different from the roster: readers
//! then scan the index instead, and the next writer (ours or Salt's) rebuilds the roster.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use memmap2::Mmap;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{KeyStoreError, Result};
use crate::fsutil::crash_point;

mod heap;
mod view;

use heap::HeapAppender;
pub(crate) use view::{Claimed, Probe};

pub(crate) const OCCUPIED: u8 = 1;
pub(crate) const DELETED: u8 = 2;
const HEADER_MAGIC: u8 = 0xAB;
const HDR_OCCUPIED: usize = 1;
const FIXED_OVERHEAD: usize = 1 + 8 + 4 + 8;
const CRC_SIZE: usize = 8;
const SEG_SHIFT: u32 = 48;
const SEG_MASK: u64 = (1 << SEG_SHIFT) - 1;
const TOMBSTONE: u32 = u32::MAX;

/// The shape of a bank's files: Salt's `mmap_key_size`, `mmap_key_slot_size`,
/// `mmap_key_id_size` and `mmap_key_max_segment_bytes`. A reader and a writer must agree
/// on the first two (the index file's size is their product).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Slots in the index, header included (Salt's default 1,000,000).
    pub size: u64,
    /// Bytes per slot (default 96).
    pub slot_size: usize,
    /// Longest key in bytes (default 64); longer minion ids are refused.
    pub key_size: usize,
    /// Largest heap segment before the next append starts a new one (default 1 GiB).
    pub max_segment_bytes: u64,
}

impl Default for Geometry {
    fn default() -> Self {
        Self {
            size: 1_000_000,
            slot_size: 96,
            key_size: 64,
            max_segment_bytes: 1 << 30,
        }
    }
}

impl Geometry {
    /// Refuse a geometry Salt would refuse (`slot_size` too small for `key_size`).
    pub fn check(&self) -> std::result::Result<(), String> {
        let min = (FIXED_OVERHEAD + self.key_size).max(25);
        if self.slot_size < min {
            return Err(format!(
                "mmap_key_slot_size {} is too small for mmap_key_id_size {} (minimum {min})",
                self.slot_size, self.key_size
            ));
        }
        if self.size < 2 || self.size > u64::from(u32::MAX) {
            return Err(format!("mmap_key_size {} is out of range", self.size));
        }
        if self.max_segment_bytes == 0 || self.max_segment_bytes > SEG_MASK {
            return Err(format!(
                "mmap_key_max_segment_bytes {} is out of range",
                self.max_segment_bytes
            ));
        }
        Ok(())
    }

    fn index_len(&self) -> u64 {
        self.size * self.slot_size as u64
    }
}

/// One change of a write batch.
pub(crate) enum Op<'a> {
    /// Store `value` under the key (insert or repoint).
    Put(&'a [u8], Vec<u8>),
    /// Remove the key.
    Delete(&'a [u8]),
}

/// One bank's files.
#[derive(Debug)]
pub(crate) struct Table {
    path: PathBuf,
    geo: Geometry,
}

/// A read-only view of a bank: the index and the heap segments, mapped.
pub(crate) struct View {
    index: Mmap,
    geo: Geometry,
    heap_path: PathBuf,
    segs: Vec<Option<Mmap>>,
}

fn map(file: &File) -> io::Result<Mmap> {
    // SAFETY: the map is read-only and private to this view. Salt's writer and ours only
    // ever grow these files (the index has a fixed size, heap segments are append-only);
    // replacement is by rename and removal by unlink, neither of which affects an
    // existing mapping. Every read is bounds-checked against the mapped length.
    #[allow(unsafe_code)]
    unsafe {
        Mmap::map(file)
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Table {
    pub(crate) fn new(path: PathBuf, geo: Geometry) -> Self {
        Self { path, geo }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn with_suffix(&self, suffix: &str) -> PathBuf {
        let mut s = self.path.clone().into_os_string();
        s.push(suffix);
        s.into()
    }

    pub(crate) fn heap_path(&self) -> PathBuf {
        self.with_suffix(".heap")
    }

    fn roster_path(&self) -> PathBuf {
        self.with_suffix(".roster")
    }

    fn lock_path(&self) -> PathBuf {
        self.with_suffix(".lock")
    }

    /// Map the bank for reading; `None` when it has no index file yet (an empty bank).
    pub(crate) fn view(&self) -> Result<Option<View>> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(KeyStoreError::io("open", &self.path, e)),
        };
        let len = file
            .metadata()
            .map_err(|e| KeyStoreError::io("stat", &self.path, e))?
            .len();
        if len != self.geo.index_len() {
            return Err(KeyStoreError::io(
                "map",
                &self.path,
                io::Error::other(format!(
                    "index is {len} bytes, mmap_key_size {} x mmap_key_slot_size {} = {}: \
                     the configured geometry differs from the one it was made with",
                    self.geo.size,
                    self.geo.slot_size,
                    self.geo.index_len()
                )),
            ));
        }
        let index = map(&file).map_err(|e| KeyStoreError::io("map", &self.path, e))?;
        Ok(Some(View {
            index,
            geo: self.geo,
            heap_path: self.heap_path(),
            segs: Vec::new(),
        }))
    }

    /// Every live `(key, value)`, in slot order; entries failing their checksum are
    /// skipped (as Salt's `list_items`).
    #[cfg(test)]
    pub(crate) fn items(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        Ok(self
            .scan_with(
                Vec::with_capacity,
                |acc: &mut Vec<_>, k, v| acc.push((k.to_vec(), v.to_vec())),
                |_| {},
            )?
            .into_iter()
            .flatten()
            .collect())
    }

    /// [`items`](Self::items) without copying, split over the CPUs for a large bank (each
    /// thread reading through its own mapping): the live slots in order, cut into one run
    /// per thread; each run gets `init(run_len)` as its accumulator, `f(acc, key, value)`
    /// for each intact entry, then `finish(acc)` on its thread. The runs' accumulators in
    /// slot order.
    pub(crate) fn scan_with<A: Send>(
        &self,
        init: impl Fn(usize) -> A + Sync,
        f: impl Fn(&mut A, &[u8], &[u8]) + Sync,
        finish: impl Fn(&mut A) + Sync,
    ) -> Result<Vec<A>> {
        let Some(view) = self.view()? else {
            return Ok(Vec::new());
        };
        let slots = view.live_slots(&self.roster_path())?;
        drop(view);
        let run = |part: &[u64]| -> Result<A> {
            let mut acc = init(part.len());
            let Some(mut view) = self.view()? else {
                return Ok(acc);
            };
            for &slot in part {
                let at = view.slot_off(slot) + 1;
                if view.status(slot) != OCCUPIED || view.index[at] == 0 {
                    continue;
                }
                view.ensure_mapped(slot)?;
                if let Some(v) = view.value_ref(slot) {
                    let raw = &view.index[at..at + view.geo.key_size];
                    let key = raw.iter().position(|&b| b == 0).map_or(raw, |n| &raw[..n]);
                    f(&mut acc, key, v);
                }
            }
            finish(&mut acc);
            Ok(acc)
        };
        salt_compat::par::par_chunks(&slots, 4096, run)
            .into_iter()
            .collect()
    }

    /// The value of `key`, if present and intact.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Some(mut view) = self.view()? else {
            return Ok(None);
        };
        match view.find(key, &Claimed::default()) {
            Probe::Found(slot) => Ok(view.value(slot)?.map(<[u8]>::to_vec)),
            _ => Ok(None),
        }
    }

    /// Apply `ops` under Salt's writer lock (when a key comes more than once, its last op
    /// wins). Returns, per op, whether it changed something (a delete of an absent key
    /// does not). Fails as a whole before any change when the index is full.
    pub(crate) fn write(&self, ops: &[Op<'_>]) -> Result<Vec<bool>> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let lock = self.lock()?;
        let (index, mut view) = self.open_for_write()?;
        self.recover_roster(&index, &mut view)?;
        let mut heap = HeapAppender::start(&view, &self.heap_path(), self.geo)?;
        let mut claimed = Claimed::default();
        let mut writes: Vec<(u64, bool, &[u8], u64, u32)> = Vec::new();
        let mut deletes = Vec::new();
        let mut done = Vec::with_capacity(ops.len());
        let mut last = std::collections::HashMap::with_capacity(ops.len());
        for (i, op) in ops.iter().enumerate() {
            let (Op::Put(k, _) | Op::Delete(k)) = op;
            last.insert(*k, i);
        }
        for (i, op) in ops.iter().enumerate() {
            let (Op::Put(k, _) | Op::Delete(k)) = op;
            if last.get(k) != Some(&i) {
                done.push(true);
                continue;
            }
            match op {
                Op::Put(key, value) => {
                    let (slot, new) = match view.find(key, &claimed) {
                        Probe::Found(s) => (s, false),
                        Probe::Free(s) => (s, true),
                        Probe::Full => {
                            return Err(KeyStoreError::io(
                                "write",
                                &self.path,
                                io::Error::other("the mmap_key index is full (mmap_key_size)"),
                            ));
                        }
                    };
                    claimed.insert(slot, self.geo.size);
                    let off = heap.push(value);
                    let len = u32::try_from(value.len()).map_err(|_| {
                        KeyStoreError::io("write", &self.path, io::Error::other("value too large"))
                    })?;
                    writes.push((slot, new, key, off, len));
                    done.push(true);
                }
                Op::Delete(key) => match view.find(key, &claimed) {
                    Probe::Found(s) => {
                        claimed.insert(s, self.geo.size);
                        deletes.push(s);
                        done.push(true);
                    }
                    _ => done.push(false),
                },
            }
        }
        heap.finish()?;
        crash_point("mmap:after_heap")?;
        let g = self.geo;
        let (mut occupied, mut deleted, mut hwm) = view.header();
        let mtime = now_ns();
        let mut added = Vec::new();
        let io_err = |e| KeyStoreError::io("write", &self.path, e);
        // Pass 1: keys and pointers (and deletions); pass 2: the status of new slots, so a
        // reader never sees an occupied slot before its key and pointer.
        let mut fields = Vec::with_capacity(writes.len() + deletes.len());
        let mut statuses = Vec::new();
        for &(slot, new, key, off, len) in &writes {
            let base = slot * g.slot_size as u64;
            let mut ptr = Vec::with_capacity(g.key_size + 20);
            if new {
                ptr.extend_from_slice(key);
                ptr.resize(g.key_size, 0);
            }
            ptr.extend_from_slice(&off.to_le_bytes());
            ptr.extend_from_slice(&len.to_le_bytes());
            ptr.extend_from_slice(&mtime.to_le_bytes());
            let at = base + 1 + if new { 0 } else { g.key_size as u64 };
            fields.push((at, ptr));
            if new {
                if view.status(slot) == DELETED {
                    deleted = deleted.saturating_sub(1);
                }
                statuses.push((base, vec![OCCUPIED]));
                occupied += 1;
                hwm = hwm.max(slot);
                added.push(slot);
            }
        }
        for &slot in &deletes {
            fields.push((slot * g.slot_size as u64, vec![DELETED]));
            occupied = occupied.saturating_sub(1);
            deleted += 1;
        }
        write_coalesced(&index, &view.index, &mut fields).map_err(io_err)?;
        write_coalesced(&index, &view.index, &mut statuses).map_err(io_err)?;
        let mut hdr = [0u8; 24];
        hdr[..8].copy_from_slice(&occupied.to_le_bytes());
        hdr[8..16].copy_from_slice(&deleted.to_le_bytes());
        hdr[16..].copy_from_slice(&hwm.to_le_bytes());
        index
            .write_all_at(&hdr, HDR_OCCUPIED as u64)
            .map_err(io_err)?;
        index
            .sync_data()
            .map_err(|e| KeyStoreError::io("fsync", &self.path, e))?;
        crash_point("mmap:after_index")?;
        self.update_roster(&added, &deletes)?;
        drop(lock);
        Ok(done)
    }

    /// Open (creating when missing, like Salt's writer) the index for writing.
    fn open_for_write(&self) -> Result<(File, View)> {
        let index = open_private(&self.path)?;
        let len = index
            .metadata()
            .map_err(|e| KeyStoreError::io("stat", &self.path, e))?
            .len();
        if len == 0 {
            // Salt writes the zeros; a sparse file reads the same and costs no disk.
            index
                .set_len(self.geo.index_len())
                .map_err(|e| KeyStoreError::io("create", &self.path, e))?;
        }
        let mut magic = [0u8; 1];
        index
            .read_exact_at(&mut magic, 0)
            .map_err(|e| KeyStoreError::io("read", &self.path, e))?;
        if magic[0] != HEADER_MAGIC {
            index
                .write_all_at(&[HEADER_MAGIC], 0)
                .map_err(|e| KeyStoreError::io("write", &self.path, e))?;
            index
                .sync_all()
                .map_err(|e| KeyStoreError::io("fsync", &self.path, e))?;
        }
        let heap = self.heap_path();
        OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&heap)
            .map_err(|e| KeyStoreError::io("create", &heap, e))?;
        let view = self
            .view()?
            .ok_or_else(|| KeyStoreError::io("open", &self.path, io::ErrorKind::NotFound.into()))?;
        Ok((index, view))
    }

    fn lock(&self) -> Result<nix::fcntl::Flock<File>> {
        let path = self.lock_path();
        let f = open_private(&path)?;
        nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| KeyStoreError::io("lock", &path, e.into()))
    }

    /// Salt's `_roster_recover`: when the roster's live entries disagree with the
    /// header's `occupied`, rebuild it (and the count) from the index.
    fn recover_roster(&self, index: &File, view: &mut View) -> Result<()> {
        let path = self.roster_path();
        let (occupied, _, _) = view.header();
        let roster = read_roster(&path)?;
        if roster.iter().filter(|&&s| s != TOMBSTONE).count() as u64 == occupied {
            return Ok(());
        }
        let slots = view.scan();
        if slots.len() as u64 != occupied {
            index
                .write_all_at(&(slots.len() as u64).to_le_bytes(), HDR_OCCUPIED as u64)
                .and_then(|()| index.sync_data())
                .map_err(|e| KeyStoreError::io("write", &self.path, e))?;
        }
        let bytes: Vec<u8> = slots
            .iter()
            .flat_map(|s| (*s as u32).to_le_bytes())
            .collect();
        crate::fsutil::atomic_write(&path, &bytes, 0o600, true)
    }

    fn update_roster(&self, added: &[u64], removed: &[u64]) -> Result<()> {
        let path = self.roster_path();
        let mut f = open_private(&path)?;
        let err = |e| KeyStoreError::io("write", &path, e);
        if !removed.is_empty() {
            let gone: HashSet<u32> = removed.iter().map(|&s| s as u32).collect();
            let data = fs::read(&path).map_err(|e| KeyStoreError::io("read", &path, e))?;
            for (i, c) in data.chunks_exact(4).enumerate() {
                if gone.contains(&u32_at(c, 0)) {
                    f.write_all_at(&TOMBSTONE.to_le_bytes(), (i * 4) as u64)
                        .map_err(err)?;
                }
            }
        }
        if !added.is_empty() {
            let end = f.metadata().map_err(err)?.len() / 4 * 4;
            let bytes: Vec<u8> = added
                .iter()
                .flat_map(|s| (*s as u32).to_le_bytes())
                .collect();
            f.write_all_at(&bytes, end).map_err(err)?;
        }
        f.flush().map_err(err)?;
        f.sync_data()
            .map_err(|e| KeyStoreError::io("fsync", &path, e))
    }
}

/// Patches closer than this many bytes go out in one `pwrite` with what lies between them.
const COALESCE_GAP: u64 = 4096;
/// The longest single `pwrite` of coalesced patches.
const COALESCE_MAX: u64 = 8 << 20;

/// Write `patches` (`(offset, bytes)`, distinct non-overlapping ranges) into `file`, whose
/// current contents `map` shows: sorted by offset, patches within [`COALESCE_GAP`] of each
/// other are merged with the unchanged bytes between them (read from `map`) into one
/// `pwrite`. A bulk state change patches ~90,000 scattered 20-byte pointers; one `pwrite`
/// each cost ~10 us of system time (under `strace`), the merged runs a copy of the pages
/// they cover, which the fsync writes back either way.
pub(super) fn write_coalesced(
    file: &File,
    map: &[u8],
    patches: &mut [(u64, Vec<u8>)],
) -> io::Result<()> {
    patches.sort_unstable_by_key(|(at, _)| *at);
    let mut rest = &patches[..];
    while let Some(((start, first), _)) = rest.split_first() {
        let mut end = start + first.len() as u64;
        let mut n = 1;
        while let Some((at, bytes)) = rest.get(n) {
            let next_end = at + bytes.len() as u64;
            if *at > end + COALESCE_GAP || next_end - start > COALESCE_MAX {
                break;
            }
            end = end.max(next_end);
            n += 1;
        }
        let (run, tail) = rest.split_at(n);
        let (s, e) = (*start as usize, end as usize);
        if run.len() == 1 || e > map.len() {
            for (at, bytes) in run {
                file.write_all_at(bytes, *at)?;
            }
        } else {
            let mut buf = map[s..e].to_vec();
            for (at, bytes) in run {
                let o = *at as usize - s;
                buf[o..o + bytes.len()].copy_from_slice(bytes);
            }
            file.write_all_at(&buf, *start)?;
        }
        rest = tail;
    }
    Ok(())
}

/// Open `path` to read and write, created (owner-only, as Salt's files) when missing, never
/// truncated: the index, the roster, the lock file and the heap segments.
fn open_private(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|e| KeyStoreError::io("open", path, e))
}

/// Roster entries (tombstones included); a missing roster is empty.
fn read_roster(path: &Path) -> Result<Vec<u32>> {
    match fs::read(path) {
        Ok(d) => Ok(d.chunks_exact(4).map(|c| u32_at(c, 0)).collect()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(KeyStoreError::io("read", path, e)),
    }
}

fn segment_path(heap: &Path, seg: usize) -> PathBuf {
    if seg == 0 {
        return heap.to_owned();
    }
    let mut s = heap.to_owned().into_os_string();
    s.push(format!(".{seg}"));
    s.into()
}
