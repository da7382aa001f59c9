//! Armada seed (armada-fair-share.txt) as tests, plus DRF and long-run convergence properties.

use gridspool_policy::armada::*;
use gridspool_policy::rng::SplitMix64;
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

// ---- resource factors ---------------------------------------------------------------------------

#[test]
fn armada_resource_factors_seed_example_10_cpu_20_gb_5_gpu() {
    // 0 = cpu, 1 = memory (GB), 2 = gpu
    let f = ResourceFactors::from_totals(&[10.0, 20.0, 5.0], 0).expect("valid totals");
    assert_eq!(f.factors(), [1.0, 2.0, 0.5]);
    assert_eq!(f.usage(&[5.0, 2.0, 1.0]), 8.0, "5 + 2/2 + 1/0.5 = 8");
}

#[test]
fn armada_resource_factors_reject_missing_cpu_and_ignore_absent_resources() {
    assert_eq!(
        ResourceFactors::from_totals(&[0.0, 20.0], 0),
        Err(ArmadaError::CpuTotalNotPositive(0.0))
    );
    assert!(matches!(
        ResourceFactors::from_totals(&[10.0], 3),
        Err(ArmadaError::NoCpuResource { .. })
    ));
    let f = ResourceFactors::from_totals(&[10.0, 20.0, 0.0], 0).expect("valid totals");
    assert_eq!(
        f.usage(&[1.0, 2.0, 7.0]),
        2.0,
        "a resource the cluster lacks adds nothing"
    );
}

// ---- priority with half-time ------------------------------------------------------------------

fn h(secs: f64) -> Halftime {
    Halftime::from_secs(secs).expect("valid half-time")
}

#[test]
fn armada_priority_zero_elapsed_leaves_priority_unchanged() {
    assert_eq!(update_priority(3.0, 100.0, 0.0, h(60.0)), Ok(3.0));
}

#[test]
fn armada_priority_moves_half_way_in_one_halftime() {
    let p = update_priority(0.0, 8.0, 60.0, h(60.0)).expect("valid");
    assert!(close(p, 4.0), "{p}");
    let p = update_priority(8.0, 0.0, 120.0, h(60.0)).expect("valid");
    assert!(close(p, 2.0), "{p}");
}

#[test]
fn armada_priority_constant_usage_converges_to_usage() {
    for start in [0.0, 50.0] {
        let mut p = start;
        for _ in 0..400 {
            p = update_priority(p, 8.0, 10.0, h(60.0)).expect("valid");
        }
        assert!((p - 8.0).abs() < 1e-9, "from {start}: {p}");
    }
}

#[test]
fn armada_priority_update_is_independent_of_how_time_is_split() {
    // Two steps of 30 s equal one step of 60 s: the decay is a true half-life.
    let two = update_priority(
        update_priority(1.0, 9.0, 30.0, h(60.0)).expect("valid"),
        9.0,
        30.0,
        h(60.0),
    )
    .expect("valid");
    let one = update_priority(1.0, 9.0, 60.0, h(60.0)).expect("valid");
    assert!(close(one, two), "{one} vs {two}");
}

#[test]
fn armada_priority_rejects_bad_halftime_and_elapsed() {
    assert_eq!(
        Halftime::from_secs(0.0),
        Err(ArmadaError::InvalidHalftime(0.0))
    );
    assert!(Halftime::from_secs(f64::NAN).is_err());
    assert_eq!(
        update_priority(1.0, 1.0, -1.0, h(1.0)),
        Err(ArmadaError::InvalidElapsed(-1.0))
    );
    let mut ps = [1.0, 2.0];
    assert!(matches!(
        update_priorities(&mut ps, &[1.0], 1.0, h(1.0)),
        Err(ArmadaError::LengthMismatch { .. })
    ));
}

// ---- shares -----------------------------------------------------------------------------------

#[test]
fn armada_shares_priorities_1_and_2_get_two_thirds_and_one_third() {
    let s = inverse_priority_shares(&[1.0, 2.0]);
    assert!(close(s[0], 2.0 / 3.0) && close(s[1], 1.0 / 3.0), "{s:?}");
}

#[test]
fn armada_effective_priority_is_priority_times_factor() {
    assert_eq!(effective_priority(3.0, 2.0), 6.0);
    // A lower factor earns more: equal priority, factors 1 and 2 → 2/3 and 1/3.
    let s = fair_shares(&[4.0, 4.0], &[1.0, 2.0], DEFAULT_MIN_PRIORITY).expect("valid");
    assert!(close(s[0], 2.0 / 3.0), "{s:?}");
}

#[test]
fn armada_zero_priority_queues_get_finite_shares() {
    // Raw: queues at zero split everything between them.
    assert_eq!(inverse_priority_shares(&[0.0, 2.0, 0.0]), [0.5, 0.0, 0.5]);
    // Floored: an idle queue gets a large share, still shaped by its factor.
    let s = fair_shares(&[0.0, 0.0, 5.0], &[1.0, 2.0, 1.0], 0.5).expect("valid");
    let want = inverse_priority_shares(&[0.5, 1.0, 5.0]);
    assert_eq!(s, want);
    assert!(s.iter().all(|x| x.is_finite()));
    assert!(matches!(
        fair_shares(&[1.0], &[0.0], 0.5),
        Err(ArmadaError::InvalidFactor(_))
    ));
}

// ---- allocation rounds --------------------------------------------------------------------------

fn cpu_jobs(n: usize, first_id: u64) -> Vec<ArmadaJob> {
    (0..n)
        .map(|i| ArmadaJob {
            id: first_id + i as u64,
            request: vec![1.0],
        })
        .collect()
}

fn cpu_only() -> ResourceFactors {
    ResourceFactors::from_totals(&[1.0], 0).expect("valid")
}

fn count(r: &RoundResult, q: usize) -> usize {
    r.allocations.iter().filter(|a| a.queue == q).count()
}

#[test]
fn armada_slices_follow_inverse_priority() {
    let (a, b) = (cpu_jobs(20, 0), cpu_jobs(20, 100));
    let r = allocation_round(
        &[&a, &b],
        &[1.0, 2.0],
        &[9.0],
        &cpu_only(),
        RoundConfig::default(),
        &mut SplitMix64::new(1),
    )
    .expect("valid");
    assert_eq!((count(&r, 0), count(&r, 1)), (6, 3));
    assert!(r.allocations.iter().all(|x| x.phase == Phase::Slice));
    assert_eq!(r.stop, RoundStop::NoResourcesLeft);
    // Jobs are taken in queue order.
    let ids: Vec<u64> = r
        .allocations
        .iter()
        .filter(|x| x.queue == 0)
        .map(|x| x.job)
        .collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn armada_empty_queues_get_no_slice() {
    let a = cpu_jobs(20, 0);
    let r = allocation_round(
        &[&a, &[]],
        &[1.0, 1.0],
        &[5.0],
        &cpu_only(),
        RoundConfig::default(),
        &mut SplitMix64::new(1),
    )
    .expect("valid");
    assert_eq!(count(&r, 0), 5);
    assert!(r.allocations.iter().all(|x| x.phase == Phase::Slice));
}

#[test]
fn armada_remainder_goes_to_probabilistic_slicing() {
    let (a, b) = (cpu_jobs(20, 0), cpu_jobs(20, 100));
    let r = allocation_round(
        &[&a, &b],
        &[1.0, 1.0],
        &[3.0],
        &cpu_only(),
        RoundConfig::default(),
        &mut SplitMix64::new(9),
    )
    .expect("valid");
    // Slices of 1.5 each: one job each in the slice pass, the third by chance.
    let slice_pass = r
        .allocations
        .iter()
        .filter(|x| x.phase == Phase::Slice)
        .count();
    let probabilistic = r.allocations.len() - slice_pass;
    assert_eq!((slice_pass, probabilistic), (2, 1));
    assert_eq!(r.available, [0.0]);
}

#[test]
fn armada_probabilistic_for_all_resources_skips_the_slice_pass() {
    let (a, b) = (cpu_jobs(20, 0), cpu_jobs(20, 100));
    let config = RoundConfig {
        use_probabilistic_scheduling_for_all_resources: true,
        ..RoundConfig::default()
    };
    let r = allocation_round(
        &[&a, &b],
        &[1.0, 2.0],
        &[9.0],
        &cpu_only(),
        config,
        &mut SplitMix64::new(3),
    )
    .expect("valid");
    assert_eq!(r.allocations.len(), 9);
    assert!(
        r.allocations
            .iter()
            .all(|x| x.phase == Phase::Probabilistic)
    );
}

#[test]
fn armada_probabilistic_slicing_stops_at_the_step_budget_or_when_queues_empty() {
    let (a, b) = (cpu_jobs(20, 0), cpu_jobs(20, 100));
    let config = RoundConfig {
        use_probabilistic_scheduling_for_all_resources: true,
        max_probabilistic_steps: 2,
    };
    let r = allocation_round(
        &[&a, &b],
        &[1.0, 2.0],
        &[9.0],
        &cpu_only(),
        config,
        &mut SplitMix64::new(3),
    )
    .expect("valid");
    assert_eq!((r.allocations.len(), r.stop), (2, RoundStop::StepBudget));

    let (a, b) = (cpu_jobs(1, 0), cpu_jobs(2, 100));
    let r = allocation_round(
        &[&a, &b],
        &[1.0, 2.0],
        &[9.0],
        &cpu_only(),
        RoundConfig::default(),
        &mut SplitMix64::new(3),
    )
    .expect("valid");
    assert_eq!((r.allocations.len(), r.stop), (3, RoundStop::QueuesEmpty));
}

#[test]
fn armada_a_job_that_does_not_fit_leaves_room_for_other_queues() {
    let big = vec![ArmadaJob {
        id: 1,
        request: vec![50.0],
    }];
    let small = cpu_jobs(20, 100);
    let r = allocation_round(
        &[&big, &small],
        &[1.0, 1.0],
        &[8.0],
        &cpu_only(),
        RoundConfig::default(),
        &mut SplitMix64::new(5),
    )
    .expect("valid");
    assert_eq!((count(&r, 0), count(&r, 1)), (0, 8));
    assert_eq!(r.stop, RoundStop::NoResourcesLeft);
}

#[test]
fn armada_round_is_deterministic_for_a_seed() {
    let (a, b, c) = (cpu_jobs(50, 0), cpu_jobs(50, 100), cpu_jobs(50, 200));
    let config = RoundConfig {
        use_probabilistic_scheduling_for_all_resources: true,
        ..RoundConfig::default()
    };
    let run = |seed| {
        allocation_round(
            &[&a, &b, &c],
            &[1.0, 2.0, 3.0],
            &[40.0],
            &cpu_only(),
            config,
            &mut SplitMix64::new(seed),
        )
        .expect("valid")
        .allocations
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
}

// ---- DRF ----------------------------------------------------------------------------------------

#[test]
fn armada_dominant_share_is_the_largest_resource_fraction() {
    assert_eq!(dominant_share(&[2.0, 8.0], &[10.0, 20.0]), 0.4);
    assert_eq!(dominant_share(&[2.0, 8.0, 1.0], &[10.0, 20.0, 0.0]), 0.4);
}

#[test]
fn armada_drf_classic_example_9_cpu_18_gb() {
    // Ghodsi et al., "Dominant Resource Fairness" (NSDI 2011): A's tasks need <1 cpu, 4 GB>,
    // B's <3 cpu, 1 GB>; DRF gives A three tasks and B two.
    let a: Vec<ArmadaJob> = (0..10)
        .map(|i| ArmadaJob {
            id: i,
            request: vec![1.0, 4.0],
        })
        .collect();
    let b: Vec<ArmadaJob> = (0..10)
        .map(|i| ArmadaJob {
            id: 100 + i,
            request: vec![3.0, 1.0],
        })
        .collect();
    let queues = [
        DrfQueue {
            usage: vec![0.0, 0.0],
            weight: 1.0,
            jobs: &a,
        },
        DrfQueue {
            usage: vec![0.0, 0.0],
            weight: 1.0,
            jobs: &b,
        },
    ];
    let r = drf_round(&queues, &[9.0, 18.0], &[9.0, 18.0], usize::MAX).expect("valid");
    let n = |q| r.allocations.iter().filter(|x| x.0 == q).count();
    assert_eq!((n(0), n(1)), (3, 2));
    assert_eq!(r.usage, [vec![3.0, 12.0], vec![6.0, 2.0]]);
}

#[test]
fn armada_drf_weights_scale_dominant_shares() {
    let a = cpu_jobs(100, 0);
    let b = cpu_jobs(100, 100);
    let queues = [
        DrfQueue {
            usage: vec![0.0],
            weight: 2.0,
            jobs: &a,
        },
        DrfQueue {
            usage: vec![0.0],
            weight: 1.0,
            jobs: &b,
        },
    ];
    let r = drf_round(&queues, &[30.0], &[30.0], usize::MAX).expect("valid");
    let n = |q| r.allocations.iter().filter(|x| x.0 == q).count();
    assert_eq!((n(0), n(1)), (20, 10));
    let bad = [DrfQueue {
        usage: vec![0.0],
        weight: 0.0,
        jobs: &a,
    }];
    assert!(drf_round(&bad, &[1.0], &[1.0], 1).is_err());
}

// ---- long-run convergence ------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Mode {
    Slices,
    ProbabilisticForAll,
    Drf,
}

/// A 32-cpu / 64-GB cluster; every queue always has 1-cpu / 2-GB jobs waiting; jobs run 5..15
/// ticks; each tick priorities decay toward usage (half-time 10 ticks) and one round allocates
/// what is free. Returns each queue's share of 10,000 starts after 2,000 warm-up starts.
fn long_run(mode: Mode, factors: &[f64], seed: u64) -> Vec<f64> {
    let totals = [32.0, 64.0];
    let rf = ResourceFactors::from_totals(&totals, 0).expect("valid");
    let halftime = Halftime::from_secs(10.0).expect("valid");
    let n = factors.len();
    let template: Vec<ArmadaJob> = (0..64)
        .map(|i| ArmadaJob {
            id: i,
            request: vec![1.0, 2.0],
        })
        .collect();
    let mut rng = SplitMix64::new(seed);
    let mut durations = SplitMix64::new(seed ^ 0x5eed);
    let mut free = totals.to_vec();
    let mut running: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut used = vec![[0.0f64; 2]; n];
    let mut priority = vec![0.0; n];
    let mut counts = vec![0usize; n];
    let (mut seen, mut now) = (0usize, 0u64);
    while counts.iter().sum::<usize>() < 10_000 {
        now += 1;
        while let Some(Reverse((end, q))) = running.peek().copied() {
            if end > now {
                break;
            }
            running.pop();
            used[q][0] -= 1.0;
            used[q][1] -= 2.0;
            free[0] += 1.0;
            free[1] += 2.0;
        }
        let usages: Vec<f64> = used.iter().map(|u| rf.usage(u)).collect();
        update_priorities(&mut priority, &usages, 1.0, halftime).expect("valid");
        let queues: Vec<&[ArmadaJob]> = vec![&template; n];
        let started: Vec<usize> = match mode {
            Mode::Slices | Mode::ProbabilisticForAll => {
                let effective: Vec<f64> = priority
                    .iter()
                    .zip(factors)
                    .map(|(p, f)| effective_priority(p.max(DEFAULT_MIN_PRIORITY), *f))
                    .collect();
                let config = RoundConfig {
                    use_probabilistic_scheduling_for_all_resources: matches!(
                        mode,
                        Mode::ProbabilisticForAll
                    ),
                    ..RoundConfig::default()
                };
                allocation_round(&queues, &effective, &free, &rf, config, &mut rng)
                    .expect("valid")
                    .allocations
                    .iter()
                    .map(|a| a.queue)
                    .collect()
            }
            Mode::Drf => {
                let dq: Vec<DrfQueue> = (0..n)
                    .map(|q| DrfQueue {
                        usage: used[q].to_vec(),
                        weight: 1.0 / factors[q],
                        jobs: &template,
                    })
                    .collect();
                drf_round(&dq, &totals, &free, usize::MAX)
                    .expect("valid")
                    .allocations
                    .iter()
                    .map(|a| a.0)
                    .collect()
            }
        };
        for q in started {
            used[q][0] += 1.0;
            used[q][1] += 2.0;
            free[0] -= 1.0;
            free[1] -= 2.0;
            running.push(Reverse((now + 5 + durations.next_u64() % 11, q)));
            seen += 1;
            if seen > 2_000 {
                counts[q] += 1;
            }
        }
    }
    counts.iter().map(|&c| c as f64 / 10_000.0).collect()
}

/// Long-run shares the module documentation predicts: ∝ 1/√factor for inverse-priority slices,
/// ∝ 1/factor (= weight) for DRF.
fn predicted(mode: Mode, factors: &[f64]) -> Vec<f64> {
    let w: Vec<f64> = factors
        .iter()
        .map(|f| match mode {
            Mode::Drf => 1.0 / f,
            _ => 1.0 / f.sqrt(),
        })
        .collect();
    let t: f64 = w.iter().sum();
    w.iter().map(|x| x / t).collect()
}

#[test]
fn armada_equal_factors_share_equally_in_the_long_run() {
    for mode in [Mode::Slices, Mode::ProbabilisticForAll, Mode::Drf] {
        let s = long_run(mode, &[1.0, 1.0, 1.0], 7);
        assert!(
            s.iter().all(|x| (x - 1.0 / 3.0).abs() < 0.05),
            "{mode:?}: {s:?}"
        );
    }
}

#[test]
fn armada_slices_settle_at_inverse_square_root_of_the_factor() {
    // Factors 1 and 2: 58.6% / 41.4% (not 2/3 / 1/3; see the module docs).
    let s = long_run(Mode::Slices, &[1.0, 2.0], 11);
    assert!((s[0] - 0.586).abs() < 0.02, "{s:?}");
    let s = long_run(Mode::ProbabilisticForAll, &[1.0, 2.0], 11);
    assert!((s[0] - 0.586).abs() < 0.03, "{s:?}");
}

#[test]
fn armada_drf_settles_at_the_configured_weights() {
    // Weights 1/factor: factors 1 and 2 → 2/3 and 1/3 of the starts.
    let s = long_run(Mode::Drf, &[1.0, 2.0], 11);
    assert!((s[0] - 2.0 / 3.0).abs() < 0.05, "{s:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn long_run_shares_converge_within_five_points(
        factors in prop::collection::vec(prop::sample::select(vec![1.0, 2.0, 3.0, 4.0]), 2..4),
        seed in any::<u64>(),
        mode in prop::sample::select(vec![0u8, 1, 2]),
    ) {
        let mode = [Mode::Slices, Mode::ProbabilisticForAll, Mode::Drf][mode as usize];
        let got = long_run(mode, &factors, seed);
        let want = predicted(mode, &factors);
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((g - w).abs() < 0.05, "{:?} factors {:?}: got {:?} want {:?}", mode, factors, got, want);
        }
    }

    #[test]
    fn long_run_is_deterministic_for_a_seed(seed in any::<u64>()) {
        prop_assert_eq!(long_run(Mode::Slices, &[1.0, 2.0], seed), long_run(Mode::Slices, &[1.0, 2.0], seed));
    }
}
