//! Seed 002's program with chunked hops, the design sluice uses: values
//! travel in vectors of up to `chunk` over crossbeam-channel, and emptied
//! vectors go back to the generator on a free list instead of being
//! allocated per send. The channels hold as many values as the naive
//! programs' (`buffer`), as buffer/chunk vectors (at least 2).

use crossbeam_channel::{bounded, Receiver, Sender};
use std::thread;

fn main() {
    let a = sluice_bench::parse();
    let slots = (a.buffer / a.chunk).max(2);
    let (produce_tx, produce_rx) = bounded::<Vec<u64>>(slots);
    let (square_tx, square_rx) = bounded::<Vec<u64>>(slots);
    // Enough vectors for both channels full, every worker busy and the
    // generator filling one, so the free list never runs dry for long.
    let (free_tx, free_rx): (Sender<Vec<u64>>, Receiver<Vec<u64>>) = bounded(2 * slots + a.w + 2);

    let nums = a.nums;
    let (n, chunk) = (a.n, a.chunk);
    let generator = {
        let free_rx = free_rx.clone();
        thread::spawn(move || {
            let mut buf = Vec::with_capacity(chunk);
            sluice_bench::generate(n, &nums, |v| {
                buf.push(v);
                if buf.len() < chunk {
                    return true;
                }
                let next = free_rx.try_recv().unwrap_or_else(|_| Vec::with_capacity(chunk));
                produce_tx.send(std::mem::replace(&mut buf, next)).is_ok()
            });
            if !buf.is_empty() {
                let _ = produce_tx.send(buf);
            }
        })
    };
    drop(free_rx);
    let workers: Vec<_> = (0..a.w)
        .map(|_| {
            let rx = produce_rx.clone();
            let tx = square_tx.clone();
            thread::spawn(move || {
                for mut c in rx.iter() {
                    for v in c.iter_mut() {
                        *v *= *v;
                    }
                    if tx.send(c).is_err() {
                        return;
                    }
                }
            })
        })
        .collect();
    drop(produce_rx);
    drop(square_tx);

    let mut sum: u64 = 0;
    for mut c in square_rx.iter() {
        sum += c.iter().sum::<u64>();
        c.clear();
        let _ = free_tx.try_send(c);
    }
    generator.join().expect("generator panicked");
    for w in workers {
        w.join().expect("worker panicked");
    }
    sluice_bench::finish(sum);
}
