//! Reading the index through its map: probing for a key, a slot's value.

use super::*;

/// Slots taken earlier in a write batch: a bitmap over the index, allocated at the first
/// insert (a `HashSet` of slot numbers cost a SipHash per probe step of every key).
#[derive(Debug, Default)]
pub(crate) struct Claimed(Vec<u64>);

impl Claimed {
    pub(crate) fn contains(&self, slot: u64) -> bool {
        self.0
            .get((slot / 64) as usize)
            .is_some_and(|w| (w >> (slot % 64)) & 1 == 1)
    }

    /// Mark `slot` of an index of `size` slots.
    pub(crate) fn insert(&mut self, slot: u64, size: u64) {
        if self.0.is_empty() {
            self.0 = vec![0; size.div_ceil(64) as usize];
        }
        if let Some(w) = self.0.get_mut((slot / 64) as usize) {
            *w |= 1 << (slot % 64);
        }
    }
}

pub(crate) enum Probe {
    Found(u64),
    Free(u64),
    Full,
}

impl View {
    pub(super) fn slot_off(&self, slot: u64) -> usize {
        (slot as usize) * self.geo.slot_size
    }

    pub(crate) fn header(&self) -> (u64, u64, u64) {
        (
            u64_at(&self.index, HDR_OCCUPIED),
            u64_at(&self.index, HDR_OCCUPIED + 8),
            u64_at(&self.index, HDR_OCCUPIED + 16),
        )
    }

    pub(crate) fn status(&self, slot: u64) -> u8 {
        self.index[self.slot_off(slot)]
    }

    pub(crate) fn key(&self, slot: u64) -> &[u8] {
        let at = self.slot_off(slot) + 1;
        let raw = &self.index[at..at + self.geo.key_size];
        raw.iter().position(|&b| b == 0).map_or(raw, |n| &raw[..n])
    }

    /// Salt's `_find_slot`; `claimed` slots (taken earlier in a batch) count as occupied
    /// by another key.
    pub(crate) fn find(&self, key: &[u8], claimed: &Claimed) -> Probe {
        let data = self.geo.size - 1;
        let h = xxh3_64(key) % data + 1;
        let mut first_deleted = None;
        for i in 0..data {
            let slot = (h - 1 + i) % data + 1;
            let taken = claimed.contains(slot);
            match self.status(slot) {
                OCCUPIED => {
                    if !taken && self.key(slot) == key {
                        return Probe::Found(slot);
                    }
                }
                DELETED => {
                    if !taken && first_deleted.is_none() {
                        first_deleted = Some(slot);
                    }
                }
                _ if taken => {}
                _ => return Probe::Free(first_deleted.unwrap_or(slot)),
            }
        }
        first_deleted.map_or(Probe::Full, Probe::Free)
    }

    /// The value of an occupied slot, `None` when its heap record is missing, short or
    /// fails its checksum.
    pub(crate) fn value(&mut self, slot: u64) -> Result<Option<&[u8]>> {
        self.ensure_mapped(slot)?;
        Ok(self.value_ref(slot))
    }

    /// Where the record of `slot` lies: (segment, offset, value length).
    pub(super) fn record(&self, slot: u64) -> (usize, usize, usize) {
        let base = self.slot_off(slot) + 1 + self.geo.key_size;
        let packed = u64_at(&self.index, base);
        let len = u32_at(&self.index, base + 8) as usize;
        (
            (packed >> SEG_SHIFT) as usize,
            (packed & SEG_MASK) as usize,
            len,
        )
    }

    /// Map (again) the heap segment of `slot`'s record when it is not mapped far enough.
    pub(super) fn ensure_mapped(&mut self, slot: u64) -> Result<()> {
        let (seg, off, len) = self.record(slot);
        if len == 0 {
            return Ok(());
        }
        let end = off + CRC_SIZE + len;
        let stale = match self.segs.get(seg) {
            Some(Some(m)) => m.len() < end,
            _ => true,
        };
        if stale {
            self.map_segment(seg)?;
        }
        Ok(())
    }

    /// [`value`](Self::value) once [`ensure_mapped`](Self::ensure_mapped).
    pub(super) fn value_ref(&self, slot: u64) -> Option<&[u8]> {
        let (seg, off, len) = self.record(slot);
        if len == 0 {
            return Some(&[]);
        }
        let end = off + CRC_SIZE + len;
        let Some(Some(m)) = self.segs.get(seg) else {
            return None;
        };
        if m.len() < end {
            return None;
        }
        let value = &m[off + CRC_SIZE..end];
        (u64_at(m, off) == xxh3_64(value)).then_some(value)
    }

    pub(super) fn map_segment(&mut self, seg: usize) -> Result<()> {
        let path = segment_path(&self.heap_path, seg);
        if self.segs.len() <= seg {
            self.segs.resize_with(seg + 1, || None);
        }
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(KeyStoreError::io("open", &path, e)),
        };
        let len = f
            .metadata()
            .map_err(|e| KeyStoreError::io("stat", &path, e))?
            .len();
        self.segs[seg] = if len == 0 {
            None
        } else {
            Some(map(&f).map_err(|e| KeyStoreError::io("map", &path, e))?)
        };
        Ok(())
    }

    /// The slots to read for every live entry, ascending: the roster's when it agrees
    /// with the header's count (Salt's `list_items`; the caller checks each slot's status,
    /// as Salt does, on the thread that reads it), else the occupied ones from a scan of
    /// the index.
    pub(crate) fn live_slots(&self, roster: &Path) -> Result<Vec<u64>> {
        let (occupied, _, _) = self.header();
        let mut slots: Vec<u64> = read_roster(roster)?
            .into_iter()
            .filter(|&s| s != TOMBSTONE && s != 0 && u64::from(s) < self.geo.size)
            .map(u64::from)
            .collect();
        if slots.len() as u64 != occupied {
            return Ok(self.scan());
        }
        slots.sort_unstable();
        slots.dedup();
        Ok(slots)
    }

    /// Every occupied slot up to the high-water mark, by reading the index.
    pub(super) fn scan(&self) -> Vec<u64> {
        let (_, _, hwm) = self.header();
        (1..(hwm + 2).min(self.geo.size))
            .filter(|&s| self.status(s) == OCCUPIED)
            .collect()
    }
}
