//! Shared by the reference programs of `sluice bench squares`: the command
//! line and the pre-generated list of numbers.
//!
//! Each program implements seed 002's fan-out/fan-in: a generator sends `n`
//! values, taken in turn from a pre-generated list, to `w` workers that
//! square them; one fan-in loop sums the squares and prints
//! `Final Sum: N`. The list is read from standard input (whitespace-separated
//! integers) so that every language sums exactly the same values.

use std::io::Read;
use std::process::exit;

/// The settings of one run.
pub struct Args {
    /// Number of values to generate.
    pub n: u64,
    /// Number of squaring workers.
    pub w: usize,
    /// Capacity of each channel, in values.
    pub buffer: usize,
    /// Values per chunk (the chunked program only).
    pub chunk: usize,
    /// The pre-generated list, repeated as often as `n` needs.
    pub nums: Vec<u64>,
}

fn usage(prog: &str, msg: &str) -> ! {
    eprintln!("{prog}: {msg}");
    eprintln!("usage: {prog} -n N -w W [-buffer B] [-chunk C] < list");
    exit(2)
}

/// Parses `-n`, `-w`, `-buffer` and `-chunk`, then reads the list from
/// standard input. Exits with status 2 on a bad argument or an empty list.
pub fn parse() -> Args {
    let mut argv = std::env::args();
    let prog = argv.next().unwrap_or_else(|| "squares".into());
    let mut a = Args { n: 50_000_000, w: 3, buffer: 1024, chunk: 256, nums: Vec::new() };
    while let Some(flag) = argv.next() {
        let value = argv.next().unwrap_or_else(|| usage(&prog, &format!("{flag} needs a value")));
        let v: u64 = value
            .parse()
            .unwrap_or_else(|_| usage(&prog, &format!("{flag}: not a number: {value}")));
        match flag.trim_start_matches('-') {
            "n" => a.n = v,
            "w" => a.w = v as usize,
            "buffer" => a.buffer = v as usize,
            "chunk" => a.chunk = v as usize,
            _ => usage(&prog, &format!("unknown flag {flag}")),
        }
    }
    if a.w == 0 || a.chunk == 0 {
        usage(&prog, "-w and -chunk must be at least 1");
    }
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        usage(&prog, &format!("reading the list from standard input: {e}"));
    }
    for field in text.split_whitespace() {
        match field.parse() {
            Ok(v) => a.nums.push(v),
            Err(_) => usage(&prog, &format!("bad number in the list: {field}")),
        }
    }
    if a.nums.is_empty() {
        usage(&prog, "the list on standard input is empty");
    }
    a
}

/// Prints the result line and this process's peak resident set size.
///
/// The peak comes from `VmHWM` in /proc/self/status: the high-water mark of
/// this program's own memory since exec. (getrusage's `ru_maxrss` would also
/// count the memory of the process that started this one, which a parent
/// spawning with vfork+exec, as Go does, passes on.)
pub fn finish(sum: u64) {
    println!("Final Sum: {sum}");
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        if let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:")) {
            println!("{line}");
        }
    }
}

/// Calls `f` with each of the `n` values, in order: the list, repeated.
#[inline]
pub fn generate(n: u64, nums: &[u64], mut f: impl FnMut(u64) -> bool) {
    let mut j = 0;
    for _ in 0..n {
        if !f(nums[j]) {
            return;
        }
        j += 1;
        if j == nums.len() {
            j = 0;
        }
    }
}
