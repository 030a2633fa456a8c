//! Repetitions and medians. A figure and its baseline are measured in alternation,
//! one repetition of each in turn, so that drift of a noisy machine (another
//! process, the page cache, thermal limits) hits both alike.

use std::time::{Duration, Instant};

/// The median of `xs` (the mean of the two middle values for an even count).
pub fn median(xs: &[f64]) -> f64 {
    assert!(!xs.is_empty(), "median of nothing");
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Two measurements of one repetition (figures 4 and 8) take turns in slices of
/// this many calls. A repetition of each alone lasts 40–150 ms, and this machine's
/// speed drifts on that scale (other tenants of the host), which set the two of
/// one round up to 25 % apart; slices of a few ms see the same machine.
pub const SLICE: usize = 100;

/// A series of repetitions being collected.
pub type Series = Vec<f64>;

/// Runs `reps` rounds; each round runs every measurement once, the order rotating
/// from round to round so that none is always first. Returns one series per
/// measurement, in the order given.
pub fn rounds<E>(
    reps: usize,
    measurements: &mut [&mut dyn FnMut() -> Result<f64, E>],
) -> Result<Vec<Series>, E> {
    let n = measurements.len();
    let mut series = vec![Vec::with_capacity(reps); n];
    for round in 0..reps {
        for k in 0..n {
            let i = (round + k) % n;
            series[i].push((measurements[i])()?);
        }
    }
    Ok(series)
}

/// Runs `rep` (one repetition of `n` items of a figure and its baseline, in
/// slices, returning the cost of each) once at a tenth of `n` to warm both up, then
/// `reps` times. Returns the figure's series and the baseline's.
pub fn paired_reps<E>(
    reps: usize,
    n: usize,
    mut rep: impl FnMut(usize) -> Result<(f64, f64), E>,
) -> Result<[Series; 2], E> {
    rep(n / 10 + 1)?;
    let mut series = [Vec::with_capacity(reps), Vec::with_capacity(reps)];
    for _ in 0..reps {
        let (figure, baseline) = rep(n)?;
        series[0].push(figure);
        series[1].push(baseline);
    }
    Ok(series)
}

/// Per-item cost in microseconds of `count` items done in `elapsed`.
pub fn micros_per(elapsed: Duration, count: usize) -> f64 {
    elapsed.as_secs_f64() * 1e6 / count.max(1) as f64
}

/// Items per second.
pub fn per_second(elapsed: Duration, count: usize) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

/// Times `count` calls of `f`, returning microseconds per call.
pub fn time_calls<E>(count: usize, mut f: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let start = Instant::now();
    for _ in 0..count {
        f()?;
    }
    Ok(micros_per(start.elapsed(), count))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn rounds_rotate_and_keep_series_apart() {
        let mut order = Vec::new();
        let (mut a, mut b) = (0.0, 100.0);
        let log = std::cell::RefCell::new(&mut order);
        let mut fa = || -> Result<f64, ()> {
            log.borrow_mut().push('a');
            a += 1.0;
            Ok(a)
        };
        let mut fb = || -> Result<f64, ()> {
            log.borrow_mut().push('b');
            b += 1.0;
            Ok(b)
        };
        let series = rounds(3, &mut [&mut fa, &mut fb]).unwrap();
        assert_eq!(series, vec![vec![1.0, 2.0, 3.0], vec![101.0, 102.0, 103.0]]);
        assert_eq!(order.iter().collect::<String>(), "abbaab");
    }

    #[test]
    fn paired_reps_warm_up_first_and_split_the_pairs() {
        let mut sizes = Vec::new();
        let series = paired_reps(2, 50, |n| -> Result<(f64, f64), ()> {
            sizes.push(n);
            Ok((n as f64, -(n as f64)))
        })
        .unwrap();
        assert_eq!(sizes, [6, 50, 50]);
        assert_eq!(series, [vec![50.0, 50.0], vec![-50.0, -50.0]]);
    }

    #[test]
    fn rates() {
        assert_eq!(per_second(Duration::from_millis(500), 100), 200.0);
        assert_eq!(micros_per(Duration::from_millis(2), 4), 500.0);
    }
}
