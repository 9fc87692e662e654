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
//! What a job maps again stays mapped: a `test.ping` mapped 1.2 MiB of code, up to 64 KiB
//! per fault (24 KiB on average; an executable mapping's faults read around the page
//! whatever `MADV_RANDOM` says, on the 6.18 kernel measured, and the 8 MiB read-around
//! fills the page cache again). So
//! once no job has run for [`IDLE_TRIM_AFTER`], [`trim_idle`] unmaps the pages of every
//! clean read-only file mapping (`MADV_DONTNEED`; the shared libraries' too), leaving them
//! in the page cache: the next job maps them back with minor faults.
//!
//! The only `unsafe` of this crate: the `madvise` FFI call.
#![allow(unsafe_code)]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// One read-only file mapping of this process: `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: usize,
    end: usize,
}

/// The range of a `/proc/PID/maps` (or `smaps` header) line if it is a read-only file
/// mapping: a path (not `[vdso]` and the like), readable, not writable (a written private
/// page is anonymous memory).
fn readonly_file_mapping(line: &str) -> Option<Range> {
    let mut f = line.split_ascii_whitespace();
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
}

/// The read-only, file-backed mappings in a `/proc/PID/maps` text.
fn readonly_file_mappings(maps: &str) -> Vec<Range> {
    maps.lines().filter_map(readonly_file_mapping).collect()
}

/// The read-only file mappings of a `/proc/PID/smaps` text that hold no page of their own
/// (`Anonymous: 0 kB`) and at least one resident page: every page they map is the file's,
/// so unmapping it loses nothing. A mapping written before it was made read-only (the
/// relocated `.data.rel.ro` of a PIE binary, `RELRO`) holds anonymous pages and is left out.
fn clean_resident_file_mappings(smaps: &str) -> Vec<Range> {
    let mut out = Vec::new();
    let (mut cur, mut rss) = (None::<Range>, 0u64);
    for l in smaps.lines() {
        let mut f = l.split_ascii_whitespace();
        match f.next() {
            Some("Rss:") => rss = f.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            Some("Anonymous:") => {
                let anon: Option<u64> = f.next().and_then(|v| v.parse().ok());
                if let Some(r) = cur.take()
                    && anon == Some(0)
                    && rss > 0
                {
                    out.push(r);
                }
            }
            // A mapping's header: its range, then the fields above.
            Some(first) if first.contains('-') && !first.ends_with(':') => {
                cur = readonly_file_mapping(l);
                rss = 0;
            }
            _ => {}
        }
    }
    out
}

/// This process's resident set in KiB (`VmRSS` of `/proc/self/status`), for the log.
fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    l.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// `/proc/self/<name>`, or `None` once `not_done` and the error are logged at debug.
fn read_self(name: &str, not_done: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/self/{name}"))
        .inspect_err(|e| tracing::debug!("{not_done}: /proc/self/{name}: {e}"))
        .ok()
}

/// A resident-set figure for the log.
fn kib(v: Option<u64>) -> String {
    v.map_or_else(|| "?".to_owned(), |k| format!("{k} KiB"))
}

/// `madvise(advice)` over `r`; `advice` is `MADV_PAGEOUT`, `MADV_RANDOM` or (over a
/// mapping without pages of its own, see [`trim_idle`]) `MADV_DONTNEED`.
fn advise(r: Range, advice: libc::c_int) -> std::io::Result<()> {
    // SAFETY: the three advices keep the mapping and what it reads: MADV_PAGEOUT lets the
    // kernel reclaim clean file pages (read back on the next access), MADV_RANDOM only turns
    // off read-ahead for later faults, MADV_DONTNEED is only given over read-only file
    // mappings holding no anonymous (written) page, whose pages are the file's: the next
    // access maps the same page of the file again. The range is one this process mapped,
    // page-aligned, as `/proc/self/maps` or `smaps` listed it; a mapping removed since (no
    // part of this crate unmaps code) makes the call fail with ENOMEM, and MADV_DONTNEED is
    // only given over mappings of the first sign-in, which are never unmapped (so never
    // replaced by anonymous memory). No pointer is dereferenced by this code.
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
    let Some(maps) = read_self("maps", "Start-up pages not given back") else {
        return;
    };
    let before = rss_kib();
    let (mut advised, mut failed) = (0usize, 0usize);
    let ranges = readonly_file_mappings(&maps);
    let _ = STARTUP_MAPPINGS.set(ranges.clone());
    for r in ranges {
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
    tracing::debug!(
        "Start-up pages given back (MADV_PAGEOUT, MADV_RANDOM over {} KiB of read-only file \
         mappings, {failed} refused): RSS {} -> {}",
        advised / 1024,
        kib(before),
        kib(rss_kib())
    );
}

/// The read-only file mappings at the first sign-in: the executable, the libraries loaded
/// with it and the ones loaded since (NSS), none of which is ever unmapped. [`trim_idle`]
/// advises only these: a range unmapped and then reused for anonymous memory between
/// reading `smaps` and `madvise` would lose its contents to `MADV_DONTNEED`.
static STARTUP_MAPPINGS: OnceLock<Vec<Range>> = OnceLock::new();

/// How long the minion waits after its last job before [`trim_idle`].
pub const IDLE_TRIM_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// When the minion goes idle ([`IDLE_TRIM_AFTER`] after its last job ended): unmaps the
/// pages of its read-only file mappings of the first sign-in ([`after_first_sign_in`]) that
/// hold no page of their own (code, read-only data, the shared libraries' too) with
/// `madvise(MADV_DONTNEED)`; nothing before the first sign-in. The pages stay in the
/// page cache: the next job maps what it needs again with minor faults (the kernel maps the
/// cached pages of 64 KiB around each one, fault-around). Without it every job leaves the
/// code it ran mapped: one `test.ping` after the start-up page-out mapped 1.2 MiB, the
/// 10 s of idling after it (the blocking thread's exit, heartbeats) 0.6 MiB more (measured,
/// docs/benchmarks.md). Logged at debug. Returns the bytes advised.
pub fn trim_idle() -> usize {
    let Some(startup) = STARTUP_MAPPINGS.get() else {
        return 0;
    };
    let Some(smaps) = read_self("smaps", "Idle pages not trimmed") else {
        return 0;
    };
    let before = rss_kib();
    let (mut advised, mut failed) = (0usize, 0usize);
    for r in clean_resident_file_mappings(&smaps) {
        if !startup.contains(&r) {
            continue;
        }
        match advise(r, libc::MADV_DONTNEED) {
            Ok(()) => advised += r.end - r.start,
            Err(_) => failed += 1,
        }
    }
    tracing::debug!(
        "Idle: code pages unmapped (MADV_DONTNEED over {} KiB of clean read-only file \
         mappings, {failed} refused): RSS {} -> {}",
        advised / 1024,
        kib(before),
        kib(rss_kib())
    );
    advised
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: usize, end: usize) -> Range {
        Range { start, end }
    }

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
                r(0x55d0_a000_0000, 0x55d0_a010_0000),
                r(0x55d0_a010_0000, 0x55d0_a050_0000),
                r(0x7f00_0001_0000, 0x7f00_0002_0000),
            ]
        );
    }

    #[test]
    fn picks_clean_resident_file_mappings_only() {
        let smaps = "\
55d0a0000000-55d0a0100000 r--p 00000000 08:01 131 /usr/bin/salt-minion
Size:               1024 kB
Rss:                 164 kB
Anonymous:             0 kB
55d0a0100000-55d0a0500000 r-xp 00100000 08:01 131 /usr/bin/salt-minion
Rss:                4072 kB
Anonymous:             0 kB
55d0a0500000-55d0a0600000 r--p 00500000 08:01 131 /usr/bin/salt-minion
Rss:                 680 kB
Anonymous:           680 kB
55d0a0600000-55d0a0610000 rw-p 00600000 08:01 131 /usr/bin/salt-minion
Rss:                  36 kB
Anonymous:            36 kB
7f0000010000-7f0000020000 r-xp 00028000 08:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                   0 kB
Anonymous:             0 kB
7f0000030000-7f0000040000 rw-p 00000000 00:00 0
Rss:                  12 kB
Anonymous:            12 kB
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]
Rss:                   4 kB
Anonymous:             0 kB
";
        assert_eq!(
            clean_resident_file_mappings(smaps),
            vec![
                r(0x55d0_a000_0000, 0x55d0_a010_0000),
                r(0x55d0_a010_0000, 0x55d0_a050_0000),
            ]
        );
    }

    /// Unmapping this test process's clean code pages: it keeps running, its relocated
    /// read-only data (RELRO, anonymous pages) is left alone and still reads right.
    #[test]
    fn trim_idle_keeps_the_process_running() {
        static TABLE: &[&str] = &["relocated", "pointers"];
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        assert!(!clean_resident_file_mappings(&smaps).is_empty());
        // Once per process (another test may have done it): records the mappings to trim.
        after_first_sign_in();
        // Run some code so that the page-out's pages come back, then trim them.
        assert_eq!(TABLE.join(" "), "relocated pointers");
        assert!(trim_idle() > 0);
        trim_idle();
        assert_eq!(TABLE.join(" "), "relocated pointers");
        assert!(rss_kib().is_some_and(|k| k > 0));
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
