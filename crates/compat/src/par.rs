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
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .clamp(1, 8);
    if threads == 1 || items.len() < min.max(2) {
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
