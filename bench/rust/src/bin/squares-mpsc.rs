//! Seed 002's naive design on the standard library's mpsc: a bounded
//! sync_channel per hop. An mpsc receiver has one owner, so the workers share
//! the producer channel's receiver behind a mutex, the usual way to fan out
//! with std alone.

use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::thread;

fn main() {
    let a = sluice_bench::parse();
    let (produce_tx, produce_rx) = sync_channel::<u64>(a.buffer);
    let (square_tx, square_rx) = sync_channel::<u64>(a.buffer);
    let produce_rx = Arc::new(Mutex::new(produce_rx));

    let nums = a.nums;
    let n = a.n;
    let generator = thread::spawn(move || {
        sluice_bench::generate(n, &nums, |v| produce_tx.send(v).is_ok());
    });
    let workers: Vec<_> = (0..a.w)
        .map(|_| {
            let rx = Arc::clone(&produce_rx);
            let tx = square_tx.clone();
            thread::spawn(move || loop {
                let v = match rx.lock().expect("receiver lock poisoned").recv() {
                    Ok(v) => v,
                    Err(_) => return,
                };
                if tx.send(v * v).is_err() {
                    return;
                }
            })
        })
        .collect();
    drop(square_tx);

    let sum: u64 = square_rx.iter().sum();
    generator.join().expect("generator panicked");
    for w in workers {
        w.join().expect("worker panicked");
    }
    sluice_bench::finish(sum);
}
