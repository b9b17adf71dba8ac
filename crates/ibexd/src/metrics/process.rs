//! The process's memory, from Linux's `/proc/self/status` (a ~1.5 KB
//! read of a file the kernel writes on demand: a few microseconds a scrape).

/// The resident set now (`VmRSS`) and at its peak (`VmHWM`), bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Resident bytes now.
    pub resident_bytes: u64,
    /// Resident bytes at the peak so far.
    pub peak_resident_bytes: u64,
}

/// `VmRSS` and `VmHWM` of `status` (the text of `/proc/<pid>/status`),
/// which gives them in kB (KiB); `None` when either is missing.
pub fn parse_status(status: &str) -> Option<ProcessMemory> {
    let kibibytes = |field: &str| -> Option<u64> {
        let line = status.lines().find_map(|line| line.strip_prefix(field))?;
        let number = line.trim().strip_suffix("kB")?.trim();
        number.parse::<u64>().ok()?.checked_mul(1024)
    };
    Some(ProcessMemory {
        resident_bytes: kibibytes("VmRSS:")?,
        peak_resident_bytes: kibibytes("VmHWM:")?,
    })
}

/// This process's memory; `None` where `/proc` is not there.
pub fn process_memory() -> Option<ProcessMemory> {
    parse_status(&std::fs::read_to_string("/proc/self/status").ok()?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_kibibytes_as_bytes() {
        let status = "Name:\tibexd\nVmPeak:\t  900 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n";
        let memory = parse_status(status).unwrap();
        assert_eq!(memory, ProcessMemory { resident_bytes: 1 << 20, peak_resident_bytes: 2 << 20 });
        assert_eq!(parse_status("VmRSS:\t12 kB\n"), None, "no peak");
        assert_eq!(parse_status("VmRSS:\tlots kB\nVmHWM:\t1 kB\n"), None);
    }

    #[test]
    fn this_process_has_resident_memory() {
        let memory = process_memory().unwrap();
        assert!(memory.resident_bytes > 0);
        assert!(memory.peak_resident_bytes >= memory.resident_bytes);
    }
}
