//! The tar archive `POST /keys` answers (Python's `tarfile`, USTAR, two regular files).

fn header(name: &str, size: usize) -> [u8; 512] {
    let mut h = [0u8; 512];
    let n = name.as_bytes();
    h[..n.len().min(100)].copy_from_slice(&n[..n.len().min(100)]);
    let octal = |field: &mut [u8], v: u64| {
        let s = format!("{:0width$o}\0", v, width = field.len() - 1);
        field.copy_from_slice(s.as_bytes());
    };
    octal(&mut h[100..108], 0o644);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size as u64);
    octal(&mut h[136..148], 0);
    h[148..156].copy_from_slice(b"        ");
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// A tar of two files.
pub fn two_files(a: (&str, &[u8]), b: (&str, &[u8])) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in [a, b] {
        out.extend_from_slice(&header(name, data.len()));
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    // Python's tarfile: two zero blocks, padded to a 10240-byte record.
    out.resize(out.len() + 1024, 0);
    out.resize(out.len().div_ceil(10240) * 10240, 0);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn archives_are_records_of_blocks() {
        let t = super::two_files(("minion.pub", b"p"), ("minion.pem", b"k"));
        assert_eq!(t.len(), 10240);
        assert_eq!(&t[257..262], b"ustar");
        assert_eq!(&t[512..513], b"p");
    }
}
