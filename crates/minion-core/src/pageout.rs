//! Giving back the start-up's code pages once the minion is signed in.
//!
//! An idle minion's resident memory is mostly file-backed code and read-only data that its
//! start-up touched once (argument and configuration parsing, grains, OpenSSL's
//! initialisation and key loading, the libraries' relocation) and that stay resident while
//! it idles: clean file pages are dropped only under memory pressure, and the kernel maps
//! 64 KiB around every fault (docs/benchmarks.md "Minion footprint", fourth and fifth
//! rounds). After the first sign-in, [`after_first_sign_in`] asks the kernel once
//! (`madvise(MADV_PAGEOUT)`, Linux 5.4+) to reclaim the pages of this process's own
//! read-only file mappings: its binary's code and read-only data and those of the libraries
//! it maps. The kernel skips pages another process maps too (a shared libc) and file pages
//! of files the process neither owns nor could open for writing (a guard against a
//! page-cache side channel: a minion running as an unprivileged `user:` keeps its
//! root-owned binary's pages; root passes).
//!
//! The kernel unmaps the pages but may keep them in the page cache (large folios stay while
//! any of their pages is mapped), from where the next fault maps the 64 KiB around it again
//! (fault-around). So the mappings are also marked `MADV_RANDOM` (a later fault on a page
//! not in the cache reads that page, not the 128 KiB around it) and the minion's own
//! executable's pages that are no longer mapped are dropped from the page cache
//! (`posix_fadvise(POSIX_FADV_DONTNEED)`; the libraries' cache is shared and left alone).
//! Pages a later job needs are read back when it runs, one small read per 4 KiB page: the
//! benchmark's idle RSS is measured 10 s after the minion answered a real job, so they are
//! counted. Anonymous memory (heap, stacks, `.data`) is not touched.
//!
//! The only `unsafe` of this crate: the `madvise` FFI call.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

/// One read-only file mapping of this process: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: usize,
    end: usize,
}

/// The read-only, file-backed mappings in a `/proc/PID/maps` text: a path (not `[vdso]`
/// and the like), readable, not writable (a written private page is anonymous memory).
fn readonly_file_mappings(maps: &str) -> Vec<Range> {
    maps.lines()
        .filter_map(|l| {
            let mut f = l.split_ascii_whitespace();
            let (range, perms) = (f.next()?, f.next()?);
            let path = f.nth(3)?;
            let p = perms.as_bytes();
            if !path.starts_with('/') || p.first() != Some(&b'r') || p.get(1) != Some(&b'-') {
                return None;
            }
            let (a, e) = range.split_once('-')?;
            let start = usize::from_str_radix(a, 16).ok()?;
            let end = usize::from_str_radix(e, 16).ok()?;
            (end > start).then_some(Range { start, end })
        })
        .collect()
}

/// This process's resident set in KiB (`VmRSS` of `/proc/self/status`), for the log.
fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    l.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// `madvise(advice)` over `r`; `advice` is `MADV_PAGEOUT` or `MADV_RANDOM`.
fn advise(r: Range, advice: libc::c_int) -> std::io::Result<()> {
    // SAFETY: both advices keep the contents and the mapping: MADV_PAGEOUT lets the kernel
    // reclaim clean file pages (read back on the next access), MADV_RANDOM only turns off
    // read-ahead for later faults. The range is one this process mapped, page-aligned, as
    // `/proc/self/maps` listed it; a mapping removed since (no part of this crate unmaps
    // code) makes the call fail with ENOMEM, it never touches memory. No pointer is
    // dereferenced by this code.
    let rc = unsafe { libc::madvise(r.start as *mut libc::c_void, r.end - r.start, advice) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Pages `r` out and turns off read-ahead for it.
fn page_out(r: Range) -> std::io::Result<()> {
    advise(r, libc::MADV_PAGEOUT)?;
    advise(r, libc::MADV_RANDOM)
}

/// Drops the page cache of this process's own executable, except the pages still mapped.
fn drop_exe_cache() -> std::io::Result<()> {
    use std::os::fd::AsRawFd as _;
    let f = std::fs::File::open("/proc/self/exe")?;
    nix::fcntl::posix_fadvise(
        f.as_raw_fd(),
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    )
    .map_err(std::io::Error::from)
}

/// Once per process, after the first successful sign-in and the start-up work that follows
/// it (pillar, start events): pages out this process's read-only file mappings, turns off
/// their read-ahead and drops its executable's unmapped pages from the page cache (module
/// docs). Logged at debug; a kernel without `MADV_PAGEOUT` (EINVAL, before Linux 5.4) is
/// logged and the minion goes on as before. Blocks for a few milliseconds.
pub fn after_first_sign_in() {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    let maps = match std::fs::read_to_string("/proc/self/maps") {
        Ok(m) => m,
        Err(e) => {
            tracing::debug!("Start-up pages not given back: /proc/self/maps: {e}");
            return;
        }
    };
    let before = rss_kib();
    let (mut advised, mut failed) = (0usize, 0usize);
    for r in readonly_file_mappings(&maps) {
        match page_out(r) {
            Ok(()) => advised += r.end - r.start,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && advised == 0 => {
                tracing::debug!("Start-up pages not given back: madvise(MADV_PAGEOUT): {e}");
                return;
            }
            Err(_) => failed += 1,
        }
    }
    if let Err(e) = drop_exe_cache() {
        tracing::debug!("The minion's executable stays in the page cache: {e}");
    }
    let kib = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |k| format!("{k} KiB"));
    tracing::debug!(
        "Start-up pages given back (MADV_PAGEOUT, MADV_RANDOM over {} KiB of read-only file \
         mappings, {failed} refused): RSS {} -> {}",
        advised / 1024,
        kib(before),
        kib(rss_kib())
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_readonly_file_mappings_only() {
        let maps = "\
55d0a0000000-55d0a0100000 r--p 00000000 08:01 131 /usr/bin/salt-minion
55d0a0100000-55d0a0500000 r-xp 00100000 08:01 131 /usr/bin/salt-minion
55d0a0500000-55d0a0600000 rw-p 00500000 08:01 131 /usr/bin/salt-minion
55d0a1000000-55d0a1200000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000010000 ---p 00000000 08:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000010000-7f0000020000 r-xp 00028000 08:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000030000-7f0000040000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
";
        let got = readonly_file_mappings(maps);
        assert_eq!(
            got,
            vec![
                Range {
                    start: 0x55d0_a000_0000,
                    end: 0x55d0_a010_0000
                },
                Range {
                    start: 0x55d0_a010_0000,
                    end: 0x55d0_a050_0000
                },
                Range {
                    start: 0x7f00_0001_0000,
                    end: 0x7f00_0002_0000
                },
            ]
        );
    }

    /// The real call on this test process: the kernel accepts it (or, before 5.4, refuses
    /// it with EINVAL, which the daemon logs), and the process keeps running its code.
    #[test]
    fn pages_out_this_process_and_keeps_running() {
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let ranges = readonly_file_mappings(&maps);
        assert!(!ranges.is_empty(), "{maps}");
        for r in ranges {
            if let Err(e) = page_out(r) {
                assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
            }
        }
        drop_exe_cache().expect("posix_fadvise on /proc/self/exe");
        after_first_sign_in();
        after_first_sign_in();
        assert!(rss_kib().is_some_and(|k| k > 0));
    }
}
