//! Work split over the CPUs: the one helper the key store, the master's targeting and the
//! bulk operations share.

/// Run `f` over `items` split into one chunk per CPU (8 at most), each chunk on its own
/// thread when there are at least `min` items and more than one CPU; the chunks' results
/// in order. A chunk that panics panics the caller.
pub fn par_chunks<T: Sync, R: Send>(
    items: &[T],
    min: usize,
    f: impl Fn(&[T]) -> R + Sync,
) -> Vec<R> {
    // (the length first: `available_parallelism` reads the cgroup files on every call)
    if items.len() < min.max(2) {
        return vec![f(items)];
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, 8);
    if threads == 1 {
        return vec![f(items)];
    }
    let chunk = items.len().div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| s.spawn(move || f(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::par_chunks;

    #[test]
    fn chunks_cover_the_items_in_order() {
        let items: Vec<u32> = (0..10_000).collect();
        let parts = par_chunks(&items, 100, <[u32]>::to_vec);
        assert_eq!(parts.concat(), items);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        assert_eq!(parts.len(), cpus);
        // Below `min`: one chunk, on the caller's thread.
        let me = std::thread::current().id();
        let small = par_chunks(&items[..50], 100, |p| {
            (p.len(), std::thread::current().id())
        });
        assert_eq!(small, vec![(50, me)]);
        assert!(par_chunks(&[] as &[u32], 0, <[u32]>::len) == vec![0]);
    }
}
