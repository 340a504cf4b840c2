//! Seed 002's naive design on crossbeam-channel: one value per channel
//! operation, bounded channels shared by all workers.

use crossbeam_channel::bounded;
use std::thread;

fn main() {
    let a = sluice_bench::parse();
    let (produce_tx, produce_rx) = bounded::<u64>(a.buffer);
    let (square_tx, square_rx) = bounded::<u64>(a.buffer);

    let nums = a.nums;
    let n = a.n;
    let generator = thread::spawn(move || {
        sluice_bench::generate(n, &nums, |v| produce_tx.send(v).is_ok());
    });
    let workers: Vec<_> = (0..a.w)
        .map(|_| {
            let rx = produce_rx.clone();
            let tx = square_tx.clone();
            thread::spawn(move || {
                for v in rx.iter() {
                    if tx.send(v * v).is_err() {
                        return;
                    }
                }
            })
        })
        .collect();
    drop(produce_rx);
    drop(square_tx);

    let sum: u64 = square_rx.iter().sum();
    generator.join().expect("generator panicked");
    for w in workers {
        w.join().expect("worker panicked");
    }
    sluice_bench::finish(sum);
}
